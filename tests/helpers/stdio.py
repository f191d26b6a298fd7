"""Real pipes in place of the test process's fds 0 and 1, for code that serves a client over
stdio in the test's own process (``agent/mcpstart.py``): what the client sends, what the server
wrote."""

from __future__ import annotations

import os
import select
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

# How long a client waits for its answers before it ends its input (and how long the pipes
# stay open for input at all): a server that lost a line, or a reader that waits for one more,
# then fails its test rather than hanging it.
DEADLINE = 10.0


class Stdio:
    """Pipes in place of fds 0 and 1 while the test runs: what the client sends, what the
    server wrote."""

    def __init__(self) -> None:
        self.saved = os.dup(0), os.dup(1)
        self.read = b''
        self.before_end = b''  # what the client had read when it ended its input
        self.client_in, self.stdin = os.pipe()  # the client writes to self.stdin
        self.stdout, self.client_out = os.pipe()
        os.dup2(self.client_in, 0)
        os.dup2(self.client_out, 1)
        os.close(self.client_in)
        os.close(self.client_out)
        self.lock = threading.Lock()
        self.watchdog = threading.Timer(DEADLINE, self.end_input)
        self.watchdog.daemon = True
        self.watchdog.start()

    def send(self, data: bytes, end: bool = False) -> None:
        os.write(self.stdin, data)
        if end:
            self.end_input()

    def end_input(self) -> None:
        with self.lock:
            if self.stdin >= 0:
                os.close(self.stdin)
                self.stdin = -1

    def answered(self, count: int) -> None:
        """The client: reads ``count`` answer lines, then ends its input."""
        while self.read.count(b'\n') < count:
            chunk = os.read(self.stdout, 65536)
            if not chunk:
                break
            self.read += chunk
        self.end_input()

    def converse(self, pieces: list[bytes], count: int) -> None:
        """The client: sends ``pieces`` a moment apart (a server reads each alone unless it
        is slower), reads ``count`` answer lines for at most :data:`DEADLINE` seconds, then
        ends its input."""
        for number, piece in enumerate(pieces):
            if number:
                time.sleep(0.2)
            self.send(piece)
        deadline = time.monotonic() + DEADLINE
        while self.read.count(b'\n') < count:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.stdout], [], [], left)[0]:
                break
            chunk = os.read(self.stdout, 65536)
            if not chunk:
                break
            self.read += chunk
        self.before_end = self.read
        self.end_input()

    def written(self) -> bytes:
        """What the server wrote: read until the pipe ends (fd 1 put back, no write end is
        left but a server's own), for at most :data:`DEADLINE` seconds."""
        os.dup2(self.saved[1], 1)
        chunks = []
        deadline = time.monotonic() + DEADLINE
        while select.select([self.stdout], [], [], max(0.0, deadline - time.monotonic()))[0]:
            chunk = os.read(self.stdout, 65536)
            if not chunk:
                return b''.join(chunks)
            chunks.append(chunk)
        return b''.join(chunks) + b' (and no end)'

    def close(self) -> None:
        self.watchdog.cancel()
        self.end_input()
        os.dup2(self.saved[0], 0)
        os.dup2(self.saved[1], 1)
        for fd in (*self.saved, self.stdout):
            os.close(fd)


@contextmanager
def piped() -> Iterator[Stdio]:
    """Inside the test itself: pytest's capture puts its own file at fd 1 between phases."""
    pipes = Stdio()
    try:
        yield pipes
    finally:
        pipes.close()
