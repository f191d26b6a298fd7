"""``core/durability.write_atomically``: the one writer of a file outside a desk and a repository's
objects, against a link at each step, a FIFO, a killed writer's leftover and a second thread."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest
from helpers.processes import python

from trading_checkpoints.core.durability import write_atomically
from trading_checkpoints.errors import FileAccessError

SECRET = b'not yours to overwrite\n'


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    target = tmp_path / 'elsewhere' / 'precious'
    target.parent.mkdir()
    target.write_bytes(SECRET)
    return target


def test_a_link_planted_at_the_temporary_name_is_never_written_through(
    tmp_path: Path, outside: Path
) -> None:
    """The temporary name is predictable (``.<name>.<pid>.tmp``): a link planted there by
    someone else is removed, a new file made in its place."""
    folder = tmp_path / 'state'
    folder.mkdir()
    code = (
        'import os, sys\n'
        'from pathlib import Path\n'
        'from trading_checkpoints.core.durability import write_atomically\n'
        'folder, outside = Path(sys.argv[1]), sys.argv[2]\n'
        "os.symlink(outside, folder / f'.record.json.{os.getpid()}.tmp')\n"
        "write_atomically(folder / 'record.json', b'{}')\n"
    )
    done = python(code, str(folder), str(outside))
    assert done.returncode == 0, done.stderr
    assert (folder / 'record.json').read_bytes() == b'{}'
    assert outside.read_bytes() == SECRET
    assert os.listdir(folder) == ['record.json'], 'no temporary left behind'


def test_a_link_at_the_name_is_replaced_never_followed(tmp_path: Path, outside: Path) -> None:
    link = tmp_path / 'record.json'
    link.symlink_to(outside)
    write_atomically(link, b'mine')
    assert not link.is_symlink() and link.read_bytes() == b'mine'
    assert outside.read_bytes() == SECRET


def test_a_linked_folder_is_refused(tmp_path: Path, outside: Path) -> None:
    folder = tmp_path / 'hooks'
    folder.symlink_to(outside.parent)
    with pytest.raises(FileAccessError) as caught:
        write_atomically(folder / 'precious', b'over')
    assert caught.value.path == str(folder / 'precious') and caught.value.action == 'write'
    assert 'is a symbolic link or not a folder' in str(caught.value)
    assert outside.read_bytes() == SECRET
    assert sorted(os.listdir(outside.parent)) == ['precious']


def test_a_fifo_at_the_name_is_refused_at_once(tmp_path: Path) -> None:
    """Never opened, so never waited on; and left as it is."""
    fifo = tmp_path / 'settings.json'
    os.mkfifo(fifo)
    code = (
        'import sys\n'
        'from pathlib import Path\n'
        'from trading_checkpoints.core.durability import write_atomically\n'
        'from trading_checkpoints.errors import FileAccessError\n'
        'try:\n'
        "    write_atomically(Path(sys.argv[1]), b'{}')\n"
        'except FileAccessError as error:\n'
        '    print(error)\n'
    )
    done = python(code, str(fifo), timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        f'cannot write {fifo}: it is not a regular file (a FIFO, a device or a folder); '
        'nothing was written\n'
    )
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert os.listdir(tmp_path) == ['settings.json']


@pytest.mark.parametrize('mode', [0o600, 0o640, 0o755])
def test_the_mode_of_the_file_replaced_is_kept(tmp_path: Path, mode: int) -> None:
    target = tmp_path / 'settings.json'
    target.write_bytes(b'old')
    target.chmod(mode)
    write_atomically(target, b'new')
    assert stat.S_IMODE(target.stat().st_mode) == mode and target.read_bytes() == b'new'


def test_a_mode_given_is_the_mode_written(tmp_path: Path) -> None:
    target = tmp_path / 'credentials'
    target.write_bytes(b'old')
    target.chmod(0o644)
    write_atomically(target, b'secret', mode=0o600)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    write_atomically(tmp_path / 'new', b'x', mode=0o600)
    assert stat.S_IMODE((tmp_path / 'new').stat().st_mode) == 0o600


def test_a_new_file_gets_the_usual_mode(tmp_path: Path) -> None:
    mask = os.umask(0o022)
    try:
        write_atomically(tmp_path / 'new', b'x')
    finally:
        os.umask(mask)
    assert stat.S_IMODE((tmp_path / 'new').stat().st_mode) == 0o644


def test_threads_of_one_process_never_share_a_temporary(tmp_path: Path) -> None:
    """Each thread's write lands whole: the file always holds one writer's bytes."""
    target = tmp_path / 'last-handled.claude'
    payloads = [bytes([65 + n]) * 200_000 for n in range(6)]
    errors: list[BaseException] = []

    def writer(data: bytes) -> None:
        try:
            for _ in range(30):
                write_atomically(target, data, durable=False)
                assert target.read_bytes() in payloads
        except BaseException as error:  # noqa: BLE001 - reported by the test
            errors.append(error)

    threads = [threading.Thread(target=writer, args=(data,)) for data in payloads]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert target.read_bytes() in payloads
    assert os.listdir(tmp_path) == [target.name]
