"""Telling the agent's own changes apart from edits made afterwards by someone else.

The *sealed state* is the state the agent (or a restore) left the desk in:

- ``Checkpoints.seal()``, called once a write tool has run, records the desk as it is now in a
  commit outside the branch, referenced by ``refs/checkpoints/sealed`` (so git keeps its
  objects and real git can inspect it). Its parent is the newest checkpoint at sealing time.
- Every restore, undo and redo seals the state it wrote (the ref then names the newest
  checkpoint itself).

A seal holds while the newest checkpoint is the one it was made on (a later snapshot supersedes
it). Against that state, any difference in the desk — by content, not by mtime — is an
*external* change. Without a current seal, the newest checkpoint's declared paths
(``snapshot(..., paths=[...])``) tell which changes the agent announced: changes elsewhere are
external. When the newest checkpoint declared nothing and nothing was sealed, the product
cannot tell who changed what, and reports the attribution as ``unknown`` (no external paths).

A snapshot that finds nothing changed makes no checkpoint, so the paths it declares would be
lost (and an older seal would wrongly still hold): it moves the seal to an *announcement* — a
commit with the newest checkpoint's tree and the declared paths (``Checkpoint-Action:
announce``) — so the write that follows is attributed to the agent.

Seal and announcement commits are reachable only from ``refs/checkpoints/sealed`` (one at a
time, no reflog); superseded ones become unreachable objects that ``git gc``/prune may drop.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..core.trees import FileEntry, build_trees
from ..store import metadata
from ..store.commitinfo import CommitInfo
from ..store.repo import ShadowRepo
from .session import LockedSession, ReadSession

SEAL_REF = b'refs/checkpoints/sealed'
ANNOUNCE = 'announce'
RESTORED_STATE = 'restored-state'  # a seal of the newest checkpoint without the files it kept

SEALED = 'sealed'  # measured against a seal (explicit, or left by a restore/undo/redo)
DECLARED = 'declared'  # measured against the newest checkpoint and the paths it declared
UNKNOWN = 'unknown'  # no seal and no declared paths: cannot attribute changes
NONE = 'none'  # no checkpoint yet


@dataclass(frozen=True)
class Attribution:
    """Which of the desk's current changes were made outside the agent.

    Attributes:
        basis: ``sealed``, ``declared``, ``unknown`` or ``none`` (see the module notes).
        external: Paths whose content differs from the state the agent left, sorted.
        left: The files of the state the agent left, when they were read (for ``sealed`` the
            seal's, for ``declared`` the newest checkpoint's); empty otherwise.
    """

    basis: str
    external: tuple[str, ...] = ()
    left: Mapping[str, FileEntry] = field(default_factory=dict)


def attribute(
    session: ReadSession, desk: Mapping[str, FileEntry], desk_tree: bytes | None = None
) -> Attribution:
    """Compares the desk (a scan's files) with the state the agent left.

    Declared paths may be desk-relative (``notes/a.md``, ``./notes/a.md``) or absolute paths
    inside the desk. ``desk_tree``, the desk's tree id when known without building it, lets an
    unchanged desk skip reading the state the agent left.
    """
    repo = session.repo
    head = repo.head()
    if head is None:
        return Attribution(NONE)
    seal = current_seal(repo, head)
    if seal is not None and metadata.action_of(seal.message) != ANNOUNCE:
        if desk_tree is not None and desk_tree == seal.tree:
            return Attribution(SEALED)
        left, _ = session.flatten(seal.tree)
        return Attribution(SEALED, _differing(left, desk), left)
    head_info = seal or repo.commit_info(head)
    declared = metadata.parse(head_info.message).paths
    if not declared:
        return Attribution(UNKNOWN)
    desk_directory = session.config.desk
    declared = tuple(
        path for path in (_relative(item, desk_directory) for item in declared) if path
    )
    if not declared:
        return Attribution(UNKNOWN)
    if desk_tree is not None and desk_tree == head_info.tree:
        return Attribution(DECLARED)
    left, _ = session.flatten(head_info.tree)
    changed = _differing(left, desk)
    return Attribution(
        DECLARED,
        tuple(
            path
            for path in changed
            if not any(path == item or path.startswith(item + '/') for item in declared)
        ),
        left,
    )


def _relative(declared: str, desk_directory: Path | None) -> str | None:
    """A declared path as a desk-relative one, or None when it lies outside the desk."""
    path = declared.replace('\\', '/').strip()
    if desk_directory is not None and os.path.isabs(path):
        root = os.path.realpath(desk_directory)
        full = os.path.realpath(path)
        if full != root and not full.startswith(root.rstrip(os.sep) + os.sep):
            return None
        path = os.path.relpath(full, root).replace(os.sep, '/')
    path = posixpath.normpath(path.strip('/') or '.')  # './a/', 'a/./b', 'a/../..'
    return None if path in ('.', '..') or path.startswith('../') else path


def _differing(left: Mapping[str, FileEntry], desk: Mapping[str, FileEntry]) -> tuple[str, ...]:
    return tuple(sorted(path for path in set(left) | set(desk) if left.get(path) != desk.get(path)))


def seal(session: LockedSession) -> bytes:
    """Records the desk as it is now as the state the agent left; returns the seal's commit."""
    repo = session.repo
    result, cache = session.scan(record=True)
    head = repo.head()
    tree = session.tree_of(result, cache)
    if head is not None and repo.commit_info(head).tree == tree:
        repo.set_ref(SEAL_REF, head)
        return head
    _, built = session.desk.trees(result, cache)
    repo.write_objects(session.new_objects(result, []))  # blobs the branch does not hold yet
    sha = session.commit_tree(tree, built, 'sealed: the state the agent left\n', move_branch=False)
    repo.set_ref(SEAL_REF, sha)
    return sha


def mark_sealed(session: LockedSession) -> None:
    """After a restore: the newest checkpoint is the state the product left."""
    repo = session.repo
    head = repo.head()
    if head is not None:
        repo.set_ref(SEAL_REF, head)


def seal_files(session: LockedSession, files: Mapping[str, FileEntry]) -> None:
    """Seals a given state (not the desk's): after a restore that kept files changed outside
    the agent, the state the agent left is the restored one with those files as it left them,
    so they still count as changed outside the agent afterwards."""
    trees, built = build_trees(dict(files), set(), {})
    message = metadata.message(
        'sealed: the restored state as the agent left it', [(metadata.ACTION, RESTORED_STATE)]
    )
    sha = session.commit_tree(trees[''], built, message, move_branch=False)
    session.repo.set_ref(SEAL_REF, sha)


def agent_baseline(repo: ShadowRepo, head: bytes) -> bytes:
    """The newest checkpoint's tree as the agent left it: the tree of a restore's seal that
    kept files changed outside the agent, else the checkpoint's own."""
    seal = current_seal(repo, head)
    if seal is not None and metadata.action_of(seal.message) == RESTORED_STATE:
        return seal.tree
    return repo.commit_info(head).tree


def agent_view(desk: Mapping[str, FileEntry], attribution: Attribution) -> dict[str, FileEntry]:
    """The desk as the agent left it: every path changed outside the agent put back to the
    state the agent left (the desk itself when nothing could be told apart)."""
    view = dict(desk)
    for path in attribution.external:
        entry = attribution.left.get(path)
        if entry is None:
            view.pop(path, None)
        else:
            view[path] = entry
    return view


def current_seal(repo: ShadowRepo, head: bytes | None) -> CommitInfo | None:
    """The seal, if it was made on the newest checkpoint (else a later snapshot superseded it)."""
    sha = repo.read_ref(SEAL_REF)
    if sha is None or head is None or not repo.contains(sha):
        return None
    info = repo.commit_info(sha)
    if not repo.contains(info.tree):
        return None  # its objects were pruned: as good as no seal
    if sha == head or (info.parents and info.parents[0] == head):
        return info
    return None


def announce(session: LockedSession, message: str) -> None:
    """After a snapshot that found nothing changed: the agent is about to write again.

    No checkpoint is made, so the paths it declares would be lost and the last seal would
    wrongly hold; instead the seal becomes an *announcement* on the newest checkpoint carrying
    the declared paths (skipped when the effective declaration is already the same).
    """
    repo = session.repo
    text = announcement(repo, message)
    if text is None:
        return
    head = repo.head()
    if head is None:
        return
    commit = repo.make_commit(repo.commit_info(head).tree, head, text)
    repo.write_objects([commit])
    repo.set_ref(SEAL_REF, commit.id)


def announcement(repo: ShadowRepo, message: str) -> str | None:
    """The message of the announcement :func:`announce` would write (reads only), or None
    when there is no checkpoint or the effective declaration is already the same."""
    head = repo.head()
    if head is None:
        return None
    declared = metadata.parse(message).paths
    seal = current_seal(repo, head)
    if seal is None:
        if metadata.parse(repo.commit_info(head).message).paths == declared:
            return None
    elif (
        metadata.action_of(seal.message) == ANNOUNCE
        and metadata.parse(seal.message).paths == declared
    ):
        return None
    existing = metadata.trailers(message)
    text = message.rstrip('\n') + ('\n' if existing else '\n\n')
    return text + f'{metadata.ACTION}: {ANNOUNCE}\n'
