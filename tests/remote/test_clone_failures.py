"""A clone that fails: the error it raises, what it leaves behind, and who it says it is to a
writer waiting for its lock.

Each test pins a check found by ``benchmarks/mutation.py`` (remoteclone), and runs the clone
in this process, where mutation testing sees the calls. A refused system call is a real one
refused once: an audit hook in this process raises the system's error when the call is about
to be made (running as root, permission bits would refuse nothing), the file system under
it is real. The remotes are local repositories (paths).
"""

from __future__ import annotations

import errno
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.builders import write
from helpers.faults import armed
from helpers.processes import environment
from helpers.rawobjects import BLOB, blob, commit, in_notes, tree
from helpers.reading import files_of

from trading_checkpoints import Checkpoints
from trading_checkpoints.errors import (
    CorruptRepositoryError,
    EmptyRemoteError,
    FileAccessError,
    UnfinishedCloneError,
)
from trading_checkpoints.ops.listing import clone_marker

WAITER = """
import sys
from pathlib import Path
from trading_checkpoints.core.lock import exclusive
from trading_checkpoints.errors import LockTimeoutError
try:
    with exclusive(Path(sys.argv[1]), timeout=0):
        print('free')
except LockTimeoutError as error:
    print(error.holder)
"""


def _source(tmp_path: Path) -> Path:
    source_desk = tmp_path / 'source'
    write(source_desk, 'Memory.md', '# memory\n')
    write(source_desk, 'notes/a.md', 'a\n')
    source = tmp_path / 'source.git'
    assert Checkpoints(source, source_desk).snapshot('source') is not None
    return source


def _empty_remote(tmp_path: Path) -> Path:
    empty = tmp_path / 'empty.git'
    Checkpoints(empty, tmp_path / 'elsewhere').set_tracked_paths(['notes'])  # no checkpoint
    return empty


def _target(tmp_path: Path) -> tuple[Path, Path]:
    return tmp_path / '.checkpoints' / 'main.git', tmp_path / 'desks' / 'main'


def _refused(event_name: str, path: Path, code: int = errno.EACCES):
    """An audit action refusing the first ``event_name`` call on ``path`` with ``code``."""
    refused: list[str] = []

    def action(event: str, args: tuple) -> None:
        if (
            event == event_name
            and not refused
            and isinstance(args[0], (str, bytes, os.PathLike))
            and os.fsdecode(args[0]) == os.fspath(path)
        ):
            refused.append(os.fsdecode(args[0]))
            raise OSError(code, os.strerror(code), os.fsdecode(args[0]))

    return action, refused


def test_a_clone_names_itself_to_a_writer_waiting_for_its_lock(tmp_path: Path) -> None:
    """The lock file says the clone holds it, so a waiter's message names the verb."""
    source = _source(tmp_path)
    repository, desk = _target(tmp_path)
    holders: list[str] = []

    def progress(_: str) -> None:
        if holders:
            return
        done = subprocess.run(
            [sys.executable, '-c', WAITER, str(repository / 'checkpoints' / 'lock')],
            capture_output=True,
            text=True,
            env=environment(),
            timeout=120,
            check=True,
        )
        holders.append(done.stdout.strip())

    Checkpoints.clone(str(source), repository, desk, progress=progress)
    [holder] = holders
    host = re.escape(socket.gethostname())
    assert re.fullmatch(rf'pid {os.getpid()} on {host} \(clone\), holding it for \d+ s', holder)


def test_a_refused_repository_folder_is_a_file_access_error_naming_it(tmp_path: Path) -> None:
    source = _source(tmp_path)
    repository, desk = _target(tmp_path)
    action, refused = _refused('os.mkdir', repository)
    with armed(action), pytest.raises(FileAccessError) as caught:
        Checkpoints.clone(str(source), repository, desk)
    assert refused == [str(repository)]
    assert str(caught.value) == (
        f'cannot create the checkpoint repository {repository}: {os.strerror(errno.EACCES)}'
    )
    assert (caught.value.path, caught.value.action) == (str(repository), 'create')
    assert isinstance(caught.value.__cause__, PermissionError)
    assert not repository.exists()
    Checkpoints.clone(str(source), repository, desk)  # once the system allows it
    assert files_of(desk) == files_of(tmp_path / 'source')


