"""Restores rewrite files in place: what that may and may not do.

A file that is a regular file with a single name is rewritten through a descriptor opened
without following links; anything else goes through a temporary file and a rename, as every
file does with ``atomic_writes``. Real files, real processes killed with SIGKILL.
"""

from __future__ import annotations

import os
import random
import signal
import stat
import sys
from array import array
from pathlib import Path

import pytest
from helpers.builders import put
from helpers.faults import armed, run_child
from helpers.reading import files_of, version_of

from trading_checkpoints import CheckpointError, Checkpoints
from trading_checkpoints.core.paths import TRACKED_PATHS, Allowlist
from trading_checkpoints.core.trees import blob_id
from trading_checkpoints.desk.checkout import Plan, apply, midway
from trading_checkpoints.desk.folders import DeskFolders
from trading_checkpoints.desk.statcache import StatCache
from trading_checkpoints.desk.statcache import save as save_stat_cache
from trading_checkpoints.desk.state import DeskState
from trading_checkpoints.ops import journal as journal_module

NEWER_B = b'new b, much longer than the old b ever was, and more'


def _two_versions(tmp_path: Path, **options) -> tuple[Path, Path, Checkpoints, str]:
    desk, repo_dir = tmp_path / 'desk', tmp_path / 'repo.git'
    put(desk, 'notes/a.md', '-', b'old a')
    put(desk, 'notes/b.md', '-', b'old b, a longer file than the new one')
    cps = Checkpoints(repo_dir, desk, **options)
    old = cps.snapshot('old')
    assert old is not None
    put(desk, 'notes/a.md', '-', b'new a')
    put(desk, 'notes/b.md', '-', b'new b')
    cps.snapshot('new')
    return desk, repo_dir, cps, old


@pytest.mark.parametrize('atomic', [False, True])
def test_files_are_rewritten_in_place_unless_atomic_writes_are_asked_for(
    tmp_path: Path, atomic: bool
) -> None:
    desk, _, cps, old = _two_versions(tmp_path, atomic_writes=atomic)
    inodes = {name: (desk / 'notes' / name).stat().st_ino for name in ('a.md', 'b.md')}
    cps.restore(old)
    assert (desk / 'notes/a.md').read_bytes() == b'old a'
    assert (desk / 'notes/b.md').read_bytes() == b'old b, a longer file than the new one'
    same = [(desk / 'notes' / name).stat().st_ino == inode for name, inode in inodes.items()]
    assert same == [not atomic, not atomic]
    assert cps.snapshot('after') is None  # the stat cache recorded what was written


def test_the_repository_config_asks_for_atomic_writes(tmp_path: Path) -> None:
    desk, repo_dir, cps, old = _two_versions(tmp_path)
    with open(repo_dir / 'config', 'a') as config:
        config.write('[checkpoints]\n\tatomicWrites = true\n')
    inode = (desk / 'notes/a.md').stat().st_ino
    Checkpoints(repo_dir, desk).restore(old)
    assert (desk / 'notes/a.md').stat().st_ino != inode
    assert (desk / 'notes/a.md').read_bytes() == b'old a'
    # The caller's choice wins over the config.
    inode = (desk / 'notes/a.md').stat().st_ino
    Checkpoints(repo_dir, desk, atomic_writes=False).undo()
    assert (desk / 'notes/a.md').stat().st_ino == inode
    assert (desk / 'notes/a.md').read_bytes() == b'new a'


def test_a_config_value_that_is_not_a_boolean_is_refused_without_echoing_it(
    tmp_path: Path,
) -> None:
    desk, repo_dir, cps, old = _two_versions(tmp_path)
    with open(repo_dir / 'config', 'a') as config:
        config.write('[checkpoints]\n\tatomicWrites = s3cr3t-value\n')
    with pytest.raises(CheckpointError) as caught:
        Checkpoints(repo_dir, desk).restore(old)
    message = str(caught.value)
    assert 'checkpoints.atomicWrites' in message and 'not a boolean' in message
    assert 's3cr3t' not in message
    assert (desk / 'notes/a.md').read_bytes() == b'new a'


