"""A clone killed at any point is completed by running it again, with no manual deletion.

The clone runs in a real process and is killed with SIGKILL just before its Nth file-system
mutation, for N from the one right after the repository's ``HEAD`` exists to its last. After
each kill, ``checkpoints list`` on the desk never says "No checkpoints yet" as if all were
well (the repository is an unfinished clone and says so), and the same ``clone`` command run
again completes: every checkpoint of the remote is there and the desk holds the newest one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers.builders import session_turns, write
from helpers.cli import checkpoints
from helpers.processes import python
from helpers.reading import files_of

from trading_checkpoints import Checkpoints

# The child: the clone, with SIGKILL just before mutation number KILL_AT (0: never); it prints
# (as JSON) the numbers of the mutations that wrote HEAD and that removed the unfinished mark.
_CLONE = """
import json, os, signal, sys
from pathlib import Path
from trading_checkpoints import Checkpoints
from helpers.faults import _is_mutation
url, repository, desk, kill_at = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])
seen = {'mutations': 0, 'head': 0, 'finished': 0}
def hook(event, args):
    if not _is_mutation(event, args):
        return
    seen['mutations'] += 1
    if seen['mutations'] == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)
    # HEAD renamed into place: by its path, or by its name in the repository's folder
    if event == 'os.rename' and os.fsdecode(args[1]) in (os.path.join(repository, 'HEAD'), 'HEAD'):
        seen['head'] = seen['mutations']
    if event == 'os.remove' and os.fsdecode(args[0]).endswith('/checkpoints/cloning'):
        seen['finished'] = seen['mutations']
sys.addaudithook(hook)
Checkpoints.clone(url, repository, desk)
print(json.dumps(seen))
"""
_ENV = {'PYTHONDONTWRITEBYTECODE': '1'}  # the same mutations in every run


def _clone(url: str, workspace: Path, desk: str, kill_at: int) -> str:
    done = python(
        _CLONE,
        url,
        str(workspace / '.checkpoints' / f'{desk}.git'),
        str(workspace / 'desks' / desk),
        str(kill_at),
        env=_ENV,
        with_helpers=True,
    )
    if kill_at:
        assert done.returncode == -9, (kill_at, done.stdout, done.stderr)
    else:
        assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def remote(tmp_path: Path) -> tuple[str, list[str], dict]:
    """A backup holding four checkpoints of a desk: its URL, their ids, the newest desk."""
    source = tmp_path / 'source'
    write(source, 'Memory.md', '# memory\n')
    cps = Checkpoints(tmp_path / 'source.git', source)
    ids = session_turns(cps, source, 4)
    cps.add_remote('backup', str(tmp_path / 'backup.git'))
    cps.push('backup')
    return str(tmp_path / 'backup.git'), ids[::-1], files_of(source)


def _kill_points(url: str, workspace: Path, every: bool) -> list[int]:
    (workspace / '.checkpoints').mkdir(exist_ok=True)  # made once: every run makes the same
    counted = json.loads(_clone(url, workspace, 'counted', 0))
    head, last = counted['head'], counted['finished']  # killed before it: unfinished
    assert 0 < head < last
    points = list(range(head + 1, last + 1))
    if every:
        return points
    step = max(1, len(points) // 6)
    return sorted({head + 1, *points[::step], last})


def _check_kill_and_rerun(url: str, ids: list[str], newest: dict, workspace: Path, n: int) -> None:
    desk = f'killed-{n}'
    _clone(url, workspace, desk, n)
    listed = checkpoints('--desk', desk, 'list', workspace=workspace)
    assert 'No checkpoints yet' not in listed.stdout, (n, listed.stdout)
    assert listed.returncode == 1 and 'unfinished clone' in listed.stderr, (n, listed.stderr)
    again = checkpoints('--desk', desk, 'clone', url, workspace=workspace)
    assert again.returncode == 0, (n, again.stderr)
    listed = checkpoints('--desk', desk, 'list', '--json', workspace=workspace)
    assert [item['id'] for item in json.loads(listed.stdout)] == ids, n
    assert files_of(workspace / 'desks' / desk) == newest, n
    assert not os.path.lexists(
        workspace / '.checkpoints' / f'{desk}.git' / 'checkpoints' / 'cloning'
    )


@pytest.mark.parametrize('every', [False, pytest.param(True, marks=pytest.mark.slow)])
def test_a_clone_killed_after_head_exists_is_completed_by_cloning_again(
    remote: tuple[str, list[str], dict], workspace: Path, every: bool
) -> None:
    """Killed right after HEAD and at points spread to its end (every point with -m slow)."""
    url, ids, newest = remote
    for n in _kill_points(url, workspace, every=every):
        _check_kill_and_rerun(url, ids, newest, workspace, n)


def test_a_repository_without_checkpoints_is_cloned_into(
    remote: tuple[str, list[str], dict], workspace: Path
) -> None:
    """A repository with no checkpoint yet (``track`` made it) holds nothing to lose."""
    url, ids, newest = remote
    (workspace / 'desks' / 'old').mkdir(parents=True)
    tracked = checkpoints('--desk', 'old', 'track', 'research', workspace=workspace)
    assert tracked.returncode == 0, tracked.stderr  # creates the repository, takes no checkpoint
    again = checkpoints('--desk', 'old', 'clone', url, workspace=workspace)
    assert again.returncode == 0, again.stderr
    listed = checkpoints('--desk', 'old', 'list', '--json', workspace=workspace)
    assert [item['id'] for item in json.loads(listed.stdout)] == ids
