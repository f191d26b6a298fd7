"""One step at a time: undo, redo, and seal (the state the agent left)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from . import render
from .options import (
    dry_run_option,
    json_option,
    quiet_option,
    target_options,
    verb,
    verbose_option,
)
from .render import ident
from .target import Target

F = TypeVar('F', bound=Callable[..., Any])


def _step(
    target: Target,
    which: str,
    *,
    force: bool,
    keep_external: bool,
    dry_run: bool,
    quiet: bool,
    verbose: bool,
    as_json: bool,
) -> None:
    """An undo or a redo (``which``), with the options both verbs take."""
    checkpoints = target.checkpoints()
    method = checkpoints.undo if which == 'undo' else checkpoints.redo
    result = method(force=force, keep_external=keep_external, dry_run=dry_run)
    if as_json:
        render.echo_json(result.to_dict())
    else:
        render.restore(result, target, quiet=quiet, verbose=verbose, keeping=not force)


_KEEP = click.option(
    '--keep-external',
    is_flag=True,
    help='Leave files changed outside the agent as they are, even where the step changed them.',
)


def _step_options(function: F) -> F:
    """The options undo and redo share (besides --force), and the verb's wrapper."""
    for decorate in (
        verb('desk'),
        target_options,
        json_option('Print what was done as JSON.'),
        verbose_option,
        quiet_option,
        dry_run_option(),
        _KEEP,
    ):
        function = decorate(function)
    return function


@click.command()
@click.option(
    '--force',
    is_flag=True,
    help='Overwrite files changed outside the agent too (kept in the pre-snapshot).',
)
@_step_options
def undo(target: Target, **options: Any) -> None:
    """Step back one agent step; repeat to go further back (three undos, three writes).

    With changes since the newest checkpoint, it goes back to that checkpoint; otherwise to the
    state before the current one, like an editor's undo. It is an ordinary restore: `redo`
    reverses it. Files changed outside the agent that the step did not touch are kept as they
    are; where a person also changed a file the step wrote, it refuses and changes nothing
    (--force puts the step's version back, --keep-external leaves those files alone).

    \b
    Examples:
      checkpoints undo
      checkpoints undo --dry-run
      checkpoints undo --force --json
    """
    _step(target, 'undo', **options)


@click.command()
@click.option(
    '--force',
    is_flag=True,
    help='Redo even over changes made since the undo (they are kept in the pre-snapshot).',
)
@_step_options
def redo(target: Target, **options: Any) -> None:
    """Reverse the last undo not yet redone (new checkpoints after an undo end the chain).

    \b
    Examples:
      checkpoints undo && checkpoints redo
      checkpoints redo --json
    """
    _step(target, 'redo', **options)


@click.command()
@json_option('Print {"id": ...}.')
@target_options
@verb('folder')
def seal(target: Target, as_json: bool) -> None:
    """Record the desk as the state the agent left (run it after the agent's write).

    Later changes that differ from it are reported as external by `status`; `undo` and
    `restore --keep-external` leave them as they are.

    \b
    Examples:
      checkpoints seal
      checkpoints seal --json
    """
    sealed = target.checkpoints().seal()
    if as_json:
        render.echo_json({'id': sealed})
    else:
        click.echo(f'Sealed {target.where} as the state the agent left ({ident(sealed)}).')
