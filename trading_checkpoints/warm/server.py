"""The warm server: one process per user and installation that has imported every verb, and
runs each command in a child forked from that state.

Started by a client that found none (``client.start_server``), detached from any terminal. It:

1. checks that the socket it would listen on is the one the client expected (same code), and
   that no other server holds the socket's lock file (``<socket>.lock``, which holds the
   serving process's pid); else it exits;
2. imports the command and everything the verbs import lazily (``preload.py``);
3. listens on the socket, closed to other users (a private folder, and each peer's user
   checked with ``SO_PEERCRED``);
4. keeps one child *waiting*: forked ahead of the next client, it has already paid for the
   fork and for copying the memory a command writes to, and waits in ``accept``. The child
   that takes a connection tells the parent (which forks the next waiting child), takes the
   client's stdin, stdout and stderr, folder, environment and umask, answers ``pid N``, runs
   the command exactly as ``checkpoints`` would in-process, and answers ``exit N``;
5. exits after ``CHECKPOINTS_SERVER_IDLE`` seconds (default 300) with no command running and
   none received, as soon as its socket file is removed or replaced, on SIGTERM, or when it
   cannot keep a child waiting; it first retires the waiting child (one that has just taken a
   client runs its command on, and the server does not wait for it).

The parent never runs a command itself, so every child starts from the state right after the
imports: no memo, open repository or lock survives from one command into another. Commands take
the repository's lock as they always do; two commands at once are two processes, as they would
be without the server.

A client's command runs exactly once (``client.py``): until a child has answered ``pid N``,
nothing has run, and a child that ends before (retired, its parent gone, a refused peer) only
makes the client run the command itself.
"""

from __future__ import annotations

import fcntl
import gc
import io
import os
import select
import signal
import socket
import struct
import sys
import time
import traceback
from typing import NoReturn

from ..core import private
from . import address, wire
from .preload import preload

IDLE_VARIABLE = 'CHECKPOINTS_SERVER_IDLE'
DEFAULT_IDLE = 300.0
REQUEST_TIMEOUT = 10.0
STREAMS = 3


def main(expected: str) -> None:
    """Serves the installation this process imports, if ``expected`` is its socket."""
    path = address.socket_path(create=True)
    if path is None or path != expected:
        return  # another installation's server, or no private folder: nothing to serve
    os.chdir('/')
    lock = _lock(path)
    if lock is None:
        return  # another server is starting or running for this installation
    signal.signal(signal.SIGTERM, _stop)
    try:
        preload()
        listener = _listen(path)
        try:
            _serve(listener, path, lock, _idle_seconds())
        finally:
            listener.close()
            try:
                if _still_ours(path):
                    os.unlink(path)
            except OSError:
                pass
    finally:
        os.close(lock)


def _stop(signum: int, frame: object) -> None:
    raise SystemExit(0)  # the parent's ``finally`` blocks retire the waiting child


