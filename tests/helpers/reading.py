"""What a folder, a desk or a checkpoint holds, read back to be compared.

``tree_of`` and ``files_of`` read the file system without following symlinks; ``version_of``
and ``history`` read the shadow repository through the store, never through the desk.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from trading_checkpoints.core.paths import TRACKED_PATHS, Allowlist
from trading_checkpoints.core.trees import SYMLINK_MODE
from trading_checkpoints.ops import external
from trading_checkpoints.store.commitinfo import CommitInfo
from trading_checkpoints.store.repo import ShadowRepo

ALLOW = Allowlist(TRACKED_PATHS)

State = dict[str, tuple[str, bytes]]  # path -> ('-' | 'x' | 'link', bytes)


def tree_of(folder: Path) -> dict[str, object]:
    """Everything under a folder: files as bytes, symlinks as ('link', target), folders as 'dir'."""
    out: dict[str, object] = {}
    for current, folders, files in os.walk(folder):
        for name in folders + files:
            full = Path(current) / name
            rel = full.relative_to(folder).as_posix()
            if full.is_symlink():
                out[rel] = ('link', os.readlink(full))
            elif full.is_dir():
                out[rel] = 'dir'
            else:
                mode = 'x' if os.access(full, os.X_OK) else '-'
                out[rel] = (mode, full.read_bytes())
    return out


def files_of(folder: Path) -> State:
    """Every file and symlink under a folder (folders themselves are not compared)."""
    out: State = {}
    root = os.fspath(folder)
    for current, folders, names in os.walk(root):
        for name in folders + names:
            full = os.path.join(current, name)
            rel = os.path.relpath(full, root).replace(os.sep, '/')
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ('link', os.fsencode(os.readlink(full)))
            elif stat.S_ISREG(st.st_mode):
                with open(full, 'rb') as handle:
                    out[rel] = ('x' if st.st_mode & 0o100 else '-', handle.read())
    return out


def is_tracked(path: str, allow: Allowlist = ALLOW) -> bool:
    """Covered by the allowlist and not inside a nested repository (never snapshotted)."""
    return allow.covers(path) and '.git' not in path.split('/')


def tracked(state: State, allow: Allowlist = ALLOW) -> State:
    return {path: value for path, value in state.items() if is_tracked(path, allow)}


def untracked(state: State, allow: Allowlist = ALLOW) -> State:
    return {path: value for path, value in state.items() if not is_tracked(path, allow)}


def version_of(repo_dir: Path, sha: str, allow: Allowlist = ALLOW) -> State:
    """The tracked files a checkpoint holds, read straight from the repository."""
    repo = ShadowRepo.open(repo_dir)
    assert repo is not None
    try:
        full = repo.resolve(sha)
        files, _ = repo.flatten_tree(repo.commit_info(full).tree, allow)
        out: State = {}
        for path, (mode, blob) in files.items():
            kind = 'link' if mode == SYMLINK_MODE else ('x' if mode & 0o100 else '-')
            out[path] = (kind, repo.read_blob(blob))
        return out
    finally:
        repo.close()


def history(repo_dir: Path) -> list[str]:
    """Full ids newest first along first parents, asserting the history is linear."""
    repo = ShadowRepo.open(repo_dir)
    if repo is None:
        return []
    try:
        out = []
        for info in repo.history():
            assert len(info.parents) <= 1, f'merge commit {info.sha} in the history'
            out.append(info.sha)
        return out
    finally:
        repo.close()


@contextmanager
def opened(repo_dir: Path) -> Iterator[ShadowRepo]:
    """The shadow repository at ``repo_dir`` (it must exist), closed after the block."""
    repo = ShadowRepo.open(Path(repo_dir))
    assert repo is not None
    try:
        yield repo
    finally:
        repo.close()


def head_of(repo_dir: Path) -> str:
    """The full id of the newest checkpoint (the repository must hold one)."""
    with opened(repo_dir) as repo:
        head = repo.head()
    assert head is not None
    return head.decode()


def tree_reads(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The trees the repository flattens from now on (each read of a stored tree)."""
    reads: list[bytes] = []
    flatten = ShadowRepo.flatten_tree

    def counted(repo: ShadowRepo, tree: bytes, *args: Any, **kwargs: Any) -> Any:
        reads.append(tree)
        return flatten(repo, tree, *args, **kwargs)

    monkeypatch.setattr(ShadowRepo, 'flatten_tree', counted)
    return reads


def seal_of(repo_dir: Path) -> CommitInfo | None:
    """The newest seal as the product reads it: the current announcement, when there is one
    (kept beside the seal ref, not as a git object), else the seal ref's commit."""
    with opened(repo_dir) as repo:
        return external.last_seal(repo)


def seal_id_of(repo_dir: Path) -> bytes | None:
    """The newest seal's id (the current announcement's, when there is one)."""
    with opened(repo_dir) as repo:
        return external.seal_id(repo)
