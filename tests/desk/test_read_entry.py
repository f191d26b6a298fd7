"""A desk file's entry read as it is now, whatever its size (``read_entry``, ``entry_now``):
what a seal names a file over the size limit by, and what a restore compares such a file with.

A regular file gives its git mode, its blob id and the stat it held while read; a symlink
gives the id of its target and its stat; anything else, or nothing, gives None. A file that
changes while read gives no stat (a seal must not trust it), and a symlink gone before its
target is read gives None. Real files in a temporary desk, read through ``DeskFolders`` as the
package reads them; a change "while read" is made by a profile hook in this process at the
first ``os.read`` (or call of ``read_link``), where mutation testing sees the calls.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers.builders import put

from trading_checkpoints.core.trees import blob_id
from trading_checkpoints.desk.folders import DeskFolders
from trading_checkpoints.desk.scan import entry_now, read_entry

DATA = b'a line of a large file\n' * 1000


@contextlib.contextmanager
def _before_first_call(name: str, action: Callable[[], None]) -> Iterator[list[str]]:
    """Runs ``action`` once, just before the first call of a function (Python or built-in)
    named ``name`` made in this thread while inside; yields a list that names it once run."""
    done: list[str] = []

    def profile(frame, event: str, arg) -> None:  # noqa: ANN001 - sys.setprofile's signature
        if done:
            return
        called = frame.f_code.co_name if event == 'call' else getattr(arg, '__name__', None)
        if event in ('call', 'c_call') and called == name:
            done.append(name)
            action()

    sys.setprofile(profile)
    try:
        yield done
    finally:
        sys.setprofile(None)


def _key(st: os.stat_result) -> tuple[int, int, int, int, int]:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_mode)


@pytest.mark.parametrize(('mode', 'git_mode'), [(0o644, 0o100644), (0o755, 0o100755)])
def test_a_regular_file_gives_its_mode_blob_and_stat(
    tmp_path: Path, mode: int, git_mode: int
) -> None:
    put(tmp_path, 'notes/big.md', '-', DATA)
    (tmp_path / 'notes/big.md').chmod(mode)
    st = os.lstat(tmp_path / 'notes/big.md')
    with DeskFolders(tmp_path) as folders:
        found = read_entry(folders, 'notes/big.md')
        assert found == ((git_mode, blob_id(DATA)), _key(st))
        assert entry_now(folders, 'notes/big.md') == (git_mode, blob_id(DATA))


def test_a_symlink_gives_its_target_and_stat(tmp_path: Path) -> None:
    (tmp_path / 'notes').mkdir()
    os.symlink('elsewhere/target.md', tmp_path / 'notes/link.md')
    st = os.lstat(tmp_path / 'notes/link.md')
    with DeskFolders(tmp_path) as folders:
        found = read_entry(folders, 'notes/link.md')
        assert found == ((0o120000, blob_id(b'elsewhere/target.md')), _key(st))
        assert entry_now(folders, 'notes/link.md') == (0o120000, blob_id(b'elsewhere/target.md'))


def test_a_folder_or_nothing_gives_none(tmp_path: Path) -> None:
    (tmp_path / 'notes/folder').mkdir(parents=True)
    with DeskFolders(tmp_path) as folders:
        assert read_entry(folders, 'notes/folder') is None
        assert read_entry(folders, 'notes/missing.md') is None
        assert entry_now(folders, 'notes/folder') is None
        assert entry_now(folders, 'notes/missing.md') is None


def test_a_symlink_gone_before_its_target_is_read_gives_none(tmp_path: Path) -> None:
    (tmp_path / 'notes').mkdir()
    os.symlink('elsewhere/target.md', tmp_path / 'notes/link.md')
    with DeskFolders(tmp_path) as folders:
        remove = lambda: os.unlink(tmp_path / 'notes/link.md')  # noqa: E731
        with _before_first_call('read_link', remove) as done:
            found = read_entry(folders, 'notes/link.md')
    assert done and found is None


def test_a_file_growing_while_read_gives_no_stat(tmp_path: Path) -> None:
    """The same file (same inode) longer when read to the end: its id is none a blob has, and
    there is no stat to trust it by."""
    put(tmp_path, 'notes/big.md', '-', DATA)

    def grow() -> None:
        with open(tmp_path / 'notes/big.md', 'ab') as handle:
            handle.write(b'one more line\n')

    with DeskFolders(tmp_path) as folders, _before_first_call('read', grow) as done:
        found = read_entry(folders, 'notes/big.md')
    assert done and found is not None
    entry, key = found
    assert key is None
    assert entry[1] not in (blob_id(DATA), blob_id(DATA + b'one more line\n'))


def test_a_file_rewritten_in_place_while_read_gives_no_stat(tmp_path: Path) -> None:
    """The same length and inode, new bytes and a new mtime while read: its id may be the old
    or the new bytes' (or neither), so its stat must not be trusted."""
    put(tmp_path, 'notes/big.md', '-', DATA)
    full = tmp_path / 'notes/big.md'
    st = os.lstat(full)

    def rewrite() -> None:
        fd = os.open(full, os.O_WRONLY)
        try:
            os.pwrite(fd, DATA.upper(), 0)
        finally:
            os.close(fd)
        os.utime(full, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))

    with DeskFolders(tmp_path) as folders, _before_first_call('read', rewrite) as done:
        found = read_entry(folders, 'notes/big.md')
    assert done and found is not None
    assert found[1] is None
    assert os.lstat(full).st_ino == st.st_ino and os.lstat(full).st_size == st.st_size
