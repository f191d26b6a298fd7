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

Semantics — the branch read as an editor's undo history:

- Every snapshot, pre-snapshot and restored state (``restore``) is an *entry*. Its
  *predecessor* is the entry that was current when it was made: its parent's entry. An undo
  commit stands for the entry it went back to (``Checkpoint-Target``); a redo commit for the
  entry its undo had left (``Checkpoint-Redo-Of`` -> ``Checkpoint-Undo-Of``).
- ``undo()``: when the desk differs from the newest checkpoint (a write since the last
  snapshot, restore, undo or redo), it restores the current entry — the state that change
  started from. Otherwise it restores the current entry's predecessor (skipping any equal to
  the desk). So three undos undo the last three writes; an undo right after a restore undoes
  that restore; and a write made after an undo starts a new branch, whose undo returns to
  where the undo had left the desk (the undone branch stays in the repository).
- ``redo()`` reverses the newest undo not yet redone: it walks back over the consecutive
  undo and redo commits at the top of the branch (each redo cancels one undo) and restores
  the state that undo replaced. Any other commit — a new snapshot, restore, or the
  pre-snapshot of changes made since — ends that chain: new writes after an undo clear the
  redo chain. When the desk changed since the last undo/redo, ``redo`` refuses unless forced.

:func:`undo` and :func:`redo` pick their target so and hand it to ``restore.restore`` as a
:class:`request.Request` (which also names the trailers above).
"""

from __future__ import annotations

import re

from ..core.ids import short_id
from ..core.trees import FileEntry, build_trees
from ..errors import CorruptRepositoryError, ExternalChangesError, NothingToUndoError
from ..store import metadata
from ..store.commitinfo import CommitInfo
from ..store.metadata import ACTION
from ..store.repo import ShadowRepo
from . import dryrun, external, restore
from .request import (
    OVERWRITE,
    REDO,
    REDO_OF,
    TARGET,
    UNDO,
    UNDO_OF,
    Request,
    compose,
)
from .results import RestoreResult
from .session import LockedSession, ReadSession

__all__ = ['ACTION', 'NothingToUndoError', 'compose']


_FULL_ID = re.compile(r'[0-9a-f]{40}')


def trailers(message: str) -> dict[str, list[str]]:
    """The trailers of a commit message, by key (see :func:`metadata.trailers`)."""
    return metadata.trailer_values(message)


def _one(info: CommitInfo, key: str) -> str | None:
    values = trailers(info.message).get(key)
    return values[-1] if values else None


def action_of(info: CommitInfo) -> str | None:
    return _one(info, ACTION)


def _sha(repo: ShadowRepo, value: str | None) -> bytes | None:
    """The commit a trailer value names, or None when it is malformed, missing or no commit."""
    if not value or not _FULL_ID.fullmatch(value.strip()):
        return None
    sha = value.strip().encode()
    if not repo.contains(sha):
        return None
    try:
        repo.commit_info(sha)
    except CorruptRepositoryError:
        return None  # not a commit (or unreadable): as good as absent
    return sha


def entry(repo: ShadowRepo, sha: bytes) -> CommitInfo:
    """The history entry a commit stands for: itself, or for an undo/redo the state it put back."""
    seen: set[bytes] = set()
    while sha not in seen:
        seen.add(sha)
        info = repo.commit_info(sha)
        action = action_of(info)
        if action == UNDO:
            target = _sha(repo, _one(info, TARGET))
        elif action == REDO:
            undone = _sha(repo, _one(info, REDO_OF))
            target = _sha(repo, _one(repo.commit_info(undone), UNDO_OF)) if undone else None
        else:
            return info
        if target is None:
            return info
        sha = target
    return repo.commit_info(sha)


def predecessor(repo: ShadowRepo, info: CommitInfo) -> CommitInfo | None:
    """The entry that was current when ``info`` (an entry) was made: its parent's entry."""
    if not info.parents or not repo.contains(info.parents[0]):
        return None
    return entry(repo, info.parents[0])


