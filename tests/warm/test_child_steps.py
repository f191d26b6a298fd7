"""The served command's child's steps, each in this process with real sockets, descriptors and
a real client process (the process's state put back after each): the request read, the client
become, its streams taken, the kernel set to end the child with its client."""

from __future__ import annotations

import fcntl
import io
import locale
import os
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
from helpers.processes import environment
from helpers.warm import within

from trading_checkpoints.warm import child, context, wire

pytestmark = pytest.mark.skipif(sys.platform != 'linux', reason='the warm server is Linux-only')


@contextmanager
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with mine, theirs:
        yield mine, theirs


def request(argv: list[str]) -> bytes:
    return wire.encode(['checkpoints'], argv, [sys.__stdin__, sys.__stdout__, sys.__stderr__])


def with_token(theirs: socket.socket, first: bytes) -> socket.socket:
    """Sends ``first`` with a token attached (one end of a new datagram pair); the other end."""
    streams, token = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    with token:
        theirs.sendmsg(
            [first], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack('i', token.fileno()))]
        )
    return streams


def test_a_request_is_read_whole_across_chunks() -> None:
    body = request(['list', 'x' * 70000])
    with pair() as (mine, theirs):
        streams = with_token(theirs, body[:5])
        theirs.sendall(body[5:])
        got = child.receive(mine)
    assert got is not None
    found, token = got
    assert found.argv == [b'list', b'x' * 70000]
    with streams, token:
        streams.send(b'through the token')
        assert token.recv(100) == b'through the token'


