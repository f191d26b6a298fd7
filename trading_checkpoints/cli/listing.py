"""Listing checkpoints: list."""

from __future__ import annotations

import sys
from typing import Any

import click

from . import render
from .core import note_recovery
from .options import json_option, limit_option, target_options, verb
from .render import ident, style
from .target import Target

# A cut listing counts the checkpoints it left out, reading at most this many more.
MORE_COUNTED = 20
_ALL = sys.maxsize


def change_note(item: Any) -> str:
    """``(2 files, +10/-3)``; ``(2 files, +?/-?)`` when the checkpoint recorded no line counts
    (its commit did not have both sides of a changed text file at hand); nothing without
    stats."""
    if item.files_changed is None:
        return ''
    files = f'{item.files_changed} file{"" if item.files_changed == 1 else "s"}'
    if item.lines_added is None or item.lines_removed is None:
        return f'  ({files}, +?/-?)'
    return f'  ({files}, +{item.lines_added}/-{item.lines_removed})'


def gather(checkpoints: Any, limit: int, agent_only: bool) -> tuple[list[Any], int, bool]:
    """The newest ``limit`` checkpoints (all for 0), how many more there are, and whether that
    count is exact (it stops at :data:`MORE_COUNTED`, so a cold listing stays cheap)."""

    def keep(items: list[Any]) -> list[Any]:
        return [item for item in items if item.action is None] if agent_only else items

    if limit == 0:
        return keep(checkpoints.list(_ALL)), 0, True
    goal = limit + MORE_COUNTED + 1
    wanted = goal
    while True:
        raw = checkpoints.list(wanted)
        kept = keep(raw)
        if len(kept) >= goal or len(raw) < wanted:
            break
        wanted *= 4
    more = len(kept) - limit
    return kept[:limit], max(0, min(more, MORE_COUNTED)), len(kept) < goal


@click.command('list')
@limit_option('checkpoints')
@click.option(
    '--agent-only',
    is_flag=True,
    help='Hide the bookkeeping of restores, undos and redos (their commits and the snapshots '
    'they take first): only the checkpoints taken before writes.',
)
@click.option(
    '--turns',
    'with_turns',
    is_flag=True,
    help="Name each checkpoint's agent turn and the turn's prompt (its label, as stored).",
)
@json_option(
    'Print a JSON array of {"id", "created_at", "reason", "tool", "paths", "turn", "action", '
    '"files_changed", "lines_added", "lines_removed"} (with --turns, "turn_label" too).'
)
@target_options
@verb('desk')
def list_command(
    target: Target, limit: int, agent_only: bool, with_turns: bool, as_json: bool
) -> None:
    """List checkpoints, newest first.

    \b
    Examples:
      checkpoints list
      checkpoints list -n 0 --agent-only      # all of them, without restore bookkeeping
      checkpoints list --turns                # with each one's turn and the turn's prompt
      checkpoints list -n 5 --json
    """
    checkpoints = target.lister()
    items, more, exact = gather(checkpoints, limit, agent_only)
    note_recovery(checkpoints, target)
    prompts = render.turn_labels(target, items) if with_turns else {}
    if as_json:
        rows = [item.to_dict() for item in items]
        if with_turns:
            rows = [{**row, 'turn_label': prompts.get(row['turn'])} for row in rows]
        render.echo_json(rows)
        return
    if not items:
        which = 'agent checkpoints' if agent_only and more == 0 else 'checkpoints'
        click.echo(f'No {which} yet for desk {target.desk!r} ({target.repository_directory}).')
        click.echo(f'Take one with: {target.command("snapshot", "-m", "why")}')
        return
    for item in items:
        turn = ''
        if with_turns and item.turn:
            turn = f'  [{render.turn_note(item.turn, prompts.get(item.turn))}]'
        click.echo(
            f'{ident(item.checkpoint_id)}  {item.created_at}  {item.reason}{change_note(item)}'
            + turn
        )
    if more:
        count = f'{more}' if exact else f'more than {more}'
        click.echo(f'... and {count} older (list -n 0 shows all)')
    click.echo(
        style(
            'hint: checkpoints diff ID shows what changed since then; '
            'checkpoints restore ID goes back to it',
            dim=True,
        )
    )
