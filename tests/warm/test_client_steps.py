"""The client's steps, each in this process with real descriptors, sockets and signals: which
commands go to a server, the child's answer, the relay, the signals held and forwarded, the
hung server's socket, the end by a signal."""

from __future__ import annotations

import os
import pty
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from helpers.clientsteps import reading, recorded_signals, standard_streams, writing
from helpers.processes import environment
from helpers.warm import within

from trading_checkpoints.warm import client

pytestmark = pytest.mark.skipif(sys.platform != 'linux', reason='the warm server is Linux-only')


def test_commands_go_to_a_server_only_when_it_can_take_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / 'in').write_text('')
    files = (reading(tmp_path / 'in'), writing(tmp_path / 'out'), writing(tmp_path / 'err'))
    monkeypatch.delenv(client.SWITCH, raising=False)
    with standard_streams(*files):
        assert client.wanted(['list'])
        for verb in sorted(client.IN_PROCESS_VERBS):
            assert not client.wanted(['--desk', 'x', verb]), verb
        for value in ('off', 'OFF ', '0', 'no', 'false'):
            monkeypatch.setenv(client.SWITCH, value)
            assert not client.wanted(['list']), value
        monkeypatch.setenv(client.SWITCH, 'on')
        assert client.wanted(['list'])


@pytest.mark.parametrize('name, platform', [('nt', 'win32'), ('posix', 'cygwin')])
def test_a_platform_without_unix_sockets_runs_every_command_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, platform: str
) -> None:
    """Windows, and Cygwin's POSIX layer over it, have no descriptors to pass over a Unix
    socket; the test makes ``os.name`` and ``sys.platform`` say so (the run is on Linux)."""
    (tmp_path / 'in').write_text('')
    monkeypatch.delenv(client.SWITCH, raising=False)
    with standard_streams(
        reading(tmp_path / 'in'), writing(tmp_path / 'o'), writing(tmp_path / 'e')
    ):
        assert client.wanted(['list'])
        with monkeypatch.context() as there:
            there.setattr(os, 'name', name)
            there.setattr(sys, 'platform', platform)
            wanted = client.wanted(['list'])
        assert not wanted


def test_closed_unusable_or_terminal_streams_keep_a_command_off_the_server(tmp_path: Path) -> None:
    (tmp_path / 'in').write_text('')
    stdin, stdout, stderr = (
        reading(tmp_path / 'in'),
        writing(tmp_path / 'o'),
        writing(tmp_path / 'e'),
    )
    with standard_streams(stdin, stdout, stderr):
        assert client.streams_usable()
    with standard_streams(writing(tmp_path / 'in'), stdout, stderr):
        assert not client.streams_usable(), 'stdin not readable'
    with standard_streams(stdin, reading(tmp_path / 'in'), stderr):
        assert not client.streams_usable(), 'stdout not writable'
    with standard_streams(stdin, stdout, reading(tmp_path / 'in')):
        assert not client.streams_usable(), 'stderr not writable'
    main, terminal = pty.openpty()
    try:
        for at in range(3):
            made = [stdin, stdout, stderr]
            made[at] = lambda: os.dup(terminal)
            with standard_streams(*made):
                assert not client.streams_usable(), f'{at} a terminal'
    finally:
        os.close(main)
        os.close(terminal)
    with standard_streams(stdin, stdout, stderr):
        sys.stdin = None
        assert not client.streams_usable(), 'closed when the process started'
    with standard_streams(stdin, stdout, stderr):
        saved = os.dup(1)
        os.close(1)
        try:
            assert not client.streams_usable(), 'closed since'
        finally:
            os.dup2(saved, 1)
            os.close(saved)
    with standard_streams(stdin, stdout, stderr):
        sys.stdout = open(os.dup(1), 'w')  # noqa: SIM115 - the same file, another descriptor
        try:
            assert not client.streams_usable(), 'sys.stdout on another descriptor than 1'
        finally:
            sys.stdout.close()


def test_looking_at_the_streams_moves_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / 'in').write_text('the event')
    streams = (reading(tmp_path / 'in'), writing(tmp_path / 'out'), writing(tmp_path / 'err'))
    with standard_streams(*streams):
        assert client.streams_usable()
        assert os.read(0, 100) == b'the event', 'nothing read from stdin'
    assert (tmp_path / 'out').read_bytes() == b''
    assert (tmp_path / 'err').read_bytes() == b''


@contextmanager
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with mine, theirs:
        yield mine, theirs


