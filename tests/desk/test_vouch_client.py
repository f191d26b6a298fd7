"""The snapshot's side of the vouch (``desk/vouch.py``): which watcher it may ask, what the mount
table says about the desk, and that anything but a whole reply from this user's listener is no
reply (the snapshot then walks)."""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.builders import write
from helpers.mounts import NEEDS_ROOT, bind_mounted

from trading_checkpoints.core import private
from trading_checkpoints.desk import vouch
from trading_checkpoints.desk import vouchprotocol as protocol

pytestmark = pytest.mark.skipif(not sys.platform.startswith('linux'), reason='a Linux watcher')

RECORD = protocol.Record(
    protocol.State('a' * 40, None, '', None, ('notes',), 0, '', (), ()),
    protocol.Answer((), 'none', ()),
)


@pytest.fixture
def runtime(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix='client-', dir='/tmp'))  # a socket path is short
    monkeypatch.setenv('XDG_RUNTIME_DIR', str(folder))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_the_key_names_one_desk_folder_and_repository(tmp_path: Path) -> None:
    desk = tmp_path / 'desk'
    desk.mkdir()
    key = vouch.key(desk, tmp_path / 'repo.git')
    assert key is not None and len(key) == 16 and int(key, 16) >= 0
    (tmp_path / 'link').symlink_to('desk')
    assert vouch.key(tmp_path / 'link', tmp_path / 'repo.git') == key  # the same folder
    assert vouch.key(desk, tmp_path / 'other.git') != key
    desk.rename(tmp_path / 'moved')
    assert vouch.key(tmp_path / 'moved', tmp_path / 'repo.git') != key
    desk.mkdir()  # another folder at the same path
    assert vouch.key(desk, tmp_path / 'repo.git') != key
    write(tmp_path, 'file', 'not a folder\n')
    assert vouch.key(tmp_path / 'file', tmp_path / 'repo.git') is None
    assert vouch.key(tmp_path / 'missing', tmp_path / 'repo.git') is None
    odd = Path(os.fsdecode(os.fsencode(str(tmp_path)) + b'/d\xe9sk'))  # not UTF-8
    odd.mkdir()
    assert vouch.key(odd, tmp_path / 'repo.git') not in (None, key)


def test_asking_with_no_watcher_makes_nothing(runtime: Path) -> None:
    assert vouch.ask('0123456789abcdef', ('notes',)) is None
    vouch.report('0123456789abcdef', protocol.Token('x', 1), RECORD)
    assert list(runtime.iterdir()) == []  # not even the private folder