def test_a_hard_linked_file_is_replaced_never_written_through(tmp_path: Path) -> None:
    """A desk file that is another name of a file outside the desk (a hard link) is restored
    by a rename, so the outside file keeps its bytes."""
    desk, _, cps, old = _two_versions(tmp_path)
    outside = tmp_path / 'outside.txt'
    outside.write_bytes(b'precious, outside the desk')
    (desk / 'notes/a.md').unlink()
    os.link(outside, desk / 'notes/a.md')
    cps.snapshot('a.md is now a hard link')
    cps.restore(old)
    assert outside.read_bytes() == b'precious, outside the desk'
    assert (desk / 'notes/a.md').read_bytes() == b'old a'
    assert os.stat(desk / 'notes/a.md').st_nlink == 1


def test_a_file_swapped_between_its_check_and_its_opening_is_not_written(
    tmp_path: Path,
) -> None:
    """Right before the file is opened to be rewritten, it is replaced by a hard link to a
    file outside the desk: the descriptor opened is not the file checked, so nothing is
    written through it (checked without the restore's own guard, which would also stop it)."""
    desk = tmp_path / 'desk'
    put(desk, 'notes/a.md', '-', b'desk file')
    outside = tmp_path / 'outside.txt'
    outside.write_bytes(b'precious, outside the desk')
    swapped = []

    def swap(event: str, args: tuple) -> None:
        if event == 'open' and args[0] == 'a.md' and args[2] & os.O_WRONLY and not swapped:
            swapped.append(True)
            os.unlink(desk / 'notes/a.md')
            os.link(outside, desk / 'notes/a.md')

    folders = DeskFolders(desk)
    data = b'restored bytes'
    target = {'notes/a.md': (0o100644, blob_id(data))}
    read_blob = {blob_id(data): data}.__getitem__
    with armed(swap):
        try:
            apply(folders, Allowlist(('notes/',)), Plan(['notes/a.md'], []), target, read_blob)
        finally:
            folders.close()
    assert swapped, 'the swap never happened'
    assert outside.read_bytes() == b'precious, outside the desk'
    assert (desk / 'notes/a.md').read_bytes() == b'restored bytes'  # renamed into place


def _restore_killed_at_the_cut(repo_dir: Path, desk: Path, target: str) -> None:
    """Restores ``target`` in a child killed as it cuts a rewritten file's old tail."""

    def killed_at_the_cut() -> None:
        def hook(event: str, args: tuple) -> None:
            if event == 'os.truncate' and journal_module.pending(repo_dir):
                os.kill(os.getpid(), signal.SIGKILL)

        sys.addaudithook(hook)
        Checkpoints(repo_dir, desk).restore(target)

    assert run_child(killed_at_the_cut).killed


def test_a_restore_killed_between_its_write_and_its_cut_is_completed_without_a_saved_state(
    tmp_path: Path,
) -> None:
    """Killed after writing a file's new bytes over its old, longer ones, before cutting the
    old tail: the file holds neither version, but only bytes both checkpoints hold, so the
    next operation completes the restore without saving that half-written file first."""
    desk, repo_dir, cps, old = _two_versions(tmp_path)
    put(desk, 'notes/b.md', '-', NEWER_B)
    new = cps.snapshot('newer')
    assert new is not None

    _restore_killed_at_the_cut(repo_dir, desk, old)
    assert journal_module.pending(repo_dir)
    torn = (desk / 'notes/a.md').read_bytes(), (desk / 'notes/b.md').read_bytes()
    assert torn[0] == b'old a'  # same length: nothing to cut, written whole
    restored, newer = b'old b, a longer file than the new one', NEWER_B
    assert torn[1] == restored + newer[len(restored) :]  # the new bytes over the old ones
    result = Checkpoints(repo_dir, desk).snapshot_with_result('next')
    assert result.recovered and 'saved first' not in result.recovered
    assert not [c for c in cps.list() if c.reason.startswith('desk as found')]
    assert files_of(desk) == version_of(repo_dir, old)
    assert not journal_module.pending(repo_dir)


def test_someone_elses_edit_after_such_a_kill_is_saved_first(tmp_path: Path) -> None:
    desk, repo_dir, cps, old = _two_versions(tmp_path)
    put(desk, 'notes/b.md', '-', NEWER_B)
    cps.snapshot('newer')

    _restore_killed_at_the_cut(repo_dir, desk, old)
    put(desk, 'notes/b.md', '-', b'old b, a longer file than the new one, edited after')
    result = Checkpoints(repo_dir, desk).snapshot_with_result('next')
    assert result.recovered and 'saved first' in result.recovered
    [saved] = [c for c in cps.list() if c.reason.startswith('desk as found')]
    assert version_of(repo_dir, saved.checkpoint_id)['notes/b.md'] == (
        '-',
        b'old b, a longer file than the new one, edited after',
    )


