"""The Workspace helper for the standard layout."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.builders import write
from helpers.processes import python

from trading_checkpoints import CheckpointError
from trading_checkpoints.workspace import Workspace, desk_at, find_workspace, is_workspace


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


@pytest.mark.parametrize('bad', ['', '.', '..', 'a/b', 'a\\b', 'nul\0', 'a\nb'])
def test_bad_desk_names_are_refused(tmp_path: Path, bad: str) -> None:
    with pytest.raises(CheckpointError, match='not a desk name'):
        Workspace(tmp_path).desk(bad)


def test_tracked_paths_are_passed_to_every_desk(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path, tracked_paths='plan.txt')
    assert workspace.desk('main').tracked_paths == ('plan.txt',)
    assert Workspace('~/ws').root == Path('~/ws').expanduser()


# -- discovery: find_workspace and desk_at (what the command line uses) ---------------------


def test_find_workspace_walks_up_from_any_folder_inside(tmp_path: Path) -> None:
    root = tmp_path / 'agent' / 'workspace'
    (root / 'desks' / 'main' / 'notes' / 'deep').mkdir(parents=True)
    for start in (
        root,
        root / 'desks',
        root / 'desks' / 'main',
        root / 'desks' / 'main' / 'notes' / 'deep',
    ):
        assert find_workspace(start) == root
    assert find_workspace(tmp_path / 'agent') is None
    assert find_workspace(tmp_path) is None


def test_a_folder_with_only_repositories_is_a_workspace(tmp_path: Path) -> None:
    (tmp_path / '.checkpoints' / 'main.git').mkdir(parents=True)
    assert is_workspace(tmp_path) and not is_workspace(tmp_path / '.checkpoints')
    assert find_workspace(tmp_path / '.checkpoints' / 'main.git') == tmp_path


def test_a_file_named_desks_is_no_workspace(tmp_path: Path) -> None:
    (tmp_path / 'desks').write_text('not a folder')
    assert not is_workspace(tmp_path) and find_workspace(tmp_path) is None


def test_find_workspace_defaults_to_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / 'desks' / 'main').mkdir(parents=True)
    monkeypatch.chdir(tmp_path / 'desks' / 'main')
    assert find_workspace() == tmp_path.resolve()


def test_the_nearest_workspace_wins(tmp_path: Path) -> None:
    (tmp_path / 'desks').mkdir()
    inner = tmp_path / 'desks' / 'main' / 'project'
    (inner / '.checkpoints').mkdir(parents=True)
    assert find_workspace(inner / '.checkpoints') == inner


def test_find_workspace_keeps_symlinked_paths_as_given(tmp_path: Path) -> None:
    real = tmp_path / 'real'
    (real / 'desks' / 'main').mkdir(parents=True)
    link = tmp_path / 'link'
    link.symlink_to(real)
    assert find_workspace(link / 'desks' / 'main') == link


def test_desk_at_names_the_desk_a_folder_is_in(tmp_path: Path) -> None:
    assert desk_at(tmp_path, tmp_path / 'desks' / 'main') == 'main'
    assert desk_at(tmp_path, tmp_path / 'desks' / 'main' / 'notes' / 'a') == 'main'
    assert desk_at(tmp_path, tmp_path / '.checkpoints' / 'research.git' / 'refs') == 'research'
    assert desk_at(tmp_path, tmp_path) is None
    assert desk_at(tmp_path, tmp_path / 'desks') is None
    assert desk_at(tmp_path, tmp_path / '.checkpoints' / 'notarepo') is None
    assert desk_at(tmp_path, tmp_path / 'elsewhere' / 'main') is None
    assert desk_at(tmp_path / 'desks' / 'main', tmp_path) is None
    assert desk_at(str(tmp_path), str(tmp_path / 'desks' / 'x')) == 'x'


def test_discovery_loads_no_dulwich() -> None:
    code = (
        'import sys\nfrom trading_checkpoints.workspace import find_workspace, Workspace\n'
        'find_workspace(); Workspace(".").desks()\n'
        'print(any(m.startswith("dulwich") for m in sys.modules))'
    )
    done = python(code, check=True)
    assert done.stdout.strip() == 'False'
