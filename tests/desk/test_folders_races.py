"""Folders changing under the desk I/O while it holds them: moved away, removed, replaced by a
symlink as they are made, left without a descriptor, or emptied while listed. Each change is
made at an exact moment by an audit hook in this process, or by a real second process.

Each test pins a safety check: it fails when ``benchmarks/mutation.py`` breaks that check,
and it runs in this process, where mutation testing sees the calls.
"""

from __future__ import annotations

import os
import resource
from pathlib import Path

import pytest
from helpers.builders import mkdirs
from helpers.faults import armed
from helpers.processes import start_deleting

from trading_checkpoints import CheckpointError
from trading_checkpoints.desk.folders import DeskFolders, NotAFolderError, same_file


def test_a_folder_moved_away_and_replaced_by_a_symlink_is_not_in_place(tmp_path: Path) -> None:
    desk = tmp_path / 'desk'
    (desk / 'notes' / 'deep').mkdir(parents=True)
    with DeskFolders(desk) as folders:
        assert folders.folder('notes/deep') is not None
        assert folders.still_in_place('notes/deep') and folders.still_in_place('')
        os.rename(desk / 'notes', tmp_path / 'moved')
        os.symlink(tmp_path / 'moved', desk / 'notes')  # the same folder, reached by a symlink
        assert not folders.still_in_place('notes/deep')


def test_a_folder_removed_while_held_open_is_an_error_naming_it(tmp_path: Path) -> None:
    desk = tmp_path / 'desk'
    (desk / 'notes').mkdir(parents=True)
    with DeskFolders(desk) as folders:
        assert folders.folder('notes') is not None
        os.rmdir(desk / 'notes')
        with pytest.raises(CheckpointError) as caught:
            folders.folder('notes/new', create=True)
        assert str(caught.value) == (
            f'cannot create {desk / "notes" / "new"}: No such file or directory'
        )
    assert not (desk / 'notes').exists()


def test_a_symlink_planted_as_a_folder_is_being_made_is_never_followed(tmp_path: Path) -> None:
    """Another writer puts a symlink where the restore is creating a folder (a real symlink,
    timed by an audit hook at the ``mkdir``): it is refused, nothing is written through it."""
    desk = mkdirs(tmp_path / 'desk')
    outside = mkdirs(tmp_path / 'outside')

    def planter(event: str, args: tuple) -> None:
        if event == 'os.mkdir' and args[0] == 'notes' and not os.path.lexists(desk / 'notes'):
            os.symlink(outside, desk / 'notes')

    with DeskFolders(desk) as folders, armed(planter):
        with pytest.raises(NotAFolderError) as caught:
            folders.folder('notes/new', create=True)
        assert caught.value.folder == str(desk / 'notes')
        assert folders.created == []
    assert os.listdir(outside) == []


def test_a_folder_made_but_not_opened_is_an_error_naming_it(tmp_path: Path) -> None:
    """The folder is made, then opening it fails (no descriptor left: RLIMIT_NOFILE lowered
    at the ``mkdir`` by an audit hook, and restored after): a clear error naming the folder."""
    desk = mkdirs(tmp_path / 'desk')
    limits = resource.getrlimit(resource.RLIMIT_NOFILE)

    def exhaust(event: str, args: tuple) -> None:
        if event == 'os.mkdir' and args[0] == 'notes':
            lowest = os.dup(0)
            os.close(lowest)
            resource.setrlimit(resource.RLIMIT_NOFILE, (lowest, limits[1]))

    with DeskFolders(desk) as folders:
        try:
            with armed(exhaust), pytest.raises(CheckpointError) as caught:
                folders.folder('notes', create=True)
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, limits)
        assert str(caught.value) == f'cannot list {desk / "notes"}: Too many open files'
        assert folders.created == ['notes']
    assert (desk / 'notes').is_dir()


def test_same_file_tells_a_replaced_file_apart(tmp_path: Path) -> None:
    first, second = tmp_path / 'first', tmp_path / 'second'
    first.write_bytes(b'1')
    second.write_bytes(b'2')
    os.symlink('first', tmp_path / 'link')
    seen = os.lstat(first)
    key = (seen.st_size, seen.st_mtime_ns, seen.st_ctime_ns, seen.st_ino, seen.st_mode)
    assert same_file(os.lstat(first), key)
    assert not same_file(os.lstat(second), key)  # another regular file
    link = os.lstat(tmp_path / 'link')
    link_key = (link.st_size, link.st_mtime_ns, link.st_ctime_ns, seen.st_ino, link.st_mode)
    assert not same_file(seen, link_key)  # the same inode number seen as another type


def test_entries_vanishing_mid_listing_do_not_hide_the_others(tmp_path: Path) -> None:
    """A real second process deletes half of a folder's files while it is listed: every file
    it never touches is always listed (a vanished entry is skipped, the listing goes on)."""
    folder = tmp_path / 'desk' / 'notes'
    folder.mkdir(parents=True)
    for _ in range(3):
        victims = [f'v{i:04}' for i in range(1500)]
        for i in range(1500):
            (folder / victims[i]).write_bytes(b'')
            (folder / f'k{i:04}').write_bytes(b'')
        keepers = {f'k{i:04}' for i in range(1500)}
        process = start_deleting(folder, victims)
        with DeskFolders(folder.parent) as folders:
            while process.poll() is None:
                listed = {name for name, _ in folders.listing('notes') or []}
                assert keepers <= listed, f'{len(keepers - listed)} files left out of a listing'
        assert process.wait() == 0
