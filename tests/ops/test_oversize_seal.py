"""What a seal says about the desk's files over the size limit, and what is read back from it.

A file over ``maxFileSize`` is not stored, so the seal names it in a ``Checkpoint-Oversize``
trailer: ``mode blob-id size:mtime:ctime:inode:mode path`` (``-`` for the stat when the file
may still change unseen). A later seal reuses the value when the stat is unchanged and reads
the file again when it changed. A restore that keeps others' changes reverts the file as the
agent's only while the seal names its current content, and ignores a value it cannot parse
(the seal lives in the repository: untrusted). Every step runs in this process, where mutation
testing sees the calls.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from dulwich.repo import Repo
from helpers.builders import write

from trading_checkpoints import Checkpoints
from trading_checkpoints.core.trees import blob_id
from trading_checkpoints.store import metadata

LIMIT = 1000
BLOATED = b'agent output\n' * 400  # 5,200 bytes: over the limit
OVERSIZE = 'Checkpoint-Oversize'
SEAL = b'refs/checkpoints/sealed'


def _bloated(cps: Checkpoints, desk: Path, repo_dir: Path) -> Path:
    """A checkpoint with a small notes/log.md, the limit set, the agent's declared write that
    grows the file past it; returns the file."""
    write(desk, 'Memory.md', 'memory\n')
    write(desk, 'notes/log.md', 'small log\n')
    assert cps.snapshot('first') is not None
    config = repo_dir / 'config'
    config.write_text(config.read_text() + f'[checkpoints]\n\tmaxFileSize = {LIMIT}\n')
    cps.snapshot('before write_file', tool='write_file', paths=['notes/log.md'])
    path = desk / 'notes' / 'log.md'
    path.write_bytes(BLOATED)
    return path


def _settled(path: Path) -> os.stat_result:
    """The file's times set well in the past (not a whole second) and the ctime left behind."""
    then = time.time_ns() - 10_000_000_000 + 123_456
    os.utime(path, ns=(then, then))
    time.sleep(0.12)  # past the racy window of the ctime utime just set
    return os.lstat(path)


def _values(repo_dir: Path) -> list[str]:
    with Repo(str(repo_dir)) as repo:
        message = repo[repo.refs[SEAL]].message.decode()
    return metadata.trailer_values(message).get(OVERSIZE, [])


def _stat_text(st: os.stat_result) -> str:
    return f'{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}:{st.st_mode}'


def test_a_seal_names_a_settled_file_with_its_blob_and_stat(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    path = _bloated(cps, desk, repo_dir)
    st = _settled(path)
    cps.seal()
    blob = blob_id(BLOATED).decode()
    assert _values(repo_dir) == [f'100644 {blob} {_stat_text(st)} notes/log.md']
    assert cps.status().external == ()


def test_a_file_that_may_still_change_is_named_without_its_stat(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    path = _bloated(cps, desk, repo_dir)
    future = time.time_ns() + 3_600_000_000_000
    os.utime(path, ns=(future, future))  # always within the racy window
    cps.seal()
    assert _values(repo_dir) == [f'100644 {blob_id(BLOATED).decode()} - notes/log.md']


def test_a_later_seal_reads_a_changed_file_again(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    path = _bloated(cps, desk, repo_dir)
    _settled(path)
    cps.seal()
    grown = BLOATED + b'and more\n'
    path.write_bytes(grown)
    st = _settled(path)
    cps.seal()
    assert _values(repo_dir) == [f'100644 {blob_id(grown).decode()} {_stat_text(st)} notes/log.md']
    assert cps.status().external == ()
    cps.seal()  # unchanged since: the value is reused as it is
    assert _values(repo_dir) == [f'100644 {blob_id(grown).decode()} {_stat_text(st)} notes/log.md']


def _rewrite_seal(repo_dir: Path, value: str) -> None:
    """The seal's oversize value replaced by ``value`` (a seal someone else wrote)."""
    with Repo(str(repo_dir)) as repo:
        sealed = repo[repo.refs[SEAL]]
        commit = sealed.copy()
        old = metadata.trailer_values(sealed.message.decode())[OVERSIZE][0]
        commit.message = sealed.message.replace(old.encode(), value.encode())
        repo.object_store.add_object(commit)
        repo.refs[SEAL] = commit.id


@pytest.mark.parametrize(
    ('value', 'agents'),
    [
        ('100644 {blob} 1:2:3 notes/log.md', True),  # a stat it cannot use: the entry holds
        ('100644 {blob} a:b:c:d:e notes/log.md', True),
        ('100755 {blob} - notes/log.md', False),  # another mode: not the desk's file
        ('100644 {blob} - notes%2Flog.md', True),  # the path is quoted
        ('100644 {blob} - notes/other.md', False),
        ('100644 {blob} -', False),
        ('100644 {blob} - notes/log.md extra', False),
        ('100644 {blob}  - notes/log.md', False),  # fields split by one space only
        ('100644 abc - notes/log.md', False),
        ('10x644 {blob} - notes/log.md', False),
        ('40000 {blob} - notes/log.md', False),  # a folder's mode
    ],
)
def test_a_keeping_restore_believes_only_a_value_naming_the_current_content(
    cps: Checkpoints, desk: Path, repo_dir: Path, value: str, agents: bool
) -> None:
    path = _bloated(cps, desk, repo_dir)
    _settled(path)
    cps.seal()
    _rewrite_seal(repo_dir, value.format(blob=blob_id(BLOATED).decode()))
    first = cps.list()[-1].checkpoint_id
    result = cps.restore_with_result(first, force=False)
    if agents:  # the agent's write: reverted
        assert result.written == ('notes/log.md',) and result.kept == ()
        assert path.read_bytes() == b'small log\n'
    else:  # not what the seal names: someone else's, kept
        assert [kept for kept, _ in result.kept] == ['notes/log.md']
        assert path.read_bytes() == BLOATED


def test_a_first_seal_names_an_oversize_file(cps: Checkpoints, desk: Path, repo_dir: Path) -> None:
    write(desk, 'Memory.md', 'memory\n')
    write(desk, 'notes/log.md', 'small log\n')
    assert cps.snapshot('first') is not None
    config = repo_dir / 'config'
    config.write_text(config.read_text() + f'[checkpoints]\n\tmaxFileSize = {LIMIT}\n')
    (desk / 'notes/log.md').write_bytes(BLOATED)
    with Repo(str(repo_dir)) as repo:
        assert SEAL not in repo.refs, 'no seal before the first'
    cps.seal()
    [value] = _values(repo_dir)
    assert value.startswith(f'100644 {blob_id(BLOATED).decode()} ')
