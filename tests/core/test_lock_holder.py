"""The checkpoint lock: who holds it (as the waiter's error names them), a holder killed while
holding it, and the per-process thread locks, one per repository whatever its path's spelling.

Holders are real processes; the waiter runs in this process (where mutation testing sees the
calls). What a holder wrote into the lock file is replaced by hand where a test needs a precise
description: the file is only data, the holder's ``flock`` stays.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from helpers.faults import run_child
from helpers.processes import environment

from trading_checkpoints.core.lock import exclusive
from trading_checkpoints.errors import LockTimeoutError

HOLDER = """
import sys, time
from pathlib import Path
from trading_checkpoints.core.lock import exclusive
with exclusive(Path(sys.argv[1])) as stale:
    print('held', stale, flush=True)
    time.sleep(60)
"""


@contextmanager
def held(lock_path: Path) -> Iterator[tuple[subprocess.Popen, bool]]:
    """Another process holding the lock; yields it and whether it found its predecessor dead."""
    holder = subprocess.Popen(
        [sys.executable, '-c', HOLDER, str(lock_path)],
        stdout=subprocess.PIPE,
        text=True,
        env=environment(),
    )
    try:
        assert holder.stdout is not None
        word, stale = holder.stdout.readline().split()
        assert word == 'held'
        yield holder, stale == 'True'
    finally:
        holder.kill()
        holder.wait()


def _refusal(lock_path: Path) -> str:
    with pytest.raises(LockTimeoutError) as caught:
        with exclusive(lock_path, timeout=0):
            raise AssertionError('the lock should have been held by the other process')
    return str(caught.value)


def test_a_waiter_names_the_holder_as_it_wrote_itself(tmp_path: Path) -> None:
    lock_path = tmp_path / 'repo.git' / 'checkpoints' / 'lock'
    with held(lock_path) as (holder, stale):
        assert not stale
        message = _refusal(lock_path)
    host = socket.gethostname()
    assert message.startswith(f'another process (pid {holder.pid} on {host}, holding it for ')
    seconds = int(message.split('holding it for ')[1].split(' s)')[0])
    assert 0 <= seconds <= 30
    assert message.endswith(f'held the checkpoint lock {lock_path} for more than 0 s')


@pytest.mark.parametrize(
    ('written', 'described'),
    [
        ('', 'holder unknown'),
        ('garbage and more\n', 'holder unknown'),
        ('-12 host 1700000000\n', 'holder unknown'),
        ('4242\n', 'pid 4242'),
        ('4242 a-host\n', 'pid 4242 on a-host'),
        ('4242 a-host not-a-time\n', 'pid 4242 on a-host'),
        ('4242 a-host 1700000000 more\n', 'pid 4242 on a-host (more), holding it for {old} s'),
        ('4242 a-host 1700000000 two/words\n', 'pid 4242 on a-host, holding it for {old} s'),
        ('4242 a-host {future}\n', 'pid 4242 on a-host, holding it for 0 s'),
    ],
)
def test_a_waiter_describes_whatever_the_lock_file_holds(
    tmp_path: Path, written: str, described: str
) -> None:
    lock_path = tmp_path / 'repo.git' / 'checkpoints' / 'lock'
    with held(lock_path):
        lock_path.write_text(written.format(future=int(time.time()) + 3600))
        message = _refusal(lock_path)
        old = int(time.time() - 1_700_000_000)
    expected = [described.format(old=old + delta) for delta in (0, 1, 2)]
    assert any(
        message == f'another process ({text}) held the checkpoint lock {lock_path} '
        f'for more than 0 s'
        for text in expected
    ), message


@pytest.mark.parametrize(
    ('written', 'described'),
    [
        (b'4242 h\xffst 1700000000\n', 'pid 4242 on h\ufffdst, holding it for {old} s'),
        (b'4242 ' + b'h' * 100 + b' x\n', 'pid 4242 on ' + 'h' * 64),
        (b'4242 a-host'.ljust(4096), 'pid 4242 on a-host'),
        (b'4242 a-host'.ljust(4097), 'holder unknown'),  # more than the waiter reads
    ],
    ids=['not-utf8', 'long-host', '4096-bytes', '4097-bytes'],
)
def test_a_waiter_describes_any_bytes_in_the_lock_file(
    tmp_path: Path, written: bytes, described: str
) -> None:
    lock_path = tmp_path / 'repo.git' / 'checkpoints' / 'lock'
    with held(lock_path):
        lock_path.write_bytes(written)
        message = _refusal(lock_path)
        old = int(time.time() - 1_700_000_000)
    expected = [described.format(old=old + delta) for delta in (0, 1, 2)]
    assert any(
        message == f'another process ({text}) held the checkpoint lock {lock_path} '
        f'for more than 0 s'
        for text in expected
    ), message


@pytest.mark.parametrize(
    ('verb', 'word'),
    [
        ('restore', 'restore'),
        ('pre-snap_shot 2!', 'pre-snap_shot2'),
        ('v' * 50, 'v' * 40),
        ('', ''),
        ('!?', ''),
    ],
    ids=['verb', 'odd-characters', 'long', 'none', 'nothing-left'],
)
def test_a_holder_writes_its_pid_host_time_and_verb(tmp_path: Path, verb: str, word: str) -> None:
    lock_path = tmp_path / 'repo.git' / 'checkpoints' / 'lock'
    before = time.time()
    with exclusive(lock_path, timeout=5, verb=verb):
        line = lock_path.read_text()
    since = line.split(' ')[2].rstrip('\n')
    assert before - 1 <= int(since) <= time.time() + 1
    fields = [str(os.getpid()), socket.gethostname(), since, *([word] if word else [])]
    assert line == ' '.join(fields) + '\n'


def test_a_holder_without_a_host_name_writes_a_dash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(socket, 'gethostname', lambda: '')
    lock_path = tmp_path / 'repo.git' / 'checkpoints' / 'lock'
    with exclusive(lock_path, timeout=5, verb='snapshot'):
        assert lock_path.read_text().split(' ')[:2] == [str(os.getpid()), '-']


def test_a_holder_after_a_killed_one_knows_it_and_is_named(tmp_path: Path) -> None:
    lock_path = tmp_path / 'repo.git' / 'checkpoints' / 'lock'

    def die_holding_the_lock() -> None:
        with exclusive(lock_path):
            os.kill(os.getpid(), 9)

    assert run_child(die_holding_the_lock).killed
    with held(lock_path) as (holder, stale):
        assert stale, 'the killed holder left its name: its successor must be told'
        assert lock_path.read_text().split()[0] == str(holder.pid)
        assert f'(pid {holder.pid} on ' in _refusal(lock_path)
    # The successor was killed too; a holder in this process learns it, and lets go cleanly.
    with exclusive(lock_path, timeout=5) as stale:
        assert stale
        assert lock_path.read_text().split()[0] == str(os.getpid())
    assert lock_path.read_text() == ''
    with exclusive(lock_path, timeout=5) as stale:
        assert not stale, 'a clean release is not a death'


def test_the_lock_folder_is_made_when_missing(tmp_path: Path) -> None:
    lock_path = tmp_path / 'new.git' / 'checkpoints' / 'lock'
    with exclusive(lock_path, timeout=1) as stale:
        assert not stale and lock_path.is_file()


def test_threads_on_two_repositories_do_not_wait_for_each_other(tmp_path: Path) -> None:
    first, second = tmp_path / 'a.git' / 'lock', tmp_path / 'b.git' / 'lock'
    taken, release = threading.Event(), threading.Event()

    def hold_first() -> None:
        with exclusive(first, timeout=5):
            taken.set()
            release.wait(10)

    thread = threading.Thread(target=hold_first)
    thread.start()
    try:
        assert taken.wait(10)
        with exclusive(second, timeout=0.5):
            pass  # another repository: its own lock
        with exclusive(tmp_path / 'a.git' / '..' / 'b.git' / 'lock', timeout=0.5):
            pass
    finally:
        release.set()
        thread.join()


def test_threads_on_one_repository_wait_whatever_the_spelling(tmp_path: Path) -> None:
    real = tmp_path / 'repo.git'
    real.mkdir()
    (tmp_path / 'link.git').symlink_to(real)
    taken, release = threading.Event(), threading.Event()

    def hold() -> None:
        with exclusive(real / 'lock', timeout=5):
            taken.set()
            release.wait(10)

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        assert taken.wait(10)
        for spelling in (tmp_path / 'link.git' / 'lock', tmp_path / '.' / 'repo.git' / 'lock'):
            with pytest.raises(LockTimeoutError, match='another thread held the checkpoint lock'):
                with exclusive(spelling, timeout=0.2):
                    raise AssertionError('two threads held one lock')
    finally:
        release.set()
        thread.join()