def test_a_request_without_its_token_is_none() -> None:
    with pair() as (mine, theirs):
        theirs.sendall(request(['list']))
        assert child.receive(mine) is None
    with pair() as (mine, theirs):
        one, other = socket.socketpair()
        with one, other:
            fds = struct.pack('2i', one.fileno(), other.fileno())
            theirs.sendmsg([request(['list'])], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
        opened = len(os.listdir('/proc/self/fd'))
        assert child.receive(mine) is None, 'two descriptors: not a token'
        assert len(os.listdir('/proc/self/fd')) == opened, 'both closed'


@pytest.mark.parametrize(
    'body',
    [
        b'0000',  # cut in its length
        b'abcdefgh' + b'x' * 10,  # no length
        b'00000000',  # empty
        b'%08d' % (wire.MAX_REQUEST + 1),
        b'00000010tc2\x000',  # cut before its end
        b'00000003tc9',  # not a request
    ],
)
def test_anything_but_a_whole_request_is_none(body: bytes) -> None:
    with pair() as (mine, theirs), within(10, 'reading what ends short'):
        with_token(theirs, body).close()
        theirs.shutdown(socket.SHUT_WR)
        assert child.receive(mine) is None


def test_a_request_of_the_largest_size_is_read() -> None:
    body = request(['list'])[wire.LENGTH_DIGITS :]
    body += b'\0P=' + b'x' * (wire.MAX_REQUEST - len(body) - 3)
    assert len(body) == wire.MAX_REQUEST
    with pair() as (mine, theirs):
        streams = with_token(theirs, b'%08d' % len(body))
        sender = threading.Thread(target=theirs.sendall, args=(body,), daemon=True)
        sender.start()
        got = child.receive(mine)
        assert got is not None  # else the sender still waits: ended as the pair closes
        sender.join(60)
    streams.close()
    got[1].close()
    assert got[0].argv == [b'list'] and len(got[0].environment[b'P']) > 4_000_000


def test_a_client_that_sends_nothing_is_given_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process of this user that connects and says nothing does not keep the child."""
    monkeypatch.setattr(child, 'REQUEST_TIMEOUT', 0.2)
    got: list[object] = []
    with pair() as (mine, theirs):
        waiting = threading.Thread(target=lambda: got.append(child.receive(mine)), daemon=True)
        waiting.start()
        waiting.join(10)  # given up after 0.2 s
        assert got == [None], 'given up'


@contextmanager
def restored_process() -> Iterator[None]:
    """This process's folder, umask, environment, time zone, locale, signals and file size
    limit as they were, after the block."""
    folder = os.open('.', os.O_RDONLY)
    mask = os.umask(0o022)
    os.umask(mask)
    variables = dict(os.environb)
    ctype = locale.setlocale(locale.LC_CTYPE)
    handlers = {}
    for number in signal.valid_signals():
        try:
            handlers[number] = signal.getsignal(number)
        except (OSError, ValueError):
            continue
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    import resource

    size = resource.getrlimit(resource.RLIMIT_FSIZE)
    try:
        yield
    finally:
        os.fchdir(folder)
        os.close(folder)
        os.umask(mask)
        os.environb.clear()
        os.environb.update(variables)
        time.tzset()
        locale.setlocale(locale.LC_CTYPE, ctype)
        for number, handler in handlers.items():
            if handler is not None:
                try:
                    signal.signal(number, handler)
                except (OSError, ValueError):
                    continue
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        resource.setrlimit(resource.RLIMIT_FSIZE, size)


@contextmanager
def client_process(folder: Path, env: dict[str, str]) -> Iterator[int]:
    """A client process in ``folder`` with the environment ``env``, umask 027 and SIGHUP
    ignored; its pid while it waits."""

    def prepare() -> None:
        os.umask(0o027)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

    process = subprocess.Popen(
        [sys.executable, '-c', 'import sys; print("ready", flush=True); sys.stdin.read()'],
        cwd=folder,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        preexec_fn=prepare,
    )
    try:
        assert process.stdout is not None and process.stdout.readline() == b'ready\n'
        yield process.pid
    finally:
        process.kill()
        process.wait()


def test_the_child_becomes_the_client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The client's folder, umask and ignored signals, and its environment in place of this
    process's: a variable only this process had is gone, and the time zone follows ``TZ``."""
    env = environment({'TZ': 'JST-9', 'TC_CLIENTS_OWN': 'kept'})
    monkeypatch.setenv('TC_SERVERS_OWN', 'leaks')
    own = context.facts()
    assert own is not None
    with restored_process(), client_process(tmp_path, env) as pid:
        got = wire.decode(request(['list'])[wire.LENGTH_DIGITS :])
        got.environment = {os.fsencode(k): os.fsencode(v) for k, v in env.items()}
        assert child.become(got, pid, own) is None
        assert os.getcwd() == str(tmp_path)
        assert os.umask(0o022) == 0o027
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
        assert os.environ.get('TC_CLIENTS_OWN') == 'kept'
        assert 'TC_SERVERS_OWN' not in os.environ
        assert dict(os.environ) == env
        assert time.strftime('%z', time.localtime(0)) == '+0900'


def test_a_client_the_child_cannot_be_is_refused_before_anything_is_taken(
    tmp_path: Path,
) -> None:
    own = context.facts()
    assert own is not None
    other = dict(own, **{'ns/mnt': 'mnt:[1]'})
    with restored_process(), client_process(tmp_path, environment()) as pid:
        before = os.getcwd()
        got = wire.decode(request(['list'])[wire.LENGTH_DIGITS :])
        assert child.become(got, pid, other) == 'ns/mnt differs'
        assert os.getcwd() == before
    assert child.become(got, 2**22 + 7, own) == 'the client cannot be read in /proc'


def test_a_locale_the_system_lacks_is_refused(tmp_path: Path) -> None:
    own = context.facts()
    assert own is not None
    env = environment({'LC_ALL': 'xx_NOWHERE.UTF-9'})
    with restored_process(), client_process(tmp_path, environment()) as pid:
        got = wire.decode(request(['list'])[wire.LENGTH_DIGITS :])
        got.environment = {os.fsencode(k): os.fsencode(v) for k, v in env.items()}
        assert child.become(got, pid, own) == 'the locale of the environment is not available'


@contextmanager
def restored_streams() -> Iterator[None]:
    saved = [os.dup(number) for number in range(3)]
    streams = (sys.stdin, sys.stdout, sys.stderr, sys.__stdin__, sys.__stdout__, sys.__stderr__)
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        for number, fd in enumerate(saved):
            os.dup2(fd, number)
            os.close(fd)
        sys.stdin, sys.stdout, sys.stderr, sys.__stdin__, sys.__stdout__, sys.__stderr__ = streams


def test_the_clients_streams_are_taken_from_its_token(tmp_path: Path) -> None:
    """The descriptors waiting in the token's queue become 0, 1 and 2, and the streams on them
    are set up as the client's were (encoding, errors, buffering, no newline translation)."""
    (tmp_path / 'in').write_bytes(b'line\r\n')
    setup = [
        wire.Stream('utf-8', 'strict', False, False, True),
        wire.Stream('latin-1', 'replace', True, False, True),
        wire.Stream('ascii', 'backslashreplace', False, True, False),
    ]
    files = [
        os.open(tmp_path / 'in', os.O_RDONLY),
        os.open(tmp_path / 'out', os.O_WRONLY | os.O_CREAT, 0o600),
        os.open(tmp_path / 'err', os.O_WRONLY | os.O_CREAT, 0o600),
    ]
    streams, token = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    with restored_streams(), streams, token:
        streams.sendmsg(
            [wire.STREAMS], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack('3i', *files))]
        )
        with within(10, 'taking the streams'):
            assert child.take_streams(token, setup)
        assert sys.stdin.read() == 'line\r\n', 'no newline translation, as Python sets it up'
        assert sys.stdout.encoding == 'latin-1' and sys.stdout.errors == 'replace'
        assert sys.stdout.line_buffering and sys.stdout.mode == 'w'
        assert (sys.stdin.mode, sys.stdin.name, sys.stderr.name) == ('r', '<stdin>', '<stderr>')
        assert isinstance(sys.stderr.buffer, io.FileIO) and sys.stderr.write_through
        assert sys.__stdout__ is sys.stdout
        print('é€', end='\n')
        sys.stderr.write('ü\n')
        assert os.readlink('/proc/self/fd/1') == str(tmp_path / 'out')
    for fd in files:
        os.close(fd)
    assert (tmp_path / 'out').read_bytes() == 'é?\n'.encode('latin-1')
    assert (tmp_path / 'err').read_bytes() == b'\\xfc\n'


