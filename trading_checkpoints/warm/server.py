"""The warm server: one process per user, slot and installation that has imported every verb,
and runs each command in a child forked from that state.

Started by a client that found none (``client.start_server``), detached from any terminal. It:

1. checks that its slot (``address.py``: interpreter, import path, context) is the one the
   client expected, and that no other server of the slot is starting (``<manifest>.start``,
   locked while it starts); else it exits;
2. imports the command and everything the verbs import lazily (``preload.py``), watches every
   module file and folder it imported where it can (``watched.py``), then fingerprints them
   (``core/installation.py``); it exits when a file was written too recently for its status to
   stand for what was imported, or when a server of the same fingerprint holds the socket's
   lock (``<socket>.lock``, which holds its pid);
3. writes the slot's manifest (the files listed, or, when watched, its socket named) and
   listens on the socket the fingerprint names, closed to other users (a private folder, and
   each peer's user checked, ``SO_PEERCRED``);
4. keeps one child *waiting*: forked ahead of the next client, it has already paid for the
   fork and for copying the memory a command writes to, and waits in ``accept``. The child that
   takes a connection tells the parent at once, handing it the connection (the parent forks the
   next waiting child), and serves the client (``child.py``); when a signal ends a child, the
   parent tells its client (``signal N``);
5. exits after ``CHECKPOINTS_SERVER_IDLE`` seconds (default 300) with no command running and
   none received, as soon as its socket file is removed or replaced or its watched code
   changes, on SIGTERM, or when it cannot keep a child waiting; it first retires the waiting
   child (one that has just taken a client runs its command on, and the server does not wait
   for it).

The parent never runs a command itself, so every child starts from the state right after the
imports: no memo, open repository or lock survives from one command into another. Commands take
the repository's lock as they always do; two commands at once are two processes, as they would
be without the server.
"""

from __future__ import annotations

import fcntl
import gc
import os
import select
import signal
import socket
import struct
import time
from typing import NoReturn

from ..core import installation, private
from ..core.durability import write_atomically
from ..errors import CheckpointError
from . import address, child, context, watched
from .preload import preload

IDLE_VARIABLE = 'CHECKPOINTS_SERVER_IDLE'
DEFAULT_IDLE = 300.0
PID = struct.Struct('=i')


def main(expected: str) -> None:
    """Serves this process's installation in its slot, if ``expected`` is that slot."""
    close_inherited()
    if address.slot() != expected:
        return  # another installation or context than the client's: nothing to serve
    folder = private.private_folder(create=True)
    if folder is None:
        return
    os.chdir('/')
    manifest = address.manifest_path(folder, expected)
    starting = lock_file(manifest + '.start')
    if starting is None:
        return  # another server of this slot is starting
    catch_stop()
    try:
        preload()
        files = installation.loaded_files()
        watch = watched.watch(files)  # before the check: a write from now on is an event
        if not installation.settled(files):
            return  # a module was just written: a later client starts the server
        path = address.socket_path(folder, installation.fingerprint(files, expected))
        lock = lock_file(path + '.lock')
        if lock is None:
            return  # a server of this very code runs
        if STOP.asked:
            os.close(lock)
            return
    finally:
        os.close(starting)
    try:
        contents = address.listed(files) if watch is None else address.watched(path)
        write_atomically(manifest, contents, durable=False)  # a cache
        listener, identity = private.listen(path, 64)
    except (CheckpointError, OSError):
        os.close(lock)
        return
    try:
        _serve(listener, Server(path, identity, lock, idle_seconds(), watch))
    finally:
        listener.close()
        try:
            if still_ours(path, identity):
                os.unlink(path)
        except OSError:
            pass
        os.close(lock)


def close_inherited() -> None:
    """Closes every descriptor but the standard streams: whatever the client that started
    this process had left open (its own parent's pipes, say), at any number (a raised limit
    puts descriptors past any fixed bound); without ``/proc``, every number below the limit."""
    try:
        names = os.listdir('/proc/self/fd')
    except OSError:
        os.closerange(3, max(os.sysconf('SC_OPEN_MAX'), 3))
        return
    for name in names:
        if int(name) > 2:
            try:
                os.close(int(name))
            except OSError:
                pass  # the listing's own descriptor, closed already


