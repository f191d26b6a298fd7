"""The client handing a command over, run in this process: to a server it starts itself (real,
in the background), and to a forked child of this process listening where this process's
server would, which reads the request and takes the streams with the server's child's own code
(``child.receive``, ``child.take_streams``) and then answers, refuses, hangs or ends as each
test says."""

from __future__ import annotations

import os
import signal
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.clientsteps import reading, recorded_signals, standard_streams, writing
from helpers.warm import children_of, gone, receiving, within, workspace_with_history

from trading_checkpoints.core import private
from trading_checkpoints.warm import address, child, client, command, wire

pytestmark = pytest.mark.skipif(sys.platform != 'linux', reason='the warm server is Linux-only')

Act = Callable[[socket.socket], None]


@pytest.fixture
def located(runtime: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """This process's slot, its server's folder in the test's runtime folder (made by the
    test where it needs it); the import path made absolute, as the console script's is."""
    monkeypatch.setenv('XDG_RUNTIME_DIR', str(runtime))
    monkeypatch.setenv('CHECKPOINTS_SERVER_IDLE', '60')
    monkeypatch.delenv(client.SWITCH, raising=False)
    monkeypatch.setattr(sys, 'path', [os.path.abspath(entry) for entry in sys.path])
    slot = address.slot()
    assert slot is not None
    return slot


def own_socket(slot: str) -> str:
    """The path of a socket that this process's client takes for its server's (a watched
    manifest of its slot naming it)."""
    folder = private.private_folder(create=True)
    assert folder is not None
    path = address.socket_path(folder, '0123456789abcdef')
    Path(address.manifest_path(folder, slot)).write_bytes(address.watched(path))
    return path


def forked(listener: socket.socket, act: Act) -> int:
    """A child of this process that takes the first connection on ``listener`` and does
    ``act`` with it, then ends; its pid."""
    pid = os.fork()
    if pid == 0:
        try:
            connection, _ = listener.accept()
            act(connection)
        finally:
            os._exit(0)
    return pid


def received(connection: socket.socket) -> tuple[wire.Request, socket.socket]:
    got = child.receive(connection)
    assert got is not None
    return got


def takes(connection: socket.socket) -> wire.Request:
    """Reads the request and takes the client's streams once it waits for an answer."""
    request, token = received(connection)
    assert receiving(os.getppid(), timeout=10)
    if not child.take_streams(token, request.streams):
        os._exit(9)
    return request


def serves(status: int) -> Act:
    def act(connection: socket.socket) -> None:
        request = takes(connection)
        said = repr((request.process_argv, request.argv, len(request.streams)))
        os.write(1, f'{said}\n'.encode() + os.read(0, 100))
        os.write(2, b'to stderr\n')
        connection.sendall(f'run {os.getpid()}\nexit {status}\n'.encode())

    return act


def refuses(connection: socket.socket) -> None:
    received(connection)
    connection.sendall(b'no the test says no\n')


def ends_silently(connection: socket.socket) -> None:
    takes(connection)


def hangs(connection: socket.socket) -> None:
    received(connection)
    time.sleep(60)


def starts_late(connection: socket.socket) -> None:
    """Takes the streams, lets the client's wait for ``run`` pass, sends it SIGTERM, then
    starts: exits 6 when the SIGTERM was forwarded to it, 7 when not."""
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM])
    takes(connection)
    time.sleep(client.ANSWER_TIMEOUT + 0.3)
    assert receiving(os.getppid(), timeout=10)
    os.kill(os.getppid(), signal.SIGTERM)
    time.sleep(0.2)
    connection.sendall(f'run {os.getpid()}\n'.encode())
    got = signal.sigtimedwait([signal.SIGTERM], 10)
    connection.sendall(b'exit 6\n' if got is not None else b'exit 7\n')


