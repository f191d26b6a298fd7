"""The ``checkpoints`` console script: the command run by the warm server, else in-process.

**A command runs exactly once.** The client's stdin, stdout and stderr wait in a queue of their
own (a datagram socket pair, the *token*), and whoever takes them from it first decides
(``wire.py``): the child that takes them runs the command; the client that takes them back
runs it itself, or no one does. Until a child has taken them, every failure makes the client
take them back and run the command itself: no server or no manifest yet, a socket that is not
private (``core/private.connect``), a refused connection, a child that refuses (``no REASON``:
it cannot be the client), a connection that closes, or no ``run N`` within
:data:`ANSWER_TIMEOUT` seconds (a hung server, whose socket the client then removes, so that
the next command starts a new one; its streams are then the client's again, never left in a
hung server's hands). A signal the client forwards (SIGINT, SIGTERM, SIGHUP, SIGQUIT) received
in that time makes it take them back too, and act as it would have without the server; if a
child took them first, the signal goes to that child. Once a child has them the client only
relays: it forwards those signals to the child (not the ones it ignores: the child ignores them
too), and exits with the child's status; a command ended by a signal ends the client by the
same signal (a shell sees 128+N), and a server that dies mid-command is reported, never
retried.

Which commands go to the server at all (:func:`wanted`): not when ``CHECKPOINTS_SERVER`` is
``off`` (or ``0``, ``no``, ``false``), not on a platform without Unix sockets, not when a
standard stream is closed, unusable or a terminal (a person may be asked a question, and only
the terminal's own processes may use it), and not for the verbs that run long or may need the
controlling terminal (:data:`IN_PROCESS_VERBS`).

Kept to the interpreter's built-in modules (``_socket``, ``_signal``, ``select``) and
``os``/``sys``: the client's own start is what a hook pays for every event.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # signal's C core: no enum to import
import _socket  # socket's C core: ``socket`` itself imports enum and selectors (~10 ms)
import os
import select  # poll(): the connection and the signals' wake-up socket at once
import sys
import time  # built in, and loaded by the interpreter's own start

from ..core import private
from . import address, wire

TYPE_CHECKING = False  # as ``typing``'s, without importing it
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import NoReturn

HOOK = 'hook'
SWITCH = 'CHECKPOINTS_SERVER'
OFF = ('0', 'off', 'no', 'false')
# Long-running verbs gain nothing; the remote verbs may run ssh or a credential helper, which
# may prompt on the controlling terminal (the server's child has none).
IN_PROCESS_VERBS = frozenset({'mcp', 'watch', 'browse', 'push', 'pull', 'clone'})
FORWARDED_SIGNALS = ('SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT')
SERVER_GONE = 'error: the command server stopped while running the command; run it again'
CONNECT_TIMEOUT = 1.0
ANSWER_TIMEOUT = 5.0  # for ``run N``: a child ready ahead answers within milliseconds


def main(argv: list[str] | None = None, *, exit_at_once: bool = False) -> None:
    """Runs ``checkpoints ARGV`` (``sys.argv[1:]`` by default): on the warm server when it
    can, else here. ``exit_at_once`` (the ``bin/`` scripts): a command the server ran ends
    this process with :func:`leave`; one run here ends it as the server's child ends,
    without the interpreter's teardown (``command.run_to_end``), but for the verbs that
    always run here (:data:`IN_PROCESS_VERBS`), which end as any program does."""
    argv = sys.argv[1:] if argv is None else argv
    if wanted(argv):
        status = run_on_server(argv)
        if status is not None:
            if exit_at_once:
                leave(status)
            sys.exit(status)
    from .command import run, run_to_end

    if exit_at_once and not IN_PROCESS_VERBS.intersection(argv):
        os._exit(run_to_end(argv))  # ended as the server's child ends: no module teardown
    sys.exit(run(argv))


def hook_main(*, exit_at_once: bool = False) -> None:
    """The ``checkpoints-hook`` script (``bin/``): ``checkpoints hook ARGS...``."""
    main([HOOK, *sys.argv[1:]], exit_at_once=exit_at_once)


def leave(status: int) -> NoReturn:
    """Ends this process with ``status`` now, its standard streams flushed: once a child ran
    the command, the client has nothing left to write and no exit handler or thread to wait
    for (it imported only this module's few), so the interpreter's teardown, about 1.5 ms of
    every served hook event, is skipped."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass  # a closed or broken stream: what it held cannot be written anyway
    os._exit(status)  # the system keeps its low byte, as for sys.exit


def wanted(argv: list[str]) -> bool:
    """Whether this command should go to the server (see the module notes)."""
    if os.environ.get(SWITCH, '').strip().lower() in OFF:
        return False
    if os.name != 'posix' or sys.platform == 'cygwin':
        return False
    if IN_PROCESS_VERBS.intersection(argv):
        return False
    return streams_usable()


def streams_usable() -> bool:
    """Whether stdin, stdout and stderr are open as Python set them up (a descriptor closed
    when the process started leaves its stream None), stdin readable, the others writable
    (an empty read or write says so without moving anything), and none a terminal."""
    for number, stream in enumerate((sys.stdin, sys.stdout, sys.stderr)):
        try:
            if stream is None or stream.fileno() != number or os.isatty(number):
                return False
            if number == 0:
                os.read(0, 0)
            else:
                os.write(number, b'')
        except (OSError, ValueError, AttributeError):
            return False
    return True


def run_on_server(argv: list[str]) -> int | None:
    """The command's exit status when the server ran it; None when it did not (run it here)."""
    where = address.locate(create=True)
    if where is None:
        return None
    if where.socket is None:
        start_server(where.slot)
        return None
    try:
        connection = private.connect(where.socket, CONNECT_TIMEOUT)
    except private.NotPrivate:
        return None
    except OSError:
        start_server(where.slot)
        return None
    socket = where.socket
    try:
        inode = os.lstat(socket).st_ino
    except OSError:
        connection.close()
        return None
    try:
        return _run(connection, argv, lambda: remove_hung(socket, inode))
    finally:
        connection.close()


def _run(connection: _socket.socket, argv: list[str], hung: Callable[[], None]) -> int | None:
    """Hands the command to the child that takes the connection (see the module notes)."""
    request = wire.encode(sys.argv, argv, [sys.stdin, sys.stdout, sys.stderr])
    streams, token = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_DGRAM)
    held = Held()
    relay = Relay(connection, held)
    status, hanging = None, False
    try:
        # The streams wait in the token's queue: the child that takes them runs the command.
        streams.sendmsg([wire.STREAMS], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, _fds(0, 1, 2))])
        token_fd = [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, _fds(token.fileno()))]
        connection.sendmsg([request], token_fd)
        status = relay.run(time.monotonic() + ANSWER_TIMEOUT)
    except Abandon:
        pass  # a signal before the command started: the client takes its streams back
    except TimeoutError:
        hanging = True
    except (OSError, ValueError):
        pass
    finally:
        held.abandon = False
        streams.close()
    try:
        if relay.child is None:
            if take_back(token):
                if hanging:
                    hung()
                held.release()  # nothing started: the client runs it, or ends by the signal
                return None
            # A child took the streams: it runs the command, whatever it says first.
        if status is None:
            status = relay.run()
        if status is None:
            sys.stderr.write(SERVER_GONE + '\n')  # it took the command and ended before run
            return 1
        return status
    finally:
        token.close()
        held.close()


