"""Attacks on the desk I/O boundary by a second, real process swapping folders for symlinks.

A racer (``swap_racer.py``) exchanges a tracked folder with a symlink to a folder outside the
desk as fast as it can (``renameat2(RENAME_EXCHANGE)``, so every instant sees one or the other)
while this process restores and snapshots. Whatever fails, nothing outside the desk may be
written, deleted or read into a checkpoint, and no temporary file may land outside.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import SCRIPTS
from helpers.processes import python
from helpers.reading import files_of

from trading_checkpoints import CheckpointError, Checkpoints

RACER = SCRIPTS / 'swap_racer.py'
SECONDS = 6.0

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith('linux') or not hasattr(ctypes.CDLL(None), 'renameat2'),
    reason='renameat2(RENAME_EXCHANGE) is needed to race a symlink swap',
)


def start_racer(folder: Path, spare: Path, append_to: str | None = None) -> subprocess.Popen:
    args = [sys.executable, str(RACER), str(folder), str(spare), str(SECONDS)]
    if append_to:
        args.append(append_to)
    return subprocess.Popen(args, stdout=subprocess.PIPE, text=True)


def stop(racer: subprocess.Popen) -> int:
    out, _ = racer.communicate(timeout=SECONDS + 30)
    assert racer.returncode == 0
    return int(out.strip() or 0)


def no_temporaries(folder: Path) -> list[str]:
    return [path for path in files_of(folder) if '.checkpoint-' in path or 'tmp' in path]


def test_restores_racing_a_folder_swap_write_nothing_outside(tmp_path: Path) -> None:
    desk = tmp_path / 'desks' / 'main'
    notes = desk / 'notes'
    notes.mkdir(parents=True)
    outside = tmp_path / 'outside'
    outside.mkdir()
    for i in range(300):
        (notes / f'f{i}.md').write_bytes(b'version a')
        (outside / f'f{i}.md').write_bytes(b'outside, never to be replaced')
    (outside / 'precious.txt').write_bytes(b'precious')
    cps = Checkpoints(tmp_path / '.checkpoints' / 'main.git', desk, durable=False)
    version_a = cps.snapshot('a')
    for i in range(300):
        (notes / f'f{i}.md').write_bytes(b'version b')
    version_b = cps.snapshot('b')
    os.symlink(outside, desk / '.swap')
    before = files_of(outside)
    trials = failures = recoveries = swaps = 0
    # How often a restore gets as far as its journal before the swap stops it depends on the
    # machine's speed: race again (up to 10 rounds) until the journal's path was taken.
    for _ in range(10):
        racer = start_racer(notes, desk / '.swap', append_to='f5.md')
        try:
            while racer.poll() is None:
                try:
                    result = cps.restore_with_result(version_a if trials % 2 else version_b)
                    recoveries += bool(result.recovered)
                except CheckpointError as error:
                    failures += 1
                    recoveries += 'cannot be completed' in str(error)  # the journal's, refused
                trials += 1
                assert files_of(outside) == before, f'trial {trials} wrote outside the desk'
        finally:
            swaps += stop(racer)
        if recoveries:
            break
    assert swaps > 1000 and trials >= 4, (swaps, trials)
    assert recoveries, 'the recovery path was never taken'
    print(f'{trials} restores, {failures} refused, {recoveries} through the journal')
    # Whatever was left half-way is completed now, still without touching the outside.
    cps.list()
    final = cps.restore_with_result(version_a)
    assert files_of(outside) == before
    assert not no_temporaries(outside)
    assert (notes / 'f0.md').read_bytes() == b'version a', final


@pytest.mark.parametrize('swapped', ['notes', 'memory/deep/er'])
def test_snapshots_racing_a_folder_swap_never_read_outside(tmp_path: Path, swapped: str) -> None:
    from dulwich.repo import Repo

    desk = tmp_path / 'desks' / 'main'
    folder = desk / swapped
    folder.mkdir(parents=True)
    secret = tmp_path / 'secret'
    secret.mkdir()
    for i in range(20):
        (folder / f'f{i}.md').write_bytes(f'inside {i}'.encode())
        (secret / f'f{i}.md').write_bytes(f'SECRET-FROM-OUTSIDE {i}'.encode())
    repo_dir = tmp_path / '.checkpoints' / 'main.git'
    cps = Checkpoints(repo_dir, desk, durable=False)
    cps.snapshot('start')
    os.symlink(secret, folder.parent / '.swap')
    racer = start_racer(folder, folder.parent / '.swap')
    taken = 0
    try:
        while racer.poll() is None:
            try:
                if cps.snapshot(f'snapshot {taken}'):
                    taken += 1
            except CheckpointError:
                pass  # a folder replaced mid-scan may be refused; never followed
    finally:
        stop(racer)
    assert taken >= 2, 'the race never changed what a snapshot saw'
    repo = Repo(str(repo_dir))
    try:
        for sha in repo.object_store:
            assert b'SECRET-FROM-OUTSIDE' not in repo.object_store[sha].as_raw_string()
    finally:
        repo.close()


def test_a_restore_never_follows_a_symlink_swapped_in_before_it_starts(tmp_path: Path) -> None:
    """The deterministic version: the tracked folder is a symlink to outside when the restore
    runs. The symlink is recorded as a link and replaced by a real folder; outside untouched."""
    desk = tmp_path / 'desks' / 'main'
    (desk / 'notes').mkdir(parents=True)
    (desk / 'notes' / 'a.md').write_bytes(b'mine')
    cps = Checkpoints(tmp_path / 'repo.git', desk)
    first = cps.snapshot('first')
    outside = tmp_path / 'outside'
    outside.mkdir()
    (outside / 'a.md').write_bytes(b'outside')
    os.rename(desk / 'notes', tmp_path / 'moved-notes')
    os.symlink(outside, desk / 'notes')
    result = cps.restore_with_result(first)
    assert (outside / 'a.md').read_bytes() == b'outside'
    assert sorted(os.listdir(outside)) == ['a.md']
    assert not (desk / 'notes').is_symlink()
    assert (desk / 'notes' / 'a.md').read_bytes() == b'mine'
    assert cps.show(result.before_id, 'notes') == os.fsencode(outside)  # kept as a link


def test_a_folder_moved_out_of_the_desk_mid_restore_is_reported(tmp_path: Path) -> None:
    """A folder renamed out of the desk after the restore opened it: the restore stops with a
    clear error instead of claiming success, and the next operation completes it."""
    desk = tmp_path / 'desks' / 'main'
    (desk / 'notes').mkdir(parents=True)
    for i in range(5):
        (desk / 'notes' / f'{i}.md').write_bytes(b'old')
    repo_dir = tmp_path / 'repo.git'
    cps = Checkpoints(repo_dir, desk)
    old = cps.snapshot('old')
    for i in range(5):
        (desk / 'notes' / f'{i}.md').write_bytes(b'new')
    cps.snapshot('new')
    code = f"""
import os, sys
from pathlib import Path
from trading_checkpoints import Checkpoints
from helpers.faults import lands_a_desk_file
desk = Path({str(desk)!r})
moved = []
def hook(event, args):
    if not moved and lands_a_desk_file(event, args):
        moved.append(1)
        os.rename(desk / 'notes', Path({str(tmp_path)!r}) / 'taken-away')
sys.addaudithook(hook)
try:
    Checkpoints(Path({str(repo_dir)!r}), desk).restore({old!r})
except Exception as error:
    print(type(error).__name__, error)
"""
    out = python(code, with_helpers=True, timeout=60).stdout
    assert out.startswith('ConcurrentChangeError') and 'moved away' in out, out
    # The next operation finishes the restore in the folder now at the desk's path.
    time.sleep(0.01)
    cps.list()
    assert (desk / 'notes' / '0.md').read_bytes() == b'old'
