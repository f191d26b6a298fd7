"""What is tracked: the allowlist, symlinks, type changes, nested repositories."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from helpers.builders import write
from helpers.reading import tree_of

from trading_checkpoints import TRACKED_PATHS, CheckpointError, Checkpoints
from trading_checkpoints.core.paths import Allowlist


def test_allowlist_matches_at_component_boundaries() -> None:
    allow = Allowlist(['Memory.md', 'memory', 'skills/agent'])
    assert allow.covers('memory') and allow.covers('memory/a/b.md')
    assert not allow.covers('memory_extra/a.md') and not allow.covers('memoryx')
    assert allow.covers('Memory.md') and not allow.covers('Memory.md.bak')
    assert allow.covers('skills/agent/x') and not allow.covers('skills/agents/x')
    assert not allow.covers('skills') and allow.is_ancestor('skills')


@pytest.mark.parametrize('bad', ['../up', '/abs', 'a/../b', 'a/.git/x', '.git', 'a//b', ''])
def test_unusable_tracked_paths_are_refused(tmp_path: Path, bad: str) -> None:
    with pytest.raises(CheckpointError):
        Checkpoints(tmp_path / 'r.git', tmp_path, tracked_paths=[bad])


def test_files_outside_allowlist_are_never_touched(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'v1')
    target = cps.snapshot('v1')
    outside = {
        'memory_extra/a.md': 'x',
        'scratch.txt': 'y',
        'skills/other/s.md': 'z',
        'Memory.md.bak': 'w',
    }
    for path, content in outside.items():
        write(desk, path, content)
    write(desk, 'Memory.md', 'v2')
    write(desk, 'memory/new.md', 'new')
    cps.snapshot('v2')
    cps.restore(target)
    for path, content in outside.items():
        assert (desk / path).read_text() == content
    assert not (desk / 'memory').exists()
    assert (desk / 'Memory.md').read_text() == 'v1'


def test_missing_tracked_paths_are_fine(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'notes/only.md', 'n')
    assert cps.snapshot('only notes') is not None
    assert cps.snapshot('again') is None


def test_custom_tracked_paths_are_remembered_by_the_repository(repo_dir: Path, desk: Path) -> None:
    custom = Checkpoints(repo_dir, desk, tracked_paths=['journal', 'plan.md'])
    write(desk, 'journal/day1.md', 'd1')
    write(desk, 'plan.md', 'p1')
    write(desk, 'Memory.md', 'not tracked by this repo')
    target = custom.snapshot('custom')
    # An object left at the default (as the CLI uses) reads the remembered list.
    default = Checkpoints(repo_dir, desk)
    write(desk, 'journal/day2.md', 'd2')
    write(desk, 'Memory.md', 'changed, still not tracked')
    assert default.snapshot('day 2') is not None
    default.restore(target)
    assert not (desk / 'journal/day2.md').exists()
    assert (desk / 'Memory.md').read_text() == 'changed, still not tracked'
    assert (repo_dir / 'config').read_text().count('tracked = ') == 2


def test_symlinks_are_stored_as_links_and_never_followed(
    cps: Checkpoints, desk: Path, tmp_path: Path
) -> None:
    outside = tmp_path / 'outside'
    outside.mkdir()
    (outside / 'secret.txt').write_text('outside the desk')
    write(desk, 'notes/real.md', 'real')
    os.symlink(outside, desk / 'notes' / 'link-to-dir')
    os.symlink('real.md', desk / 'notes' / 'link.md')
    target = cps.snapshot('links')
    assert target is not None
    (desk / 'notes' / 'link.md').unlink()
    os.symlink('elsewhere.md', desk / 'notes' / 'link.md')
    cps.snapshot('link retargeted')
    cps.restore(target)
    assert os.readlink(desk / 'notes' / 'link.md') == 'real.md'
    assert os.readlink(desk / 'notes' / 'link-to-dir') == str(outside)
    assert (outside / 'secret.txt').read_text() == 'outside the desk'
    assert sorted(p.name for p in outside.iterdir()) == ['secret.txt']


def test_tracked_folder_that_became_a_symlink_is_replaced_not_written_through(
    cps: Checkpoints, desk: Path, tmp_path: Path
) -> None:
    write(desk, 'memory/a.md', 'a')
    target = cps.snapshot('real folder')
    elsewhere = tmp_path / 'elsewhere'
    elsewhere.mkdir()
    (elsewhere / 'keep.md').write_text('not ours')
    (desk / 'memory' / 'a.md').unlink()
    (desk / 'memory').rmdir()
    os.symlink(elsewhere, desk / 'memory')
    cps.restore(target)
    assert (desk / 'memory').is_dir() and not (desk / 'memory').is_symlink()
    assert (desk / 'memory' / 'a.md').read_text() == 'a'
    assert sorted(p.name for p in elsewhere.iterdir()) == ['keep.md']


def test_symlinked_parent_of_a_tracked_entry_is_not_scanned(
    cps: Checkpoints, desk: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / 'elsewhere'
    (elsewhere / 'agent').mkdir(parents=True)
    (elsewhere / 'agent' / 'skill.md').write_text('outside')
    os.symlink(elsewhere, desk / 'skills')
    write(desk, 'Memory.md', 'm')
    cps.snapshot('skills is a link')
    from helpers.gitcli import git

    if os.environ.get('SKIP_GIT') is None:
        try:
            files = git(cps.repository_directory, 'ls-tree', '-r', '--name-only', 'HEAD')
        except FileNotFoundError:
            return
        assert files.split() == ['Memory.md']


def test_file_to_folder_and_folder_to_file_round_trip(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'notes/plan', 'plan as a file')
    as_file = cps.snapshot('file')
    state_file = tree_of(desk)
    (desk / 'notes' / 'plan').unlink()
    write(desk, 'notes/plan/part1.md', 'p1')
    write(desk, 'notes/plan/sub/part2.md', 'p2')
    as_folder = cps.snapshot('folder')
    state_folder = tree_of(desk)
    cps.restore(as_file)
    assert tree_of(desk) == state_file
    cps.restore(as_folder)
    assert tree_of(desk) == state_folder


def test_nested_git_folders_are_never_snapshotted(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'notes/project/readme.md', 'r')
    write(desk, 'notes/project/.git/config', '[core]')
    write(desk, 'notes/project/.git/objects/ab/cdef', 'obj')
    target = cps.snapshot('with nested repo')
    write(desk, 'notes/project/.git/HEAD', 'changed')
    assert cps.snapshot('git internals changed') is None
    write(desk, 'notes/project/readme.md', 'r2')
    cps.snapshot('readme changed')
    cps.restore(target)
    assert (desk / 'notes/project/readme.md').read_text() == 'r'
    assert (desk / 'notes/project/.git/config').read_text() == '[core]'
    assert (desk / 'notes/project/.git/HEAD').read_text() == 'changed'


def test_special_files_are_left_alone(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'notes/a.md', 'a')
    fifo = desk / 'notes' / 'pipe'
    os.mkfifo(fifo)
    sock_path = desk / 'notes' / 's.sock'
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(sock_path))
        target = cps.snapshot('with a fifo and a socket')
        write(desk, 'notes/a.md', 'a2')
        cps.snapshot('a2')
        cps.restore(target)
        assert (desk / 'notes/a.md').read_text() == 'a'
        assert fifo.exists() and sock_path.exists()
    finally:
        server.close()


def test_restore_refuses_to_discard_untracked_content_in_the_way(
    cps: Checkpoints, desk: Path
) -> None:
    write(desk, 'notes/plan', 'file')
    target = cps.snapshot('plan is a file')
    (desk / 'notes' / 'plan').unlink()
    write(desk, 'notes/plan/part.md', 'tracked part')
    write(desk, 'notes/plan/.git/HEAD', 'a nested repository we never track')
    cps.snapshot('plan is a folder with a nested repo')
    with pytest.raises(CheckpointError, match='would be lost'):
        cps.restore(target)
    assert (desk / 'notes/plan/.git/HEAD').read_text() == 'a nested repository we never track'
    assert (desk / 'notes/plan/part.md').read_text() == 'tracked part'


def test_repository_inside_tracked_files_is_refused(desk: Path) -> None:
    cps = Checkpoints(desk / 'memory' / 'shadow.git', desk)
    write(desk, 'memory/a.md', 'a')
    with pytest.raises(CheckpointError, match='inside the tracked files'):
        cps.snapshot('x')


def test_repository_folder_with_foreign_content_is_refused(tmp_path: Path, desk: Path) -> None:
    foreign = tmp_path / 'not-a-repo'
    foreign.mkdir()
    (foreign / 'important.txt').write_text('mine')
    write(desk, 'Memory.md', 'm')
    with pytest.raises(CheckpointError, match='not a checkpoint repository'):
        Checkpoints(foreign, desk).snapshot('x')
    assert sorted(p.name for p in foreign.iterdir()) == ['important.txt']


def test_repository_path_that_is_a_file(tmp_path: Path, desk: Path) -> None:
    repo = tmp_path / 'repo.git'
    repo.write_text('a file')
    write(desk, 'Memory.md', 'm')
    cps = Checkpoints(repo, desk)
    with pytest.raises(CheckpointError, match='is not a folder'):
        cps.snapshot('x')
    with pytest.raises(CheckpointError, match='is not a folder'):
        cps.list()


@pytest.mark.parametrize('where', ['/', '~'])
def test_root_or_home_as_desk_is_refused(tmp_path: Path, where: str) -> None:
    cps = Checkpoints(tmp_path / 'r.git', Path(where).expanduser())
    with pytest.raises(CheckpointError, match='root or home'):
        cps.snapshot('x')


def test_set_tracked_paths_is_remembered_and_effective(repo_dir, desk) -> None:
    cps = Checkpoints(repo_dir, desk)
    assert cps.effective_tracked_paths() == TRACKED_PATHS
    assert Checkpoints(repo_dir, desk).set_tracked_paths(['notes', 'plans/']) == ('notes', 'plans')
    assert Checkpoints(repo_dir, desk).effective_tracked_paths() == ('notes', 'plans')
    (desk / 'plans').mkdir()
    (desk / 'plans' / 'a.md').write_text('a')
    (desk / 'Memory.md').write_text('m')
    assert Checkpoints(repo_dir, desk).snapshot('s') is not None
    assert (
        Checkpoints(repo_dir, desk)
        .diff(Checkpoints(repo_dir, desk).list()[0].checkpoint_id)
        .changes
        == ()
    )
    with pytest.raises(CheckpointError, match='not usable'):
        Checkpoints(repo_dir, desk).set_tracked_paths(['../x'])
    assert Checkpoints(repo_dir, desk).effective_tracked_paths() == ('notes', 'plans')


def test_tracked_paths_from_the_config_may_never_cover_the_repository(desk: Path) -> None:
    """A repository kept inside the desk, and `git config --add checkpoints.tracked shadow.git`:
    every verb refuses, naming the config, and the history stays whole."""
    repo_dir = desk / 'shadow.git'
    write(desk, 'notes/a.md', 'first')
    cps = Checkpoints(repo_dir, desk)
    first = cps.snapshot('first')
    write(desk, 'notes/a.md', 'second')
    cps.snapshot('second')
    config = repo_dir / 'config'
    config.write_text(config.read_text() + '[checkpoints]\n\ttracked = shadow.git\n')
    for verb in (lambda: cps.snapshot('x'), lambda: cps.restore(first), lambda: cps.status()):
        with pytest.raises(CheckpointError, match='as remembered in its config'):
            verb()
    config.write_text(config.read_text().replace('\ttracked = shadow.git\n', ''))
    assert [c.reason for c in cps.list()] == ['second', 'first']
    assert (repo_dir / 'HEAD').is_file()


def test_a_folder_that_is_not_a_path_is_a_checkpoint_error(desk: Path) -> None:
    for bad in (None, 7, ''):
        with pytest.raises(CheckpointError, match='must be a path'):
            Checkpoints(bad, desk)  # type: ignore[arg-type]
        with pytest.raises(CheckpointError, match='must be a path'):
            Checkpoints(desk.parent / 'repo.git', bad)  # type: ignore[arg-type]
