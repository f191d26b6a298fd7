"""Structured metadata of a checkpoint, kept as git trailers in its commit message.

A message looks like ``before write_file Memory.md\n\nCheckpoint-Tool: write_file\n
Checkpoint-Path: Memory.md\nCheckpoint-Turn: t-3\n``; git shows it as an ordinary message and
``git interpret-trailers --parse`` reads the fields back.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from dulwich.trailers import Trailer, format_trailers, parse_trailers

TOOL = 'Checkpoint-Tool'
PATH = 'Checkpoint-Path'
TURN = 'Checkpoint-Turn'


@dataclass(frozen=True)
class Metadata:
    tool: str | None = None
    paths: tuple[str, ...] = ()
    turn: str | None = None


def _one_line(value: str) -> str:
    return ' '.join(str(value).split())


def compose(reason: str, tool: str | None, paths: Iterable[str] | None, turn: str | None) -> str:
    """A commit message: the reason as subject (and body), then the metadata as trailers."""
    reason = reason.strip().replace('\0', '') or 'snapshot'
    trailers = []
    if tool:
        trailers.append(Trailer(TOOL, _one_line(tool)))
    for path in paths or ():
        if _one_line(path):
            trailers.append(Trailer(PATH, _one_line(path)))
    if turn:
        trailers.append(Trailer(TURN, _one_line(turn)))
    if not trailers:
        return reason + '\n'
    return reason + '\n\n' + format_trailers(trailers).decode('utf-8')


def parse(message: str) -> Metadata:
    """The metadata trailers of a commit message (absent fields are None or empty)."""
    _, trailers = parse_trailers(message.encode('utf-8', 'surrogateescape'))
    tool = turn = None
    paths: list[str] = []
    for trailer in trailers:
        if trailer.key == TOOL:
            tool = trailer.value
        elif trailer.key == PATH:
            paths.append(trailer.value)
        elif trailer.key == TURN:
            turn = trailer.value
    return Metadata(tool=tool, paths=tuple(paths), turn=turn)


ACTION = 'Checkpoint-Action'


def trailer_values(message: str) -> dict[str, list[str]]:
    """The trailers of a commit message, by key."""
    _, found = parse_trailers(message.encode('utf-8', 'surrogateescape'))
    out: dict[str, list[str]] = {}
    for trailer in found:
        out.setdefault(trailer.key, []).append(trailer.value)
    return out


def action_of(message: str) -> str | None:
    """What made a commit when the library did (``restore``, ``before-undo``, ...), or None."""
    values = trailer_values(message).get(ACTION)
    return values[-1] if values else None
