"""Undo and redo that walk back and forth through a desk's checkpoints.

Both are ordinary restores (a pre-snapshot first, then a commit recording the restored state),
so each can itself be undone and nothing is ever lost. Their bookkeeping lives in the
repository, as trailers on the commits restores make, so the library and the command line (and
several processes) always agree:

- ``Checkpoint-Action:`` ``restore``, ``undo`` or ``redo`` on the commit recording a restored
  state; ``before-restore``, ``before-undo``, ``before-redo`` on the snapshot taken just before.
- ``Checkpoint-Target:`` the full id of the checkpoint whose files were put back.
- ``Checkpoint-Undo-Of:`` on an undo: the state it undid (its pre-snapshot, or the newest
  checkpoint when the desk had not changed).
- ``Checkpoint-Redo-Of:`` on a redo: the undo it reverses.

Semantics:

- *Steps* are the checkpoints on the branch except those made by undo and redo and the
  commits recording restored states; ordinary snapshots and the ``before-restore`` snapshot
  of a plain restore are steps (so an undo right after a restore undoes that restore).
- The *undo position* is the step the last undo (or the undo a redo reversed, recursively)
  returned to — but only while the desk is exactly as that undo/redo left it. Otherwise the
  position is the present.
- ``undo()`` restores the newest step older than the position whose files differ from the
  desk. Three undos in a row therefore undo the last three writes.
- ``redo()`` reverses the newest undo not yet redone: it walks back over the consecutive
  undo and redo commits at the top of the branch (each redo cancels one undo) and restores
  the state that undo replaced. Any other commit — a new snapshot, or the pre-snapshot of
  changes made since — ends that chain: new writes after an undo clear the redo chain. When
  the desk changed since the last undo/redo, ``redo`` refuses unless forced.
"""

from __future__ import annotations

from collections.abc import Iterable

from dulwich.trailers import Trailer, format_trailers, parse_trailers

from .errors import CheckpointError
from .repo import CommitInfo, ShadowRepo

ACTION = 'Checkpoint-Action'
TARGET = 'Checkpoint-Target'
UNDO_OF = 'Checkpoint-Undo-Of'
REDO_OF = 'Checkpoint-Redo-Of'

RESTORE, UNDO, REDO = 'restore', 'undo', 'redo'
# Commits that are not steps an undo walks back to.
NOT_STEPS = frozenset({RESTORE, UNDO, REDO, 'before-undo', 'before-redo'})


class NothingToUndoError(CheckpointError):
    """There is no earlier checkpoint to go back to, or no undo to reverse."""


def trailers(message: str) -> dict[str, list[str]]:
    """The trailers of a commit message, by key."""
    _, found = parse_trailers(message.encode('utf-8', 'surrogateescape'))
    out: dict[str, list[str]] = {}
    for trailer in found:
        out.setdefault(trailer.key, []).append(trailer.value)
    return out


def _one(info: CommitInfo, key: str) -> str | None:
    values = trailers(info.message).get(key)
    return values[-1] if values else None


def action_of(info: CommitInfo) -> str | None:
    return _one(info, ACTION)


def compose(subject: str, pairs: Iterable[tuple[str, str]]) -> str:
    """A commit message: a subject line and trailers."""
    items = [Trailer(key, ' '.join(value.split())) for key, value in pairs if value]
    if not items:
        return subject + '\n'
    return subject + '\n\n' + format_trailers(items).decode('utf-8')


def _sha(repo: ShadowRepo, value: str | None) -> bytes | None:
    if not value:
        return None
    sha = value.strip().encode()
    return sha if len(sha) == 40 and repo.contains(sha) else None


def position(repo: ShadowRepo, sha: bytes) -> bytes | None:
    """The step an undo/redo commit stands at, or None (the present) for any other commit."""
    seen: set[bytes] = set()
    current: bytes | None = sha
    while current is not None and current not in seen:
        seen.add(current)
        info = repo.commit_info(current)
        action = action_of(info)
        if action == UNDO:
            return _sha(repo, _one(info, TARGET))
        if action != REDO:
            return None
        undone = _sha(repo, _one(info, REDO_OF))
        if undone is None:
            return None
        current = _sha(repo, _one(repo.commit_info(undone), UNDO_OF))
    return None


def undo_target(repo: ShadowRepo, desk_tree: bytes) -> CommitInfo:
    """The step ``undo()`` restores (see the module notes)."""
    head = repo.head()
    if head is None:
        raise NothingToUndoError('nothing to undo: no checkpoints yet')
    at = position(repo, head) if repo.commit_info(head).tree == desk_tree else None
    passed = at is None
    for info in repo.history():
        if not passed:
            passed = info.sha.encode() == at
            continue
        if action_of(info) in NOT_STEPS:
            continue
        if info.tree != desk_tree:
            return info
    raise NothingToUndoError('nothing left to undo: the desk already matches the oldest checkpoint')


def redo_source(repo: ShadowRepo, desk_tree: bytes, force: bool) -> tuple[CommitInfo, bytes]:
    """The undo ``redo()`` reverses and the state to restore (see the module notes)."""
    head = repo.head()
    if head is None:
        raise NothingToUndoError('nothing to redo: no checkpoints yet')
    pending = 0
    found: CommitInfo | None = None
    for info in repo.history():
        action = action_of(info)
        if action == REDO:
            pending += 1
        elif action == UNDO:
            if pending == 0:
                found = info
                break
            pending -= 1
        else:
            break
    if found is None:
        raise NothingToUndoError(
            'nothing to redo: no undo left to reverse since the last new checkpoint'
        )
    state = _sha(repo, _one(found, UNDO_OF))
    if state is None:
        raise CheckpointError(f'the undo {found.short_id} does not record the state it undid')
    if repo.commit_info(head).tree != desk_tree and not force:
        raise CheckpointError(
            'the desk changed since the last undo; redo would overwrite those changes '
            '(force it to redo anyway: the changes are kept in a pre-snapshot)'
        )
    return found, state