def collected(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    os.waitpid(pid, 0)


def handed_over(
    tmp_path: Path, slot: str, act: Act | None, argv: list[str] | None = None
) -> tuple[int | None, bytes, bytes, str]:
    """``run_on_server(argv)`` with a forked child doing ``act`` as the server's child (none
    listening when ``act`` is None): the status, what reached stdout and stderr, and the
    socket's path. Its stdin holds ``the event``."""
    path = own_socket(slot)
    listener, _ = private.listen(path, 8)
    peer = None
    try:
        if act is None:
            listener.close()
        else:
            peer = forked(listener, act)
        (tmp_path / 'in').write_bytes(b'the event')
        streams = (reading(tmp_path / 'in'), writing(tmp_path / 'out'), writing(tmp_path / 'err'))
        with recorded_signals(), standard_streams(*streams), within(30, 'the command served'):
            opened = len(os.listdir('/proc/self/fd'))
            status = client.run_on_server(['list'] if argv is None else argv)
            assert len(os.listdir('/proc/self/fd')) == opened, 'no descriptor left open'
    finally:
        listener.close()
        if peer is not None:
            collected(peer)
    return status, (tmp_path / 'out').read_bytes(), (tmp_path / 'err').read_bytes(), path


def test_a_child_that_takes_the_streams_runs_the_command_with_them(
    tmp_path: Path, located: str
) -> None:
    """The request names this process's ``sys.argv``, the command and three streams; the
    child gets stdin, stdout and stderr in their places, and its status is the client's."""
    status, out, err, path = handed_over(tmp_path, located, serves(3), ['list', '--json'])
    request = ([os.fsencode(item) for item in sys.argv], [b'list', b'--json'], 3)
    assert (status, out, err) == (3, f'{request!r}\nthe event'.encode(), b'to stderr\n')
    assert os.path.exists(path)


def test_a_child_that_refuses_leaves_the_command_and_the_server_to_the_client(
    tmp_path: Path, located: str
) -> None:
    assert handed_over(tmp_path, located, refuses)[:3] == (None, b'', b'')
    assert os.path.exists(own_socket(located)), 'a refusal is no hung server'


def test_a_child_that_took_the_streams_and_ended_without_a_word_is_reported(
    tmp_path: Path, located: str
) -> None:
    assert handed_over(tmp_path, located, ends_silently)[:3] == (
        1,
        b'',
        client.SERVER_GONE.encode() + b'\n',
    )


def test_a_hung_server_is_given_up_and_its_socket_removed(
    tmp_path: Path, located: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(client, 'ANSWER_TIMEOUT', 0.3)
    began = time.monotonic()
    status, out, err, path = handed_over(tmp_path, located, hangs)
    assert time.monotonic() - began >= 0.3
    assert (status, out, err) == (None, b'', b'')
    assert not os.path.exists(path), 'the next command starts a new server'


def test_a_signal_while_the_child_that_took_the_streams_is_late_goes_to_it(
    tmp_path: Path, located: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the wait for ``run`` a child that took the streams still runs the command: a
    signal then is held for it, and forwarded when it starts."""
    monkeypatch.setattr(client, 'ANSWER_TIMEOUT', 0.3)
    status, out, err, path = handed_over(tmp_path, located, starts_late)
    assert (status, out, err) == (6, b'', b'')
    assert os.path.exists(path), 'a child that took the streams is no hung server'


@pytest.fixture
def starts(monkeypatch: pytest.MonkeyPatch) -> list[str | None]:
    """The slots the client starts a server for (none is started)."""
    started: list[str | None] = []
    monkeypatch.setattr(client, 'start_server', started.append)
    return started


def test_a_socket_no_server_listens_at_starts_a_server(
    tmp_path: Path, located: str, starts: list[str | None]
) -> None:
    assert handed_over(tmp_path, located, None)[:3] == (None, b'', b'')
    assert starts == [located]


def test_a_server_that_takes_no_connection_is_given_up_within_the_connect_time(
    located: str, starts: list[str | None]
) -> None:
    path = own_socket(located)
    listener, _ = private.listen(path, 0)
    queued = []
    try:
        while True:  # its queue filled
            waiting = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            waiting.setblocking(False)
            queued.append(waiting)
            try:
                waiting.connect(path)
            except BlockingIOError:
                break
        with within(client.CONNECT_TIMEOUT + 10, 'giving up the server'):
            assert client.run_on_server(['list']) is None
    finally:
        for waiting in queued:
            waiting.close()
        listener.close()
    assert starts == [located]


def test_the_first_command_makes_the_folder_and_starts_a_server(
    runtime: Path, located: str, starts: list[str | None]
) -> None:
    assert not (runtime / address.FOLDER_NAME).exists()
    assert client.run_on_server(['list']) is None
    assert (runtime / address.FOLDER_NAME).is_dir()
    assert starts == [located]


def status_of(pid: int, field: str) -> str:
    text = Path(f'/proc/{pid}/status').read_text()
    return text.split(f'\n{field}:')[1].split()[0]


def started(runtime: Path, slot: str, files: Path) -> int:
    """The server ``start_server`` starts, with SIGUSR1 blocked, SIGUSR2 ignored and files in
    ``files`` for the standard streams here, once it listens; its pid. A server started
    moments after its code was written stops at once (a later client starts it:
    ``installation.settled``, exiting 0), so it is started until one listens."""
    deadline = time.monotonic() + 60
    while True:
        before = set(children_of(os.getpid()))
        ignored = signal.signal(signal.SIGUSR2, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
        (files / 'in').write_bytes(b'')
        streams = (reading(files / 'in'), writing(files / 'out'), writing(files / 'err'))
        try:
            with standard_streams(*streams):
                client.start_server(slot)
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGUSR1])
            signal.signal(signal.SIGUSR2, ignored)
        [server] = set(children_of(os.getpid())) - before
        while not gone(server, timeout=0):
            if any(
                Path(f'{sock}.lock').read_text().strip() == str(server)
                for sock in (runtime / address.FOLDER_NAME).glob('server-*.sock')
            ):
                return server
            time.sleep(0.05)
        _, status = os.waitpid(server, 0)
        assert os.waitstatus_to_exitcode(status) == 0, 'the server failed'
        assert time.monotonic() < deadline, 'no server listens'
        time.sleep(0.5)


def test_the_server_a_client_starts_is_detached_and_serves_its_next_command(
    tmp_path: Path, runtime: Path, located: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server runs this interpreter with this import path and the slot, in a session of
    its own, with /dev/null for its streams, this environment and every signal at its
    default; the next command is served by its child (``command.run`` here is never called),
    and ``main`` exits with the served command's status."""
    desk = workspace_with_history(tmp_path)
    monkeypatch.chdir(desk)
    monkeypatch.setenv('TC_TEST_MARK', 'from the client')
    ran_here: list[list[str] | None] = []

    def here(argv: list[str] | None) -> int:
        ran_here.append(argv)
        return 99

    monkeypatch.setattr(command, 'run', here)
    before = set(children_of(os.getpid()))
    (tmp_path / 'start').mkdir()
    server = started(runtime, located, tmp_path / 'start')
    try:
        line = Path(f'/proc/{server}/stat').read_text().rsplit(')', 1)[1].split()
        assert int(line[3]) == server, 'a session of its own'
        assert int(line[4]) == 0, 'no controlling terminal'
        assert [os.readlink(f'/proc/{server}/fd/{fd}') for fd in range(3)] == [os.devnull] * 3
        assert int(status_of(server, 'SigBlk'), 16) == 0
        assert int(status_of(server, 'SigIgn'), 16) & (1 << (signal.SIGUSR2 - 1)) == 0
        arguments = Path(f'/proc/{server}/cmdline').read_bytes().split(b'\0')[:-1]
        assert arguments[0] == os.fsencode(sys.executable)
        assert arguments[-len(sys.path) - 1 :] == [
            os.fsencode(item) for item in [located, *sys.path]
        ]
        assert b'TC_TEST_MARK=from the client' in Path(f'/proc/{server}/environ').read_bytes()
        (tmp_path / 'in').write_bytes(b'')
        streams = (reading(tmp_path / 'in'), writing(tmp_path / 'out'), writing(tmp_path / 'err'))
        # A server that finds its code changed refuses its clients, which start another: each
        # command is tried until one is served.
        deadline = time.monotonic() + 60
        with (
            recorded_signals(),
            standard_streams(*streams),
            within(150, 'a started server'),
        ):
            while (status := client.run_on_server(['list'])) is None:
                assert time.monotonic() < deadline, 'never served'
                time.sleep(0.5)
            while (code := exits(lambda: client.main(['restore', 'zzz']))) == 99:
                assert time.monotonic() < deadline, 'never served'
                time.sleep(0.5)
        assert (status, code) == (0, 1), 'the served status, and the served error'
        assert all(argv == ['restore', 'zzz'] for argv in ran_here)
        assert b'second' in (tmp_path / 'out').read_bytes()
        assert b'zzz' in (tmp_path / 'err').read_bytes()
    finally:
        for pid in set(children_of(os.getpid())) - before:
            os.kill(pid, signal.SIGTERM)
            os.waitpid(pid, 0)


def in_process(monkeypatch: pytest.MonkeyPatch) -> list[list[str] | None]:
    """The commands ``main`` runs here (each exits 99), the server switched off."""
    monkeypatch.setenv(client.SWITCH, 'off')
    ran: list[list[str] | None] = []

    def here(argv: list[str] | None) -> int:
        ran.append(argv)
        return 99

    monkeypatch.setattr(command, 'run', here)
    return ran


def exits(action: Callable[[], None]) -> object:
    with pytest.raises(SystemExit) as done:
        action()
    return done.value.code


def test_main_runs_the_command_it_is_given_or_sys_argv_here(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ran = in_process(monkeypatch)
    monkeypatch.setattr(sys, 'argv', ['checkpoints', '--desk', 'x', 'status'])
    assert exits(lambda: client.main(['list'])) == 99
    assert exits(client.main) == 99
    assert ran == [['list'], ['--desk', 'x', 'status']]


def test_the_hook_script_runs_checkpoints_hook_with_its_arguments(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ran = in_process(monkeypatch)
    monkeypatch.setattr(sys, 'argv', ['checkpoints-hook', '--harness', 'claude'])
    assert exits(client.hook_main) == 99
    assert ran == [['hook', '--harness', 'claude']]


def test_a_command_no_server_runs_runs_here_with_its_status(
    tmp_path: Path, located: str, monkeypatch: pytest.MonkeyPatch, starts: list[str | None]
) -> None:
    ran = in_process(monkeypatch)
    monkeypatch.delenv(client.SWITCH)
    (tmp_path / 'in').write_bytes(b'')
    streams = (reading(tmp_path / 'in'), writing(tmp_path / 'out'), writing(tmp_path / 'err'))
    with standard_streams(*streams):
        assert exits(lambda: client.main(['list'])) == 99
    assert ran == [['list']] and starts == [located]