class Stop:
    """SIGTERM, noted: the handler only records it, and the server looks at the record before it
    listens and each time it wakes (the signal writes to its wake-up pipe, so a wait ends).

    A handler that raised ``SystemExit`` could land inside an at-fork callback (``logging``
    releases its lock after every ``os.fork``), where Python reports the exception and drops
    it: the server went on serving."""

    def __init__(self) -> None:
        self.asked = False

    def note(self, signum: int, frame: object) -> None:
        self.asked = True


STOP = Stop()


def catch_stop() -> None:
    """SIGTERM from now on noted in :data:`STOP`."""
    signal.signal(signal.SIGTERM, STOP.note)


def lock_file(path: str) -> int | None:
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    os.ftruncate(fd, 0)
    os.write(fd, f'{os.getpid()}\n'.encode())  # who holds it, for a person (and the tests)
    return fd


def idle_seconds() -> float:
    try:
        value = float(os.environ.get(IDLE_VARIABLE, DEFAULT_IDLE))
    except ValueError:
        return DEFAULT_IDLE
    return value if value > 0 else DEFAULT_IDLE


class Server:
    """What the serving parent keeps: its socket and lock, and its children."""

    def __init__(
        self,
        path: str,
        identity: tuple[int, int],
        lock: int,
        idle: float,
        watch: int | None = None,
    ) -> None:
        self.path = path
        self.identity = identity
        self.lock = lock
        self.idle = idle
        self.watch = watch  # the inotify queue of its code (``watched.py``), if watched
        # pid -> the client's connection, to tell the client of a signal that ends the child
        self.running: dict[int, int] = {}
        self.waiting: int | None = None


def _serve(listener: socket.socket, server: Server) -> None:
    """Keeps one child waiting for the next client (see the module notes) until it is time to
    stop; each child that took a client says so with its pid and the connection on ``told``.

    A waiting child also watches a pipe whose writing end only the parent holds: the parent
    retires it by closing that end, and a parent that dies closes it too."""
    told, tell = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    woken, wake = os.pipe()
    retiring, retirement = os.pipe()
    for fd in (woken, wake):
        os.set_blocking(fd, False)
    signal.signal(signal.SIGCHLD, _ignore)  # a handler, so that a child's end wakes ``select``
    previous = signal.set_wakeup_fd(wake)
    last = time.monotonic()
    parents = (server.lock, woken, wake, retirement)  # the fds a child closes at once
    try:
        while not STOP.asked:
            if server.waiting is None:
                # The running children's connections are theirs alone: a copy in the next
                # child would keep a client waiting for the end of one that ended silently.
                server.waiting = _fork_waiting(
                    listener,
                    (told, tell),
                    (*parents, *server.running.values()),
                    (retiring, server.watch),
                )
                if server.waiting is None:
                    return  # no child can wait: clients run their commands themselves
            watching = [] if server.watch is None else [server.watch]
            select.select([told.fileno(), woken, *watching], [], [], min(server.idle, 5.0))
            if server.watch is not None and watched.changed(server.watch):
                return  # its code changed: clients of the new code start its new server
            drain(woken)
            if take_reports(told, server):
                last = time.monotonic()
            if not reap(server):
                return  # the waiting child ended without a client: ended by a signal, or failed
            if server.running:
                last = time.monotonic()
            if not still_ours(server.path, server.identity):
                return
            if time.monotonic() - last >= server.idle and not server.running:
                return
    finally:
        signal.set_wakeup_fd(previous)
        os.close(retirement)  # the waiting child's signal to go
        retire(server, told)
        for fd in (*server.running.values(), woken, wake, retiring):
            os.close(fd)
        told.close()
        tell.close()


def _ignore(signum: int, frame: object) -> None:
    pass


def drain(fd: int) -> None:
    try:
        while os.read(fd, 512):
            pass
    except BlockingIOError:
        pass


