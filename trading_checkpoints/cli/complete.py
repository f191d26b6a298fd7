"""Shell completion: desk names, checkpoint ids, turn ids and remote names, and the
``completion`` verb that prints the script for bash, zsh or fish.

Each completer works from the options already typed (``--workspace``, ``--desk``), finds the
workspace the way every verb does, and answers nothing rather than failing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click
from click.shell_completion import CompletionItem, get_completion_class

from .target import PROGRAM, WORKSPACE_KEY, Target, resolve, target_of

SHELLS = ('bash', 'zsh', 'fish')
COMPLETE_VARIABLE = '_CHECKPOINTS_COMPLETE'


def _quietly(
    produce: Callable[[Target, str], list[CompletionItem]],
) -> Callable[[click.Context, click.Parameter, str], list[CompletionItem]]:
    def complete(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
        try:
            return produce(target_of(ctx.meta), incomplete)
        except Exception:  # noqa: BLE001 - a completer must never break the shell
            return []

    return complete


def _desks(target: Target, incomplete: str) -> list[CompletionItem]:
    from ..workspace import Workspace

    return [
        CompletionItem(name)
        for name in Workspace(target.workspace).desks()
        if name.startswith(incomplete)
    ]


def _ids(target: Target, incomplete: str) -> list[CompletionItem]:
    wanted = incomplete.lower()
    return [
        CompletionItem(item.checkpoint_id, help=item.reason)
        for item in target.checkpoints().list(200)
        if item.checkpoint_id.startswith(wanted)
    ]


def _turns(target: Target, incomplete: str) -> list[CompletionItem]:
    return [
        CompletionItem(item.turn_id, help=item.label or None)
        for item in target.checkpoints().turns(50)
        if item.turn_id.startswith(incomplete)
    ]


def _remotes(target: Target, incomplete: str) -> list[CompletionItem]:
    return [
        CompletionItem(remote.name, help=remote.display_url)
        for remote in target.checkpoints().remotes()
        if remote.name.startswith(incomplete)
    ]


def desks(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """Desk names of the workspace (the desk option itself is not needed for that)."""
    try:
        return _desks(resolve(ctx.meta.get(WORKSPACE_KEY), None), incomplete)
    except Exception:  # noqa: BLE001 - a completer must never break the shell
        return []


ids = _quietly(_ids)
turns = _quietly(_turns)
remotes = _quietly(_remotes)


def folders(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    return [CompletionItem(incomplete, type='dir')]


@click.command('completion')
@click.argument('shell', type=click.Choice(SHELLS))
@click.pass_context
def completion(ctx: click.Context, shell: str) -> None:
    """Print the shell completion script for SHELL (verbs, options, desks, checkpoint ids).

    \b
    Examples:
      eval "$(checkpoints completion bash)"        # in ~/.bashrc
      eval "$(checkpoints completion zsh)"         # in ~/.zshrc
      checkpoints completion fish > ~/.config/fish/completions/checkpoints.fish
    """
    cls = get_completion_class(shell)
    assert cls is not None  # the choice admits only shells click knows
    root = ctx.find_root().command
    click.echo(cls(root, {}, PROGRAM, COMPLETE_VARIABLE).source())
