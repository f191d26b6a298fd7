"""One served command: the server's child becomes its client, runs the command, and ends as the
client's own process would have.

The child that took a connection (``server.py``):

1. receives the request and the client's token (``wire.py``);
2. checks that it can be the client (``context.py``: the same namespaces, root, credentials,
   control groups; the server's watched code unchanged, ``watched.py``) and takes the
   client's folder, umask, signals and resource limits, its environment (the server's own
   removed first) with what a new process derives from it at its start (the time zone,
   ``time.tzset``; the character type locale); or refuses (``no REASON``: the client runs the
   command itself);
3. takes the client's standard streams from the token, and sets them up as the client's Python
   set up its own; when they are gone, the client took them back (it gave up) and the child
   runs nothing;
4. from then on ends at once (SIGKILL, sent by the kernel) if the client's end of the
   connection closes: a client killed mid-command leaves no command running without it, as
   killing an in-process command would;
5. says ``run N``, runs the command, then ends as the interpreter ends a process
   (``command.run_to_end``): threads joined, ``atexit`` handlers run, the streams flushed
   (status 120 when stdout cannot be), an uncaught ``KeyboardInterrupt`` printed and ended by
   SIGINT; it answers ``exit N`` (a signal that ends it is reported to the client by the
   server, which sees it end).
"""

from __future__ import annotations

import fcntl
import io
import locale
import os
import signal
import socket
import struct
import sys
import time
from typing import Any, NoReturn

from . import command, context, watched, wire

REQUEST_TIMEOUT = 10.0
STREAMS = 3
STREAM_NAMES = ('<stdin>', '<stdout>', '<stderr>')


def serve(
    connection: socket.socket, pid: int, own: dict[str, str], watch: int | None = None
) -> NoReturn:
    """Runs the command of the client ``pid`` on ``connection`` (the server's facts ``own``;
    ``watch``, the queue of the server's watched code), or refuses it; never returns."""
    try:
        received = receive(connection)
        if received is None:
            os._exit(1)  # the client takes its streams back and runs the command itself
        request, token = received
        reason = become(request, pid, own)
        if watch is not None and watched.changed(watch):
            reason = 'the code changed'  # a client of the new code: a new server serves it
        connection.settimeout(None)
        if reason is not None:
            connection.sendall(f'no {reason}\n'.encode())
            os._exit(1)
        if not take_streams(token, request.streams):
            os._exit(1)  # the client took them back: it gave up, nothing runs
        token.close()
        end_with_client(connection)
        connection.sendall(f'run {os.getpid()}\n'.encode())
    except BaseException:  # noqa: BLE001 - nothing has run: the client runs it itself
        os._exit(1)
    sys.argv = [os.fsdecode(item) for item in request.process_argv]
    status = command.run_to_end([os.fsdecode(argument) for argument in request.argv])
    try:
        connection.sendall(f'exit {status}\n'.encode())
    except OSError:
        pass
    os._exit(status)


def receive(connection: socket.socket) -> tuple[wire.Request, socket.socket] | None:
    """The client's request and its token (the socket its streams wait on); None when there
    is no whole request with one."""
    connection.settimeout(REQUEST_TIMEOUT)
    try:
        data, ancillary, _, _ = connection.recvmsg(65536, socket.CMSG_SPACE(4))
        fds = _descriptors(ancillary)
        token = socket.socket(fileno=fds.pop()) if len(fds) == 1 else None
        for fd in fds:
            os.close(fd)
        if token is None:
            return None
        while len(data) < wire.LENGTH_DIGITS:
            chunk = connection.recv(65536)
            if not chunk:
                return None
            data += chunk
        length = int(data[: wire.LENGTH_DIGITS])
        if not 0 < length <= wire.MAX_REQUEST:
            return None
        body = data[wire.LENGTH_DIGITS :]
        while len(body) < length:
            more = connection.recv(min(65536, length - len(body)))
            if not more:
                return None
            body += more
        return wire.decode(body, STREAMS), token
    except (OSError, ValueError):
        return None


def _descriptors(ancillary: list[tuple[int, int, bytes]]) -> list[int]:
    """The descriptors received with a message."""
    fds: list[int] = []
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            usable = len(payload) - len(payload) % struct.calcsize('i')
            fds.extend(struct.unpack(f'{usable // 4}i', payload[:usable]))
    return fds


def become(request: wire.Request, pid: int, own: dict[str, str]) -> str | None:
    """Makes this process the client ``pid`` but for its streams (see the module notes);
    None when it is, else why it cannot be."""
    client = context.facts(pid)
    if client is None:
        return 'the client cannot be read in /proc'
    reason = context.refusal(client, own) or context.adopt(pid, client)
    if reason is not None:
        return reason
    environment = os.environb
    for name in [name for name in environment if name not in request.environment]:
        del environment[name]  # the server's own variables never reach the command
    for name, value in request.environment.items():
        if environment.get(name) != value:
            environment[name] = value
    time.tzset()
    try:
        locale.setlocale(locale.LC_CTYPE, '')
    except locale.Error:
        return 'the locale of the environment is not available'
    return None


def take_streams(token: socket.socket, setup: list[wire.Stream]) -> bool:
    """Takes the client's stdin, stdout and stderr from the token's queue, as this process's
    0, 1 and 2 and its standard streams; False when they are no longer there (the client took
    them back: it gave up)."""
    try:
        data, ancillary, _, _ = token.recvmsg(
            len(wire.STREAMS),
            socket.CMSG_SPACE(STREAMS * struct.calcsize('i')),
            socket.MSG_DONTWAIT,
        )
    except (BlockingIOError, InterruptedError):
        return False
    fds = _descriptors(ancillary)
    if data != wire.STREAMS or len(fds) != STREAMS:
        for fd in fds:
            os.close(fd)
        return False
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    streams = [_stream(number, how) for number, how in enumerate(setup)]
    for attribute, stream in zip(('stdin', 'stdout', 'stderr'), streams, strict=True):
        setattr(sys, attribute, stream)
        setattr(sys, f'__{attribute}__', stream)  # what the process started with, to Python
    return True


def _stream(fd: int, setup: wire.Stream) -> io.TextIOWrapper:
    """A text stream on ``fd`` set up as the client's Python set up its own."""
    writing = fd != 0
    raw = io.FileIO(fd, 'wb' if writing else 'rb', closefd=False)
    raw.name = STREAM_NAMES[fd]
    buffer: Any = raw  # unbuffered, as Python's own stdout and stderr under ``-u``
    if setup.buffered:
        buffer = io.BufferedWriter(raw) if writing else io.BufferedReader(raw)
    text = io.TextIOWrapper(
        buffer,
        encoding=setup.encoding,
        errors=setup.errors,
        newline='\n',
        line_buffering=setup.line_buffering,
        write_through=setup.write_through,
    )
    text.mode = 'w' if writing else 'r'  # type: ignore[misc]  # as Python's own streams say
    return text


def end_with_client(connection: socket.socket) -> None:
    """Has the kernel end this process (SIGKILL) when the client's end of the connection
    closes (or sends anything more). A client gone before this is found by the next write to
    it (``run N``), which fails."""
    fd = connection.fileno()
    fcntl.fcntl(fd, fcntl.F_SETOWN, os.getpid())
    fcntl.fcntl(fd, fcntl.F_SETSIG, signal.SIGKILL)
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_ASYNC)
