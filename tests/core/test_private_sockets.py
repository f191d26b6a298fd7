"""``core/private.py``: the user's private folder for sockets, and the one way to connect to a
socket there: nothing is sent before the socket, its folder and the process listening are known
to be this user's."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from helpers.faults import armed

from trading_checkpoints.core import private

pytestmark = pytest.mark.skipif(sys.platform != 'linux', reason='SO_PEERCRED (Linux)')
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason='needs root (files of another user)')
NOBODY = 65534


@pytest.fixture
def runtime(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix='tc-', dir='/tmp'))
    monkeypatch.setenv('XDG_RUNTIME_DIR', str(folder))
    yield folder
    subprocess.run(['rm', '-rf', str(folder)], check=False)


def test_the_private_folder_is_made_closed_to_others(runtime: Path) -> None:
    assert private.private_folder(create=False) is None, 'not there yet'
    folder = private.private_folder(create=True)
    assert folder == str(runtime / private.FOLDER_NAME)
    assert stat.S_IMODE(os.lstat(folder).st_mode) == 0o700
    assert private.private_folder(create=False) == folder


@pytest.mark.parametrize('mode', [0o750, 0o705, 0o770, 0o701])
def test_a_folder_others_may_enter_is_not_private(runtime: Path, mode: int) -> None:
    folder = runtime / private.FOLDER_NAME
    folder.mkdir()
    folder.chmod(mode)
    assert private.private_folder(create=True) is None


def test_a_symlink_or_a_file_is_not_a_private_folder(runtime: Path, tmp_path: Path) -> None:
    (tmp_path / 'elsewhere').mkdir(mode=0o700)
    (runtime / private.FOLDER_NAME).symlink_to(tmp_path / 'elsewhere')
    assert private.private_folder(create=True) is None
    (runtime / private.FOLDER_NAME).unlink()
    (runtime / private.FOLDER_NAME).write_text('')
    assert private.private_folder(create=True) is None


@ROOT_ONLY
def test_a_folder_of_another_user_is_not_private(runtime: Path) -> None:
    folder = runtime / private.FOLDER_NAME
    folder.mkdir(mode=0o700)
    os.chown(folder, NOBODY, NOBODY)
    assert private.private_folder(create=True) is None


def test_a_runtime_folder_others_may_enter_is_passed_over_for_the_temporary_one(
    runtime: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime.chmod(0o755)
    temporary = tmp_path / 'tmp'
    temporary.mkdir()
    monkeypatch.setenv('TMPDIR', str(temporary))
    folder = private.private_folder(create=True)
    assert folder == str(temporary / f'{private.FOLDER_NAME}-{os.getuid()}')
    monkeypatch.setenv('XDG_RUNTIME_DIR', 'relative/path')
    assert private.private_folder(create=False) == folder


def test_a_socket_path_too_long_for_a_socket_is_none(runtime: Path) -> None:
    assert private.socket_path('s' * 40, create=True) is not None
    assert private.socket_path('s' * 100, create=True) is None


def test_a_socket_listened_on_is_this_users_alone(runtime: Path) -> None:
    path = private.socket_path('x.sock', create=True)
    assert path is not None
    Path(path).write_text("a dead server's socket, or anything")
    listener, identity = private.listen(path, 4)
    try:
        info = os.lstat(path)
        assert stat.S_ISSOCK(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o600
        assert identity == (info.st_dev, info.st_ino)
        connection = private.connect(path, 5)
        try:
            assert connection.gettimeout() == 5
            assert private.peer_credentials(connection) == (os.getpid(), os.getuid(), os.getgid())
        finally:
            connection.close()
    finally:
        listener.close()


def test_the_peer_of_a_connection_is_known(runtime: Path) -> None:
    one, other = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with one, other:
        assert private.peer_credentials(one) == (os.getpid(), os.getuid(), os.getgid())
        assert private.peer_uid(other) == os.getuid()
    alone = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with alone:  # connected to no one: the system says no user of ours
        assert private.peer_uid(alone) != os.getuid()
        assert private.peer_credentials(alone) == (0, 2**32 - 1, 2**32 - 1)


def test_no_connection_to_what_is_not_there(runtime: Path) -> None:
    path = private.socket_path('gone.sock', create=True)
    assert path is not None
    with pytest.raises(FileNotFoundError):
        private.connect(path, 1)
    listener, _ = private.listen(path, 1)
    listener.close()  # the file stays, no one listens
    with pytest.raises(ConnectionRefusedError):
        private.connect(path, 1)


def test_a_file_that_is_no_socket_is_not_connected_to(runtime: Path) -> None:
    path = private.socket_path('file.sock', create=True)
    assert path is not None
    Path(path).write_text('')
    with pytest.raises(private.NotPrivate):
        private.connect(path, 1)


def test_a_socket_in_a_folder_others_may_enter_is_not_connected_to(runtime: Path) -> None:
    path = private.socket_path('open.sock', create=True)
    assert path is not None
    listener, _ = private.listen(path, 1)
    try:
        os.chmod(os.path.dirname(path), 0o711)
        with pytest.raises(private.NotPrivate):
            private.connect(path, 1)
    finally:
        listener.close()


@ROOT_ONLY
def test_a_socket_file_of_another_user_is_not_connected_to(runtime: Path) -> None:
    path = private.socket_path('theirs.sock', create=True)
    assert path is not None
    listener, _ = private.listen(path, 1)
    try:
        os.chown(path, NOBODY, NOBODY, follow_symlinks=False)
        with pytest.raises(private.NotPrivate):
            private.connect(path, 1)
    finally:
        listener.close()


@ROOT_ONLY
def test_a_listener_of_another_user_is_not_connected_to(runtime: Path) -> None:
    """The socket file and its folder are this user's, but the process listening is not."""
    path = private.socket_path('listener.sock', create=True)
    assert path is not None
    code = (
        'import os, socket, sys\n'
        'server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n'
        'server.bind(sys.argv[1])\n'
        'os.setgroups([]); os.setgid(65534); os.setuid(65534)\n'
        'server.listen(4)\n'
        'print("ready", flush=True)\n'
        'sys.stdin.read()\n'
    )
    listener = subprocess.Popen(
        [sys.executable, '-c', code, path], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert listener.stdout is not None and listener.stdout.readline() == b'ready\n'
        assert os.lstat(path).st_uid == os.getuid()
        with pytest.raises(private.NotPrivate):
            private.connect(path, 5)
    finally:
        listener.kill()
        listener.wait()


def test_a_runtime_folder_opened_to_others_while_the_folder_is_made_is_not_used(
    runtime: Path,
) -> None:
    """The runtime folder is checked again after the private folder is made in it: one opened
    to others meanwhile (another may have swapped what is inside) leaves no private folder."""
    made = str(runtime / private.FOLDER_NAME)

    def opened(event: str, args: tuple) -> None:
        if event == 'os.mkdir' and os.fsdecode(args[0]) == made:
            runtime.chmod(0o755)

    with armed(opened):
        assert private.private_folder(create=True) is None
    assert os.path.isdir(made), 'made, then not trusted'


def test_a_socket_path_alone_makes_no_folder(runtime: Path) -> None:
    assert private.socket_path('x.sock') is None
    assert not (runtime / private.FOLDER_NAME).exists()


def test_a_socket_path_of_exactly_the_limit_is_kept(runtime: Path) -> None:
    folder = private.private_folder(create=True)
    assert folder is not None
    room = private.MAX_SOCKET_PATH - len(os.fsencode(folder)) - 1
    path = private.socket_path('s' * room)
    assert path is not None and len(os.fsencode(path)) == private.MAX_SOCKET_PATH
    assert private.socket_path('s' * (room + 1)) is None


OTHER_GROUP = 12345


@contextmanager
def listening_as(path: str, uid: int, gid: int) -> Iterator[int]:
    """A process listening at ``path`` (the socket file made by this user) as user ``uid`` and
    group ``gid``; yields its pid."""
    code = (
        'import os, socket, sys\n'
        'server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n'
        'server.bind(sys.argv[1])\n'
        'os.setgroups([]); os.setgid(int(sys.argv[3])); os.setuid(int(sys.argv[2]))\n'
        'server.listen(4)\n'
        'print("ready", flush=True)\n'
        'sys.stdin.read()\n'
    )
    process = subprocess.Popen(
        [sys.executable, '-c', code, path, str(uid), str(gid)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert process.stdout is not None and process.stdout.readline() == b'ready\n'
        yield process.pid
    finally:
        process.kill()
        process.wait()


@ROOT_ONLY
def test_the_user_and_group_of_a_peer_are_its_own(runtime: Path) -> None:
    path = private.socket_path('peer.sock', create=True)
    assert path is not None
    with listening_as(path, NOBODY, OTHER_GROUP) as pid:
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with connection:
            connection.connect(path)
            assert private.peer_credentials(connection) == (pid, NOBODY, OTHER_GROUP)
            assert private.peer_uid(connection) == NOBODY


@ROOT_ONLY
def test_a_listener_of_this_user_in_another_group_is_connected_to(runtime: Path) -> None:
    """The listener's user decides, not its group."""
    path = private.socket_path('group.sock', create=True)
    assert path is not None
    with listening_as(path, os.getuid(), OTHER_GROUP):
        private.connect(path, 5).close()


def test_a_closed_connection_has_no_known_peer() -> None:
    one, other = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    other.close()
    one.close()
    assert private.peer_credentials(one) is None
    assert private.peer_uid(one) is None


@pytest.mark.parametrize('variable', ['TMPDIR', 'TEMP', 'TMP'])
def test_without_a_runtime_folder_the_temporary_folder_named_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    monkeypatch.delenv('XDG_RUNTIME_DIR', raising=False)
    for name in ('TMPDIR', 'TEMP', 'TMP'):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(variable, str(tmp_path))
    expected = str(tmp_path / f'{private.FOLDER_NAME}-{os.getuid()}')
    assert private.private_folder(create=True) == expected


def test_a_temporary_folder_named_relative_or_missing_is_passed_over_for_tmp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / 'relative').mkdir()
    monkeypatch.delenv('XDG_RUNTIME_DIR', raising=False)
    monkeypatch.setenv('TMPDIR', 'relative')
    monkeypatch.setenv('TEMP', str(tmp_path / 'missing'))
    monkeypatch.delenv('TMP', raising=False)
    name = f'{private.FOLDER_NAME}-{os.getuid()}'
    assert private.private_folder(create=True) == f'/tmp/{name}'
    assert not (tmp_path / 'relative' / name).exists()
