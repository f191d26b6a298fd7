"""The options every verb shares, declared once, and the decorator that runs a verb's body.

``--workspace``/``--desk`` are accepted before the verb (on the group) and after it (on each
verb); the one given last on the command line wins. Their values are kept in ``ctx.meta``
(shared by every nested context) and turned into a :class:`Target` when the verb runs.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

import click

from ..errors import (
    CheckpointError,
    ExternalChangesError,
    HistoriesDivergedError,
    PrunedCheckpointError,
    UnknownCheckpointError,
    UnknownTurnError,
)
from ..workspace import desk_name_problem
from . import complete, render
from .target import DESK_KEY, WORKSPACE_KEY, Target, target_of

F = TypeVar('F', bound=Callable[..., Any])

JSON_KEY = 'checkpoints.json'


def _keep(key: str) -> Callable[[click.Context, click.Parameter, Any], Any]:
    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if value is not None:
            ctx.meta[key] = value
        return value

    return callback


def check_desk_name(value: str) -> str:
    """The one desk-name rule of every verb (the library's): a plain folder name."""
    problem = desk_name_problem(value)
    if problem:
        raise click.BadParameter(
            f'{value!r} is not a desk name (a plain folder name, like "main"): {problem}'
        )
    return value


def _keep_desk(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None:
        ctx.meta[DESK_KEY] = check_desk_name(value)
    return value


def target_options(function: F) -> F:
    """``--workspace DIR`` and ``--desk NAME``, on the group and on every verb."""
    function = click.option(
        '--desk',
        metavar='NAME',
        expose_value=False,
        callback=_keep_desk,
        shell_complete=complete.desks,
        help='The desk (a folder in <workspace>/desks). Default: $CHECKPOINTS_DESK, else the '
        'desk the current folder is in, else main.',
    )(function)
    return click.option(
        '--workspace',
        metavar='DIR',
        expose_value=False,
        callback=_keep(WORKSPACE_KEY),
        shell_complete=complete.folders,
        help='The folder holding desks/ and .checkpoints/. Default: $CHECKPOINTS_WORKSPACE, '
        'else the nearest such folder at or above the current one, else ./workspace.',
    )(function)


def json_option(help: str) -> Callable[[F], F]:
    def remember(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
        if value:
            ctx.meta[JSON_KEY] = True
        return value

    return click.option('--json', 'as_json', is_flag=True, callback=remember, help=help)


def dry_run_option(help: str = 'Only show what would change; change nothing.') -> Callable[[F], F]:
    return click.option('--dry-run', is_flag=True, help=help)


def external_option(function: F) -> F:
    """How a restore treats files changed outside the agent (see ``checkpoints status``)."""
    return click.option(
        '--keep-external',
        'on_external',
        flag_value='keep',
        help="Revert only the agent's changes; keep files changed outside the agent as they are.",
    )(
        click.option(
            '--refuse-external',
            'on_external',
            flag_value='refuse',
            help='Change nothing if any file changed outside the agent would be overwritten.',
        )(function)
    )


def quiet_option(function: F) -> F:
    return click.option(
        '-q',
        '--quiet',
        is_flag=True,
        help='Print only the summary and the follow-up command, not every file.',
    )(function)


def verbose_option(function: F) -> F:
    return click.option(
        '-v',
        '--verbose',
        is_flag=True,
        help='List every file, also when there are many (by default a long list is cut short).',
    )(function)


def limit_option(what: str) -> Callable[[F], F]:
    return click.option(
        '--limit',
        '-n',
        type=click.IntRange(min=0),
        default=20,
        show_default=True,
        metavar='N',
        help=f'Show at most N {what}; 0 shows all.',
    )


def at_option(what: str) -> Callable[[F], F]:
    """``--at TIME``: instead of an ID, the checkpoint the desk held at TIME."""
    return click.option(
        '--at',
        metavar='TIME',
        help=f'{what} the checkpoint the desk held at TIME (the newest taken at or before it): '
        'ISO 8601 with an offset (2025-03-14T14:30:00+01:00, Z for UTC) or a period before '
        'now (90m, 2h, 3d).',
    )


def held_at(checkpoints: Any, at: str, given: str | None) -> str:
    """The id of the checkpoint the desk held at ``at`` (``--at``, instead of ``given``), said
    on stderr with its time and reason, so the answer to "what was there at 14:30?" names
    the checkpoint it comes from."""
    if given is not None:
        raise click.UsageError(f'give a checkpoint ID or --at TIME, not both ({given}, {at})')
    held = checkpoints.held_at(at)
    found = held.checkpoint
    if held.sealed:
        turn = f' in turn {held.turn}' if held.turn else ''
        said = (
            f"note: at {at} the desk held the agent's sealed write{turn}, "
            f'{render.ident(found.checkpoint_id)} ({found.created_at})'
        )
    else:
        said = (
            f'note: at {at} the desk held checkpoint {render.ident(found.checkpoint_id)}, taken '
            f'{found.created_at}: {found.reason}'
        )
    click.echo(said, err=True)
    if held.changed_before is not None:
        later = held.changed_before
        click.echo(
            f'note: the desk changed after it, unrecorded until checkpoint '
            f'{render.ident(later.short_id)} ({later.created_at}): it may have differed at {at}',
            err=True,
        )
    return str(found.checkpoint_id)


def current_target(ctx: click.Context | None = None) -> Target:
    ctx = ctx or click.get_current_context()
    return target_of(ctx.meta)


def wants_json(ctx: click.Context | None = None) -> bool:
    ctx = ctx or click.get_current_context(silent=True)
    return bool(ctx is not None and ctx.meta.get(JSON_KEY))


def fail(message: str, kind: str = 'CheckpointError', code: int = 1) -> None:
    render.error(message, as_json=wants_json(), kind=kind)
    sys.exit(code)


class Hinted(Exception):
    """A library error with what the command line suggests doing next (a ``hint:`` line, or
    ``"hint"`` in the JSON error); the error itself is reported as it is."""

    def __init__(self, error: CheckpointError, hint: str | None) -> None:
        super().__init__(str(error))
        self.error = error
        self.hint = hint


def report(error: CheckpointError, hint: str | None = None) -> None:
    """A failure of the library, exit status 1: its kind is the error's class and its fields the
    kind's (:meth:`CheckpointError.details`); the message is shown as it is, never parsed."""
    render.error(
        str(error),
        as_json=wants_json(),
        kind=type(error).__name__,
        fields=error.details(),
        hint=hint,
    )
    sys.exit(1)


def stop_quietly_on_a_closed_pipe() -> None:
    """The reader of our output went away (``checkpoints log | head``): stop without a word,
    as a tool killed by SIGPIPE would (exit status 141)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # nothing left to flush at exit
    except (OSError, ValueError):
        pass
    sys.exit(141)


def reports_errors(function: F) -> F:
    """Turns every failure into one line on stderr (one JSON object with --json) and exit
    status 1, never a traceback."""

    @wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except Hinted as hinted:
            report(hinted.error, hinted.hint)
        except CheckpointError as error:
            report(error)
        except BrokenPipeError:
            stop_quietly_on_a_closed_pipe()
        except OSError as error:
            where = f': {error.filename}' if error.filename else ''
            fail(f'{error.strerror or error}{where}', type(error).__name__)
        except (click.exceptions.Exit, click.ClickException, click.Abort, KeyboardInterrupt):
            raise
        except Exception as error:  # noqa: BLE001 - the command line never shows a traceback
            if os.environ.get('CHECKPOINTS_DEBUG'):
                raise
            fail(
                f'unexpected {type(error).__name__}: {error} (set CHECKPOINTS_DEBUG=1 for details)',
                type(error).__name__,
            )

    return wrapper  # type: ignore[return-value]


def complete_interrupted_restore(target: Target) -> None:
    """Completes a restore that a crash or Ctrl-C interrupted on the desk, before a verb
    runs, and says so in one line with the command that undoes it: every verb then finds the
    desk whole (``status`` never shows the half-done restore as someone's changes)."""
    from ..ops.listing import journal_pending

    if not journal_pending(target.repository_directory):
        return
    from ..ops import engine

    checkpoints = target.checkpoints()
    engine.complete_pending(checkpoints.desk_config, checkpoints)
    render.recovery_note(checkpoints.last_recovery, target)


def next_step(error: CheckpointError, target: Target) -> str | None:
    """The command to run after an error of this kind on this desk, or None."""
    if isinstance(error, UnknownTurnError):
        return f'{target.command("turns")} lists the turns'
    if isinstance(error, PrunedCheckpointError):
        return None  # its message says so already
    if isinstance(error, UnknownCheckpointError):
        return f'{target.command("list")} shows the checkpoint ids'
    if isinstance(error, ExternalChangesError):
        command = click.get_current_context().info_name
        if command in ('undo', 'redo'):
            return (
                f'{command} --keep-external leaves those files as they are; {command} --force '
                'puts the older version back (what it overwrites is kept in the pre-snapshot)'
            )
        return (
            f"{command} --keep-external keeps them and reverts only the agent's changes; "
            f'without --refuse-external they are overwritten (kept in the pre-snapshot)'
        )
    if isinstance(error, HistoriesDivergedError):
        url = _remote_url(target, error.remote) or 'URL'
        copy = target.command('clone', url, '--desk', f'{target.desk}-{error.remote}')
        copy = copy.replace(f' --desk {shlex.quote(target.desk)} clone ', ' clone ', 1)
        return (
            f"{copy} copies the remote's checkpoints onto a new desk; "
            f'{target.command("remote", "add", "NEW", "URL")} then push NEW backs this desk '
            'up apart'
        )
    return None


def _remote_url(target: Target, name: str | None) -> str | None:
    """The URL of remote ``name`` as shown to people (without user info), if it is known."""
    try:
        for remote in target.checkpoints().remotes():
            if remote.name == name:
                return str(remote.display_url)
    except CheckpointError:
        pass
    return None


def verb(require: str | None = 'desk') -> Callable[[F], F]:
    """Runs a verb's body with its :class:`Target` as first argument, after checking that
    what it needs exists: ``workspace``, ``desk`` (its folder or its repository), ``folder``
    (the desk's folder), or None; failures are reported as :func:`reports_errors` does, with
    the next step to take (:func:`next_step`) as a hint. When the environment chose a workspace
    or desk other than the one the command runs from, one line on stderr says so.

    A verb on a desk first completes a restore that was interrupted there. Ctrl-C during a
    restore that already changed the desk says how far it got (exit status 130).
    """

    def decorate(function: F) -> F:
        @wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            from ..ops.recovery import RestoreInterrupted

            target = current_target()
            for note in target.environment_notes():
                click.echo(f'note: {note}', err=True)
            if require == 'workspace':
                target.require_workspace()
            elif require == 'desk':
                target.require_desk()
            elif require == 'folder':
                target.require_desk_folder()
            try:
                if require in ('desk', 'folder'):
                    complete_interrupted_restore(target)
                return function(target, *args, **kwargs)
            except RestoreInterrupted as stop:
                render.interrupted(stop, target, as_json=wants_json())
                sys.exit(130)
            except Hinted:
                raise
            except CheckpointError as error:
                raise Hinted(error, next_step(error, target)) from error

        return reports_errors(wrapper)  # type: ignore[return-value]

    return decorate
