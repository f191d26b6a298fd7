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
from dataclasses import dataclass
from pathlib import Path

from . import metadata, undo
from .errors import CheckpointError
from .paths import Allowlist
from .repo import CommitInfo, ShadowRepo
from .statcache import StatCache
from .worktree import FileEntry, Scan, build_trees, dirty_folders

SEAL_REF = b'refs/checkpoints/sealed'
ANNOUNCE = 'announce'

SEALED = 'sealed'  # measured against a seal (explicit, or left by a restore/undo/redo)
DECLARED = 'declared'  # measured against the newest checkpoint and the paths it declared
UNKNOWN = 'unknown'  # no seal and no declared paths: cannot attribute changes
NONE = 'none'  # no checkpoint yet


class ExternalChangesError(CheckpointError):
    """A restore, undo or redo would overwrite changes made outside the agent (use force)."""

    def __init__(self, message: str, paths: tuple[str, ...]) -> None:
        super().__init__(message)
        self.paths = paths


@dataclass(frozen=True)
class Attribution:
    """Which of the desk's current changes were made outside the agent.

    Attributes:
        basis: ``sealed``, ``declared``, ``unknown`` or ``none`` (see the module notes).
        external: Paths whose content differs from the state the agent left, sorted.
    """

    basis: str
    external: tuple[str, ...] = ()


def attribute(
    repo: ShadowRepo,
    allowlist: Allowlist,
    desk: dict[str, FileEntry],
    desk_directory: Path | None = None,
    desk_tree: bytes | None = None,
) -> Attribution:
    """Compares the desk (a scan's files) with the state the agent left.

    Declared paths may be desk-relative (``notes/a.md``, ``./notes/a.md``) or absolute paths
    inside ``desk_directory``. ``desk_tree``, the desk's tree id when known without building
    it, lets an unchanged desk skip reading the state the agent left.
    """
    head = repo.head()
    if head is None:
        return Attribution(NONE)
    seal = current_seal(repo, head)
    if seal is not None and undo.action_of(seal) != ANNOUNCE:
        if desk_tree is not None and desk_tree == seal.tree:
            return Attribution(SEALED)
        left, _ = repo.flatten_tree(seal.tree, allowlist)
        return Attribution(SEALED, _differing(left, desk))
    head_info = seal or repo.commit_info(head)
    declared = metadata.parse(head_info.message).paths
    if not declared:
        return Attribution(UNKNOWN)
    declared = tuple(
        path for path in (_relative(item, desk_directory) for item in declared) if path
    )
    if not declared:
        return Attribution(UNKNOWN)
    if desk_tree is not None and desk_tree == head_info.tree:
        return Attribution(DECLARED)
    left, _ = repo.flatten_tree(head_info.tree, allowlist)
    changed = _differing(left, desk)
    return Attribution(
        DECLARED,
        tuple(
            path
            for path in changed
            if not any(path == item or path.startswith(item + '/') for item in declared)
        ),
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
    while path.startswith('./'):
        path = path[2:]
    path = path.strip('/')
    return None if path in ('', '.') or path.startswith('../') else path


def _differing(left: dict[str, FileEntry], desk: dict[str, FileEntry]) -> tuple[str, ...]:
    return tuple(sorted(path for path in set(left) | set(desk) if left.get(path) != desk.get(path)))


def seal(repo: ShadowRepo, scan: Scan, cache: StatCache) -> bytes:
    """Records the scanned desk as the state the agent left; returns the seal's commit sha."""
    head = repo.head()
    removed = set(cache.files) - set(scan.files)
    trees, built = build_trees(scan.files, dirty_folders(scan.changed, removed), cache.trees)
    root = trees['']
    if head is not None and repo.commit_info(head).tree == root:
        repo.set_ref(SEAL_REF, head)
        return head
    objects = [blob for sha, blob in scan.new_blobs.items() if not repo.contains(sha)]
    objects += [tree for tree in built if not repo.contains(tree.id)]
    commit = repo.make_commit(root, head, 'sealed: the state the agent left\n')
    objects.append(commit)
    repo.write_objects(objects)
    repo.set_ref(SEAL_REF, commit.id)
    return commit.id


def mark_sealed(repo: ShadowRepo) -> None:
    """After a restore: the newest checkpoint is the state the product left."""
    head = repo.head()
    if head is not None:
        repo.set_ref(SEAL_REF, head)


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


def announce(repo: ShadowRepo, message: str) -> None:
    """After a snapshot that found nothing changed: the agent is about to write again.

    No checkpoint is made, so the paths it declares would be lost and the last seal would
    wrongly hold; instead the seal becomes an *announcement* on the newest checkpoint carrying
    the declared paths (skipped when the effective declaration is already the same).
    """
    head = repo.head()
    if head is None:
        return
    declared = metadata.parse(message).paths
    seal = current_seal(repo, head)
    if seal is None:
        if metadata.parse(repo.commit_info(head).message).paths == declared:
            return
    elif undo.action_of(seal) == ANNOUNCE and metadata.parse(seal.message).paths == declared:
        return
    existing = metadata.trailers(message)
    text = message.rstrip('\n') + ('\n' if existing else '\n\n')
    text += f'{undo.ACTION}: {ANNOUNCE}\n'
    commit = repo.make_commit(repo.commit_info(head).tree, head, text)
    repo.write_objects([commit])
    repo.set_ref(SEAL_REF, commit.id)
