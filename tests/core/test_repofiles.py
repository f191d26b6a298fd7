"""The repository's own files (``core/repofiles.py``): never through a link, only regular files
of bounded size, written without following a link, errors that never quote a byte.

Real files in a temporary folder: a link at the name and a link for a folder on the way, each
pointing at a file outside that must come out byte for byte unchanged; a FIFO (opening one for
reading would wait for a writer forever: each call runs in a child with a deadline); files
over the cap.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers.builders import secret_file
from helpers.processes import python

from trading_checkpoints.core import repofiles
from trading_checkpoints.core.repofiles import RepoFile
from trading_checkpoints.errors import FileAccessError, RepositoryFileError

SECRET = b'https://me:ghp_secret_token_123@example.invalid\n'


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    (tmp_path / 'repo.git' / 'checkpoints').mkdir(parents=True)
    return tmp_path / 'repo.git'


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    return secret_file(tmp_path, SECRET)


def _every_call(file: RepoFile) -> dict[str, object]:
    return {
        'read': lambda: repofiles.read(file, 1 << 20),
        'check': lambda: repofiles.check(file, 1 << 20),
        'append': lambda: repofiles.append(file, b'appended\n'),
        'open_in_place': lambda: os.close(repofiles.open_in_place(file)),
    }


@pytest.mark.parametrize('call', ['read', 'check', 'append', 'open_in_place'])
def test_a_link_at_the_name_is_refused_and_never_followed(
    repository: Path, outside: Path, call: str
) -> None:
    os.symlink(outside, repository / 'checkpoints' / 'lock')
    file = RepoFile(repository, 'checkpoints/lock')
    with pytest.raises(RepositoryFileError) as caught:
        _every_call(file)[call]()  # type: ignore[operator]
    assert caught.value.problem == 'link'
    assert caught.value.path == str(repository / 'checkpoints' / 'lock')
    assert SECRET.decode().strip() not in str(caught.value)
    assert outside.read_bytes() == SECRET


@pytest.mark.parametrize('call', ['read', 'check', 'append', 'open_in_place'])
def test_a_linked_folder_on_the_way_is_refused(repository: Path, outside: Path, call: str) -> None:
    (repository / 'checkpoints').rmdir()
    os.symlink(outside.parent, repository / 'checkpoints')
    file = RepoFile(repository, 'checkpoints/git-credentials')
    with pytest.raises(RepositoryFileError) as caught:
        _every_call(file)[call]()  # type: ignore[operator]
    assert caught.value.problem == 'link'
    assert caught.value.path == str(repository / 'checkpoints')
    assert outside.read_bytes() == SECRET


def test_replace_and_remove_replace_a_link_never_what_it_points_at(
    repository: Path, outside: Path
) -> None:
    link = repository / 'checkpoints' / 'statcache'
    os.symlink(outside, link)
    repofiles.replace(RepoFile(repository, 'checkpoints/statcache'), b'new bytes')
    assert not link.is_symlink() and link.read_bytes() == b'new bytes'
    os.symlink(outside, repository / 'HEAD')
    assert repofiles.remove(RepoFile(repository, 'HEAD')) is True
    assert not os.path.lexists(repository / 'HEAD')
    assert outside.read_bytes() == SECRET
    (repository / 'logs').symlink_to(outside.parent)
    with pytest.raises(RepositoryFileError):
        repofiles.replace(RepoFile(repository, 'logs/git-credentials'), b'over')
    assert outside.read_bytes() == SECRET


def test_a_planted_temporary_link_is_not_written_through(repository: Path, outside: Path) -> None:
    """The temporary file's name is predictable (``.<name>.<pid>.tmp``): a link planted there
    is removed and a new file made, never written through."""
    code = (
        'import os, sys\n'
        'from pathlib import Path\n'
        'from trading_checkpoints.core import repofiles\n'
        'repository, outside = Path(sys.argv[1]), sys.argv[2]\n'
        "os.symlink(outside, repository / f'.HEAD.{os.getpid()}.tmp')\n"
        "repofiles.replace(repofiles.RepoFile(repository, 'HEAD'), b'ref: refs/heads/main\\n')\n"
    )
    done = python(code, str(repository), str(outside))
    assert done.returncode == 0, done.stderr
    assert (repository / 'HEAD').read_bytes() == b'ref: refs/heads/main\n'
    assert outside.read_bytes() == SECRET


def test_open_in_place_repairs_a_link_only_when_asked(repository: Path, outside: Path) -> None:
    link = repository / 'checkpoints' / 'statcache'
    os.symlink(outside, link)
    fd = repofiles.open_in_place(RepoFile(repository, 'checkpoints/statcache'), repair=True)
    try:
        os.write(fd, b'cache')
    finally:
        os.close(fd)
    assert not link.is_symlink() and link.read_bytes() == b'cache'
    assert outside.read_bytes() == SECRET


@pytest.mark.parametrize('call', ['read', 'check', 'append', 'open_in_place', 'replace'])
def test_a_fifo_is_refused_without_waiting_for_a_writer(repository: Path, call: str) -> None:
    os.mkfifo(repository / 'checkpoints' / 'restore-journal')
    code = (
        'import os, sys\n'
        'from pathlib import Path\n'
        'from trading_checkpoints.core import repofiles\n'
        'from trading_checkpoints.errors import RepositoryFileError\n'
        "file = repofiles.RepoFile(Path(sys.argv[1]), 'checkpoints/restore-journal')\n"
        'calls = {\n'
        "    'read': lambda: repofiles.read(file, 100),\n"
        "    'check': lambda: repofiles.check(file, 100),\n"
        "    'append': lambda: repofiles.append(file, b'x'),\n"
        "    'open_in_place': lambda: repofiles.open_in_place(file),\n"
        "    'replace': lambda: repofiles.replace(file, b'{}'),\n"
        '}\n'
        'try:\n'
        '    calls[sys.argv[2]]()\n'
        'except RepositoryFileError as error:\n'
        '    print(error.problem)\n'
        'else:\n'
        "    print('done')\n"
    )
    done = python(code, str(repository), call, timeout=30)
    assert done.returncode == 0, done.stderr
    expected = 'done' if call == 'replace' else 'not-regular'  # replace puts a file there
    assert done.stdout.strip() == expected


def test_a_file_over_its_cap_is_refused_unread(repository: Path) -> None:
    big = repository / 'shallow'
    with open(big, 'wb') as handle:
        handle.truncate(1 << 40)  # a terabyte, sparse: reading it would fill the memory
    with pytest.raises(RepositoryFileError) as caught:
        repofiles.read(RepoFile(repository, 'shallow'), 1 << 20)
    assert caught.value.problem == 'too-large'
    with pytest.raises(RepositoryFileError):
        repofiles.check(RepoFile(repository, 'shallow'), 1 << 20)
    assert repofiles.read(RepoFile(repository, 'missing'), 10) is None
    assert repofiles.read(RepoFile(repository, 'no/such/folder'), 10) is None


def test_a_folder_at_the_name_is_not_a_regular_file(repository: Path) -> None:
    (repository / 'checkpoints' / 'pruned').mkdir()
    with pytest.raises(RepositoryFileError) as caught:
        repofiles.read(RepoFile(repository, 'checkpoints/pruned'), 100)
    assert caught.value.problem == 'not-regular'
    with pytest.raises(RepositoryFileError):
        repofiles.append(RepoFile(repository, 'checkpoints/pruned'), b'x')
    with pytest.raises(FileAccessError):
        repofiles.remove(RepoFile(repository, 'checkpoints/pruned'))


@pytest.mark.skipif(os.geteuid() != 0, reason='making a device node needs root')
def test_a_device_is_never_read(repository: Path) -> None:
    os.mknod(repository / 'checkpoints' / 'commits', 0o20644, os.makedev(1, 5))  # /dev/zero
    with pytest.raises(RepositoryFileError) as caught:
        repofiles.read(RepoFile(repository, 'checkpoints/commits'), 1 << 20)
    assert caught.value.problem == 'not-regular'
