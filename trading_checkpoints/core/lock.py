"""One writer at a time per repository: a thread lock inside the process, a file lock across.

The cross-process lock is an advisory ``flock`` on ``<repo>/checkpoints/lock``. The kernel
releases it when its holder dies, so a crash never leaves a lock behind that blocks later writes.
The file is opened through :mod:`.repofiles` (never through a link, only when it is a regular
file), as every file of the repository.

The holder writes who it is (pid, host, since when, and the verb it runs) into the lock file
and empties it when it lets go normally. A writer that waits longer than :data:`WAIT_NOTICE`
is told once who it waits for (``on_wait``), so it can say so instead of looking hung. A new
holder that finds the file non-empty knows its predecessor was killed while holding the lock,
and ``exclusive`` says so, so the caller can clear what a killed writer may have left behind
(dulwich's ``*.lock`` files, temporary packs).
"""

from __future__ import annotations

import os
import re
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import CheckpointError, LockTimeoutError
from .repofiles import RepoFile, open_in_place, read

if sys.platform == 'win32':  # pragma: no cover - Windows
    import msvcrt

    def _try_lock(fd: int) -> bool:
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _unlock(fd: int) -> None:
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:  # POSIX
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)


DEFAULT_TIMEOUT = 60.0
WAIT_NOTICE = 1.0  # seconds of waiting before ``on_wait`` is called


_WORD = re.compile(r'[A-Za-z0-9_-]{1,40}')
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


def _as_file(lock: Path | RepoFile) -> RepoFile:
    if isinstance(lock, RepoFile):
        return lock
    lock.parent.mkdir(parents=True, exist_ok=True)
    return RepoFile.of(lock)


@contextmanager
def exclusive(
    lock: Path | RepoFile,
    timeout: float = DEFAULT_TIMEOUT,
    *,
    verb: str = '',
    on_wait: Callable[[str], None] | None = None,
) -> Iterator[bool]:
    """Holds the repository's lock, waiting up to ``timeout`` seconds for another holder.

    ``lock`` is the lock file (a path: its folder is taken as it is). ``verb`` (one word, such
    as ``restore``) is written into it beside the pid, for whoever waits. After
    :data:`WAIT_NOTICE` seconds of waiting for another process, ``on_wait`` is called once
    with who holds the lock (``pid 4242 on host (restore), holding it for 3 s``).
    Yields whether the previous holder died while holding the lock (it left its name in it).

    Raises:
        LockTimeoutError: Another holder kept the lock longer than ``timeout``; the message
            names the lock file and the holder.
    """
    deadline = time.monotonic() + timeout
    lock_file = _as_file(lock)
    lock_path = lock_file.path
    thread_lock = _thread_lock_for(lock_path)
    if not thread_lock.acquire(timeout=max(timeout, 0.0)):
        raise LockTimeoutError(
            f'another thread held the checkpoint lock {lock_path} for more than {timeout:g} s',
            lock=lock_path,
            timeout=timeout,
            holder='another thread',
        )
    try:
        fd = open_in_place(lock_file)
        try:
            delay = 0.002
            notice_at = time.monotonic() + WAIT_NOTICE
            while not _try_lock(fd):
                now = time.monotonic()
                if on_wait is not None and now >= notice_at:
                    on_wait(_holder(lock_file))
                    on_wait = None
                if now >= deadline:
                    holder = _holder(lock_file)
                    raise LockTimeoutError(
                        f'another process ({holder}) held the checkpoint lock '
                        f'{lock_path} for more than {timeout:g} s',
                        lock=lock_path,
                        timeout=timeout,
                        holder=holder,
                    )
                time.sleep(delay)
                delay = min(delay * 2, 0.05)
            try:
                stale = bool(os.read(fd, 1))
                os.lseek(fd, 0, os.SEEK_SET)
                os.ftruncate(fd, 0)
                os.write(fd, _holder_line(verb))
                yield stale
            finally:
                try:
                    os.ftruncate(fd, 0)  # a release by a live holder: the next finds it empty
                finally:
                    _unlock(fd)
        finally:
            os.close(fd)
    finally:
        thread_lock.release()


def _holder_line(verb: str) -> bytes:
    """``pid host since verb``: the verb is one word of letters, digits, ``-`` and ``_``."""
    word = ''.join(c for c in verb if c.isalnum() or c in '-_')[:40]
    fields = [str(os.getpid()), socket.gethostname() or '-', f'{time.time():.0f}']
    return (' '.join([*fields, word]) if word else ' '.join(fields)).encode() + b'\n'


def _holder(lock_file: RepoFile) -> str:
    try:
        fields = (read(lock_file, 4096) or b'').decode('utf-8', 'replace').split()
    except CheckpointError:
        fields = []
    if not fields or not fields[0].isdigit():
        return 'holder unknown'
    described = f'pid {fields[0]}'
    if len(fields) > 1:
        described += f' on {fields[1][:64]}'
    if len(fields) > 3 and _WORD.fullmatch(fields[3]):
        described += f' ({fields[3]})'
    if len(fields) > 2 and fields[2].isdigit():
        described += f', holding it for {max(time.time() - int(fields[2]), 0):.0f} s'
    return described
