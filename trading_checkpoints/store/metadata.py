"""Structured metadata of a checkpoint, kept as git trailers in its commit message.

A message looks like ``before write_file Memory.md\n\nCheckpoint-Tool: write_file\n
Checkpoint-Path: Memory.md\nCheckpoint-Turn: t-3\n``; git shows it as an ordinary message and
``git interpret-trailers --parse`` reads the fields back.

Two groups of trailers describe two moments. ``Checkpoint-Tool``, ``-Path``, ``-Turn`` and
``-Session`` name the write a checkpoint was taken *before* (the agent about to write, in which
turn of which session). ``Checkpoint-Wrote-By``, ``-Wrote-Session`` and ``-Wrote`` name who made
the changes a checkpoint *holds*, relative to its parent: the turn (and its session) that wrote
each listed path, as far as the product could tell when it took the checkpoint; the other paths
it changed were written by no turn (a person, a script, another tool), and so were the listed
paths also named by ``Checkpoint-Changed-After``, after the turn had written them. When
several writers were at work at once (two agent sessions on one desk), each has a group of its
own, starting with its ``Checkpoint-Wrote-By``; a path two of them may have written is named by
``Checkpoint-Maybe-Wrote`` in each of their groups (uncertain). A checkpoint
recording a change that already happened (a shell command seen through the hooks,
``checkpoints watch``) carries ``Checkpoint-Action: captured``.

Only the library writes trailers. A reason (from code, the command line or an agent over MCP)
is text: any line of it that could be read as one of our trailers (``Checkpoint-...:``) or as
git's end-of-message divider (``---``) is quoted with ``> `` before it is stored, so only the
block the library appends is parsed as trailers. The reader is strict: the trailers are the
last paragraph of the message, after a blank line, when every one of its lines is
``Key: value``; anything else means no trailers. Readers of the values (see :mod:`..ops.undo`) treat
a malformed value as absent.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import InvalidArgumentError

TOOL = 'Checkpoint-Tool'
PATH = 'Checkpoint-Path'
TURN = 'Checkpoint-Turn'
SESSION = 'Checkpoint-Session'
ACTION = 'Checkpoint-Action'  # what made the commit: restore, undo, before-undo, ...
WROTE_BY = 'Checkpoint-Wrote-By'
WROTE_SESSION = 'Checkpoint-Wrote-Session'
WROTE = 'Checkpoint-Wrote'
CHANGED_AFTER = 'Checkpoint-Changed-After'  # a path someone else changed after the writer
MAYBE_WROTE = 'Checkpoint-Maybe-Wrote'  # a path the writer may have written, another too
SEALED_AT = 'Checkpoint-Sealed-At'  # when the seal a checkpoint supersedes was made
CAPTURED = 'captured'  # the action of a checkpoint recording a change already made

_GROUPED = frozenset({WROTE_SESSION, WROTE, CHANGED_AFTER, MAYBE_WROTE})  # after a Wrote-By
_TRAILER = re.compile(r'([A-Za-z0-9][A-Za-z0-9-]*): ?(.*)')
QUOTE = '> '


@dataclass(frozen=True)
class Metadata:
    tool: str | None = None
    paths: tuple[str, ...] = ()
    turn: str | None = None
    session: str | None = None


@dataclass(frozen=True)
class Writer:
    """An agent turn that writes: its id and, when the harness names one, its session."""

    turn: str
    session: str | None = None

    def pairs(self) -> list[tuple[str, str]]:
        """The trailers naming it as the writer of a checkpoint's changes."""
        pairs = [(WROTE_BY, self.turn)]
        if self.session:
            pairs.append((WROTE_SESSION, self.session))
        return pairs


@dataclass(frozen=True)
class Written:
    """Who made the changes a checkpoint holds: ``writer`` wrote ``paths`` (and of those,
    someone else changed ``changed_after`` again before the checkpoint was taken), and may
    have written ``maybe``, which another writer may have written too (uncertain); the
    checkpoint's other changes were made by no turn."""

    writer: Writer
    paths: frozenset[str]
    changed_after: frozenset[str] = frozenset()
    maybe: frozenset[str] = frozenset()


def one_line(value: str) -> str:
    return ' '.join(str(value).split())


def storable(text: str, what: str, name: str) -> str:
    """``text`` if it can be stored in a commit message, else an :class:`InvalidArgumentError`
    naming the argument ``name`` (``what`` describes it in the message).

    Surrogate escapes (``\\udcff``, how Python spells an undecodable byte of a file name) are
    stored as the byte they stand for; other lone surrogates have no bytes at all.
    """
    try:
        text.encode('utf-8', 'surrogateescape')
    except UnicodeEncodeError:
        raise InvalidArgumentError(
            f'{what} holds characters that cannot be stored (lone surrogates)',
            name=name,
            value=text,
        ) from None
    return text


def _looks_like_ours(line: str) -> bool:
    stripped = line.lstrip()
    return stripped.lower().startswith('checkpoint-') or stripped.startswith('---')


def neutralize(text: str) -> str:
    """Text with every line that could read as our trailer or a divider quoted (``> ``)."""
    return '\n'.join(QUOTE + line if _looks_like_ours(line) else line for line in text.splitlines())


