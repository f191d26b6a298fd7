"""Trees read back from a repository are untrusted: every unsafe path is refused before the
desk is touched, at any depth (the vetting checks each name once per folder), also below a
folder outside the tracked paths, which is otherwise left out of the restore."""

from __future__ import annotations

from pathlib import Path

import pytest
from dulwich.objects import Blob, Tree
from helpers.builders import write
from helpers.reading import tree_of

from trading_checkpoints import CheckpointError, Checkpoints
from trading_checkpoints.core.trees import FILE_MODE, TREE_MODE
from trading_checkpoints.store.repo import ShadowRepo


def _commit_with(repo_dir: Path, path: list[bytes]) -> str:
    """A commit (not on the branch) whose tree holds one file at ``path``."""
    repo = ShadowRepo.open(repo_dir)
    assert repo is not None
    try:
        blob = Blob.from_string(b'evil')
        objects = [blob]
        child_mode, child_sha = FILE_MODE, blob.id
        for name in reversed(path):
            tree = Tree()
            tree.add(name, child_mode, child_sha)
            objects.append(tree)
            child_mode, child_sha = TREE_MODE, tree.id
        commit = repo.make_commit(child_sha, repo.head(), 'hostile')
        repo.write_objects([*objects, commit])
        return commit.id.decode()
    finally:
        repo.close()


@pytest.mark.parametrize(
    'path',
    [
        [b'evil', b'.git', b'config'],  # outside the tracked paths: left out, yet vetted
        [b'skills', b'other', b'..', b'x.md'],  # beside skills/agent, likewise
        [b'memory', b'deep', b'..', b'x.md'],
        [b'memory', b'deep', b'.git', b'config'],
        [b'memory', b'deep', b'.GIT. ', b'config'],
        [b'notes', b'a\\b.md'],
        [b'notes', b'line\nbreak.md'],
        [b'C:evil'],
        [b'memory_extra', b'.GIT', b'x.md'],
    ],
)
def test_hostile_tree_is_refused_before_anything_is_written(
    cps: Checkpoints, desk: Path, repo_dir: Path, path: list[bytes]
) -> None:
    write(desk, 'Memory.md', 'mine')
    write(desk, 'memory/a.md', 'a')
    cps.snapshot('base')
    before = tree_of(desk)
    commit = _commit_with(repo_dir, path)
    with pytest.raises(CheckpointError):
        cps.restore(commit)
    assert tree_of(desk) == before


def test_deep_tracked_tree_is_accepted(cps: Checkpoints, desk: Path, repo_dir: Path) -> None:
    write(desk, 'Memory.md', 'mine')
    cps.snapshot('base')
    commit = _commit_with(repo_dir, [b'skills', b'agent', b'a', b'b', b'c.md'])
    cps.restore(commit)
    assert (desk / 'skills/agent/a/b/c.md').read_bytes() == b'evil'
    assert not (desk / 'Memory.md').exists()
