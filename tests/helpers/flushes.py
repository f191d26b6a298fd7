"""What a process makes durable, and in which order: flushes, renames, removals and writes, by path.

A crash test kills with SIGKILL, which keeps the page cache: everything written survives,
flushed or not. What a power cut keeps follows from the order of the flushes instead (the cheap
half of an ALICE-style check, Pillai et al., OSDI 2014). That order is recorded here two ways,
as the same list of :class:`Event`:

- :func:`recording`: in this process (where mutation testing sees the calls), a wrapper around
  the ``os`` functions that flush, rename, remove, make a folder, open for writing and write
  (folders made show only here). Every flush of
  the package and of dulwich is an ``os.fsync`` (see ``core/durability.py``), every desk file
  is opened through ``os.open``; a descriptor's path is read from ``/proc/self/fd`` when the
  call returns. Files opened by the built-in ``open`` show only through their flushes.
- :func:`traced`: ``python -c CODE`` under ``strace -f -y``, its ``fsync``/``fdatasync``,
  renames, unlinks, ``openat`` for writing and writes parsed into the same events (each when
  the system call returned).
"""

from __future__ import annotations

import codecs
import contextlib
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from helpers.processes import environment

FLUSH = 'flush'  # fsync or fdatasync of a file or a folder
RENAME = 'rename'  # path -> target
REMOVE = 'remove'  # unlink or rmdir
CREATE = 'create'  # opened for writing with O_CREAT (a new name, unless it existed)
WRITE = 'write'  # opened for writing without O_CREAT, or written to
MKDIR = 'mkdir'  # a folder made (recorded in this process only)

PROC_FD = Path('/proc/self/fd')
STRACE = shutil.which('strace')
TRACED_CALLS = (
    'fsync,fdatasync,rename,renameat,renameat2,unlink,unlinkat,rmdir,openat,write,pwrite64'
)


@dataclass(frozen=True)
class Event:
    """One call that returned successfully: its kind, the path it acted on (a rename's old
    name), and a rename's new name."""

    kind: str
    path: str
    target: str = ''

    def __str__(self) -> str:
        return f'{self.kind} {self.path}' + (f' -> {self.target}' if self.target else '')


# -- in this process -----------------------------------------------------------------------

_WRITING = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_WRAPPED = (
    'fsync',
    'fdatasync',
    'rename',
    'replace',
    'unlink',
    'remove',
    'rmdir',
    'mkdir',
    'open',
    'write',
    'pwrite',
)


def _fd_path(fd: int) -> str:
    try:
        return os.readlink(PROC_FD / str(fd))
    except OSError:
        return f'<fd {fd}>'


def _at(path, dir_fd: int | None) -> str:
    text = os.fsdecode(os.fspath(path))
    if dir_fd is not None and not os.path.isabs(text):
        return os.path.join(_fd_path(dir_fd), text)
    return os.path.abspath(text)


@contextlib.contextmanager
def recording() -> Iterator[list[Event]]:
    """Records this process's flushes, renames, removals and writes while inside (threads
    included, as the flush pool's); the list is complete when the block ends."""
    events: list[Event] = []
    lock = threading.Lock()

    def add(event: Event) -> None:
        with lock:
            events.append(event)

    original = {name: getattr(os, name) for name in _WRAPPED}

    def flush(name: str):
        def call(fd: int):
            result = original[name](fd)
            add(Event(FLUSH, _fd_path(fd)))
            return result

        return call

    def rename(name: str):
        def call(src, dst, *, src_dir_fd=None, dst_dir_fd=None):
            old, new = _at(src, src_dir_fd), _at(dst, dst_dir_fd)
            result = original[name](src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)
            add(Event(RENAME, old, new))
            return result

        return call

    def remove(name: str):
        def call(path, *, dir_fd=None):
            where = _at(path, dir_fd)
            result = original[name](path, dir_fd=dir_fd)
            add(Event(REMOVE, where))
            return result

        return call

    def mkdir(path, mode=0o777, *, dir_fd=None):
        where = _at(path, dir_fd)
        result = original['mkdir'](path, mode, dir_fd=dir_fd)
        add(Event(MKDIR, where))
        return result

    def open_(path, flags, mode=0o777, *, dir_fd=None):
        fd = original['open'](path, flags, mode, dir_fd=dir_fd)
        if flags & _WRITING:
            add(Event(CREATE if flags & os.O_CREAT else WRITE, _fd_path(fd)))
        return fd

    def write(fd, data):
        written = original['write'](fd, data)
        add(Event(WRITE, _fd_path(fd)))
        return written

    def pwrite(fd, data, offset):
        written = original['pwrite'](fd, data, offset)
        add(Event(WRITE, _fd_path(fd)))
        return written

    wrappers = {
        'fsync': flush('fsync'),
        'fdatasync': flush('fdatasync'),
        'rename': rename('rename'),
        'replace': rename('replace'),
        'unlink': remove('unlink'),
        'remove': remove('remove'),
        'rmdir': remove('rmdir'),
        'mkdir': mkdir,
        'open': open_,
        'write': write,
        'pwrite': pwrite,
    }
    for name, wrapper in wrappers.items():
        setattr(os, name, wrapper)
    try:
        yield events
    finally:
        for name, function in original.items():
            setattr(os, name, function)


# -- another process, under strace ------------------------------------------------------------


