"""The warm server: one process per user and installation that has imported every verb, and
forks a child per command.

Started by a client that found none (``client.start_server``), detached from any terminal. It:

1. checks that the socket it would listen on is the one the client expected (same code), and
   that no other server holds the socket's lock file (``<socket>.lock``, which holds the
   serving process's pid); else it exits;
2. imports the command and everything the verbs import lazily (click, the engine, dulwich),
   down to the libraries imported inside functions (``preload``);
3. listens on the socket, closed to other users (a private folder, and each peer's user
   checked with ``SO_PEERCRED``);
4. for each connection, forks: the child takes the client's stdin, stdout and stderr, folder,
   environment and umask, answers ``pid N``, runs the command exactly as ``checkpoints`` would
   in-process, and answers ``exit N``;
5. exits after ``CHECKPOINTS_SERVER_IDLE`` seconds (default 300) with no command running and
   none received, or as soon as its socket file is removed or replaced.

The parent never runs a command itself, so every child starts from the state right after the
imports: no memo, open repository or lock survives from one command into another. Commands take
the repository's lock as they always do; two commands at once are two processes, as they would
be without the server.
"""

from __future__ import annotations

import fcntl
import io
import os
import pkgutil
import re
import select
import signal
import socket
import struct
import sys
import time
import traceback
from collections.abc import Callable
from importlib import import_module
from importlib.util import resolve_name
from types import ModuleType

from ..core import private
from . import address, wire

IDLE_VARIABLE = 'CHECKPOINTS_SERVER_IDLE'
DEFAULT_IDLE = 300.0
# Never preloaded: the MCP SDK and the terminal browser are heavy, and their verbs run
# in-process.
NOT_PRELOADED = ('trading_checkpoints.agent.mcp', 'trading_checkpoints.ui')
# Libraries only the long-running verbs use (run in-process, never on the server).
NOT_PRELOADED_LIBRARIES = frozenset({'mcp', 'pydantic', 'textual', 'rich', 'watchfiles'})
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
    preload()
    listener = _listen(path)
    try:
        _serve(listener, path, _idle_seconds())
    finally:
        listener.close()
        try:
            if _still_ours(path):
                os.unlink(path)
        except OSError:
            pass
        os.close(lock)


def preload() -> None:
    """Imports every module of the package a verb may need (the MCP server's excepted), and
    every module those import inside their functions.

    The verbs import some libraries only where they need them (dulwich's ``Repo`` and
    ``client``, ``concurrent.futures``), so a cold start that only reads never pays for them,
    and those libraries do the same with their own modules (dulwich's ``worktree``); importing
    the package's modules reaches none of them, and a served command would import them in its
    child, every time. Their names come from the modules' own import statements (a library's
    only within that library, one step deep), so there is no list to keep up to date.
    """
    import trading_checkpoints

    ours = [
        module.name
        for module in pkgutil.walk_packages(trading_checkpoints.__path__, 'trading_checkpoints.')
        # the MCP SDK, and the modules that run a command when imported
        if not module.name.startswith(NOT_PRELOADED) and not module.name.endswith('.__main__')
    ]
    libraries = _preload(ours, lambda importer, name: _top(name) not in NOT_PRELOADED_LIBRARIES)
    # One step into those libraries' own lazy imports, not further: dulwich's reach every part
    # of it (merge, rebase, LFS), which no verb uses.
    _preload(libraries, lambda importer, name: _top(name) == _top(importer))
    _warm_parsers()


def _warm_parsers() -> None:
    """Builds the hook's parser and parses a command line with it and with the command group,
    so a child finds the parser built and the regular expressions parsing compiles in ``re``'s
    cache (a hook event's child otherwise spends a few milliseconds on them)."""
    from ..agent.hooks.process import parser
    from ..cli.app import cli

    parser().parse_args(['--harness', 'claude'])
    with cli.make_context('checkpoints', ['status'], resilient_parsing=True):
        pass


def _top(name: str) -> str:
    return name.partition('.')[0]


def _preload(names: list[str], wanted: Callable[[str, str], bool]) -> list[str]:
    """Imports ``names``, then what each imports inside its functions where ``wanted(importer,
    imported)``; returns the latter's names."""
    found: dict[str, None] = {}
    for name in names:
        try:
            loaded = import_module(name)
        except ImportError:
            continue  # an optional extra or library that is not installed (watch, ui)
        for imported, attributes in _imported_in_functions(loaded):
            if not wanted(name, imported):
                continue
            try:
                module = import_module(imported)
            except ImportError:
                continue
            for attribute in attributes:  # ``from X import Y`` may import X.Y on access
                try:
                    getattr(module, attribute, None)
                except ImportError:
                    continue
            found[imported] = None
    return list(found)


# An indented import: inside a function (or a ``try``/``if``): its module, or its package and
# the names taken from it (on the first line).
_INDENTED_IMPORT = re.compile(
    r'^[ \t]+(?:from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+\(?([\w, \t]*)|import[ \t]+([\w.]+))',
    re.MULTILINE,
)


def _imported_in_functions(module: ModuleType) -> list[tuple[str, list[str]]]:
    """The imports indented in ``module``'s source (inside its functions): each module's
    absolute name, with the names a ``from`` import takes from it."""
    source = getattr(module, '__file__', None)
    if source is None or not source.endswith('.py'):
        return []
    try:
        with open(source, encoding='utf-8') as file:
            text = file.read()
    except (OSError, ValueError):
        return []
    found: list[tuple[str, list[str]]] = []
    for origin, names, plain in _INDENTED_IMPORT.findall(text):
        if plain:
            found.append((plain, []))
            continue
        try:
            absolute = resolve_name(origin, module.__package__ or '')
        except (ImportError, ValueError):
            continue
        found.append((absolute, [name.split()[0] for name in names.split(',') if name.strip()]))
    return found


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


def _serve(listener: socket.socket, path: str, idle: float) -> None:
    children: set[int] = set()
    last = time.monotonic()
    while True:
        ready, _, _ = select.select([listener], [], [], min(idle, 5.0))
        _reap(children)
        if children:
            last = time.monotonic()
        if not _still_ours(path):
            return
        if not ready:
            if time.monotonic() - last >= idle and not children:
                return
            continue
        try:
            connection, _ = listener.accept()
        except OSError:
            continue
        last = time.monotonic()
        if private.peer_uid(connection) != os.getuid():
            connection.close()
            continue
        pid = os.fork()
        if pid == 0:
            listener.close()
            _child(connection)  # never returns
        children.add(pid)
        connection.close()


def _reap(children: set[int]) -> None:
    for pid in list(children):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            children.discard(pid)


def _still_ours(path: str) -> bool:
    """Whether the socket file at ``path`` is still the one this server listens on."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return (info.st_dev, info.st_ino) == _identity


def _child(connection: socket.socket) -> None:
    """Runs one command for the client on ``connection`` and exits with its status."""
    status = 1
    try:
        request = _receive(connection)
        if request is None:
            os._exit(1)  # the client runs the command itself: it never saw ``pid``
        _become_client(request)
        connection.sendall(f'pid {os.getpid()}\n'.encode())
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
