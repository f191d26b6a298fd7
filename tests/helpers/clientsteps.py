"""The warm client's steps run in the test's own process: its standard streams made files, the
signals it forwards recorded, and a bound on how long a step may wait."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from trading_checkpoints.warm import client


@contextmanager
def standard_streams(*opened: Callable[[], int]) -> Iterator[None]:
    """This process's descriptors 0, 1 and 2 made the given ones for the block (``opened``
    each returns a descriptor, or -1 to leave the number closed), its ``sys`` streams
    following (what they hold written to the given ones); all put back afterwards."""
    saved = [os.dup(number) for number in range(3)]
    streams = (sys.stdin, sys.stdout, sys.stderr)
    try:
        for number, make in enumerate(opened):
            fd = make()
            if fd < 0:
                os.close(number)
            else:
                os.dup2(fd, number)
                os.close(fd)
        sys.stdin = open(0, closefd=False) if os.path.exists('/proc/self/fd/0') else None  # noqa: SIM115
        sys.stdout = open(1, 'w', closefd=False)  # noqa: SIM115
        sys.stderr = open(2, 'w', closefd=False)  # noqa: SIM115
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()  # before its descriptor is put back
            except (OSError, ValueError):
                pass
        for number, fd in enumerate(saved):
            os.dup2(fd, number)
            os.close(fd)
        sys.stdin, sys.stdout, sys.stderr = streams


def reading(path: Path) -> Callable[[], int]:
    return lambda: os.open(path, os.O_RDONLY)


def writing(path: Path) -> Callable[[], int]:
    return lambda: os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)


@contextmanager
def recorded_signals() -> Iterator[list[int]]:
    """The forwarded signals handled by a recorder for the block (as the client's own
    handlers before it holds them); the previous handlers back afterwards."""
    got: list[int] = []
    numbers = [getattr(signal, name) for name in client.FORWARDED_SIGNALS]
    before = {number: signal.getsignal(number) for number in numbers}
    wakeup = signal.set_wakeup_fd(-1)  # a Held left open must not leave its own behind
    signal.set_wakeup_fd(wakeup)
    for number in numbers:
        signal.signal(number, lambda signum, frame: got.append(signum))
    try:
        yield got
    finally:
        for number, handler in before.items():
            signal.signal(number, handler)
        signal.set_wakeup_fd(wakeup)
