"""A tree read from the repository is untrusted: unsafe entries are refused before any write."""

from __future__ import annotations

from pathlib import Path

import pytest
from dulwich.objects import Blob, Commit, Tree
from dulwich.repo import Repo
from helpers.builders import write
from helpers.reading import tree_of

from trading_checkpoints import CheckpointError, Checkpoints


def _commit_tree(repo_dir: Path, build) -> str:
    """Adds a commit whose tree ``build(store)`` returns, as a hostile writer would."""
    repo = Repo(str(repo_dir))
    store = repo.object_store
    tree = build(store)
    head = repo.refs[b'refs/heads/main']
    commit = Commit()
    commit.tree = tree.id
    commit.parents = [head]
    commit.author = commit.committer = b'Mallory <m@example.com>'
    commit.author_time = commit.commit_time = 1_700_000_000
    commit.author_timezone = commit.commit_timezone = 0
    commit.message = b'hostile\n'
    store.add_object(commit)
    repo.refs[b'refs/heads/main'] = commit.id
    repo.close()
    return commit.id.decode()[:12]


def _nested(store, names: list[bytes], leaf: Tree) -> Tree:
    tree = leaf
    for name in reversed(names):
        parent = Tree()
        parent.add(name, 0o040000, tree.id)
        store.add_object(tree)
        tree = parent
    store.add_object(tree)
    return tree


def _leaf(store, name: bytes, mode: int = 0o100644) -> Tree:
    blob = Blob.from_string(b'evil')
    store.add_object(blob)
    tree = Tree()
    tree.add(name, mode, blob.id)
    return tree


CASES = {
    'dotdot': lambda s: _nested(s, [b'notes', b'..', b'..'], _leaf(s, b'escaped.txt')),
    'dot-git': lambda s: _nested(s, [b'notes', b'.git', b'hooks'], _leaf(s, b'pre-commit')),
    'dot-GIT': lambda s: _nested(s, [b'notes', b'.GIT'], _leaf(s, b'config')),
    'outside allowlist, then a dot-git': lambda s: _nested(
        s, [b'elsewhere', b'.git'], _leaf(s, b'config')
    ),
    'gitlink': lambda s: _nested(s, [b'notes'], _leaf(s, b'sub', 0o160000)),
    'newline name': lambda s: _nested(s, [b'notes'], _leaf(s, b'a\nb')),
    'slash in name': lambda s: _nested(s, [b'notes'], _leaf(s, b'a/../../b')),
    'empty name': lambda s: _nested(s, [b'notes'], _leaf(s, b'')),
}


@pytest.mark.parametrize('case', sorted(CASES))
def test_hostile_tree_is_refused_and_nothing_is_written(
    cps: Checkpoints, desk: Path, workspace: Path, case: str
) -> None:
    write(desk, 'Memory.md', 'mine')
    write(desk, 'notes/a.md', 'a')
    cps.snapshot('honest')
    hostile = _commit_tree(cps.repository_directory, CASES[case])
    before_desk = tree_of(desk)
    before_workspace = sorted(p.name for p in workspace.iterdir())
    with pytest.raises(CheckpointError):
        cps.restore(hostile)
    assert tree_of(desk) == before_desk
    assert sorted(p.name for p in workspace.iterdir()) == before_workspace
