"""Kill points: a process killed with SIGKILL on entering its Nth file-system call, by strace.

``strace --inject=SYSCALL:signal=KILL:when=N`` delivers SIGKILL as a thread enters its Nth
call of SYSCALL: the call never happens. strace counts each system call separately, and per
thread, so a kill point is a pair ``(system call, ordinal in its thread)``. :func:`kill_points`
traces one run of a program and lists the pairs of every call it makes after a marker (the
program opens :data:`MARKER`, a path that never exists, when the part worth killing starts);
:func:`run_killed_at` runs it again, killed at one of them.

The calls are those that change the file system or bring bytes to it (:data:`FILE_CALLS`):
a kill at a call that only reads changes nothing a kill at the next changing call would not.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pytest

STRACE = shutil.which('strace')
needs_strace = pytest.mark.skipif(STRACE is None, reason='strace is not installed')

MARKER = '/nonexistent-checkpoints-kill-sweep-marker'

# The calls that change the file system or flush it; '?' lets strace ignore a name the
# architecture lacks (aarch64 has no open, rename, unlink, ...).
FILE_CALLS = (
    'openat',
    'open',
    'creat',
    'write',
    'pwrite64',
    'writev',
    'pwritev',
    'pwritev2',
    'rename',
    'renameat',
    'renameat2',
    'unlink',
    'unlinkat',
    'mkdir',
    'mkdirat',
    'rmdir',
    'link',
    'linkat',
    'symlink',
    'symlinkat',
    'truncate',
    'ftruncate',
    'fallocate',
    'fsync',
    'fdatasync',
    'sync_file_range',
    'chmod',
    'fchmod',
    'fchmodat',
    'utimensat',
    'flock',
)
_SET = ','.join(f'?{name}' for name in FILE_CALLS)
_START = re.compile(r'^(\d+)\s+([a-z0-9_]+)\((.*)$')


@dataclass(frozen=True)
class KillPoint:
    """A call to kill at: the ``ordinal``-th call of ``syscall`` in its thread."""

    syscall: str
    ordinal: int

    def __str__(self) -> str:
        return f'{self.syscall}#{self.ordinal}'


def _strace(*options: str) -> list[str]:
    # Not --seccomp-bpf: strace 6.1 then never delivers an injected signal.
    assert STRACE is not None
    return [STRACE, '-f', '-qq', f'--trace={_SET}', *options]


def kill_points(
    argv: Sequence[str], env: Mapping[str, str], timeout: float = 300
) -> list[KillPoint]:
    """Every call of :data:`FILE_CALLS` the program makes after opening :data:`MARKER`, as
    kill points (a pair made by two threads is listed once), by call and ordinal."""
    with tempfile.NamedTemporaryFile('r', suffix='.strace') as trace:
        done = subprocess.run(
            [*_strace('-o', trace.name), *argv],
            env=dict(env),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert done.returncode == 0, f'the traced run failed:\n{done.stderr}'
        lines = trace.read().splitlines()
    seen: Counter[tuple[str, str]] = Counter()
    points: list[KillPoint] = []
    started = False
    for line in lines:
        match = _START.match(line)
        if match is None:
            continue  # '<... resumed>', signals, exits
        thread, syscall, rest = match.groups()
        seen[thread, syscall] += 1
        if not started:
            started = MARKER in rest
            continue
        point = KillPoint(syscall, seen[thread, syscall])
        if point not in points:
            points.append(point)
    assert started, 'the program never opened the marker'
    # Each thread makes the same calls in every run, but threads interleave differently: in the
    # order of the calls, and by ordinal, the list is the same every run.
    return sorted(points, key=lambda point: (FILE_CALLS.index(point.syscall), point.ordinal))


def run_killed_at(
    argv: Sequence[str], env: Mapping[str, str], point: KillPoint, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """The program run once more, SIGKILL delivered as it enters the call ``point``; the
    return code is -9 when it was killed (the call was reached), else the program's own."""
    inject = f'--inject={point.syscall}:signal=KILL:when={point.ordinal}'
    return subprocess.run(
        [*_strace('-o', os.devnull, inject), *argv],
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def was_killed(done: subprocess.CompletedProcess[str]) -> bool:
    # strace ends itself with the signal that killed its tracee
    return done.returncode in (-9, 137)