def _fds(*numbers: int) -> bytes:
    return b''.join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in numbers)


def take_back(token: _socket.socket) -> bool:
    """Whether the client took its own streams back from the token's queue (then no child has
    them, and none ever will); False when a child took them first."""
    try:
        data, ancillary, _, _ = token.recvmsg(16, _socket.CMSG_SPACE(12), _socket.MSG_DONTWAIT)
    except (BlockingIOError, InterruptedError):
        return False
    for _, _, payload in ancillary:  # the client's own streams, received again: closed
        for at in range(0, len(payload) - len(payload) % 4, 4):
            os.close(int.from_bytes(payload[at : at + 4], sys.byteorder, signed=True))
    return data == wire.STREAMS


class Abandon(Exception):
    """A forwarded signal came before the child started the command: the client gives the
    server up, if it takes its streams back. Raised only where the relay waits, with nothing
    it read left unkept (a signal handler that raised could strike between a ``recv`` and the
    line it returned being kept: ``run N`` lost, the signal never forwarded)."""


class Relay:
    """The child's lines, read from the connection: ``run N`` as it starts the command (the
    held signals are forwarded to pid N then), ``exit N``, or ``signal N`` from the server."""

    def __init__(self, connection: _socket.socket, held: Held) -> None:
        self.connection = connection
        self.held = held
        self.pending = b''
        self.child: int | None = None

    def run(self, deadline: float | None = None) -> int | None:
        """The command's exit status; None when the child ended or refused (``no REASON``)
        before it started the command; ``TimeoutError`` when it did not start it by
        ``deadline``."""
        while True:
            line = self._line(deadline if self.child is None else None)
            if line is None:
                if self.child is None:
                    return None
                sys.stderr.write(SERVER_GONE + '\n')
                return 1
            word, _, number = line.partition(b' ')
            if self.child is None:
                if word == b'run':
                    self._started(int(number))
                elif word in (b'no', b'exit', b'signal'):
                    return None
            elif word == b'exit':
                return int(number)
            elif word == b'signal':
                end_by(int(number))

    def _started(self, child: int) -> None:
        """The child started the command: the signals the client handles go to it from now
        on, and those it held meanwhile go now."""
        self.child = child
        self.held.abandon = False
        forward_signals(child, self.held.previous)
        for signum in self.held.signals:
            _send(child, signum)

    def _line(self, deadline: float | None) -> bytes | None:
        """The next line (None at the end); ``TimeoutError`` past ``deadline``; ``Abandon``
        when a signal was held before the child started."""
        while b'\n' not in self.pending:
            if self.child is None and self.held.abandon and self.held.signals:
                raise Abandon
            left = None
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError
            if not self.held.wait(self.connection, left):
                continue  # a signal, or the time up: looked at again
            try:
                chunk = self.connection.recv(4096)
            except OSError:
                chunk = b''
            if not chunk:
                return None
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b'\n')
        return line


