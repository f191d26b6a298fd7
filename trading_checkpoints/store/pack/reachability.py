"""What the history reaches: every object reachable from the refs, down to the shallow commits."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from dulwich.objects import Commit, Tag, Tree, parse_tree

from ...errors import CorruptRepositoryError
from .. import gitfiles
from ..damage import ref_damage


def read_shallow(repository: Path) -> set[bytes]:
    """The shallow boundary (see ``gitfiles.read_shallow``)."""
    return gitfiles.read_shallow(repository)


def ref_heads(repo) -> list[bytes]:
    """Every commit a ref points at (all refs; symbolic ones resolved)."""
    gitfiles.check_refs(repo.path)  # packed-refs, which dulwich reads by name
    refs = repo.dulwich_repo.refs
    heads = []
    try:
        for name in refs.allkeys():
            if name == b'HEAD':
                continue
            gitfiles.check_refs(repo.path, name.decode('utf-8', 'replace'))
            try:
                sha = refs[name]
            except KeyError:
                continue
            heads.append(sha)
    except ref_damage() as error:
        raise CorruptRepositoryError(
            f'cannot read the refs of {repo.path}: they are damaged ({type(error).__name__})',
            path=repo.path,
        ) from error
    return heads


def reachable(
    store,
    heads: Iterable[bytes],
    shallow: set[bytes],
    enter_commit: Callable[[bytes], bool] | None = None,
) -> dict[bytes, bytes | None]:
    """Every object reachable from ``heads`` as ``sha -> path it first appears at``.

    The walk stops at shallow commits (their parents are not followed) and, when
    ``enter_commit`` is given, at commits it declines.
    """
    found: dict[bytes, bytes | None] = {}
    commits = [sha for sha in heads]
    try:
        while commits:
            sha = commits.pop()
            if sha in found or (enter_commit is not None and not enter_commit(sha)):
                continue
            obj = store[sha]
            if isinstance(obj, Tag):
                found[sha] = None
                commits.append(obj.object[1])
                continue
            if not isinstance(obj, Commit):
                raise CorruptRepositoryError(f'the ref target {sha.decode()} is not a commit')
            found[sha] = None
            _walk_tree(store, obj.tree, b'', found)
            if sha not in shallow:
                commits.extend(p for p in obj.parents if p not in found)
    except KeyError as error:  # a commit (written by another tool) names a missing object
        missing = error.args[0] if error.args else b'?'
        name = missing.decode(errors='replace') if isinstance(missing, bytes) else str(missing)
        raise CorruptRepositoryError(
            f'the object {name[:40]} is missing from the repository, though a checkpoint names it'
        ) from error
    return found


def _walk_tree(store, tree_sha: bytes, path: bytes, found: dict[bytes, bytes | None]) -> None:
    pending = [(tree_sha, path)]
    while pending:
        sha, prefix = pending.pop()
        if sha in found:
            continue
        found[sha] = prefix
        type_num, raw = store.get_raw(sha)
        if type_num != Tree.type_num:
            raise CorruptRepositoryError(f'the object {sha.decode()} is not a tree')
        # parse_tree on the raw bytes: no Tree object, no sorting (much faster on big folders).
        for name, mode, child_sha in parse_tree(raw, 20):
            child = prefix + b'/' + name if prefix else name
            if mode == 0o040000:
                pending.append((child_sha, child))
            elif mode & 0o170000 == 0o160000:
                continue  # a gitlink names a commit elsewhere; nothing to store
            elif child_sha not in found:
                found[child_sha] = child
