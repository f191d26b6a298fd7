"""Who made each change a checkpoint holds: the one reading of the records that rewinding a
turn (``rewind``) and blaming a file's lines (``blame``) share.

Each checkpoint says who made the changes it holds, relative to the checkpoint before it
(:func:`of_checkpoint`):

- ``Checkpoint-Wrote-By`` (and ``-Wrote``), once per writer: that turn wrote the listed
  paths, then someone else those also named by ``Checkpoint-Changed-After`` (:class:`Then`);
  those named by ``Checkpoint-Maybe-Wrote`` it may have written, as may another writer at work
  at the same time (:class:`Maybe`: uncertain); the checkpoint's other changes were made by no
  turn (see ``snapshot.writes`` for how a snapshot tells).
- a restore, undo or redo: each path it changed is credited to whoever wrote the entry it put
  back, as the caller's walk saw it (``seen``).
- a checkpoint without that record (made by an older version): the changes are credited to
  the turn of the checkpoint before it, when that one was taken before a turn's write, for the
  paths it declared (all when it declared none).

The desk's changes since the newest checkpoint (:func:`unrecorded`) are credited as a snapshot
would credit them: by the tool calls on record first (``calls``: another session's write that
landed meanwhile is that session's), the others as ``external.writer`` says, minus the paths
changed outside the agent: those up to the seal to the agent, the rest to no turn.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from ..core.trees import FileEntry
from ..store import metadata
from ..store.commitinfo import CommitInfo
from ..store.metadata import Writer
from ..store.repo import ShadowRepo
from . import calls, external, history
from .request import REDO, RESTORE, UNDO

RESTORING = frozenset({RESTORE, UNDO, REDO})


@dataclass(frozen=True)
class Then:
    """A change ``writer`` made that someone else changed again before the checkpoint."""

    writer: Writer


@dataclass(frozen=True)
class Maybe:
    """A change any of ``writers`` may have made (they were at work at once: uncertain)."""

    writers: frozenset[Writer]


Credit = Writer | Then | Maybe | None  # who made a change (None: no turn)

_Seen = TypeVar('_Seen')


def of_checkpoint(
    message: str, previous: str, seen: Mapping[tuple[str, FileEntry | None], _Seen]
) -> Callable[[str, FileEntry | None], Credit | _Seen | None]:
    """Who wrote a path (to a new entry) in the checkpoint with ``message``, the one before it
    having ``previous`` (see the module notes); ``seen``: who wrote each ``(path, entry)`` the
    caller's walk met so far, for a restore's changes. None: no turn."""
    if metadata.action_of(message) in RESTORING:
        return lambda path, new: seen.get((path, new))
    groups = metadata.written_groups(message)
    if groups:

        def credit(path: str, new: FileEntry | None) -> Credit:
            maybe = frozenset(group.writer for group in groups if path in group.maybe)
            if maybe:
                return Maybe(maybe)
            for group in groups:
                if path in group.changed_after:
                    return Then(group.writer)
                if path in group.paths:
                    return group.writer
            return None

        return credit
    writer = metadata.writer_of(previous)
    if writer is None or metadata.action_of(previous) is not None:
        return lambda path, new: None
    declared = metadata.parse(previous).paths
    return lambda path, new: writer if not declared or history.under(path, declared) else None


def writers_of(credit: object) -> tuple[Writer, ...]:
    """The turns a credit names: the writer, the writer someone changed the path after, or
    each writer that may have made it (sorted)."""
    if isinstance(credit, Then):
        return (credit.writer,)
    if isinstance(credit, Maybe):
        return tuple(sorted(credit.writers, key=lambda w: (w.turn, w.session or '')))
    return (credit,) if isinstance(credit, Writer) else ()


def certain(credit: object) -> bool:
    """Whether a credit names its writer for certain (not :class:`Then` nor :class:`Maybe`)."""
    return not isinstance(credit, (Then, Maybe))


def tool_of(message: str, previous: str, writer: Writer) -> str | None:
    """The tool ``writer``'s change in the checkpoint with ``message`` was made with, as far
    as recorded: the checkpoint's own (a capture of the turn's shell command), else the one the
    checkpoint before it was taken before, when that one was the same turn's."""
    own = metadata.parse(message)
    if own.turn == writer.turn and metadata.action_of(message) == metadata.CAPTURED:
        return own.tool
    before = metadata.parse(previous)
    if before.turn == writer.turn and metadata.action_of(previous) is None:
        return before.tool
    return None


def declared_tool(previous: str, path: str) -> str | None:
    """The tool the checkpoint before was taken before, outside any turn, when it declared
    ``path`` (or no paths): the write that followed was announced by that tool, though no
    turn names its writer."""
    meta = metadata.parse(previous)
    if meta.tool is None or meta.turn is not None or metadata.action_of(previous) is not None:
        return None
    return meta.tool if not meta.paths or history.under(path, meta.paths) else None


@dataclass(frozen=True)
class Unrecorded:
    """Who made the changes the desk holds beyond the newest checkpoint.

    Attributes:
        sealed: The seal holding the agent's write since the newest checkpoint, when it
            differs from it (an announcement holds no write): the changes up to its tree are
            ``writer``'s, the rest no turn's.
        writer: The turn whose changes the desk holds beyond the newest checkpoint
            (``external.writer``).
        outside: The paths of the desk changed outside the agent.
    """

    sealed: CommitInfo | None
    writer: Writer | None
    outside: frozenset[str]
    record: Mapping[str, calls.Call] = field(default_factory=dict)

    def sealed_credit(self, path: str, entry: FileEntry | None) -> Credit:
        """Who made the change of ``path`` to ``entry`` from the newest checkpoint to the
        seal: the calls on record say, else the seal's writer."""
        return _by_calls(self.record, path, entry) or self.writer

    def tool_of(self, writer: Writer, path: str) -> str | None:
        """The tool of ``writer``'s last call on record that wrote ``path`` (None: none
        did)."""
        wrote = [
            call
            for call in self.record.values()
            if call.writer == writer and call.outcome == calls.WROTE and path in call.left
        ]
        return max(wrote, key=lambda call: call.ended or 0).tool if wrote else None

    def credit(self, path: str, entry: FileEntry | None) -> Credit:
        """Who made the change of ``path`` to ``entry`` (what the desk holds there) from the
        seal (without one, from the newest checkpoint) to the desk."""
        called = _by_calls(self.record, path, entry)
        if called is not None:
            return called
        if self.sealed is not None or path in self.outside:
            return None
        return self.writer


def _by_calls(record: Mapping[str, calls.Call], path: str, entry: FileEntry | None) -> Credit:
    """Who the calls on record say changed ``path`` to ``entry`` (None: no call explains it)."""
    found = calls.credit(record, [(path, entry)])
    maybe = frozenset(writer for writer, paths in found.uncertain.items() if path in paths)
    if maybe:
        return Maybe(maybe)
    for writer, paths in found.wrote.items():
        if path in paths:
            return Then(writer) if path in found.changed_after.get(writer, ()) else writer
    return None


def unrecorded(repo: ShadowRepo, head_tree: bytes | None, outside: Collection[str]) -> Unrecorded:
    """Who made the desk's changes since the newest checkpoint, whose tree is ``head_tree``,
    given the paths changed outside the agent (see the module notes)."""
    writer = external.writer(repo)
    seal = external.current_seal(repo, repo.head())
    if seal is not None and metadata.action_of(seal.message) == external.ANNOUNCE:
        seal = None
    if seal is not None and seal.tree == head_tree:
        seal = None
    return Unrecorded(seal, writer, frozenset(outside), calls.load(repo.path))
