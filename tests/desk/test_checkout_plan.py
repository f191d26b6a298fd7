"""A restore's plan checks, before any write: untracked entries in the way of a planned path,
above it, or inside a folder that becomes a file stop the restore and leave the desk as found.

Each test pins a safety check: it fails when ``benchmarks/mutation.py`` breaks that check,
and it runs in this process, where mutation testing sees the calls.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest
from helpers.builders import mkdirs, put
from helpers.reading import files_of

from trading_checkpoints import CheckpointError, Checkpoints


def test_a_folder_becoming_a_file_is_checked_for_untracked_entries(tmp_path: Path) -> None:
    desk = tmp_path / 'desk'
    put(desk, 'notes/x', '-', b'x as a file')
    cps = Checkpoints(tmp_path / 'repo.git', desk)
    as_file = cps.snapshot('x is a file')
    (desk / 'notes' / 'x').unlink()
    put(desk, 'notes/x/a.md', '-', b'tracked, deleted by the restore')
    (desk / 'notes' / 'x' / 'empty' / 'deeper').mkdir(parents=True)  # empty folders: removed
    cps.snapshot('x is a folder')
    assert as_file is not None
    cps.restore(as_file)
    assert files_of(desk) == {'notes/x': ('-', b'x as a file')}
    # Something untracked in the folder (a named pipe is never snapshotted): refused.
    (desk / 'notes' / 'x').unlink()
    put(desk, 'notes/x/a.md', '-', b'tracked')
    os.mkfifo(mkdirs(desk / 'notes' / 'x' / 'sub') / 'pipe')
    before = files_of(desk)
    with pytest.raises(CheckpointError) as caught:
        cps.restore(as_file)
    assert str(caught.value) == (
        f'cannot restore notes/x: the folder {desk / "notes/x"} holds notes/x/sub/pipe, which '
        'is not tracked and would be lost'
    )
    assert files_of(desk) == before and (desk / 'notes/x/sub/pipe').exists()


@pytest.mark.parametrize('where', ['notes', 'notes/a'])
def test_an_untracked_entry_above_a_planned_path_is_refused_before_any_write(
    tmp_path: Path, where: str
) -> None:
    """Every folder above a planned path is checked, from the tracked root (``notes``) down,
    also below a real folder met first: a named pipe there stops the restore before anything is
    written, ``Memory.md`` included."""
    desk = tmp_path / 'desk'
    put(desk, 'Memory.md', '-', b'target')
    put(desk, 'notes/a/b/c.md', '-', b'target')
    cps = Checkpoints(tmp_path / 'repo.git', desk)
    target = cps.snapshot('target')
    assert target is not None
    shutil.rmtree(desk / where)
    put(desk, 'Memory.md', '-', b'other')
    cps.snapshot('other')
    os.mkfifo(desk / where)
    before = files_of(desk)
    with pytest.raises(CheckpointError) as caught:
        cps.restore(target)
    assert str(caught.value) == (
        f'cannot restore notes/a/b/c.md: {desk / where} is in the way and is not tracked (it '
        'is a file or a symlink, and restoring never writes through one)'
    )
    assert files_of(desk) == before


@pytest.mark.parametrize('fifo', ['notes/z.md', 'notes/sub/c.md'])
def test_untracked_entries_in_the_way_are_refused_before_any_write(
    tmp_path: Path, fifo: str
) -> None:
    """A named pipe (never snapshotted) where the target has a file, or above one: refused,
    even after a planned path in a folder the restore creates."""
    desk = tmp_path / 'desk'
    for path in ('notes/a-new/x.md', 'notes/sub/c.md', 'notes/z.md'):
        put(desk, path, '-', b'target')
    cps = Checkpoints(tmp_path / 'repo.git', desk)
    target = cps.snapshot('target')
    assert target is not None
    shutil.rmtree(desk / 'notes')
    put(desk, 'notes/other.md', '-', b'other')
    cps.snapshot('other')
    pipe = desk / fifo.rpartition('/')[0] if fifo.count('/') == 2 else desk / fifo
    os.mkfifo(pipe)
    before = files_of(desk)
    with pytest.raises(CheckpointError) as caught:
        cps.restore(target)
    if pipe.name == 'sub':
        assert str(caught.value) == (
            f'cannot restore notes/sub/c.md: {pipe} is in the way and is not tracked (it is a '
            'file or a symlink, and restoring never writes through one)'
        )
    else:
        assert str(caught.value) == (
            f'cannot restore notes/z.md: {pipe} exists but is not tracked (not a regular file '
            'or symlink, or left out of snapshots), and would be lost'
        )
    assert files_of(desk) == before and stat.S_ISFIFO(os.lstat(pipe).st_mode)


def test_a_file_becoming_a_folder_does_not_end_the_plan_check(tmp_path: Path) -> None:
    desk = tmp_path / 'desk'
    put(desk, 'notes/a/inner.md', '-', b'a is a folder in the target')
    put(desk, 'notes/z.md', '-', b'z')
    cps = Checkpoints(tmp_path / 'repo.git', desk)
    target = cps.snapshot('target')
    assert target is not None
    shutil.rmtree(desk / 'notes')
    put(desk, 'notes/a', '-', b'a is a file now (tracked, replaced by the restore)')
    cps.snapshot('a is a file')
    os.mkfifo(desk / 'notes' / 'z.md')  # untracked, where the target has a file
    with pytest.raises(CheckpointError, match='notes/z.md exists but is not tracked'):
        cps.restore(target)
    assert (desk / 'notes' / 'a').is_file() and stat.S_ISFIFO(os.lstat(desk / 'notes/z.md').st_mode)
