"""Trees read from a repository: flattened with the id of every folder, and each hostile entry
(a duplicate name, a slash, ``.git``, a gitlink, a drive letter, an unsafe name in a folder
outside the tracked paths) refused saying why, before the desk is touched.

Each test pins a safety check: it fails when ``benchmarks/mutation.py`` breaks that check,
and it runs in this process, where mutation testing sees the calls.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.builders import put
from helpers.reading import ALLOW, files_of

from trading_checkpoints import Checkpoints
from trading_checkpoints.errors import CorruptRepositoryError
from trading_checkpoints.store.repo import ShadowRepo


def _hostile_restore(tmp_path: Path, build) -> str:
    """The message of the restore of a commit whose root tree ``build(repo_dir)`` makes."""
    from helpers.rawobjects import commit

    desk = tmp_path / 'desk'
    put(desk, 'notes/mine.md', '-', b'mine')
    repo_dir = tmp_path / 'repo.git'
    cps = Checkpoints(repo_dir, desk)
    cps.snapshot('mine')
    hostile = commit(repo_dir, build(repo_dir))
    before = files_of(desk)
    with pytest.raises(CorruptRepositoryError) as caught:
        cps.restore(hostile)
    assert files_of(desk) == before
    return str(caught.value)


def _entries(*names: tuple[bytes, bytes]):
    from helpers.rawobjects import BLOB, TREE, blob, in_notes, tree

    def build(repo_dir: Path) -> str:
        ok = blob(repo_dir, b'payload')
        sub = tree(repo_dir, (BLOB, b'x.md', ok))
        return in_notes(
            repo_dir, *((mode, name, sub if mode == TREE else ok) for mode, name in names)
        )

    return build


@pytest.mark.parametrize(
    ('names', 'message'),
    [
        (
            ((b'100644', b'a.md'), (b'100644', b'a.md')),
            "the checkpoint has two entries named notes/b'a.md'",
        ),
        (
            ((b'100644', b'a/../../b'),),
            "the checkpoint holds a name with a slash: 'notes/a/../../b'",
        ),
        (
            ((b'40000', b'.git'),),
            "the checkpoint holds an unsafe path 'notes/.git': a .git component",
        ),
        (
            ((b'160000', b'sub'),),
            "the checkpoint holds 'notes/sub' with mode 160000, which we do not write",
        ),
    ],
)
def test_each_hostile_tree_entry_is_refused_saying_why(
    tmp_path: Path, names: tuple, message: str
) -> None:
    assert _hostile_restore(tmp_path, _entries(*names)) == message


def test_hostile_names_at_the_root_are_refused_for_what_they_are(tmp_path: Path) -> None:
    from helpers.rawobjects import BLOB, TREE, blob, tree

    def drive(repo_dir: Path) -> str:
        return tree(repo_dir, (BLOB, b'C:evil', blob(repo_dir, b'x')))

    def outside(repo_dir: Path) -> str:
        deep = tree(repo_dir, (BLOB, b'config', blob(repo_dir, b'x')))
        return tree(repo_dir, (TREE, b'memory_extra', tree(repo_dir, (TREE, b'.git', deep))))

    assert _hostile_restore(tmp_path / 'a', drive) == (
        "the checkpoint holds an unsafe path 'C:evil': an absolute path"
    )
    # Outside the tracked paths an entry is left out, but vetted first all the same.
    assert _hostile_restore(tmp_path / 'b', outside) == (
        "the checkpoint holds an unsafe path 'memory_extra/.git': a .git component"
    )


def test_a_tree_is_flattened_with_the_id_of_every_folder(tmp_path: Path) -> None:
    desk = tmp_path / 'desk'
    for path in ('notes/BOX/a.md', 'notes/BOX/deep/b.md', 'skills/agent/s.md', 'Memory.md'):
        put(desk, path, '-', path.encode())
    repo_dir = tmp_path / 'repo.git'
    Checkpoints(repo_dir, desk).snapshot('all')
    repo = ShadowRepo.open(repo_dir)
    assert repo is not None
    try:
        root = repo.commit_info(repo.head()).tree  # type: ignore[arg-type]
        files, folders = repo.flatten_tree(root, ALLOW)
        assert sorted(files) == [
            'Memory.md',
            'notes/BOX/a.md',
            'notes/BOX/deep/b.md',
            'skills/agent/s.md',
        ]
        assert sorted(folders) == [
            '',
            'notes',
            'notes/BOX',
            'notes/BOX/deep',
            'skills',
            'skills/agent',
        ]
        assert folders[''] == root
        assert folders['notes/BOX'] == repo.read_tree(folders['notes'])[b'BOX'][1]
    finally:
        repo.close()