def test_a_failed_clean_up_leaves_the_clones_own_error(tmp_path: Path) -> None:
    """The repository a failed clone created is removed as far as the system lets it; the
    error raised is still the clone's, not the clean-up's."""
    empty = _empty_remote(tmp_path)
    repository, desk = _target(tmp_path)
    action, refused = _refused('os.rmdir', repository)
    with armed(action), pytest.raises(EmptyRemoteError):
        Checkpoints.clone(str(empty), repository, desk)
    assert refused == [str(repository)], 'the clean-up did not reach the repository itself'
    assert os.listdir(repository) == [], 'the clean-up stopped at the refused folder'
    # Nothing of a repository is left: a clone of another remote goes ahead there.
    Checkpoints.clone(str(_source(tmp_path)), repository, desk)
    assert files_of(desk) == files_of(tmp_path / 'source')


def test_a_clone_that_could_not_mark_itself_leaves_the_repository_as_it_was(
    tmp_path: Path,
) -> None:
    """A repository without checkpoints, whose unfinished-clone mark could not be written:
    the clone's error is raised, and no mark is left to remove."""
    source = _source(tmp_path)
    repository, desk = _target(tmp_path)
    Checkpoints(repository, desk).set_tracked_paths(['notes'])  # exists, holds none
    marker = clone_marker(repository)
    # The temporary file is opened by its name in the marker's folder (through the folder's
    # descriptor).
    temporary = f'.{marker.name}.{os.getpid()}.tmp'
    action, refused = _refused('open', Path(temporary), errno.EIO)
    with armed(action), pytest.raises(FileAccessError) as caught:
        Checkpoints.clone(str(source), repository, desk)
    assert refused == [temporary]
    assert (caught.value.path, caught.value.action) == (str(marker), 'write')
    assert not os.path.lexists(marker)
    assert Checkpoints(repository, desk).list() == []


def test_a_clone_refused_by_a_folder_that_is_no_repository_leaves_no_mark(
    tmp_path: Path,
) -> None:
    """The folder the repository should be is someone else's: the clone is refused, and the
    folder is left as it was, not marked as an unfinished clone (other verbs keep refusing it
    for what it is)."""
    source = _source(tmp_path)
    repository, desk = _target(tmp_path)
    write(repository, 'mine.txt', 'not a repository\n')
    with pytest.raises(CorruptRepositoryError, match='is not a checkpoint repository'):
        Checkpoints.clone(str(source), repository, desk)
    assert not os.path.lexists(clone_marker(repository))
    assert sorted(os.listdir(repository)) == ['mine.txt']
    assert (repository / 'mine.txt').read_text() == 'not a repository\n'
    write(desk, 'Memory.md', '# memory\n')
    with pytest.raises(CorruptRepositoryError) as caught:
        Checkpoints(repository, desk).snapshot('first')
    assert not isinstance(caught.value, UnfinishedCloneError)
    assert 'is not a checkpoint repository' in str(caught.value)


def test_a_first_checkout_refusing_a_damaged_checkpoint_names_the_repository(
    tmp_path: Path,
) -> None:
    """The remote's newest checkpoint names a folder where a file should be (a blob entry
    naming a tree): the first checkout's refusal says how to clone and names the clone's
    repository."""
    source = _source(tmp_path)
    inner = tree(source, (BLOB, b'x.md', blob(source, b'x\n')))
    (source / 'refs' / 'heads' / 'main').write_text(
        commit(source, in_notes(source, (BLOB, b'a.md', inner))) + '\n'
    )
    repository, desk = _target(tmp_path)
    with pytest.raises(CorruptRepositoryError) as caught:
        Checkpoints.clone(str(source), repository, desk)
    message = str(caught.value)
    assert message.startswith(f'the object {inner} in {repository} is a tree, not a blob; ')
    assert message.endswith('(`clone --track PATH ...` or tracked_paths=...)')
    assert caught.value.path == str(repository)
    assert isinstance(caught.value.__cause__, CorruptRepositoryError)
    assert not repository.exists() and files_of(desk) == {}