@pytest.mark.parametrize('what', ['taken back', 'another word', 'streams without descriptors'])
def test_streams_no_longer_in_the_token_are_not_taken(what: str, tmp_path: Path) -> None:
    """The client took its streams back (it gave up), or what waits is not its streams:
    nothing is taken, and descriptors that came anyway are closed."""
    setup = [wire.Stream('utf-8', 'strict', False, False, True)] * 3
    streams, token = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    extra = os.open(tmp_path / 'f', os.O_WRONLY | os.O_CREAT, 0o600)
    with restored_streams(), streams, token:
        before = [os.readlink(f'/proc/self/fd/{number}') for number in range(3)]
        if what == 'another word':
            fds = struct.pack('3i', extra, extra, extra)
            streams.sendmsg([b'stream!'], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
        elif what == 'streams without descriptors':
            streams.send(wire.STREAMS)
        opened = len(os.listdir('/proc/self/fd'))
        with within(10, 'looking for streams no longer there'):
            assert not child.take_streams(token, setup)
        assert len(os.listdir('/proc/self/fd')) == opened, 'what came is closed'
        assert [os.readlink(f'/proc/self/fd/{number}') for number in range(3)] == before
    os.close(extra)


def test_the_kernel_is_set_to_end_the_child_with_its_client() -> None:
    """SIGKILL to this process when the client's end says anything or closes (F_SETOWN,
    F_SETSIG, O_ASYNC); taken off again before the test's own end closes."""
    with pair() as (mine, theirs):
        child.end_with_client(mine)
        try:
            fd = mine.fileno()
            assert fcntl.fcntl(fd, fcntl.F_GETOWN) == os.getpid()
            assert fcntl.fcntl(fd, fcntl.F_GETSIG) == signal.SIGKILL
            assert fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ASYNC
        finally:
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_ASYNC)
            fcntl.fcntl(fd, fcntl.F_SETSIG, 0)