def end_by(signum: int) -> None:
    """Ends this process by signal ``signum``, as the command's child ended (exits 128+N
    when that signal does not end a process)."""
    try:
        _signal.signal(signum, _signal.SIG_DFL)
    except (OSError, ValueError):
        pass  # SIGKILL: it has no handler to reset
    try:
        _signal.pthread_sigmask(_signal.SIG_UNBLOCK, [signum])
        _signal.raise_signal(signum)
    except (OSError, ValueError):
        pass
    raise SystemExit(128 + signum)


class Held:
    """The forwarded signals received before the child started the command; a signal the
    client ignores stays ignored. While ``abandon`` is set (until the child starts), one such
    signal makes the relay give the server up at once (:class:`Abandon`): the handler only
    records it, and the kernel's wake-up byte (``signal.set_wakeup_fd``) ends the relay's wait,
    where it is acted on. :meth:`close` puts the wake-up back as it was."""

    def __init__(self) -> None:
        self.signals: list[int] = []
        self.abandon = True
        self.previous: dict[int, object] = {}
        self._woken, wake = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM)
        self._woken.setblocking(False)
        wake.setblocking(False)
        self._wake = wake
        # The main thread's, as the handlers below are (both raise ValueError elsewhere).
        self._wakeup = _signal.set_wakeup_fd(wake.fileno(), warn_on_full_buffer=False)
        for name in FORWARDED_SIGNALS:
            number = getattr(_signal, name)
            if _signal.getsignal(number) != _signal.SIG_IGN:
                self.previous[number] = _signal.signal(number, self.hold)

    def hold(self, signum: int, frame: object) -> None:
        self.signals.append(signum)

    def wait(self, connection: _socket.socket, timeout: float | None) -> bool:
        """Waits until ``connection`` can be read (True), a signal came or ``timeout`` seconds
        passed (False)."""
        poller = select.poll()
        poller.register(connection.fileno(), select.POLLIN)
        poller.register(self._woken.fileno(), select.POLLIN)
        ready = poller.poll(None if timeout is None else int(timeout * 1000) + 1)
        readable = False
        for fd, _ in ready:
            if fd == self._woken.fileno():
                self._drain()
            else:
                readable = True
        return readable

    def _drain(self) -> None:
        try:
            while self._woken.recv(256):
                pass
        except OSError:
            pass  # nothing more (BlockingIOError)

    def close(self) -> None:
        """The wake-up as it was before, and its socket closed."""
        _signal.set_wakeup_fd(self._wakeup)
        self._woken.close()
        self._wake.close()

    def release(self) -> None:
        """The client's own handlers back, and the signals held act on the client as they
        would have without the server (no command started): it never goes on to run the
        command itself after one."""
        for number, handler in self.previous.items():
            _signal.signal(number, handler)
        for signum in self.signals:
            _signal.raise_signal(signum)
        if self.signals:
            raise SystemExit(128 + self.signals[0])


def _send(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except OSError:
        pass


def forward_signals(pid: int, handled: dict[int, object]) -> None:
    """Forwards to the child the signals the client does not ignore (``handled``)."""

    def forward(signum: int, frame: object) -> None:
        _send(pid, signum)

    for number in handled:
        _signal.signal(number, forward)


def remove_hung(path: str, inode: int) -> None:
    """Removes a hung server's socket, so that the next command starts a new server (the hung
    one goes once it sees its socket gone); only the socket this client reached (no other
    server can have taken its place: the hung one holds the socket's lock)."""
    try:
        if os.lstat(path).st_ino == inode:
            os.unlink(path)
    except OSError:
        pass


def start_server(slot: str) -> None:
    """Starts the server for this slot in the background, detached from this process's
    session and terminal, with every signal at its default; the command at hand still runs
    here.

    The server is this interpreter with this process's options, given this process's import
    path (``-c`` would put its current folder first) and told the slot this client expects, so
    a server that would import other code or run in another context stops at once instead of
    serving it.
    """
    code = (
        'import sys; sys.path[:] = sys.argv[2:]; '
        'from trading_checkpoints.warm.server import main; main(sys.argv[1])'
    )
    devnull = os.open(os.devnull, os.O_RDWR)
    try:
        os.posix_spawn(
            sys.executable,
            [sys.executable, *address.interpreter_options(), '-c', code, slot, *sys.path],
            dict(os.environ),
            file_actions=[(os.POSIX_SPAWN_DUP2, devnull, fd) for fd in (0, 1, 2)],
            setsid=True,
            setsigmask=(),
            setsigdef=_signal.valid_signals() - {_signal.SIGKILL, _signal.SIGSTOP},
        )
    except OSError:
        pass  # no server this time; every command still runs
    finally:
        os.close(devnull)