def relayed(
    *chunks: bytes, close: bool = True, deadline: float | None = None, later: bytes = b''
) -> tuple[int | None, int | None, list[tuple[int, int]]]:
    """What ``Relay.run`` returns for the child's ``chunks`` (then ``later``, half a second on;
    then the child's end of the connection closed, if ``close``), the child it learnt, and the
    signals it forwarded, to whom: a SIGUSR1 held before the child started (the server not
    given up: the child had taken the streams), and a SIGTERM that comes after the relay
    returned."""
    forwarded: list[tuple[int, int]] = []
    with within(10, 'relaying'), recorded_signals(), pair() as (mine, theirs):

        def send_later() -> None:
            theirs.sendall(later)
            if close:
                theirs.shutdown(socket.SHUT_WR)

        held = client.Held()
        held.signals.append(signal.SIGUSR1)
        held.abandon = False
        relay = client.Relay(mine, held)
        original = client._send
        client._send = lambda pid, signum: forwarded.append((pid, signum))  # type: ignore[assignment]
        timer = threading.Timer(0.5, send_later)
        try:
            for chunk in chunks:
                theirs.sendall(chunk)
            if later:
                timer.start()
            elif close:
                theirs.shutdown(socket.SHUT_WR)
            status = relay.run(deadline)
            if relay.child is not None:
                signal.raise_signal(signal.SIGTERM)
        finally:
            timer.cancel()
            if later:
                timer.join()
            client._send = original  # type: ignore[assignment]
            held.close()
        return status, relay.child, forwarded


def started(child: int) -> list[tuple[int, int]]:
    return [(child, signal.SIGUSR1), (child, signal.SIGTERM)]


def test_the_relay_returns_the_commands_status(capsys: pytest.CaptureFixture[str]) -> None:
    assert relayed(b'ru', b'n 42\nnoise\nex', b'it 3\nexit 9\n') == (3, 42, started(42))
    assert relayed(b'run 7\nrun 8\nexit 5\n') == (5, 7, started(7)), 'started once'
    assert relayed(b'noise\nrun 5\nexit 3\n') == (3, 5, started(5)), 'a word it does not know'
    assert capsys.readouterr().err == ''


def test_once_the_command_started_the_relay_waits_past_the_deadline() -> None:
    assert relayed(b'run 3\n', later=b'exit 4\n', deadline=time.monotonic() + 0.2) == (
        4,
        3,
        started(3),
    )


@pytest.mark.parametrize(
    'chunks, close',
    [
        ((b'no Uid differs\n', b'run 5\nexit 3\n'), True),
        ((b'no ' + b'x' * 5000 + b'\n', b'run 5\nexit 3\n'), True),  # longer than a read
        ((b'signal 9\n', b'run 5\nexit 3\n'), True),
        ((b'exit 0\n', b'run 5\nexit 3\n'), True),
        ((b'ru',), True),
    ],
)
def test_a_child_that_ends_before_it_starts_the_command_leaves_it_to_the_client(
    chunks: tuple[bytes, ...], close: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    assert relayed(*chunks, close=close) == (None, None, [])
    assert capsys.readouterr().err == ''


def test_a_child_that_does_not_start_in_time_is_given_up() -> None:
    began = time.monotonic()
    with pytest.raises(TimeoutError):
        relayed(b'ru', close=False, deadline=time.monotonic() + 0.2)
    assert time.monotonic() - began >= 0.2
    with pytest.raises(TimeoutError):
        relayed(close=False, deadline=time.monotonic() - 1)


def test_a_relay_cut_after_the_command_started_is_reported(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert relayed(b'run 3\nexit', close=True)[0] == 1
    assert capsys.readouterr().err == client.SERVER_GONE + '\n'


def test_a_command_ended_by_a_signal_ends_the_client_by_it(monkeypatch: pytest.MonkeyPatch) -> None:
    ended: list[int] = []
    monkeypatch.setattr(client, 'end_by', ended.append)
    assert relayed(b'run 3\nsignal 15\nexit 4\n')[0] == 4
    assert ended == [15]


def test_the_streams_go_to_whoever_takes_them_first(tmp_path: Path) -> None:
    """The token's one datagram: a child that takes it has the client's streams; a client
    that takes it back first leaves none for a child (and closes the copies it got back)."""
    streams, token = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    with streams, token:
        with within(5, 'taking the streams back'):
            assert not client.take_back(token), 'nothing there: not waited for'
        files = [os.open(tmp_path / 'f', os.O_WRONLY | os.O_CREAT, 0o600) for _ in range(3)]
        streams.sendmsg(
            [b'streams'], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack('3i', *files))]
        )
        for fd in files:
            os.close(fd)
        opened = len(os.listdir('/proc/self/fd'))
        assert client.take_back(token)
        assert len(os.listdir('/proc/self/fd')) == opened, 'the copies came back closed'
        assert not client.take_back(token), 'taken once'
        streams.send(b'other')
        assert not client.take_back(token), 'not the streams'
        one = os.open(tmp_path / 'f', os.O_RDONLY)
        streams.sendmsg([b'other'], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack('i', one))])
        os.close(one)
        assert not client.take_back(token), 'not the streams'
        assert len(os.listdir('/proc/self/fd')) == opened, 'a descriptor that came with it closed'