def message(body: str, pairs: Iterable[tuple[str, str]]) -> str:
    """A commit message: ``body`` (neutralized) and then our trailers, one per line."""
    body = neutralize(body)
    items = [(key, one_line(value)) for key, value in pairs if value and one_line(value)]
    if not items:
        return body + '\n'
    return body + '\n\n' + ''.join(f'{key}: {value}\n' for key, value in items)


def trailers(text: str) -> list[tuple[str, str]]:
    """The trailers of a message as (key, value) pairs, in order; [] when it has none."""
    lines = text.split('\n')
    while lines and not lines[-1].strip():
        lines.pop()
    start = len(lines)
    while start > 0 and lines[start - 1].strip():
        start -= 1
    if start == 0 or start == len(lines):
        return []  # one paragraph only (a subject), or nothing
    pairs = []
    for line in lines[start:]:
        match = _TRAILER.fullmatch(line.rstrip())
        if match is None:
            return []
        pairs.append((match.group(1), match.group(2).strip()))
    return pairs


def with_trailer(text: str, key: str, value: str) -> str:
    """A message with one more trailer appended to its trailer block (made if it has none)."""
    return with_trailers(text, [(key, value)])


def with_trailers(text: str, pairs: Iterable[tuple[str, str]]) -> str:
    """A message with more trailers appended to its trailer block (made if it has none);
    pairs with an empty value are left out."""
    items = [(key, one_line(value)) for key, value in pairs if value and one_line(value)]
    if not items:
        return text
    body = text.rstrip('\n')
    joiner = '\n' if trailers(text) else '\n\n'
    return body + joiner + ''.join(f'{key}: {value}\n' for key, value in items)


def compose(
    reason: str,
    tool: str | None,
    paths: Iterable[str] | None,
    turn: str | None,
    session: str | None = None,
    extra: Iterable[tuple[str, str]] = (),
) -> str:
    """A commit message: the reason as subject (and body), then the metadata as trailers
    (``extra`` last: pairs the library makes, such as the action)."""
    reason = storable(reason, 'the reason', 'reason').strip().replace('\0', '') or 'snapshot'
    pairs = []
    if tool:
        pairs.append((TOOL, storable(tool, 'the tool name', 'tool')))
    for path in paths or ():
        pairs.append((PATH, storable(str(path), 'a declared path', 'paths')))
    if turn:
        pairs.append((TURN, storable(turn, 'the turn id', 'turn')))
    if session and one_line(session):
        pairs.append((SESSION, storable(session, 'the session id', 'session')))
    pairs.extend(extra)
    return message(reason, pairs)


def parse(text: str) -> Metadata:
    """The metadata trailers of a commit message (absent fields are None or empty)."""
    tool = turn = session = None
    paths: list[str] = []
    for key, value in trailers(text):
        if key == TOOL:
            tool = value
        elif key == PATH:
            paths.append(value)
        elif key == TURN:
            turn = value
        elif key == SESSION:
            session = value
    return Metadata(tool=tool, paths=tuple(paths), turn=turn, session=session)


def writer_of(text: str) -> Writer | None:
    """The turn (and session) a checkpoint was taken in, when it names one."""
    meta = parse(text)
    return Writer(meta.turn, meta.session) if meta.turn else None


def written_groups(text: str) -> tuple[Written, ...]:
    """Who made the changes a checkpoint holds, one group per writer, as recorded
    (``Checkpoint-Wrote-By`` starts a group; ``-Wrote-Session``, ``-Wrote``,
    ``-Changed-After`` and ``-Maybe-Wrote`` that follow belong to it); () when it records none."""
    groups: list[tuple[str, dict[str, list[str]]]] = []
    for key, value in trailers(text):
        if key == WROTE_BY:
            groups.append((value, {}))
        elif groups and key in _GROUPED:
            groups[-1][1].setdefault(key, []).append(value)
    found = []
    for turn, values in groups:
        if turn:
            sessions = values.get(WROTE_SESSION)
            found.append(
                Written(
                    Writer(turn, sessions[-1] if sessions else None),
                    frozenset(values.get(WROTE, ())),
                    frozenset(values.get(CHANGED_AFTER, ())),
                    frozenset(values.get(MAYBE_WROTE, ())),
                )
            )
    return tuple(found)


def written(text: str) -> Written | None:
    """Who made the changes a checkpoint of one writer holds (of several: the last one's
    group; :func:`written_groups` gives them all); None when it records none."""
    groups = written_groups(text)
    return groups[-1] if groups else None


def written_pairs(
    writer: Writer,
    paths: Iterable[str],
    changed_after: Iterable[str] = (),
    maybe: Iterable[str] = (),
) -> list[tuple[str, str]]:
    """The trailers recording that ``writer`` wrote ``paths`` of a checkpoint (someone else
    changed ``changed_after`` of them afterwards) and may have written ``maybe``, sorted."""
    pairs = writer.pairs() + [(WROTE, path) for path in sorted(set(paths))]
    pairs += [(CHANGED_AFTER, path) for path in sorted(set(changed_after))]
    return pairs + [(MAYBE_WROTE, path) for path in sorted(set(maybe))]


def trailer_values(text: str) -> dict[str, list[str]]:
    """The trailers of a commit message, by key."""
    out: dict[str, list[str]] = {}
    for key, value in trailers(text):
        out.setdefault(key, []).append(value)
    return out


def action_of(text: str) -> str | None:
    """What made a commit when the library did (``restore``, ``before-undo``, ...), or None."""
    values = trailer_values(text).get(ACTION)
    return values[-1] if values else None
