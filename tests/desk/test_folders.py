"""Desk I/O relative to folder descriptors (``DeskFolders``): entries are read and removed as
what they are, never through a symlinked folder; errors name the path; descriptors are reused,
closed and bounded.

Each test pins a safety check: it fails when ``benchmarks/mutation.py`` breaks that check,
and it runs in this process, where mutation testing sees the calls.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from helpers.builders import put
from helpers.reading import files_of

from trading_checkpoints import CheckpointError
from trading_checkpoints.desk.folders import DeskFolders, NotAFolderError


def _open_fds() -> int:
    return len(os.listdir('/proc/self/fd'))


needs_proc = pytest.mark.skipif(not os.path.isdir('/proc/self/fd'), reason='needs /proc/self/fd')


@pytest.fixture
def swapped(tmp_path: Path) -> tuple[Path, Path]:
    """A desk whose notes/ folder is a symlink to a folder outside it, holding files."""
    desk = tmp_path / 'desk'
    outside = tmp_path / 'outside'
    (outside / 'sub').mkdir(parents=True)
    (outside / 'a.md').write_bytes(b'outside')
    os.symlink('elsewhere', outside / 'link')
    desk.mkdir()
    os.symlink(outside, desk / 'notes')
    return desk, outside


def test_nothing_is_read_or_deleted_through_a_symlinked_folder(swapped) -> None:
    desk, outside = swapped
    before = files_of(outside)
    with DeskFolders(desk) as folders:
        assert folders.folder('notes') is None
        assert folders.lstat('notes/a.md') is None
        assert folders.open_file('notes/a.md') is None
        assert folders.read_link('notes/link') is None
        assert folders.read_bytes('notes/a.md') is None
        assert folders.listing('notes') is None
        assert folders.unlink('notes/a.md') is False
        assert folders.rmdir('notes/sub') is False
        with pytest.raises(NotAFolderError) as caught:
            folders.folder('notes/new', create=True)
        assert caught.value.folder == str(desk / 'notes')
        assert str(caught.value) == (
            f'{desk / "notes"} is not a real folder (a symlink or a file is in the way; '
            'nothing is ever written or read through one)'
        )
    assert files_of(outside) == before and (outside / 'sub').is_dir()
    assert not (outside / 'new').exists()


def test_desk_entries_are_read_and_removed_as_what_they_are(tmp_path: Path) -> None:
    desk = tmp_path / 'desk'
    put(desk, 'notes/a.md', '-', b'bytes of a')
    big = bytes(range(256)) * (3 * 4096 + 7)
    put(desk, 'notes/big.bin', '-', big)
    put(desk, 'notes/link', 'link', b'../../somewhere')
    (desk / 'notes' / 'empty').mkdir()
    (desk / 'notes' / 'full').mkdir()
    put(desk, 'notes/full/x.md', '-', b'x')
    with DeskFolders(desk) as folders:
        assert folders.read_bytes('notes/a.md') == b'bytes of a'
        assert folders.read_bytes('notes/big.bin') == big  # read in several chunks
        assert folders.read_bytes('notes/link') == b'../../somewhere'
        assert folders.read_bytes('notes/missing.md') is None
        assert folders.read_bytes('gone/missing.md') is None
        assert folders.open_file('notes/link') is None  # a symlink is never opened
        assert folders.read_link('notes/a.md') is None  # not a symlink
        assert folders.read_link('notes/missing') is None
        listing = dict(folders.listing('notes') or [])
        assert sorted(listing) == ['a.md', 'big.bin', 'empty', 'full', 'link']
        assert stat.S_ISLNK(listing['link'].st_mode)  # never followed
        assert folders.rmdir('notes/full') is False  # not empty
        assert folders.rmdir('gone/folder') is False
        assert folders.rmdir('notes/empty') is True
        assert folders.unlink('notes/missing.md') is False
        assert folders.unlink('gone/missing.md') is False
        assert folders.unlink('notes/a.md') is True
        assert folders.unlink('notes/link') is True
        with pytest.raises(CheckpointError) as caught:
            folders.unlink('notes/full')  # a folder is not unlinked
        assert str(caught.value).startswith(f'cannot delete {desk / "notes/full"}: ')
    assert sorted(os.listdir(desk / 'notes')) == ['big.bin', 'full']


def test_names_the_file_system_refuses_are_errors_naming_the_path(tmp_path: Path) -> None:
    desk = tmp_path / 'desk'
    (desk / 'notes').mkdir(parents=True)
    long = 'n' * 300
    with DeskFolders(desk) as folders:
        assert folders.full('') == str(desk)
        assert folders.full('notes/a.md') == str(desk / 'notes' / 'a.md')
        for read in (folders.open_file, folders.read_link, folders.lstat):
            with pytest.raises(CheckpointError) as caught:
                read(f'notes/{long}')
            assert str(caught.value) == f'cannot read {desk}/notes/{long}: File name too long'
        with pytest.raises(CheckpointError) as caught:
            folders.folder(f'notes/{long}/x')
        assert str(caught.value) == f'cannot list {desk}/notes/{long}: File name too long'


def test_a_desk_that_is_not_a_folder_is_refused_saying_so(tmp_path: Path) -> None:
    plain = tmp_path / 'plain-file'
    plain.write_text('not a desk')
    os.symlink(plain, tmp_path / 'link-to-file')
    for desk in (plain, tmp_path / 'link-to-file'):
        with pytest.raises(CheckpointError) as caught:
            DeskFolders(desk)
        assert str(caught.value) == f'the desk {desk} is not a folder'
    with pytest.raises(CheckpointError) as missing:
        DeskFolders(tmp_path / 'missing')
    assert str(missing.value) == f'the desk folder {tmp_path / "missing"} does not exist'
    too_long = tmp_path / ('d' * 300)
    with pytest.raises(CheckpointError) as refused:
        DeskFolders(too_long)
    assert str(refused.value) == f'cannot open the desk {too_long}: File name too long'


def test_created_folders_get_the_ordinary_mode(tmp_path: Path) -> None:
    desk = tmp_path / 'desk'
    desk.mkdir()
    umask = os.umask(0o022)
    try:
        with DeskFolders(desk) as folders:
            assert folders.folder('notes/a/b', create=True) is not None
            assert folders.created == ['notes', 'notes/a', 'notes/a/b']
    finally:
        os.umask(umask)
    assert stat.S_IMODE((desk / 'notes' / 'a' / 'b').stat().st_mode) == 0o755


@needs_proc
def test_descriptors_are_reused_closed_and_bounded(tmp_path: Path) -> None:
    desk = tmp_path / 'desk'
    (desk / 'a' / 'b' / 'c' / 'd').mkdir(parents=True)
    (desk / 'x' / 'y' / 'z').mkdir(parents=True)
    for i in range(300):
        (desk / 'many' / f'f{i:03}').mkdir(parents=True)
    baseline = _open_fds()
    with DeskFolders(desk) as folders:
        for path in ('a', 'a/b', 'a/b/c', 'a/b/c/d', 'a/b/c'):
            assert folders.folder(path) == folders.folder(path)
        assert _open_fds() == baseline + 5  # the desk and a, a/b, a/b/c, a/b/c/d: once each
        held = folders.folder('x/y/z')  # three levels in one call: each cached as itself
        assert held is not None and _open_fds() == baseline + 8
        for path in ('x', 'x/y', 'x/y/z', 'a/b'):
            assert os.fstat(folders.folder(path)).st_ino == (desk / path).stat().st_ino
        peak = 0
        for i in range(300):
            assert folders.folder(f'many/f{i:03}') is not None
            peak = max(peak, _open_fds())
        assert peak <= baseline + 130
    assert _open_fds() == baseline  # the desk's own descriptor is closed too


@needs_proc
def test_a_removed_folder_is_forgotten_with_everything_below_it(tmp_path: Path) -> None:
    desk = tmp_path / 'desk'
    (desk / 'a' / 'b' / 'c').mkdir(parents=True)
    baseline = _open_fds()
    with DeskFolders(desk) as folders:
        assert folders.folder('a/b/c') is not None
        os.rmdir(desk / 'a' / 'b' / 'c')  # removed by someone else
        os.rmdir(desk / 'a' / 'b')
        assert folders.rmdir('a') is True
        (desk / 'a' / 'b' / 'c').mkdir(parents=True)
        assert _open_fds() == baseline + 1  # only the desk's own descriptor is held
        held = folders.folder('a/b/c')
        assert held is not None
        found = (desk / 'a' / 'b' / 'c').stat()
        assert os.fstat(held).st_ino == found.st_ino  # the new folder, not the removed one
