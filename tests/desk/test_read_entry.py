"""A desk file's entry read as it is now, whatever its size (``read_entry``, ``entry_now``):
what a seal names a file over the size limit by, and what a restore compares such a file with.

A regular file gives its git mode, its blob id and the stat it held while read; a symlink
gives the id of its target and its stat; anything else, or nothing, gives None. Real files in
a temporary desk, read through ``DeskFolders`` as the package reads them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers.builders import put

from trading_checkpoints.core.trees import blob_id
from trading_checkpoints.desk.folders import DeskFolders
from trading_checkpoints.desk.scan import entry_now, read_entry

DATA = b'a line of a large file\n' * 1000


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
