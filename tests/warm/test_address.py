"""``warm/address.py``: where a client finds its server: a slot of its own code and context, and a
socket named after the files the slot's server listed, as they are now."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

from trading_checkpoints.core import installation, private
from trading_checkpoints.warm import address

pytestmark = pytest.mark.skipif(sys.platform != 'linux', reason='reads /proc (Linux)')


@pytest.fixture
def folder(monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private runtime folder of the test's own, short enough for a socket's path."""
    runtime = Path(tempfile.mkdtemp(prefix='tc-', dir='/tmp'))
    monkeypatch.setenv('XDG_RUNTIME_DIR', str(runtime))
    monkeypatch.setattr(sys, 'path', [os.path.abspath(entry) for entry in sys.path if entry])
    return runtime / private.FOLDER_NAME


def test_the_slot_is_the_code_and_context_of_this_process(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slot = address.slot()
    assert slot is not None and slot == address.slot()
    monkeypatch.setattr(sys, 'path', [*sys.path, '/elsewhere'])
    assert address.slot() not in (None, slot), 'another import path, another slot'


def test_a_relative_entry_on_the_import_path_leaves_no_slot(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, 'path', ['', *sys.path])
    assert address.slot() is None
    assert address.locate(create=True) is None


def test_a_socket_is_named_only_once_the_slots_server_listed_its_files(folder: Path) -> None:
    where = address.locate(create=True)
    assert where is not None and where.socket is None and where.folder == str(folder)
    assert where.slot == address.slot()
    files = installation.loaded_files()[:40]
    manifest = Path(address.manifest_path(str(folder), where.slot))
    manifest.write_bytes(address.listed(files))
    assert address.read_manifest(str(manifest)) == (address.LISTED, files)
    found = address.locate()
    assert found is not None
    expected = installation.fingerprint(files, where.slot)
    assert found.socket == str(folder / f'server-{expected}.sock')
    assert found.socket == address.socket_path(str(folder), expected)
    assert (found.folder, found.slot) == (str(folder), where.slot)


def test_each_slot_has_a_manifest_of_its_own(folder: Path) -> None:
    """Servers of two installations (or contexts) never overwrite each other's manifest."""
    assert address.manifest_path(str(folder), 'a' * 16) == str(folder / f'server-{"a" * 16}.files')
    assert address.manifest_path(str(folder), 'a' * 16) != address.manifest_path(
        str(folder), 'b' * 16
    )


def test_looking_for_the_server_makes_no_folder(folder: Path) -> None:
    """A client only looks: the folder is made by the server it starts."""
    assert address.locate() is None
    assert not folder.exists()


def test_a_manifest_lists_files_whose_names_are_not_utf8(folder: Path) -> None:
    where = address.locate(create=True)
    assert where is not None
    files = [os.fsdecode(b'/lib/caf\xe9.py'), '/lib/plain.py']
    manifest = Path(address.manifest_path(str(folder), where.slot))
    manifest.write_bytes(address.listed(files))
    assert manifest.read_bytes().splitlines()[2] == b'/lib/caf\xe9.py'
    assert address.read_manifest(str(manifest)) == (address.LISTED, files)
    found = address.locate()
    assert found is not None
    assert found.socket == address.socket_path(
        str(folder), installation.fingerprint(files, where.slot)
    )


def test_a_watched_servers_manifest_names_its_socket(folder: Path) -> None:
    """A server that watches its files names its socket: the client reads no file's status."""
    where = address.locate(create=True)
    assert where is not None
    manifest = Path(address.manifest_path(str(folder), where.slot))
    socket = folder / 'server-0123456789abcdef.sock'
    manifest.write_bytes(address.watched(str(socket)))
    assert address.read_manifest(str(manifest)) == (address.WATCHED, [socket.name])
    found = address.locate()
    assert found is not None and found.socket == str(socket)


@pytest.mark.parametrize(
    'lines',
    [
        ['something else', 'listed', '/a/file.py'],
        [address.MANIFEST_HEADER],
        [address.MANIFEST_HEADER, 'neither', '/a/file.py'],
        [address.MANIFEST_HEADER, 'watched'],
        [address.MANIFEST_HEADER, 'watched', 'server-0123456789abcdef.sock', 'more'],
        [address.MANIFEST_HEADER, 'watched', '../elsewhere/server-0123456789abcdef.sock'],
        [address.MANIFEST_HEADER, 'watched', 'server-0123456789abcdeg.sock'],
        [address.MANIFEST_HEADER, 'watched', 'server-0123456789abcdeX.sock'],
        [address.MANIFEST_HEADER, 'watched', 'server-0123456789abcde.sock'],
        [address.MANIFEST_HEADER, 'watched', 'other-0123456789abcdef.sock'],
        [address.MANIFEST_HEADER, 'watched', 'server-0123456789abcdef.lock'],
    ],
)
def test_a_file_that_is_no_manifest_names_no_socket(folder: Path, lines: list[str]) -> None:
    where = address.locate(create=True)
    assert where is not None
    manifest = Path(address.manifest_path(str(folder), where.slot))
    manifest.write_text('\n'.join(lines) + '\n')
    assert address.read_manifest(str(manifest)) is None
    found = address.locate()
    assert found is not None and found.socket is None


def test_no_location_without_a_private_folder(folder: Path) -> None:
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    assert address.locate(create=True) is None


def test_no_location_where_the_socket_path_would_be_too_long(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    deep = tmp_path / ('d' * 60)
    deep.mkdir(mode=0o700)
    monkeypatch.setenv('XDG_RUNTIME_DIR', str(deep))
    where = address.locate(create=True)
    assert where is not None and where.socket is None
    Path(address.manifest_path(where.folder, where.slot)).write_bytes(address.listed([]))
    assert address.locate() is None


@pytest.mark.parametrize('spare', [0, 1])
def test_a_socket_path_of_the_longest_length_is_kept(
    monkeypatch: pytest.MonkeyPatch, folder: Path, spare: int
) -> None:
    """A socket path of exactly ``MAX_SOCKET_PATH`` bytes is used; one byte more is not."""
    name = f'/{private.FOLDER_NAME}/server-0123456789abcdef.sock'
    base = str(folder.parent / 'r')
    runtime = Path(base + 'd' * (private.MAX_SOCKET_PATH - len(base) - len(name) + spare))
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv('XDG_RUNTIME_DIR', str(runtime))
    where = address.locate(create=True)
    assert where is not None
    socket = os.path.join(where.folder, 'server-0123456789abcdef.sock')
    assert len(os.fsencode(socket)) == private.MAX_SOCKET_PATH + spare
    Path(address.manifest_path(where.folder, where.slot)).write_bytes(address.watched(socket))
    found = address.locate()
    assert (found.socket if found else None) == (socket if not spare else None)


@pytest.mark.parametrize(
    'original, argv, options',
    [
        (['python', '/bin/checkpoints', 'list'], ['/bin/checkpoints', 'list'], []),
        (
            ['python', '-E', '-X', 'dev', '/bin/checkpoints'],
            ['/bin/checkpoints'],
            ['-E', '-X', 'dev'],
        ),
        (['python', '-I', '-c', 'code', 'a'], ['-c', 'a'], ['-I']),
        (['python', '-Bc', 'code'], ['-c'], []),
        (['python', '-O', '-m', 'mod', 'a'], ['/path/mod.py', 'a'], ['-O']),
        ([], ['x'], []),
        # a program that added to its ``sys.argv``: no telling its options apart
        (['python', '-E', 'a', 'b'], ['a', 'b', 'c', 'd', 'e', 'f'], []),
    ],
)
def test_the_interpreters_options_are_those_before_the_script(
    monkeypatch: pytest.MonkeyPatch, original: list[str], argv: list[str], options: list[str]
) -> None:
    monkeypatch.setattr(sys, 'orig_argv', original)
    monkeypatch.setattr(sys, 'argv', argv)
    assert address.interpreter_options() == options