def test_the_socket_is_in_the_private_folder_or_nowhere(
    runtime: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = vouch.socket_path('0123456789abcdef', create=True)
    assert path == str(runtime / private.FOLDER_NAME / 'watch-0123456789abcdef.sock')
    long = runtime / ('x' * 90)
    long.mkdir(mode=0o700)
    monkeypatch.setenv('XDG_RUNTIME_DIR', str(long))
    assert vouch.socket_path('0123456789abcdef', create=True) is None  # too long for a socket


def listening(
    path: str, answer: bytes | None, delay: float = 0
) -> tuple[socket.socket, list[bytes]]:
    """A listener at ``path`` that reads one line of each caller (``delay`` seconds after it
    connected) and answers ``answer``."""
    listener, _ = private.listen(path, 4)
    heard: list[bytes] = []

    def run() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            with connection:
                time.sleep(delay)
                try:
                    heard.append(protocol.read_line(connection, time.monotonic() + 5))
                    if answer is not None:
                        connection.sendall(answer)
                except (OSError, ValueError):
                    continue

    threading.Thread(target=run, daemon=True).start()
    return listener, heard


def test_a_whole_reply_is_the_answer_and_anything_else_none(runtime: Path) -> None:
    path = vouch.socket_path('0123456789abcdef', create=True)
    assert path is not None
    assert vouch.ask('0123456789abcdef', ('notes',)) is None  # no socket
    Path(path).write_text('a file where the socket would be\n')
    assert vouch.ask('0123456789abcdef', ('notes',)) is None
    os.unlink(path)
    reply = protocol.Reply(protocol.Token('x', 1), ('notes/a.md',))
    for answer, expected in (
        (protocol.encode(reply), reply),
        (protocol.encode(protocol.Ask(('notes',))), None),  # not a reply
        (b'{"token": 1}\n', None),  # not of this version
        (protocol.encode(reply)[:-1], None),  # cut short
        (None, None),  # nothing
    ):
        listener, heard = listening(path, answer)
        try:
            assert vouch.ask('0123456789abcdef', ('notes', 'Memory.md')) == expected
            assert [protocol.decode(line) for line in heard] == [
                protocol.Ask(('notes', 'Memory.md'))
            ]
        finally:
            listener.close()
            os.unlink(path)


@pytest.mark.parametrize(
    'answer, kept',
    [
        (protocol.encode(protocol.Kept(True)), True),
        (protocol.encode(protocol.Kept(False)), False),
        (None, False),  # no answer within the exchange's time
        (b'{"version": 1, "type": "Kept", "kept": true}\n', False),  # another version's
    ],
)
def test_a_report_is_sent_whole_and_its_answer_awaited(
    runtime: Path, answer: bytes | None, kept: bool
) -> None:
    """The report returns once the watcher answered (or the exchange's time is up): whatever
    the caller changes next reaches the watcher after the watcher decided. The listener takes
    a while to read it, as a watcher waiting for its cookie does."""
    path = vouch.socket_path('0123456789abcdef', create=True)
    assert path is not None
    listener, heard = listening(path, answer, delay=vouch.TIMEOUT / 5)
    try:
        assert vouch.report('0123456789abcdef', protocol.Token('x', 2), RECORD) is kept
        assert len(heard) == 1, 'the report was read before it returned'
        assert protocol.decode(heard[0]) == protocol.Report(protocol.Token('x', 2), RECORD)
    finally:
        listener.close()


def test_a_watcher_taking_no_connection_is_no_watcher(runtime: Path) -> None:
    """A listener whose queue of connections is full (a watcher stopped, or too slow to take
    them) leaves the question and the report unanswered at once: the caller walks."""
    path = vouch.socket_path('0123456789abcdef', create=True)
    assert path is not None
    listener, _ = private.listen(path, 0)
    queued: list[socket.socket] = []
    done: list[object] = []

    def ask_and_report() -> None:
        done.append(vouch.ask('0123456789abcdef', ('notes',)))
        vouch.report('0123456789abcdef', protocol.Token('x', 1), RECORD)
        done.append('reported')

    try:
        while True:  # fills the listener's queue
            extra = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            extra.setblocking(False)
            queued.append(extra)
            try:
                extra.connect(path)
            except BlockingIOError:
                break
        caller = threading.Thread(target=ask_and_report, daemon=True)
        caller.start()
        caller.join(10)  # a connection that waits for its turn never comes back
        assert done == [None, 'reported']
    finally:
        listener.close()  # a caller still waiting is refused
        for extra in queued:
            extra.close()


def test_the_mount_table_lines_of_the_desk_and_above(tmp_path: Path) -> None:
    desk = tmp_path / 'desk'
    desk.mkdir()
    found = vouch.mounts(str(desk))
    assert found is not None and found
    points = [line.split(' ')[4] for line in found]
    assert '/' in points and all(str(desk).startswith(point.rstrip('/') + '/') for point in points)


@NEEDS_ROOT
@pytest.mark.parametrize('name', ['desk', 'deskX'])  # a path is cut at '/' only
def test_a_mount_inside_the_desk_leaves_no_lines_and_one_beside_it_changes_nothing(
    tmp_path: Path, name: str
) -> None:
    desk, beside, source = tmp_path / name, tmp_path / f'{name}2', tmp_path / 'source'
    for folder in (desk / 'notes', beside, source):
        folder.mkdir(parents=True)
    before = vouch.mounts(str(desk))
    with bind_mounted(source, beside):  # a name that begins with the desk's
        assert vouch.mounts(str(desk)) == before
    with bind_mounted(source, desk / 'notes'):
        assert vouch.mounts(str(desk)) is None
        assert vouch.mounts(str(desk) + '/') is None
    with bind_mounted(desk, desk):
        found = vouch.mounts(str(desk))
        assert found is not None and len(found) == len(before or ()) + 1
        assert found[-1].split(' ')[4] == str(desk)
