"""How a restore writes: modes from the umask, an error naming the file when its temporary name
is taken by a folder, no descriptor left open, a symlink replaced by a file without recovery.

Each test pins a safety check: it fails when ``benchmarks/mutation.py`` breaks that check,
and it runs in this process, where mutation testing sees the calls.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from helpers.builders import put

from trading_checkpoints import CheckpointError, Checkpoints


def test_restored_files_get_their_modes_from_the_umask(tmp_path: Path) -> None:
    desk = tmp_path / 'desk'
    put(desk, 'notes/plain.md', '-', b'plain')
    put(desk, 'notes/tool.sh', 'x', b'#!/bin/sh\n')
    cps = Checkpoints(tmp_path / 'repo.git', desk)
    first = cps.snapshot('modes')
    assert first is not None
    umask = os.umask(0o022)
    try:
        for path in ('notes/plain.md', 'notes/tool.sh'):
            (desk / path).unlink()
        cps.restore(first)
        assert stat.S_IMODE((desk / 'notes/plain.md').stat().st_mode) == 0o644
        assert stat.S_IMODE((desk / 'notes/tool.sh').stat().st_mode) == 0o755
        os.umask(0)
        (desk / 'notes/plain.md').unlink()
        cps.restore(first)
        assert stat.S_IMODE((desk / 'notes/plain.md').stat().st_mode) == 0o666
    finally:
        os.umask(umask)


def test_a_folder_where_the_temporary_file_goes_is_an_error_naming_the_file(
    tmp_path: Path,
) -> None:
    desk = tmp_path / 'desk'
    put(desk, 'notes/a.md', '-', b'old')
    cps = Checkpoints(tmp_path / 'repo.git', desk, atomic_writes=True)
    old = cps.snapshot('old')
    put(desk, 'notes/a.md', '-', b'new')
    cps.snapshot('new')
    assert old is not None
    planted = desk / 'notes' / f'.a.md.checkpoint-{os.getpid()}.tmp'
    (planted / 'inside').mkdir(parents=True)
    with pytest.raises(CheckpointError) as caught:
        cps.restore(old)
    assert str(caught.value) == f'cannot write {desk / "notes/a.md"}: Is a directory'
    assert (desk / 'notes/a.md').read_bytes() == b'new' and (planted / 'inside').is_dir()


@pytest.mark.skipif(not os.path.isdir('/proc/self/fd'), reason='needs /proc')
def test_a_restore_leaves_no_descriptor_open(tmp_path: Path) -> None:
    """A restore of many files in few folders holds one descriptor per folder and closes all
    of them: a descriptor per file would leak hundreds per restore."""
    desk = tmp_path / 'desk'
    for i in range(150):
        put(desk, f'notes/n{i:03d}.md', '-', b'one %d' % i)
    cps = Checkpoints(tmp_path / 'repo.git', desk)
    first = cps.snapshot('one')
    for i in range(150):
        put(desk, f'notes/n{i:03d}.md', '-', b'two %d' % i)
    cps.snapshot('two')
    assert first is not None
    cps.restore(first)  # warm up: memos, the background remover's thread
    before = len(os.listdir('/proc/self/fd'))
    cps.undo()  # 150 files written back into one folder
    assert (desk / 'notes/n149.md').read_bytes() == b'two 149'
    assert len(os.listdir('/proc/self/fd')) <= before


def test_a_tracked_symlink_replaced_by_a_file_needs_no_recovery(tmp_path: Path) -> None:
    desk = tmp_path / 'desk'
    put(desk, 'notes/entry', '-', b'a file')
    put(desk, 'notes/target.md', '-', b'what the link points at')
    cps = Checkpoints(tmp_path / 'repo.git', desk)
    as_file = cps.snapshot('a file')
    (desk / 'notes' / 'entry').unlink()
    os.symlink('target.md', desk / 'notes' / 'entry')
    cps.snapshot('a link')
    assert as_file is not None
    result = cps.restore_with_result(as_file)
    assert result.recovered is None and result.written == ('notes/entry',)
    assert (desk / 'notes' / 'entry').read_bytes() == b'a file'