def strace_works() -> str | None:
    """Why ``strace`` cannot trace here (not installed, or ptrace not permitted), or None."""
    if STRACE is None:
        return 'strace is not installed'
    done = subprocess.run(
        [STRACE, '-f', '-qq', '-e', 'trace=fsync', sys.executable, '-c', 'pass'],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        return f'strace cannot trace here: {done.stderr.strip()[:200]}'
    return None


def traced(code: str, output: Path, timeout: float = 300) -> list[Event]:
    """Runs ``python -c CODE`` (this checkout and the helpers importable, in the current
    folder) under ``strace -f -y`` and returns its events; the raw trace is kept in
    ``output``."""
    assert STRACE is not None
    cwd = Path.cwd()
    done = subprocess.run(
        [STRACE, '-f', '-qq', '-y', '-s', '0', '-o', str(output), '-e', f'trace={TRACED_CALLS}']
        + [sys.executable, '-c', code],
        env=environment(with_helpers=True),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, f'the traced process failed:\n{done.stderr[-3000:]}'
    return parse(output.read_text(errors='surrogateescape'), cwd)


_LINE = re.compile(r'(?:\[pid\s+)?(\d+)\]?\s+(.*)')
_UNFINISHED = re.compile(r'(\w+)\((.*) <unfinished \.\.\.>$')
_RESUMED = re.compile(r'<\.\.\. (\w+) resumed>(.*)$')
_CALL = re.compile(r'(\w+)\((.*)$')
_RESULT = re.compile(r'^(.*)\)\s+= (-?\d+)(?:<(.*)>)?(?:\s.*)?$')


def parse(trace: str, cwd: Path) -> list[Event]:
    """The events of an ``strace -f -y`` output (lines ``PID call(args) = result``)."""
    events: list[Event] = []
    pending: dict[str, tuple[str, str]] = {}
    for raw in trace.splitlines():
        line = _LINE.fullmatch(raw)
        if line is None:
            continue
        pid, rest = line.groups()
        unfinished = _UNFINISHED.match(rest)
        if unfinished:
            pending[pid] = (unfinished.group(1), unfinished.group(2))
            continue
        resumed = _RESUMED.match(rest)
        if resumed:
            name, start = pending.pop(pid, (resumed.group(1), ''))
            rest = f'{name}({start}{resumed.group(2)}'
        call = _CALL.match(rest)
        if call is None:
            continue  # a signal, an exit
        result = _RESULT.match(call.group(2))
        if result is None or int(result.group(2)) < 0:
            continue  # failed
        event = _event(call.group(1), _arguments(result.group(1)), result.group(3), cwd)
        if event is not None:
            events.append(event)
    return events


def _event(name: str, args: list[str], returned: str | None, cwd: Path) -> Event | None:
    if name in ('fsync', 'fdatasync'):
        return Event(FLUSH, _fd(args[0]))
    if name in ('write', 'pwrite64'):
        return Event(WRITE, _fd(args[0]))
    if name == 'rename':
        return Event(RENAME, _joined(None, args[0], cwd), _joined(None, args[1], cwd))
    if name in ('renameat', 'renameat2'):
        return Event(RENAME, _joined(args[0], args[1], cwd), _joined(args[2], args[3], cwd))
    if name in ('unlink', 'rmdir'):
        return Event(REMOVE, _joined(None, args[0], cwd))
    if name == 'unlinkat':
        return Event(REMOVE, _joined(args[0], args[1], cwd))
    if name == 'openat':
        flags = args[2]
        if not any(flag in flags for flag in ('O_WRONLY', 'O_RDWR', 'O_CREAT', 'O_TRUNC')):
            return None
        path = returned if returned is not None else _joined(args[0], args[1], cwd)
        return Event(CREATE if 'O_CREAT' in flags else WRITE, path)
    return None


def _arguments(text: str) -> list[str]:
    """The top-level arguments of a call, split at commas outside strings and ``<...>``."""
    parts, current, quoted, angle, escaped = [], [], False, 0, False
    for char in text:
        if quoted:
            current.append(char)
            if escaped:
                escaped = False
            elif char == '\\':
                escaped = True
            elif char == '"':
                quoted = False
            continue
        if char == '"':
            quoted = True
        elif char == '<':
            angle += 1
        elif char == '>':
            angle -= 1
        elif char == ',' and angle == 0:
            parts.append(''.join(current).strip())
            current = []
            continue
        current.append(char)
    parts.append(''.join(current).strip())
    return parts


def _string(token: str) -> str:
    body = token.strip()
    if body.endswith('...'):
        body = body[:-3]
    body = body[1:-1] if body.startswith('"') and body.endswith('"') else body
    raw = codecs.escape_decode(body.encode('latin-1', 'surrogateescape'))[0]
    return os.fsdecode(raw)


def _fd(token: str) -> str:
    """The path strace shows for a descriptor (``5</a/b>``), or the token itself."""
    start = token.find('<')
    if start < 0 or not token.endswith('>'):
        return token
    path = token[start + 1 : -1]
    return path.removesuffix(' (deleted)')


def _joined(dir_token: str | None, name_token: str, cwd: Path) -> str:
    name = _string(name_token)
    if os.path.isabs(name):
        return name
    base = _fd(dir_token) if dir_token is not None and '<' in dir_token else str(cwd)
    return os.path.join(base, name)
