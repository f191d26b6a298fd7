"""A program's system calls that touch files, from ``strace``, as records a model can replay.

:func:`record` runs a program under ``strace -f -y -xx -s 0 -e write=all`` and returns its
calls (:class:`Call`) in the order they completed: every call that changes the file system,
flushes it, or moves a descriptor's file position (reads and seeks, so that a later
``write`` lands where the kernel put it), and the calls that create threads and processes
(whose descriptor tables are shared or copied). ``-xx`` prints every string and path as
``\\xNN`` escapes, so nothing in a file name can confuse the parser; ``-s 0`` leaves the data
out of the calls' lines and ``-e write=all`` dumps every written byte after the call that
wrote it. ``helpers/crashfs.py`` turns the calls into operations on a model of the folder.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

STRACE = shutil.which('strace')

# Calls a file system model needs; '?' lets strace ignore a name the architecture lacks.
TRACED = (
    'open',
    'openat',
    'openat2',
    'creat',
    'close',
    'close_range',
    'dup',
    'dup2',
    'dup3',
    'fcntl',
    'read',
    'readv',
    'lseek',
    'write',
    'writev',
    'pwrite64',
    'pwritev',
    'pwritev2',
    'truncate',
    'ftruncate',
    'fallocate',
    'rename',
    'renameat',
    'renameat2',
    'unlink',
    'unlinkat',
    'rmdir',
    'mkdir',
    'mkdirat',
    'link',
    'linkat',
    'symlink',
    'symlinkat',
    'chmod',
    'fchmod',
    'fchmodat',
    'fsync',
    'fdatasync',
    'sync',
    'syncfs',
    'sync_file_range',
    'msync',
    'mmap',
    'copy_file_range',
    'sendfile',
    'splice',
    'clone',
    'clone3',
    'fork',
    'vfork',
    'execve',
)


@dataclass
class Call:
    """One system call that returned: the thread, the name, its arguments as printed, what
    it returned (and the path of a returned descriptor), the bytes a write wrote, and the
    trace lines where it began and where it completed."""

    thread: int
    name: str
    args: list[str]
    result: int
    result_path: str | None
    began: int
    done: int
    data: bytes = b''
    errno: str = ''


@dataclass
class Trace:
    calls: list[Call] = field(default_factory=list)
    exits: dict[int, int] = field(default_factory=dict)  # thread -> its exit status
    lines: int = 0


def record(
    argv: Sequence[str],
    output: Path,
    env: Mapping[str, str],
    *,
    stdin: bytes | None = None,
    cwd: Path | None = None,
    timeout: float = 300,
) -> tuple[Trace, subprocess.CompletedProcess[bytes]]:
    """Runs ``argv`` under strace (the raw trace kept in ``output``); its calls, and the run."""
    assert STRACE is not None, 'strace is not installed'
    traced = ','.join(f'?{name}' for name in TRACED)
    done = subprocess.run(
        [STRACE, '-f', '-qq', '-y', '-xx', '-s', '0', '-e', 'write=all']
        + ['-e', f'trace={traced}', '-o', str(output), *argv],
        env=dict(env),
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        cwd=cwd,
        timeout=timeout,
        check=False,
    )
    return parse(output.read_text(encoding='ascii', errors='replace')), done


_LINE = re.compile(r'(\d+) +(.*)')
_UNFINISHED = re.compile(r'([a-z0-9_]+)\((.*) <unfinished \.\.\.>$')
_RESUMED = re.compile(r'<\.\.\. ([a-z0-9_]+) resumed>(.*)$')
_CALL = re.compile(r'([a-z0-9_]+)\((.*)$')
# ') = 3<path>', ') = -1 ENOENT (...)', ') = 0x7f...', ') = ? <unavailable>'
_RESULT = re.compile(r'^(.*)\) +=\s+(-?\d+|0x[0-9a-f]+|\?)(?:<(.*?)>)?(?: ([A-Z][A-Z0-9_]*))?.*$')
_EXITED = re.compile(r'\+\+\+ exited with (\d+) \+\+\+')
_DUMP = re.compile(r' \| [0-9a-f]+  (.*)$')


def parse(text: str) -> Trace:
    trace = Trace()
    pending: dict[int, tuple[str, str, int]] = {}
    last: Call | None = None
    lines = text.splitlines()
    trace.lines = len(lines)
    for number, raw in enumerate(lines):
        if raw.startswith(' | '):
            dump = _DUMP.match(raw)
            if dump is not None and last is not None:
                last.data += bytes.fromhex(''.join(dump.group(1)[:49].split()))
            continue
        if raw.startswith(' * '):
            continue  # '* N bytes in buffer K' before a writev buffer's dump
        line = _LINE.fullmatch(raw)
        if line is None:
            continue
        thread, rest = int(line.group(1)), line.group(2)
        exited = _EXITED.match(rest)
        if exited is not None:
            trace.exits[thread] = int(exited.group(1))
            continue
        unfinished = _UNFINISHED.match(rest)
        if unfinished is not None:
            pending[thread] = (unfinished.group(1), unfinished.group(2), number)
            continue
        began = number
        resumed = _RESUMED.match(rest)
        if resumed is not None:
            name, start, began = pending.pop(thread, (resumed.group(1), '', number))
            rest = f'{name}({start}{resumed.group(2)}'
        call = _CALL.match(rest)
        if call is None:
            continue  # a signal
        result = _RESULT.match(call.group(2))
        if result is None or result.group(2) == '?':
            last = None
            continue
        value = result.group(2)
        last = Call(
            thread=thread,
            name=call.group(1),
            args=arguments(result.group(1)),
            result=int(value, 16) if value.startswith('0x') else int(value),
            result_path=unescape(result.group(3)) if result.group(3) else None,
            began=began,
            done=number,
            errno=result.group(4) or '',
        )
        trace.calls.append(last)
    return trace


def arguments(text: str) -> list[str]:
    """The top-level arguments of a call, split at commas outside brackets (``-xx`` leaves no
    comma, quote or bracket inside a string)."""
    parts, current, depth = [], [], 0
    for char in text:
        if char in '([{<':
            depth += 1
        elif char in ')]}>':
            depth -= 1
        elif char == ',' and depth == 0:
            parts.append(''.join(current).strip())
            current = []
            continue
        current.append(char)
    if current or parts:
        parts.append(''.join(current).strip())
    return parts


_ESCAPE = re.compile(r'(?:\\x[0-9a-f]{2})+')


def unescape(text: str) -> str:
    """A path as printed with ``-xx`` (``\\x2f\\x74...``), decoded as the file system would."""
    import os

    return os.fsdecode(
        _ESCAPE.sub(
            lambda m: bytes.fromhex(m.group(0).replace('\\x', '')).decode('latin-1'), text
        ).encode('latin-1')
    )


def string(token: str) -> str:
    """A string argument (``"\\x61..."``), decoded."""
    token = token.strip()
    if token.endswith('...'):
        token = token[:-3]
    if len(token) >= 2 and token[0] == '"' and token[-1] == '"':
        token = token[1:-1]
    return unescape(token)


def descriptor(token: str) -> tuple[int | None, str | None]:
    """A descriptor argument: its number (None for ``AT_FDCWD``) and the path ``-y`` showed."""
    start = token.find('<')
    head = token[:start] if start >= 0 else token
    path = unescape(token[start + 1 : -1]) if start >= 0 and token.endswith('>') else None
    number = None if head.strip() == 'AT_FDCWD' else int(head.strip())
    return number, path