def test_midway_recognises_every_state_of_a_rewrite_and_nothing_else() -> None:
    rng = random.Random(7)
    for _ in range(500):
        old = rng.randbytes(rng.randint(0, 40)) if rng.random() < 0.9 else None
        new = rng.randbytes(rng.randint(0, 40))
        start = old or b''
        for written in range(len(new) + 1):
            assert midway(new[:written] + start[written:], old, new)
        assert midway(new, old, new)
    assert not midway(b'abcX', b'abc', b'abd')  # grown past the old bytes with other bytes
    assert not midway(b'', b'abc', b'abd')  # emptied: nobody's rewrite does that
    assert not midway(b'xbc', b'abc', b'abd')  # changed before the first new byte
    assert not midway(b'abdc', b'abc', b'abd')  # grown, not cut
    assert not midway(b'ab', b'abcdef', b'abc')  # cut before the new bytes were written


@pytest.mark.skipif(os.geteuid() != 0, reason='making a device node needs root')
def test_a_device_swapped_in_during_the_restore_is_never_opened(tmp_path: Path) -> None:
    """Between the plan's checks and the write, the file becomes a device node (/dev/null's
    numbers): opening a device can act on it, so it is not opened at all; the restore stops
    at its guard and the device is left as found."""
    desk, repo_dir, cps, old = _two_versions(tmp_path)
    device = desk / 'notes/a.md'
    opened: list[str] = []

    def swap_and_watch(event: str, args: tuple) -> None:
        if event != 'open' or not isinstance(args[0], str):
            return
        if 'restore-journal' in args[0] and not device.is_char_device():
            device.unlink()
            os.mknod(device, 0o600 | stat.S_IFCHR, os.makedev(1, 3))
        elif args[0] == 'a.md' and isinstance(args[2], int) and args[2] & os.O_WRONLY:
            opened.append(args[0])

    with armed(swap_and_watch), pytest.raises(CheckpointError):
        cps.restore(old)
    assert device.is_char_device(), 'the swap never happened, or the device was replaced'
    assert opened == []


def test_a_stat_cache_that_lies_about_a_file_cannot_make_a_restore_lose_it(
    tmp_path: Path,
) -> None:
    """The stat cache (in the repository, writable by anyone) gives a file its real stat but
    the id of an older version, so the pre-snapshot finds the desk unchanged: the restore
    reads the file again before replacing it, finds bytes no checkpoint holds, and saves
    them first."""
    desk, repo_dir = tmp_path / 'desk', tmp_path / 'repo.git'
    put(desk, 'notes/a.md', '-', b'v0')
    cps = Checkpoints(repo_dir, desk)
    v0 = cps.snapshot('v0')
    put(desk, 'notes/a.md', '-', b'v1')
    cps.snapshot('v1')
    put(desk, 'notes/a.md', '-', b'v2, never saved')
    cache_path = repo_dir / 'checkpoints' / 'statcache'
    state = DeskState(desk, Allowlist(TRACKED_PATHS), cache_path)
    try:
        real = state.load_cache()
        scanned = state.scan(StatCache(context=state.context))
    finally:
        state.close()
    [row] = [i for i, name in enumerate(scanned.names) if name == 'notes/a.md']
    shas = bytearray(scanned.shas)
    shas[row * 20 : row * 20 + 20] = bytes.fromhex(blob_id(b'v1').decode())
    lying = StatCache(
        names=list(scanned.names),
        numbers=array('q', scanned.numbers),
        shas=bytes(shas),
        trees=real.trees,
        context=state.context,
        commit=real.commit,
        written_at_ns=2**62,  # never racy: every row is believed
    )
    save_stat_cache(cache_path, lying)
    assert cps.status().clean  # the lie is believed by a plain scan
    cps.restore(v0)
    assert (desk / 'notes/a.md').read_bytes() == b'v0'
    saved = [version_of(repo_dir, c.checkpoint_id).get('notes/a.md') for c in cps.list()]
    assert ('-', b'v2, never saved') in saved
