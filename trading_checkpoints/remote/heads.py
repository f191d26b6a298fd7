"""What this desk knows of its history's ends: remote heads it has seen, shallow boundaries.

Every head this desk pushed, pulled or cloned is remembered (``checkpoints/remote-heads``):
such a head was on this desk's branch, so it is an ancestor of the kept history even after a
prune dropped it. After a fetch, any commit whose parent did not arrive (the remote was itself
pruned) is recorded as a shallow boundary (``store.transport.repair_shallow``), so the
repository stays readable.
"""

from __future__ import annotations

import re

from ..core import repofiles
from ..core.repofiles import RepoFile
from ..errors import CheckpointError
from ..store.repo import PRIVATE_DIR, ShadowRepo

_HEX_SHA = re.compile(rb'[0-9a-f]{40}')
KNOWN_HEADS = 'remote-heads'  # in the repository's private folder, see remember_head
_LIMIT = 64 * 1024


def _file(repo: ShadowRepo) -> RepoFile:
    return RepoFile(repo.path, f'{PRIVATE_DIR}/{KNOWN_HEADS}')


def ancestors(repo: ShadowRepo, head: bytes | None) -> list[bytes]:
    return [info.sha.encode() for info in repo.history()] if head else []


def known_heads(repo: ShadowRepo) -> set[bytes]:
    """Heads this desk pushed, pulled or cloned: each was on its branch, so is an ancestor.

    The branch only ever moves forward (snapshots, restores and fast-forward pulls add on top),
    so a commit that was its head once stays an ancestor of every later head, even after a
    prune dropped it. Malformed lines are ignored.
    """
    try:
        data = repofiles.read(_file(repo), _LIMIT) or b''
    except CheckpointError:
        return set()
    return {line for line in data.split(b'\n') if _HEX_SHA.fullmatch(line)}


def remember_head(repo: ShadowRepo, sha: bytes) -> None:
    """Adds ``sha`` (the branch's head now) to the known heads. Call under the lock."""
    try:
        data = repofiles.read(_file(repo), _LIMIT) or b''
    except CheckpointError:
        data = b''  # a link or a FIFO there is replaced
    lines = [line for line in data.split(b'\n') if _HEX_SHA.fullmatch(line) and line != sha]
    lines = [*lines[-255:], sha]
    repofiles.replace(_file(repo), b''.join(line + b'\n' for line in lines))


def commits_behind(repo: ShadowRepo) -> set[bytes]:
    """Commits known to be ancestors of the branch that it may no longer hold (pruned)."""
    return known_heads(repo) | shallow_parents(repo)


def shallow_parents(repo: ShadowRepo) -> set[bytes]:
    """Parents of the shallow boundary commits: what a pruned history leaves out."""
    from ..store.storage import read_shallow

    parents: set[bytes] = set()
    for sha in read_shallow(repo.path):
        if repo.contains(sha):
            parents.update(repo.commit_info(sha).parents)
    return parents
