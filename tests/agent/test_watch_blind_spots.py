"""What no inotify watch of the desk can see makes the snapshot walk instead of the watcher vouch.

A mount inside the desk holds what lies outside it: a same-filesystem bind mount is not told
apart by the device number, a mount made after the watch began raises no event, and a write
to a bind-mounted file's source is reported to the source's folder only. A tracked file with
another name outside the desk is written through that name without an event in the desk. So
the snapshot reads the mount table's entries for the desk, and the stat numbers of every
multiply-linked tracked file the watcher names, into the record's state: nothing is vouched
while something is mounted inside the desk, nor when either changed since the record.

Each test runs a real watcher process and checks the next snapshot records what a walk sees.
The mounts need root (skipped otherwise).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.builders import write
from helpers.mounts import NEEDS_ROOT, bind_mounted
from helpers.watcher import Walks, desk_files, end, newest_files, start_watcher, vouched_noop

from trading_checkpoints import Checkpoints

pytestmark = pytest.mark.skipif(not sys.platform.startswith('linux'), reason='inotify')


@pytest.fixture
def checkpoints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Checkpoints]:
    runtime = Path(tempfile.mkdtemp(prefix='blind-', dir='/tmp'))  # a socket path is short
    monkeypatch.setenv('XDG_RUNTIME_DIR', str(runtime))
    desk = tmp_path / 'desk'
    for index in range(4):
        write(desk, f'notes/day{index % 2}/n{index}.md', f'note {index}\n')
    write(desk, 'Memory.md', 'memory\n')
    write(tmp_path / 'outside', 'folder/other.md', 'a folder outside the desk\n')
    write(tmp_path / 'outside', 'file.md', 'a file outside the desk\n')
    cps = Checkpoints(tmp_path / 'repo.git', desk, ('notes', 'Memory.md'))
    assert cps.snapshot('start') is not None
    yield cps
    shutil.rmtree(runtime, ignore_errors=True)


@pytest.fixture
def walks(monkeypatch: pytest.MonkeyPatch) -> Walks:
    return Walks(monkeypatch)


@pytest.fixture
def watcher(checkpoints: Checkpoints) -> Iterator[subprocess.Popen[str]]:
    process = start_watcher(checkpoints)
    yield process
    end(process)


def recorded(cps: Checkpoints) -> bool:
    """Whether a snapshot now leaves the newest checkpoint equal to the desk."""
    cps.snapshot('look')
    return newest_files(cps) == desk_files(cps)


def outside(cps: Checkpoints) -> Path:
    return cps.desk_directory.parent / 'outside'


@NEEDS_ROOT
def test_a_folder_mounted_inside_the_desk_after_the_watch_began_is_walked(
    checkpoints: Checkpoints, watcher: subprocess.Popen[str], walks: Walks
) -> None:
    desk = checkpoints.desk_directory
    vouched_noop(checkpoints, walks)
    with bind_mounted(outside(checkpoints) / 'folder', desk / 'notes/day0'):
        assert recorded(checkpoints)
        assert 'notes/day0/other.md' in newest_files(checkpoints)
        for _ in range(3):  # never vouched while the mount is there
            before = walks.count
            checkpoints.snapshot('noop')
            assert walks.count == before + 1
    assert recorded(checkpoints)
    assert 'notes/day0/n0.md' in newest_files(checkpoints)
    vouched_noop(checkpoints, walks)  # the mount gone, the watcher vouches again


@NEEDS_ROOT
def test_a_write_to_the_source_of_a_bind_mounted_file_is_recorded(
    checkpoints: Checkpoints, walks: Walks
) -> None:
    """The mount is there before the watch began: the file's writes go to the source's
    folder, which the watcher does not watch."""
    desk, source = checkpoints.desk_directory, outside(checkpoints) / 'file.md'
    with bind_mounted(source, desk / 'notes/day1/n1.md'):
        assert recorded(checkpoints)
        process = start_watcher(checkpoints)
        try:
            for round_ in range(3):
                checkpoints.snapshot('noop')
                source.write_text(f'the source, round {round_}\n')
                assert recorded(checkpoints)
                assert newest_files(checkpoints)['notes/day1/n1.md'][1] == source.read_bytes()
        finally:
            end(process)


@NEEDS_ROOT
def test_a_mount_on_the_desk_itself_or_above_it_moves_the_record(
    checkpoints: Checkpoints, watcher: subprocess.Popen[str], walks: Walks
) -> None:
    """The desk's own entries in the mount table are part of the record: a mount of the desk
    onto itself (no event, the same files) makes the next snapshot walk, which leaves a record
    again."""
    desk = checkpoints.desk_directory
    vouched_noop(checkpoints, walks)
    with bind_mounted(desk, desk):
        before = walks.count
        assert checkpoints.snapshot('noop') is None
        assert walks.count == before + 1
        vouched_noop(checkpoints, walks)
    before = walks.count
    assert checkpoints.snapshot('noop') is None
    assert walks.count == before + 1


def test_a_write_through_a_name_outside_the_desk_is_recorded(
    checkpoints: Checkpoints, walks: Walks
) -> None:
    """A tracked file with a second name outside the desk, made before the watch began: each
    write through that name is recorded by the next snapshot, even right after the watcher
    vouched."""
    desk = checkpoints.desk_directory
    link = outside(checkpoints) / 'hard-link.md'
    os.link(desk / 'notes/day0/n2.md', link)
    process = start_watcher(checkpoints)
    try:
        for round_ in range(5):
            vouched_noop(checkpoints, walks)
            with open(link, 'r+b') as through:  # in place: the same inode
                through.truncate()
                through.write(f'through the other name, round {round_}\n'.encode())
            assert checkpoints.snapshot(f'round {round_}') is not None
            assert newest_files(checkpoints) == desk_files(checkpoints)
    finally:
        end(process)


def test_a_hard_link_made_inside_the_desk_is_followed(
    checkpoints: Checkpoints, watcher: subprocess.Popen[str], walks: Walks
) -> None:
    """A file linked in the desk after the watch began (the new name's event says so), and
    then given a name outside: writes through that name are recorded."""
    desk = checkpoints.desk_directory
    vouched_noop(checkpoints, walks)
    os.link(outside(checkpoints) / 'file.md', desk / 'notes/linked.md')
    assert checkpoints.snapshot('linked') is not None
    for round_ in range(3):
        vouched_noop(checkpoints, walks)
        with open(outside(checkpoints) / 'file.md', 'r+b') as through:
            through.truncate()
            through.write(f'outside, round {round_}\n'.encode())
        assert checkpoints.snapshot(f'round {round_}') is not None
        assert newest_files(checkpoints) == desk_files(checkpoints)


@NEEDS_ROOT
def test_a_write_under_a_folder_unmounted_after_the_watch_began_is_recorded(
    checkpoints: Checkpoints, walks: Walks
) -> None:
    """The watch began while a folder was bind-mounted in the desk (it watched the mounted
    one); once it is unmounted, the folder under it is the desk's again, and its writes are
    recorded."""
    desk = checkpoints.desk_directory
    with bind_mounted(outside(checkpoints) / 'folder', desk / 'notes/day0'):
        process = start_watcher(checkpoints)
    try:
        assert recorded(checkpoints)
        for round_ in range(3):
            vouched_noop(checkpoints, walks)
            write(desk, 'notes/day0/n0.md', f'under the mount that went, round {round_}\n')
            assert recorded(checkpoints)
    finally:
        end(process)