def test_leave_skips_the_teardown_but_not_what_the_client_wrote() -> None:
    """A served command's client ends at once (no exit handler runs) with the status as the
    system keeps it (its low byte), once what it wrote to its standard streams is flushed."""
    code = (
        'import atexit, sys\n'
        'from trading_checkpoints.warm.client import leave\n'
        'atexit.register(print, "teardown")\n'
        'sys.stdout.write("out, no newline")\n'
        'sys.stderr.write("err, no newline")\n'
        'leave(256 + 3)\n'
    )
    done = subprocess.run(
        [sys.executable, '-c', code],
        capture_output=True,
        timeout=60,
        env=environment({'PYTHONUNBUFFERED': None}),  # the streams buffer, as a harness's pipes
    )
    assert done.returncode == 3
    assert (done.stdout, done.stderr) == (b'out, no newline', b'err, no newline')


def test_a_signal_that_does_not_end_a_process_ends_the_client_with_128_plus_it() -> None:
    before = signal.getsignal(signal.SIGWINCH)
    try:
        with pytest.raises(SystemExit) as done:
            client.end_by(signal.SIGWINCH)  # ignored by default: the client lives on to exit
        assert done.value.code == 128 + signal.SIGWINCH
    finally:
        signal.signal(signal.SIGWINCH, before)


@pytest.mark.parametrize('signum', [signal.SIGTERM, signal.SIGKILL, signal.SIGINT])
def test_a_signal_that_ends_a_process_ends_the_client(signum: int) -> None:
    code = (
        'import signal, sys\n'
        'from trading_checkpoints.warm.client import end_by\n'
        'signal.signal(signal.SIGTERM, signal.SIG_IGN)\n'
        'signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM])\n'
        f'end_by({signum})\n'
    )
    done = subprocess.run([sys.executable, '-c', code], capture_output=True, timeout=60)
    assert done.returncode == -signum, done.stderr


def test_a_signal_before_go_gives_the_server_up_and_then_acts_on_the_client() -> None:
    """The handler only holds the signal; the relay gives the server up where it waits,
    having read nothing; the client's own handlers then get the signal."""
    with within(10, 'relaying'), recorded_signals() as got, pair() as (mine, theirs):
        held = client.Held()
        try:
            signal.raise_signal(signal.SIGHUP)
            assert held.signals == [signal.SIGHUP] and got == []
            theirs.sendall(b'run 5\n')
            with pytest.raises(client.Abandon):
                client.Relay(mine, held).run(time.monotonic() + 5)
            assert mine.recv(64) == b'run 5\n', 'nothing read'
            with pytest.raises(SystemExit) as done:
                held.release()
            assert done.value.code == 128 + signal.SIGHUP
            assert got == [signal.SIGHUP], 'the client itself then got it'
            assert signal.getsignal(signal.SIGHUP) is not held.hold
        finally:
            held.close()


def test_a_signal_during_the_wait_for_the_child_gives_the_server_up_at_once() -> None:
    """The relay waits for ``run N`` with nothing read; a signal then ends the wait (its
    wake-up byte), long before the deadline: the server is given up."""
    with within(10, 'relaying'), recorded_signals() as got, pair() as (mine, _):
        held = client.Held()
        timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGHUP))
        try:
            began = time.monotonic()
            timer.start()
            with pytest.raises(client.Abandon):
                client.Relay(mine, held).run(time.monotonic() + 8)
            assert time.monotonic() - began < 4, 'the signal ended the wait'
            assert held.signals == [signal.SIGHUP] and got == []
        finally:
            timer.cancel()
            timer.join()
            held.close()


def test_a_held_puts_the_wake_up_back_when_closed() -> None:
    """A wake-up left set after the relay would have every later signal written to a closed
    socket's number, which a file opened later may reuse."""
    with recorded_signals():
        before = signal.set_wakeup_fd(-1)  # none while the test runs, then the runner's
        held = client.Held()
        own = signal.set_wakeup_fd(-1)
        assert own not in (-1, before), 'its own while it holds'
        signal.set_wakeup_fd(own)
        held.close()
        assert signal.set_wakeup_fd(before) == -1, 'put back as it was'


