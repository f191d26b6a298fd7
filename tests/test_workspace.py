"""The Workspace helper for the standard layout."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import write

from trading_checkpoints import CheckpointError
from trading_checkpoints.workspace import Workspace


def test_desk_uses_the_standard_layout(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path)
    cps = workspace.desk('research')
    assert cps.desk_directory == tmp_path / 'desks' / 'research'
    assert cps.repository_directory == tmp_path / '.checkpoints' / 'research.git'
    assert not (tmp_path / 'desks').exists(), 'describing a desk touches no disk'
    workspace.desk('research', create=True)
    assert (tmp_path / 'desks' / 'research').is_dir()


def test_desks_are_folders_and_repositories(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path)
    assert workspace.desks() == []
    for name in ('main', 'research'):
        write(workspace.desk_directory(name), 'Memory.md', name)
    write(tmp_path / 'desks', 'stray-file.txt', 'not a desk')
    (tmp_path / 'desks' / '.hidden').mkdir()
    gone = workspace.desk('archived', create=True)
    write(gone.desk_directory, 'Memory.md', 'old')
    gone.snapshot('before archiving')
    for path in sorted(gone.desk_directory.rglob('*'), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    gone.desk_directory.rmdir()
    (tmp_path / '.checkpoints' / 'notarepo').mkdir()
    assert workspace.desks() == ['archived', 'main', 'research']
    gone.restore(gone.list()[0].checkpoint_id)  # a desk with only checkpoints left comes back
    assert (tmp_path / 'desks' / 'archived' / 'Memory.md').read_text() == 'old'


def test_desks_are_independent(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path)
    a, b = workspace.desk('a', create=True), workspace.desk('b', create=True)
    write(a.desk_directory, 'Memory.md', 'a')
    write(b.desk_directory, 'Memory.md', 'b')
    a.snapshot('a only')
    assert len(a.list()) == 1 and b.list() == []


@pytest.mark.parametrize('bad', ['', '.', '..', 'a/b', 'a\\b', 'nul\0'])
def test_bad_desk_names_are_refused(tmp_path: Path, bad: str) -> None:
    with pytest.raises(CheckpointError, match='not a desk name'):
        Workspace(tmp_path).desk(bad)


def test_tracked_paths_are_passed_to_every_desk(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path, tracked_paths='plan.txt')
    assert workspace.desk('main').tracked_paths == ('plan.txt',)
    assert Workspace('~/ws').root == Path('~/ws').expanduser()
