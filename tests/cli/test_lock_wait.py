"""A writer waiting for the lock says, after a second, what it waits for: once, on stderr.

Before, ``checkpoints snapshot`` waiting 10 seconds behind a restore printed nothing and looked
hung. Here a real second process holds the desk's lock as a restore does (the verb is written
into the lock file beside its pid) for three seconds while the command waits.
"""

from __future__ import annotations

import time
from pathlib import Path

from helpers.builders import checkpoints_in, desk_in, new_workspace, repository_in, write
from helpers.cli import checkpoints
from helpers.processes import lock_holder

from trading_checkpoints.core import lock
from trading_checkpoints.core.repofiles import RepoFile


def test_a_waiting_snapshot_says_once_who_holds_the_lock(tmp_path: Path) -> None:
    workspace = new_workspace(tmp_path / 'ws')
    desk, repository = desk_in(workspace), repository_in(workspace)
    write(desk, 'Memory.md', 'v1')
    checkpoints_in(workspace).snapshot('v1')
    write(desk, 'Memory.md', 'v2')
    holder = lock_holder(repository, 3)
    try:
        started = time.monotonic()
        done = checkpoints('snapshot', '-m', 'behind a restore', workspace=workspace)
        waited = time.monotonic() - started
    finally:
        holder.kill()
        holder.wait()
    assert done.returncode == 0, done.stderr
    notes = [line for line in done.stderr.splitlines() if 'waiting for the checkpoint lock' in line]
    assert len(notes) == 1, done.stderr
    assert notes[0].startswith('note: ')
    assert f'pid {holder.pid}' in notes[0] and '(restore)' in notes[0]
    assert str(repository / 'checkpoints' / 'lock') in notes[0]
    assert waited > 2, 'it did wait for the holder'
    assert 'Snapshot' in done.stdout


def test_no_note_when_the_lock_is_free_or_soon_free(tmp_path: Path) -> None:
    workspace = new_workspace(tmp_path / 'ws')
    write(desk_in(workspace), 'Memory.md', 'v1')
    done = checkpoints('snapshot', '-m', 'v1', workspace=workspace)
    assert done.returncode == 0 and 'waiting' not in done.stderr


def test_the_library_calls_on_wait_once_with_the_verb_and_pid(tmp_path: Path) -> None:
    repository = tmp_path / 'repo.git'
    (repository / 'checkpoints').mkdir(parents=True)
    holder = lock_holder(repository, 2.5)
    told: list[str] = []
    try:
        lock_file = RepoFile(repository, 'checkpoints/lock')
        with lock.exclusive(lock_file, timeout=30, verb='prune', on_wait=told.append):
            written = (repository / 'checkpoints' / 'lock').read_text().split()
    finally:
        holder.kill()
        holder.wait()
    assert len(told) == 1 and f'pid {holder.pid}' in told[0] and '(restore)' in told[0]
    assert written[3] == 'prune'