def _lock(path: str) -> int | None:
    try:
        fd = os.open(path + '.lock', os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    os.ftruncate(fd, 0)
    os.write(fd, f'{os.getpid()}\n'.encode())  # who serves, for a person (and the tests)
    return fd


_identity = (-1, -1)


def _listen(path: str) -> socket.socket:
    global _identity
    listener, _identity = private.listen(path, 64)  # a dead server's socket: we hold the lock
    return listener


def _idle_seconds() -> float:
    try:
        value = float(os.environ.get(IDLE_VARIABLE, DEFAULT_IDLE))
    except ValueError:
        return DEFAULT_IDLE
    return value if value > 0 else DEFAULT_IDLE


PID = struct.Struct('=i')
WAIT_TIMEOUT = 1.0  # how often a waiting child checks that its parent is still there


def _serve(listener: socket.socket, path: str, lock: int, idle: float) -> None:
    """Keeps one child waiting for the next client (see the module notes) until it is time to
    stop; each child that took a client says so with its pid on a pipe."""
    taken, told = os.pipe()
    running: set[int] = set()
    waiting: int | None = None
    alive = -1  # a pipe's end whose other end only the waiting child holds: at its end, EOF
    last = time.monotonic()
    try:
        while True:
            if waiting is None:
                forked = _fork_waiting(listener, (lock, taken), told)
                if forked is None:
                    return  # no child can wait: clients run their commands themselves
                waiting, alive = forked
            ready, _, _ = select.select([taken, alive], [], [], min(idle, 5.0))
            ended = _ended(waiting)  # before reading: a child says it took a client first
            if ready or ended:
                for pid in _pids(_read_ready(taken)):
                    running.add(pid)
                    last = time.monotonic()
                    if pid == waiting:
                        waiting = None
            if ended and waiting is not None:
                waiting = None
                return  # it took no client: ended by a signal, or failed
            if waiting is None:
                os.close(alive)
                alive = -1
            _reap(running)
            if running:
                last = time.monotonic()
            if not _still_ours(path):
                return
            if time.monotonic() - last >= idle and not running:
                return
    finally:
        if waiting is not None:
            _retire(waiting, alive, taken)
        for fd in (taken, told, alive):
            if fd >= 0:
                os.close(fd)


def _read_ready(fd: int) -> bytes:
    """What the pipe holds now (nothing when it is empty)."""
    ready, _, _ = select.select([fd], [], [], 0)
    return os.read(fd, PID.size * 64) if ready else b''


def _pids(data: bytes) -> list[int]:
    usable = len(data) - len(data) % PID.size
    return [PID.unpack_from(data, at)[0] for at in range(0, usable, PID.size)]


def _fork_waiting(
    listener: socket.socket, closed: tuple[int, ...], told: int
) -> tuple[int, int] | None:
    """A new waiting child's pid and the end of a pipe that sees EOF when the child ends (it
    alone holds the other end), None when none could be forked."""
    parent = os.getpid()
    alive, held = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(alive)
        os.close(held)
        return None
    if pid == 0:
        for fd in (*closed, alive):  # the server's lock (the parent's alone) and pipes' ends
            os.close(fd)
        _wait_for_client(listener, told, parent)  # never returns
    os.close(held)
    return pid, alive


class _Retired(Exception):
    """The parent retired the waiting child (SIGUSR1) before it took a client."""


def _retired(signum: int, frame: object) -> None:
    raise _Retired


def _wait_for_client(listener: socket.socket, told: int, parent: int) -> NoReturn:
    """The waiting child: takes the next client of this user, tells the parent, and runs the
    command (``_child``).

    Until it tells the parent, it may be ended at any point (SIGUSR1 to retire it, SIGTERM, its
    parent gone) and no command has run: a client it accepted sees the connection close before
    ``pid N`` and runs the command itself. Once it has taken a client it ignores SIGUSR1.
    """
    try:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGUSR1, _retired)
        # Touches every object the command may touch (their reference counts): the pages the
        # child shares with the parent are copied now, not while a client waits.
        gc.get_objects()
        listener.settimeout(WAIT_TIMEOUT)
        while True:
            if os.getppid() != parent:
                os._exit(0)  # the server is gone: no one would fork the next waiting child
            try:
                connection, _ = listener.accept()
            except (TimeoutError, ConnectionAbortedError):
                continue
            if private.peer_uid(connection) == os.getuid():
                break
            connection.close()
        signal.signal(signal.SIGUSR1, signal.SIG_IGN)
        listener.close()
        os.write(told, PID.pack(os.getpid()))
        os.close(told)
    except BaseException:  # noqa: BLE001 - retired, or anything else: no command has run
        os._exit(0)
    _child(connection)


def _retire(pid: int, alive: int, taken: int) -> None:
    """Ends the waiting child; one that has just taken a client runs its command on, as every
    child that took one does once the server is gone (clients coming meanwhile must not wait
    on a socket no one takes)."""
    try:
        os.kill(pid, signal.SIGUSR1)
    except OSError:
        return
    while True:
        ready, _, _ = select.select([alive, taken], [], [])
        if taken in ready and pid in _pids(_read_ready(taken)):
            return  # it took a client
        if alive in ready:
            try:
                os.waitpid(pid, 0)  # it is ending: its pipe's end closed
            except OSError:
                pass
            return


