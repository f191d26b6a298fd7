"""One writer at a time per repository: a thread lock inside the process, a file lock across.

The cross-process lock is an advisory ``flock`` on ``<repo>/checkpoints/lock``. The kernel
releases it when its holder dies, so a crash never leaves a lock behind that blocks later writes.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import LockTimeoutError

try:  # POSIX
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)

except ImportError:  # pragma: no cover - Windows
    import msvcrt

    def _try_lock(fd: int) -> bool:
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _unlock(fd: int) -> None:
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)


DEFAULT_TIMEOUT = 60.0

_thread_locks: dict[str, threading.Lock] = {}
_thread_locks_guard = threading.Lock()


def _thread_lock_for(path: Path) -> threading.Lock:
    given = os.fspath(path)
    known = _thread_locks.get(given)  # fast path: the path as given was seen before
    if known is not None:
        return known
    key = os.path.realpath(path)
    with _thread_locks_guard:
        found = _thread_locks.setdefault(key, threading.Lock())
        _thread_locks.setdefault(given, found)
        return found


@contextmanager
def exclusive(lock_path: Path, timeout: float = DEFAULT_TIMEOUT) -> Iterator[None]:
    """Holds the repository's lock, waiting up to ``timeout`` seconds for another holder."""
    deadline = time.monotonic() + timeout
    thread_lock = _thread_lock_for(lock_path)
    if not thread_lock.acquire(timeout=max(timeout, 0.0)):
        raise LockTimeoutError(
            f'another thread held the checkpoint lock {lock_path} for more than {timeout:g} s'
        )
    try:
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        except FileNotFoundError:
            lock_path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            delay = 0.002
            while not _try_lock(fd):
                if time.monotonic() >= deadline:
                    raise LockTimeoutError(
                        f'another process ({_holder(lock_path)}) held the checkpoint lock '
                        f'{lock_path} for more than {timeout:g} s'
                    )
                time.sleep(delay)
                delay = min(delay * 2, 0.05)
            try:
                # Overwritten in place at a fixed width: truncating a file with data makes
                # ext4 flush it on close, which costs more than the whole no-op snapshot.
                holder = f'{os.getpid():<20}\n'.encode()
                if hasattr(os, 'pwrite'):
                    os.pwrite(fd, holder, 0)
                else:  # pragma: no cover - Windows
                    os.lseek(fd, 0, os.SEEK_SET)
                    os.write(fd, holder)
                yield
            finally:
                _unlock(fd)
        finally:
            os.close(fd)
    finally:
        thread_lock.release()


def _holder(lock_path: Path) -> str:
    try:
        pid = lock_path.read_text().strip()
    except OSError:
        pid = ''
    return f'pid {pid}' if pid.isdigit() else 'holder unknown'