def take_reports(told: socket.socket, server: Server) -> bool:
    """Reads the children's word that they took a client (their pid, with the connection);
    whether any did."""
    took = False
    space = socket.CMSG_SPACE(struct.calcsize('i'))
    while True:
        try:
            data, ancillary, _, _ = told.recvmsg(PID.size, space, socket.MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            return took
        if len(data) != PID.size:
            continue
        (pid,) = PID.unpack(data)
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS and len(payload) >= 4:
                server.running[pid] = struct.unpack('i', payload[:4])[0]
        took = True
        if pid == server.waiting:
            server.waiting = None


def reap(server: Server) -> bool:
    """Collects the children that ended, telling the client of one a signal ended; False when
    the waiting child ended without taking a client."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return server.waiting is None
        if pid == 0:
            return True
        connection = server.running.pop(pid, None)
        if connection is not None:
            if os.WIFSIGNALED(status):
                tell_client(connection, f'signal {os.WTERMSIG(status)}\n'.encode())
            os.close(connection)
        elif pid == server.waiting:
            server.waiting = None
            return False


def tell_client(fd: int, message: bytes) -> None:
    try:
        os.write(fd, message)  # a few bytes into an empty socket: never blocks
    except OSError:
        pass  # the client is gone


def _fork_waiting(
    listener: socket.socket,
    reports: tuple[socket.socket, socket.socket],
    parents: tuple[int, ...],
    watching: tuple[int, int | None],
) -> int | None:
    """A new waiting child's pid, None when none could be forked; ``reports`` are the parent's
    end and the children's end of the socket a child reports on; ``watching``, the pipe that
    retires the child and the server's watch of its code."""
    told, tell = reports
    try:
        pid = os.fork()
    except OSError:
        return None
    if pid == 0:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        told.close()
        for fd in parents:
            os.close(fd)
        _wait_for_client(listener, tell, *watching)  # never returns
    return pid


def _wait_for_client(
    listener: socket.socket, tell: socket.socket, retiring: int, watch: int | None
) -> NoReturn:
    """The waiting child: takes the next client of this user, tells the parent, and serves it
    (``child.serve``).

    Until it tells the parent, it may be ended at any point (retired, SIGTERM, its parent gone)
    and no command has run: a client it accepted sees the connection close before ``pid N`` and
    runs the command itself. Another user's process that reached the socket is closed on before
    anything is read from it.
    """
    try:
        context.fresh_signals()  # SIGTERM back to its default among them
        if STOP.asked:
            os._exit(0)  # its parent stops, or it was sent SIGTERM before it took its default
        own = context.facts()
        if own is None:
            os._exit(0)
        # Touches every object the command may touch (their reference counts): the pages the
        # child shares with the parent are copied now, not while a client waits.
        gc.get_objects()
        listener.setblocking(False)
        while True:
            ready, _, _ = select.select([listener.fileno(), retiring], [], [])
            if retiring in ready:
                os._exit(0)  # retired, or the server is gone: no one would fork the next one
            try:
                connection, _ = listener.accept()
            except (BlockingIOError, ConnectionAbortedError):
                continue
            peer = private.peer_credentials(connection)
            if peer is not None and peer[1] == os.getuid() and peer[0] > 0:
                break
            connection.close()
        listener.close()
        os.close(retiring)
        fd = struct.pack('i', connection.fileno())
        tell.sendmsg([PID.pack(os.getpid())], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fd)])
        tell.close()
    except BaseException:  # noqa: BLE001 - retired, or anything else: no command has run
        os._exit(0)
    child.serve(connection, peer[0], own, watch)


def retire(server: Server, told: socket.socket) -> None:
    """Waits for the waiting child to end (its retiring pipe closed); one that has just taken a
    client runs its command on, as every child that took one does once the server is gone
    (clients coming meanwhile must not wait on a socket no one takes)."""
    pid = server.waiting
    while pid is not None and server.waiting == pid:
        select.select([told], [], [], 0.05)
        take_reports(told, server)
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return
        if done:
            return


def still_ours(path: str, identity: tuple[int, int]) -> bool:
    """Whether the socket file at ``path`` is still the one this server listens on."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return (info.st_dev, info.st_ino) == identity