def undo_target(repo: ShadowRepo, desk_tree: bytes, head_tree: bytes | None = None) -> CommitInfo:
    """The entry ``undo()`` restores (see the module notes); ``head_tree`` is the newest
    checkpoint's tree as the agent left it, when that differs from its own."""
    head = repo.head()
    if head is None:
        raise NothingToUndoError('nothing to undo: no checkpoints yet')
    current = entry(repo, head)
    if (head_tree or repo.commit_info(head).tree) != desk_tree:
        # Changed since the newest checkpoint: back to the state the change started from.
        candidate: CommitInfo | None = current
    else:
        candidate = predecessor(repo, current)
    while candidate is not None and candidate.tree == desk_tree:
        candidate = predecessor(repo, candidate)
    if candidate is None:
        raise NothingToUndoError(
            'nothing left to undo: the desk is at the oldest state of its history'
        )
    return candidate


def redo_source(repo: ShadowRepo) -> tuple[CommitInfo, bytes]:
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
        raise CorruptRepositoryError(
            f'the undo {found.short_id} does not record the state it undid', path=repo.path
        )
    return found, state


# -- the verbs ------------------------------------------------------------------------------


def undo(session: LockedSession, policy: str, dry_run: bool) -> RestoreResult:
    """Restores the entry ``undo()`` goes back to (see the module notes); ``policy`` (see
    ``request.undo_policy``) says what becomes of the files changed outside the agent."""
    view, baseline, _ = _agent_trees(session, policy)
    step = undo_target(session.repo, view, baseline)
    request = Request(
        step.sha.encode(),
        step.short_id,
        action=UNDO,
        subject=f'undo: back to {step.short_id} ({step.subject})',
        dry_run=dry_run,
        on_external=policy,
    )
    return restore.restore(session, request)


def redo(session: LockedSession, policy: str, dry_run: bool) -> RestoreResult:
    """Reverses the newest undo not yet redone (see the module notes); unless ``policy``
    overwrites, refuses when the agent changed the desk since that undo."""
    undone, state = redo_source(session.repo)
    head = session.repo.head()
    view, baseline, files = _agent_trees(session, policy)
    if policy != OVERWRITE and head and view != baseline:
        held, _ = session.flatten(baseline)
        changed = sorted(p for p in {*held, *files} if held.get(p) != files.get(p))
        raise ExternalChangesError(
            f'{dryrun.refusing(dry_run)} redo: the agent changed the desk since the last undo '
            f'({", ".join(changed[:5])}), and redo would overwrite that; nothing was changed '
            '(force it to redo anyway: the changes are kept in a pre-snapshot)',
            changed,
            overrides=(OVERWRITE,),  # keeping them is no redo: only force goes ahead
        )
    request = Request(
        state,
        short_id(state),
        action=REDO,
        subject=f'redo: reverse undo {undone.short_id}',
        trailers=[(REDO_OF, undone.sha)],
        dry_run=dry_run,
        on_external=policy,
    )
    return restore.restore(session, request)


def _agent_trees(session: ReadSession, policy: str) -> tuple[bytes, bytes, dict[str, FileEntry]]:
    """What undo and redo measure the agent's steps with: the desk as the agent left it
    (changes made outside it left out, unless they are to be overwritten anyway) as a tree and
    as files, and the newest checkpoint's tree as the agent left it (see
    ``external.agent_baseline``)."""
    repo = session.repo
    result, cache = session.scan()
    head = repo.head()
    head_tree = repo.commit_info(head).tree if head is not None else b''
    if policy == OVERWRITE:
        return session.tree_of(result, cache), head_tree, result.files
    baseline = external.agent_baseline(repo, head) if head is not None else head_tree
    attribution = external.attribute(session, result.files, session.known_tree(result, cache))
    if not attribution.external:
        return session.tree_of(result, cache), baseline, result.files
    view = external.agent_view(result.files, attribution)
    trees, _ = build_trees(view, set(), {})
    return trees[''], baseline, view
