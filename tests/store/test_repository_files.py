"""The repository's own files, planted as links, FIFOs, huge files or copies of a credentials
file: never written through, never waited on, never read whole, never quoted.

Each file the library opens in a repository (its private files, git's refs, ``packed-refs``,
``shallow``, ``HEAD``, the reflog, the config) is replaced in a real repository, then the
verbs run: snapshot (after an edit), list, status, log, prune, seal. A verb may refuse with a
``CheckpointError`` naming the file; it must never write through a link (the file outside
stays byte for byte), hang on a FIFO (each run is a child process with a deadline), read a
sparse terabyte, or print a byte of a credentials file.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from helpers.builders import (
    checkpoints_in,
    desk_in,
    new_workspace,
    repository_in,
    secret_file,
    write,
)
from helpers.cli import checkpoints
from helpers.processes import python

from trading_checkpoints import CheckpointError

TOKEN = 'ghp_secretToken0123456789'
SECRET = f'https://me:{TOKEN}@example.invalid\n'.encode()

# Every file of a repository the library opens by name.
FILES = [
    'checkpoints/lock',
    'checkpoints/statcache',
    'checkpoints/pruned',
    'checkpoints/commits',
    'checkpoints/restore-journal',
    'checkpoints/remote-heads',
    'logs/refs/heads/main',
    'refs/heads/main',
    'refs/checkpoints/sealed',
    'packed-refs',
    'shallow',
    'HEAD',
    'config',
]

VERBS = (
    'import sys\n'
    'from trading_checkpoints import Checkpoints, CheckpointError\n'
    'cps = Checkpoints(sys.argv[1], sys.argv[2])\n'
    'open(sys.argv[2] + "/Memory.md", "w").write("edited after the plant\\n")\n'
    'verbs = [\n'
    '    lambda: cps.snapshot("after"),\n'
    '    lambda: cps.list(),\n'
    '    lambda: cps.status(),\n'
    '    lambda: cps.log(),\n'
    '    lambda: cps.seal(),\n'
    '    lambda: cps.prune(keep=1),\n'
    ']\n'
    'for verb in verbs:\n'
    '    try:\n'
    '        verb()\n'
    '        print("ok")\n'
    '    except CheckpointError as error:\n'
    '        print("error", type(error).__name__, error)\n'
)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """Three checkpoints, one pruned (``shallow``, ``pruned``), a seal and a reflog."""
    workspace = new_workspace(tmp_path / 'ws')
    desk = desk_in(workspace)
    cps = checkpoints_in(workspace)
    for version in ('v1', 'v2', 'v3'):
        write(desk, 'Memory.md', f'{version}\n')
        write(desk, 'notes/a.md', f'note {version}\n')
        cps.snapshot(version)
    cps.seal()
    cps.prune(keep=2)
    return workspace


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    return secret_file(tmp_path, SECRET)


def _plant(repository: Path, name: str, kind: str, secret: Path) -> None:
    target = repository / name
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    elif os.path.lexists(target):
        target.unlink()
    target.parent.mkdir(parents=True, exist_ok=True)
    if kind == 'link':
        os.symlink(secret, target)
    elif kind == 'fifo':
        os.mkfifo(target)
    elif kind == 'huge':
        with open(target, 'wb') as handle:
            handle.truncate(1 << 40)  # sparse: a terabyte that takes no space
    else:
        shutil.copyfile(secret, target)


def _run_verbs(workspace: Path) -> list[str]:
    done = python(VERBS, str(repository_in(workspace)), str(desk_in(workspace)), timeout=90)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


@pytest.mark.parametrize('name', FILES)
@pytest.mark.parametrize('kind', ['link', 'fifo', 'huge'])
def test_a_planted_repository_file_is_never_followed_waited_on_or_read_whole(
    workspace: Path, secret: Path, tmp_path: Path, name: str, kind: str
) -> None:
    """Before: a link at ``checkpoints/lock`` truncated the file it pointed at, one at the stat
    cache overwrote it, at ``pruned`` or the reflog appended to it; a FIFO at the journal, the
    memo, the branch, the stat cache, ``shallow``, ``HEAD`` or the lock hung every verb; a
    sparse terabyte was read until the memory ran out (here: the deadline)."""
    _plant(repository_in(workspace), name, kind, secret)
    outcomes = _run_verbs(workspace)
    assert len(outcomes) == 6, outcomes
    assert secret.read_bytes() == SECRET, f'{name}: a file outside the repository changed'
    assert not any(TOKEN in line for line in outcomes)
    for outcome in outcomes:
        assert outcome == 'ok' or outcome.startswith('error '), outcome
    if name.startswith('checkpoints/') and name != 'checkpoints/lock':
        # Caches and records of our own: a snapshot never fails over one.
        assert outcomes[0] == 'ok', outcomes


@pytest.mark.parametrize('name', ['packed-refs', 'shallow', 'refs/heads/main'])
@pytest.mark.parametrize('kind', ['link', 'copy'])
def test_a_credentials_file_at_a_ref_file_is_never_quoted(
    workspace: Path, secret: Path, name: str, kind: str
) -> None:
    """Before: ``packed-refs`` or ``shallow`` pointing at (or holding a copy of) a git
    credentials file made ``seal`` and ``snapshot`` print the token in their error, which the
    MCP server would hand to the model."""
    repository = repository_in(workspace)
    if name == 'packed-refs':
        (repository / 'refs' / 'checkpoints' / 'sealed').unlink()  # read from packed-refs
    _plant(repository, name, kind, secret)
    write(desk_in(workspace), 'Memory.md', 'edited\n')
    for verb in (['seal'], ['snapshot', '-m', 'x'], ['status'], ['prune', '--keep', '1']):
        done = checkpoints(*verb, workspace=workspace)
        assert TOKEN not in done.stdout + done.stderr, (verb, done.stderr)
        assert 'Traceback' not in done.stderr and 'unexpected' not in done.stderr
    assert secret.read_bytes() == SECRET


def test_a_linked_private_folder_is_never_written_into(workspace: Path, tmp_path: Path) -> None:
    """``checkpoints/`` itself a link to a folder outside: its files are not written there."""
    repository = repository_in(workspace)
    elsewhere = tmp_path / 'elsewhere'
    shutil.copytree(repository / 'checkpoints', elsewhere)
    before = {p.name: p.read_bytes() for p in elsewhere.iterdir()}
    shutil.rmtree(repository / 'checkpoints')
    os.symlink(elsewhere, repository / 'checkpoints')
    write(desk_in(workspace), 'Memory.md', 'edited\n')
    with pytest.raises(CheckpointError, match='symbolic link'):
        checkpoints_in(workspace).snapshot('x')
    assert {p.name: p.read_bytes() for p in elsewhere.iterdir()} == before


def test_the_reflog_is_appended_by_the_library_and_git_reads_it(workspace: Path) -> None:
    """The branch's reflog is written here, not by dulwich (which follows a link there): one
    entry per move of the branch, in git's format."""
    repository = repository_in(workspace)
    reflog = repository / 'logs' / 'refs' / 'heads' / 'main'
    before = reflog.read_bytes().splitlines()
    write(desk_in(workspace), 'Memory.md', 'v4\n')
    new = checkpoints_in(workspace).snapshot('v4')
    assert new is not None
    after = reflog.read_bytes().splitlines()
    assert after[: len(before)] == before and len(after) == len(before) + 1
    old, sha, rest = after[-1].split(b' ', 2)
    assert old == before[-1].split(b' ')[1] and sha.decode().startswith(new)
    assert rest.endswith(b'\tcommit: v4')
