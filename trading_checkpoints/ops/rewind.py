"""Rewinding an agent turn: the paths the turn wrote, put back as they were before it.

``restore_turn(TURN)`` reverts what turn TURN wrote, and nothing else: what later turns, other
sessions, a person or a script changed elsewhere stays. So two agents on one desk can each
rewind their own answer. A path the turn wrote that someone else (another turn, a person)
changed afterwards is a conflict: refused by default (``TurnConflictError`` naming the paths),
overwritten when forced (the pre-snapshot keeps what was there), or kept as it is.

Who wrote what is read from the branch, oldest first from the checkpoint before the turn's
first one, then the desk (:func:`plan`), as ``credits`` reads each checkpoint's record; the
entry the turn's first write replaced counts as the turn's own (a rewind of the turn's work
is not someone else's change).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..core.ids import short_id
from ..core.trees import FileEntry
from ..desk.scan import LazyFiles
from ..errors import (
    ExternalChangesError,
    NoCheckpointsError,
    OverSizeLimitError,
    TurnConflictError,
    UnknownTurnError,
)
from ..store import metadata
from ..store.commitinfo import CommitInfo
from ..store.metadata import Writer
from . import credits, dryrun, external, history, restore
from .credits import Maybe, Then
from .request import Request
from .results import RestoreResult
from .session import LockedSession, ReadSession

_TURN_BEFORE = 'the entry before the turn wrote it'  # a seen-entry marker, not a writer

Credit = credits.Credit | str  # who made a change, or the marker


@dataclass(frozen=True)
class Rewind:
    """What rewinding a turn puts back.

    Attributes:
        first: The turn's first checkpoint (full id).
        overlay: Each path the turn wrote, with the entry it had before the turn first wrote
            it (None: it did not exist); paths that already hold it are left out.
        others: Of those, the paths someone else changed after the turn first did.
        uncertain: Of those, the paths the turn may have written while another writer may
            have too (two sessions at work at once, or a tool call that was denied or failed).
        declared: The paths the turn's checkpoints declared its writes to be about to change.
    """

    first: bytes
    overlay: dict[str, FileEntry | None]
    others: frozenset[str]
    uncertain: frozenset[str] = frozenset()
    declared: frozenset[str] = frozenset()


def restore_turn(session: LockedSession, turn_id: str, policy: str, dry_run: bool) -> RestoreResult:
    """Rewinds the turn through the restore pipeline (see the module notes); the paths someone
    else changed since are decided by ``policy`` (``request.POLICIES``)."""
    found, cache = session.scan()
    outside = external.attribute(session, LazyFiles(found), session.known_tree(found, cache))
    rewind = plan(session, turn_id, found.files, outside.external)
    too_large = sorted(found.oversize & rewind.declared)
    if too_large:
        # No checkpoint holds what the turn wrote there (a file over the limit is carried as
        # it was), so the rewind would leave it as the turn left it and say nothing.
        raise OverSizeLimitError(
            f'cannot rewind turn {turn_id}: {too_large[0]}, which it wrote, is over the '
            'maximum file size, so no checkpoint holds what it wrote there; nothing was '
            'changed (raise the limit, or restore the file by hand)',
            path=too_large[0],
            limit=session.desk.max_file_size,
        )
    request = Request(
        rewind.first,
        short_id(rewind.first),
        overlay=rewind.overlay,
        others=rewind.others | rewind.uncertain,
        subject=f'rewound turn {turn_id}',
        before_subject=f'before rewinding turn {turn_id}',
        dry_run=dry_run,
        on_external=policy,
    )
    try:
        return restore.restore(session, request)  # a dry run refuses where the run would
    except TurnConflictError:
        raise
    except ExternalChangesError as refused:
        paths = refused.paths
        shown = ', '.join(paths[:5]) + (' ...' if len(paths) > 5 else '')
        unsure = [path for path in paths if path in rewind.uncertain]
        why = (
            f'{len(paths)} file(s) it wrote were changed since by another turn or writer'
            if not unsure
            else f'{len(paths)} file(s) it may have written were changed by another turn or '
            f'writer at the same time, or by a tool call that was denied or failed '
            f'({len(unsure)} uncertain)'
        )
        raise TurnConflictError(
            f'{dryrun.refusing(dry_run)} rewind turn {turn_id}: {why}: {shown}; nothing was '
            'changed (force it to put them back as before the turn, the current ones kept in the '
            'pre-snapshot, or keep them as they are)',
            paths,
            turn=turn_id,
        ) from None


def plan(
    session: ReadSession,
    turn_id: str,
    desk: Mapping[str, FileEntry],
    outside: tuple[str, ...],
) -> Rewind:
    """What rewinding ``turn_id`` puts back, given the desk's files and the paths of the desk
    changed outside the agent (see the module notes)."""
    repo = session.repo
    chain: list[CommitInfo] = []
    oldest: dict[str, int] = {}
    declared: set[str] = set()  # what the turn's checkpoints declared it was about to write
    for position, info in enumerate(repo.history()):
        chain.append(info)
        parsed = metadata.parse(info.message)
        if parsed.turn is not None:
            oldest[parsed.turn] = position
        if parsed.turn == turn_id:
            declared.update(parsed.paths)
    if not chain:
        raise NoCheckpointsError(f'no checkpoints yet in {repo.path}', repository=repo.path)
    if turn_id not in oldest:
        raise UnknownTurnError(
            f'no turn {turn_id!r} in {repo.path} (`checkpoints turns` lists them)', turn=turn_id
        )
    start = oldest[turn_id]
    first = chain[start]
    walk = _Walk(turn_id, session.allowlist.covers)
    before = _parent(session, first)
    previous = before.message if before is not None else ''
    tree = before.tree if before is not None else None
    pruned = before is None and bool(first.parents)  # the checkpoint before it was pruned
    for info in reversed(chain[: start + 1]):
        credit = credits.of_checkpoint(info.message, previous, walk.seen)
        for path, old, new in history.changed_files(repo, tree, info.tree):
            writer = credit(path, new)
            if pruned and walk.tracked(path) and any(map(walk.ours, credits.writers_of(writer))):
                # The oldest checkpoint kept holds the turn's write: what was there before it
                # went with the pruned one (rewound, the file would be deleted).
                raise UnknownTurnError(
                    f'cannot rewind turn {turn_id}: its start was pruned, so what {path} held '
                    'before the turn is no longer known (`checkpoints restore ID` still puts '
                    'back any checkpoint kept)',
                    turn=turn_id,
                )
            walk.change(path, old, new, writer)
        pruned = False
        previous, tree = info.message, info.tree
    since = credits.unrecorded(repo, tree, outside)
    if since.sealed is not None:
        # The agent's write the seal holds, then what others did since.
        for path, old, new in history.changed_files(repo, tree, since.sealed.tree):
            walk.change(path, old, new, since.sealed_credit(path, new))
        tree = since.sealed.tree
    left, _ = session.flatten(tree) if tree is not None else ({}, {})
    for path in sorted(set(left) | set(desk)):
        old, new = left.get(path), desk.get(path)
        if old != new:
            walk.change(path, old, new, since.credit(path, new))
    overlay = {p: e for p, e in walk.before.items() if desk.get(p) != e}
    return Rewind(
        first.sha.encode(),
        overlay,
        frozenset(walk.others & set(overlay)),
        frozenset(walk.uncertain & set(overlay)),
        frozenset(declared),
    )


def _parent(session: ReadSession, info: CommitInfo) -> CommitInfo | None:
    """The checkpoint before ``info``, when the store still holds it (pruning may drop it)."""
    if not info.parents or not session.repo.contains(info.parents[0]):
        return None
    return session.repo.commit_info(info.parents[0])


class _Walk:
    """The paths the turn wrote, each one's entry before its first write, and the paths
    someone else changed after that."""

    def __init__(self, turn_id: str, tracked: Callable[[str], bool]) -> None:
        self.turn_id = turn_id
        self.tracked = tracked
        self.before: dict[str, FileEntry | None] = {}
        self.others: set[str] = set()
        self.uncertain: set[str] = set()
        self.seen: dict[tuple[str, FileEntry | None], Credit] = {}

    def ours(self, writer: Credit) -> bool:
        if writer == _TURN_BEFORE:
            return True
        return isinstance(writer, Writer) and writer.turn == self.turn_id

    def change(
        self, path: str, old: FileEntry | None, new: FileEntry | None, writer: Credit
    ) -> None:
        if not self.tracked(path):
            return
        if isinstance(writer, Then):
            if self.ours(writer.writer) and path not in self.before:
                self.before[path] = old
            writer = None  # the last change was someone else's
        if isinstance(writer, Maybe):
            if any(self.ours(each) for each in writer.writers):
                if path not in self.before:
                    self.before[path] = old
                    self.seen[(path, old)] = _TURN_BEFORE
                self.uncertain.add(path)
            elif path in self.before:
                self.others.add(path)
            self.seen[(path, new)] = writer
            return
        if self.ours(writer):
            if path not in self.before:
                self.before[path] = old
                self.seen[(path, old)] = _TURN_BEFORE
        elif path in self.before:
            self.others.add(path)
        self.seen[(path, new)] = writer