def test_a_signal_while_a_line_is_half_read_loses_none_of_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The relay has read half of ``run N`` when a signal ends its wait: it reads on, learns
    the child, and sends it the signal (the server was not given up: the child had the
    streams)."""
    forwarded: list[tuple[int, int]] = []
    monkeypatch.setattr(client, '_send', lambda pid, signum: forwarded.append((pid, signum)))
    with within(10, 'relaying'), recorded_signals() as got, pair() as (mine, theirs):
        held = client.Held()
        held.abandon = False
        timers = [
            threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGTERM)),
            threading.Timer(0.6, theirs.sendall, (b'n 5\nexit 3\n',)),
        ]
        try:
            theirs.sendall(b'ru')
            for timer in timers:
                timer.start()
            assert client.Relay(mine, held).run() == 3
        finally:
            for timer in timers:
                timer.cancel()
                timer.join()
            held.close()
    assert (forwarded, got) == ([(5, signal.SIGTERM)], [])


def test_a_signal_while_the_child_starts_goes_to_it_whenever_it_lands(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A signal the moment the relay read ``run N`` (between the read and the line kept) is
    held, and sent to the child once it is known; the relay goes on to the command's status.
    A handler that gave the server up there lost ``run N``: the signal never reached the child,
    which ran the command to its end, and the client said the server had stopped."""
    forwarded: list[tuple[int, int]] = []
    monkeypatch.setattr(client, '_send', lambda pid, signum: forwarded.append((pid, signum)))

    class SignalledAfterRead:
        def __init__(self, connection: socket.socket) -> None:
            self.connection = connection

        def fileno(self) -> int:
            return self.connection.fileno()

        def settimeout(self, value: float | None) -> None:
            self.connection.settimeout(value)

        def recv(self, size: int) -> bytes:
            data = self.connection.recv(size)
            if data.startswith(b'run'):
                signal.raise_signal(signal.SIGHUP)  # handled at the next bytecode
            return data

    with within(10, 'relaying'), recorded_signals() as got, pair() as (mine, theirs):
        held = client.Held()
        try:
            theirs.sendall(b'run 7\n')
            theirs.sendall(b'exit 0\n')
            relay = client.Relay(SignalledAfterRead(mine), held)  # type: ignore[arg-type]
            assert relay.run(time.monotonic() + 5) == 0
        finally:
            held.close()
    assert (relay.child, forwarded, got) == (7, [(7, signal.SIGHUP)], [])


def test_a_signal_after_go_is_held_for_the_child() -> None:
    with recorded_signals() as got:
        held = client.Held()
        held.abandon = False
        signal.raise_signal(signal.SIGTERM)
        signal.raise_signal(signal.SIGQUIT)
        assert held.signals == [signal.SIGTERM, signal.SIGQUIT] and got == []


def test_a_signal_the_client_ignores_is_neither_held_nor_forwarded() -> None:
    with recorded_signals():
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        held = client.Held()
        assert signal.SIGHUP not in held.previous
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
        assert set(held.previous) == {signal.SIGINT, signal.SIGTERM, signal.SIGQUIT}
        held.release()
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN


def test_the_signals_the_client_handles_are_forwarded_to_the_child() -> None:
    child = subprocess.Popen(
        [sys.executable, '-c', 'import sys; print("ready", flush=True); sys.stdin.read()'],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == b'ready\n'
        with recorded_signals() as got:
            signal.signal(signal.SIGHUP, signal.SIG_IGN)
            held = client.Held()
            client.forward_signals(child.pid, held.previous)
            assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN, 'ignored: not forwarded'
            signal.raise_signal(signal.SIGTERM)
            assert child.wait(timeout=30) == -signal.SIGTERM
            assert got == []
            signal.raise_signal(signal.SIGTERM)  # the child is gone: nothing to forward to
    finally:
        child.kill()
        child.wait()


def test_a_hung_servers_socket_is_removed_only_if_it_is_still_the_one_reached(
    tmp_path: Path,
) -> None:
    path = tmp_path / 'server.sock'
    path.write_text('')
    reached = path.stat().st_ino
    client.remove_hung(str(path), reached + 1)
    assert path.exists(), 'another socket: kept'
    client.remove_hung(str(path), reached)
    assert not path.exists()
    client.remove_hung(str(path), reached)  # already gone: nothing to do