def _ended(pid: int) -> bool:
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return done != 0


def _reap(children: set[int]) -> None:
    for pid in list(children):
        if _ended(pid):
            children.discard(pid)


def _still_ours(path: str) -> bool:
    """Whether the socket file at ``path`` is still the one this server listens on."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return (info.st_dev, info.st_ino) == _identity


def _child(connection: socket.socket) -> NoReturn:
    """Runs one command for the client on ``connection`` and exits with its status."""
    status = 1
    try:
        request = _receive(connection)
        if request is None:
            os._exit(1)  # the client runs the command itself: it never saw ``pid``
        _become_client(request)
        try:
            connection.sendall(f'pid {os.getpid()}\n'.encode())
        except OSError:
            os._exit(1)  # the client is gone before ``pid``: nothing runs, nothing to say
        status = _run([os.fsdecode(argument) for argument in request.argv])
    except BaseException:  # noqa: BLE001 - the child must always answer and exit
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        try:
            connection.sendall(f'exit {status}\n'.encode())
        except OSError:
            pass
        os._exit(status)


def _receive(connection: socket.socket) -> wire.Request | None:
    connection.settimeout(REQUEST_TIMEOUT)
    space = socket.CMSG_SPACE(STREAMS * struct.calcsize('i'))
    try:
        data, ancillary, _, _ = connection.recvmsg(65536, space)
    except OSError:
        return None
    fds: list[int] = []
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            usable = len(payload) - len(payload) % struct.calcsize('i')
            fds.extend(struct.unpack(f'{usable // 4}i', payload[:usable]))
    if len(fds) != STREAMS or len(data) < wire.LENGTH_DIGITS:
        return None
    try:
        length = int(data[: wire.LENGTH_DIGITS])
    except ValueError:
        return None
    if not 0 < length <= wire.MAX_REQUEST:
        return None
    body = data[wire.LENGTH_DIGITS :]
    while len(body) < length:
        try:
            more = connection.recv(min(65536, length - len(body)))
        except OSError:
            return None
        if not more:
            return None
        body += more
    try:
        request = wire.decode(body)
    except ValueError:
        return None
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    connection.settimeout(None)
    return request


def _become_client(request: wire.Request) -> None:
    """Takes the client's folder, environment, umask and standard streams, and the signal
    handling of a new Python process."""
    os.chdir(request.folder)
    os.environ.clear()
    for name, value in request.environment.items():
        os.environb[name] = value
    os.umask(request.umask)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGCHLD):
        signal.signal(number, signal.SIG_DFL)
    sys.stdin = _stream(0, 'r', sys.stdin)
    sys.stdout = _stream(1, 'w', sys.stdout)
    sys.stderr = _stream(2, 'w', sys.stderr)


def _stream(fd: int, mode: str, like: object) -> io.TextIOWrapper:
    """A text stream on ``fd`` with the encoding of the stream it replaces; line-buffered on a
    terminal (and always for stderr), as Python sets up its own."""
    encoding = getattr(like, 'encoding', None) or 'utf-8'
    errors = getattr(like, 'errors', None) or 'strict'
    raw = io.FileIO(fd, mode, closefd=False)
    buffered: io.BufferedIOBase
    buffered = io.BufferedReader(raw) if mode == 'r' else io.BufferedWriter(raw)
    return io.TextIOWrapper(
        buffered,
        encoding=encoding,
        errors=errors,
        line_buffering=mode == 'w' and (fd == 2 or os.isatty(fd)),
    )


def _run(args: list[str]) -> int:
    from ..cli.target import PROGRAM
    from .command import run

    sys.argv = [PROGRAM, *args]
    try:
        return run(args)
    except KeyboardInterrupt:
        return 130
