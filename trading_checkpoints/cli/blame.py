"""Who wrote each line: blame."""

from __future__ import annotations

import re
from typing import Any

import click

from ..errors import UnknownCheckpointError
from . import render
from .options import held_at, json_option, target_options, verb
from .paths import desk_path, suggesting
from .render import ident, printable
from .target import Target

_HEX_ID = re.compile(r'[0-9a-fA-F]{4,40}')
_PERIOD = re.compile(r'\s*\d+(?:\.\d+)?\s*[smhdw]\s*', re.IGNORECASE)


def at_is_an_id(value: str, checkpoints: Any) -> bool:
    """Whether ``--at VALUE`` names a checkpoint (4 to 40 hex digits) rather than a time. A
    value that reads both ways (``123456d``: an id, and 123456 days before now) is the
    checkpoint when one has that id, else the time."""
    if not _HEX_ID.fullmatch(value):
        return False
    if not _PERIOD.fullmatch(value):
        return True
    try:
        checkpoints.introduced(value, patches=False)
    except UnknownCheckpointError:
        return False
    return True


@click.command()
@click.argument('path', metavar='PATH')
@click.option(
    '--at',
    metavar='TIME|ID',
    help='Blame the file as checkpoint ID held it, or as the desk held it at TIME (ISO 8601 '
    'with an offset, or a period before now: 90m, 2h, 3d). Default: the desk now.',
)
@json_option(
    'Print {"path", "checkpoint", "lines": [{"line", "text", "checkpoint", "created_at", '
    '"reason", "state", "who", "turn", "session", "tool", "label"}]}.'
)
@target_options
@verb('desk')
def blame(target: Target, path: str, at: str | None, as_json: bool) -> None:
    """Show who wrote each line of file PATH: the checkpoint that introduced it, its time, and
    who (the agent's turn and tool, or outside the agent).

    Who is read from what the checkpoints record: `turn T (TOOL)` for an agent's turn (its
    prompt is listed below the lines), `outside the agent` for a change no turn made (a
    person, a script), `seen by watch` for one `checkpoints watch` recorded, `unknown` for
    lines already there in the oldest checkpoint kept. A line not in a checkpoint yet shows
    `sealed` (the agent's write, sealed) or `-------` (not recorded yet). A restore, undo or
    redo introduces no line: the lines it puts back keep their origin.

    \b
    Examples:
      checkpoints blame Memory.md
      checkpoints blame Memory.md --at 3f2a9c1
      checkpoints blame notes/plan.md --at 2025-03-14T14:30:00+01:00 --json
    """
    used = desk_path(target, path)
    checkpoints = target.checkpoints()
    checkpoint_id = None
    if at is not None:
        checkpoint_id = at if at_is_an_id(at, checkpoints) else held_at(checkpoints, at, None)
    with suggesting(target, [path], [used], checkpoints.effective_tracked_paths):
        result = checkpoints.blame(used, checkpoint_id)
    if as_json:
        render.echo_json(result.to_dict())
        return
    show(result.lines)


def show(lines: Any) -> None:
    """The lines, each after its origin, then the prompt of each turn named."""
    from ..ops.blame import SEAL, describe

    rows = []
    turns: dict[str, str | None] = {}
    for line in lines:
        origin, author = line.origin, line.origin.author
        who = describe(author) + (', sealed' if origin.state == SEAL else '')
        shown = origin.checkpoint_id or '-------'
        when = origin.created_at or 'not recorded yet'
        rows.append((shown, when, printable(who), line.number, printable(line.text)))
        if author.turn is not None:
            turns.setdefault(author.turn, author.label)
    if not rows:
        click.echo('(the file is empty)')
        return
    width = max(len(row[2]) for row in rows)
    digits = len(str(rows[-1][3]))
    for shown, when, who, number, text in rows:
        line = f' {text}' if text else ''  # an empty line leaves no trailing space
        click.echo(f'{ident(shown)} {when:<25}  {who:<{width}}  {number:>{digits}}){line}')
    labelled = [(turn, label) for turn, label in turns.items() if label]
    if labelled:
        click.echo('')
    for turn, label in labelled:
        click.echo(f'turn {printable(turn)}: {printable(label or "")}')
