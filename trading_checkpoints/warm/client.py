"""The ``checkpoints`` console script: the command run by the warm server, else in-process.

The rule, stated once: **a command runs exactly once**. Until the server's child has answered
``pid N`` nothing has run, and any failure (no server, a refused connection, a server that
hangs up) falls back to running the command here. Once the child has taken it, the client only
relays: it forwards SIGINT, SIGTERM, SIGHUP and SIGQUIT to the child and exits with the child's
status; a server that dies mid-command is reported, never retried (the command may have
written half of what it meant to). Such a signal received while the client waits for ``pid N``
is held: the child that answers gets it; one that has not answered a second later is given up
(it never starts the command), and the signal acts on the client, which runs nothing itself.

Which commands go to the server: not when ``CHECKPOINTS_SERVER`` is ``off`` (or ``0``, ``no``,
``false``), not on a platform without Unix sockets, not when stdin is a terminal (a person may
be asked a question, and only the foreground process may read the terminal), and not for the
long-running verbs (``mcp``, ``watch``, ``browse``), which gain nothing.

Kept to the interpreter's built-in modules (``_socket``, ``_signal``) and ``os``/``sys``: the
client's own start is what a hook pays for every event.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # signal's C core: no enum to import
import _socket  # socket's C core: ``socket`` itself imports enum and selectors (~10 ms)
import os
import sys
import time  # built in, and loaded by the interpreter's own start

from . import address, wire

HOOK = 'hook'
SWITCH = 'CHECKPOINTS_SERVER'
OFF = ('0', 'off', 'no', 'false')
IN_PROCESS_VERBS = frozenset({'mcp', 'watch', 'browse'})
FORWARDED_SIGNALS = ('SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT')
SERVER_GONE = 'error: the command server stopped while running the command; run it again'


def main(argv: list[str] | None = None) -> None:
    """Runs ``checkpoints ARGV`` (``sys.argv[1:]`` by default): on the warm server when it
    can, else here."""
    argv = sys.argv[1:] if argv is None else argv
    if wanted(argv):
        status = run_on_server(argv)
        if status is not None:
            sys.exit(status)
    from .command import run

    sys.exit(run(argv))


def hook_main() -> None:
    """The ``checkpoints-hook`` script (``bin/``): ``checkpoints hook ARGS...``."""
    main([HOOK, *sys.argv[1:]])


def wanted(argv: list[str]) -> bool:
    """Whether this command should go to the server (see the module notes)."""
    if os.environ.get(SWITCH, '').strip().lower() in OFF:
        return False
    if os.name != 'posix' or sys.platform == 'cygwin':
        return False
    if IN_PROCESS_VERBS.intersection(argv):
        return False
    try:
        return not os.isatty(0)
    except OSError:
        return False


def run_on_server(argv: list[str]) -> int | None:
    """The command's exit status when the server ran it; None when it did not (run it here)."""

    path = address.socket_path(create=True)
    if path is None:
        return None
    connection = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        try:
            connection.connect(path)
        except OSError:
            start_server(path)
            return None
        request = wire.encode(argv, os.getcwd(), _umask())
        fds = b''.join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in (0, 1, 2))
        held = _Held()
        status = None
        try:
            connection.sendmsg([request], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
            status = _relay(connection, held)
        except OSError:
            pass
        if status is None:
            held.release()
        return status
    finally:
        connection.close()


POLL = 0.2  # how often a client waiting for the child's answer looks for a signal it held
GRACE = 1.0  # how long it waits for the answer after such a signal before giving the child up


def _relay(connection: _socket.socket, held: _Held) -> int | None:
    """Reads the child's answers: None if it never took the command, else its exit status.

    Until ``pid N`` the signals the client forwards are held (the child may be answering this
    moment): the answer gets them, and a child that has not answered ``GRACE`` seconds after
    one is given up (the connection closed, it never starts the command)."""
    pending = b''
    child = None
    connection.settimeout(POLL)
    while True:
        try:
            chunk = connection.recv(4096)
        except TimeoutError:
            if child is None and held.signals and time.monotonic() - held.since >= GRACE:
                return None
            continue
        except OSError:
            chunk = b''
        if not chunk:
            if child is None:
                return None  # nothing ran: the caller runs the command here
            sys.stderr.write(SERVER_GONE + '\n')
            return 1
        pending += chunk
        while b'\n' in pending:
            line, _, pending = pending.partition(b'\n')
            word, _, number = line.partition(b' ')
            if word == b'pid' and child is None:
                child = int(number)
                connection.settimeout(None)
                _forward_signals(child)
                for signum in held.signals:
                    _send(child, signum)
            elif word == b'exit' and child is not None:
                return int(number)


class _Held:
    """The forwarded signals received while the client waits for the child's ``pid N``, and
    when the first came; a signal the client ignores stays ignored."""

    def __init__(self) -> None:
        self.signals: list[int] = []
        self.since = 0.0
        self.previous: dict[int, object] = {}
        for name in FORWARDED_SIGNALS:
            number = getattr(_signal, name)
            if _signal.getsignal(number) != _signal.SIG_IGN:
                self.previous[number] = _signal.signal(number, self.hold)

    def hold(self, signum: int, frame: object) -> None:
        if not self.signals:
            self.since = time.monotonic()
        self.signals.append(signum)

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


def _forward_signals(pid: int) -> None:
    def forward(signum: int, frame: object) -> None:
        _send(pid, signum)

    for name in FORWARDED_SIGNALS:
        _signal.signal(getattr(_signal, name), forward)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def start_server(path: str) -> None:
    """Starts the server for this installation in the background, detached from this
    process's session and terminal; the command at hand still runs here.

    The server is started with ``-c`` code that first drops the current folder from its
    import path (``python -m`` would import a ``trading_checkpoints`` found there), and is told
    the socket this client expects, so a server that imports other code than ours (another
    ``PYTHONPATH``) stops at once instead of serving it.
    """
    code = (
        'import sys; del sys.path[0]; '
        'from trading_checkpoints.warm.server import main; main(sys.argv[1])'
    )
    devnull = os.open(os.devnull, os.O_RDWR)
    try:
        os.posix_spawn(
            sys.executable,
            [sys.executable, '-c', code, path],
            dict(os.environ),
            file_actions=[(os.POSIX_SPAWN_DUP2, devnull, fd) for fd in (0, 1, 2)],
            setsid=True,
        )
    except OSError:
        pass  # no server this time; every command still runs
    finally:
        os.close(devnull)
