"""The kill-point sweep: snapshot, restore, prune, compaction and clone, each killed with
SIGKILL at every file-system call it makes, in turn.

For each operation one run is traced with strace (``helpers/killpoints.py``) and every call
that changes the file system or flushes it is a kill point; the operation then runs once per
kill point on a fresh copy of the same world, killed as it enters that call
(``strace --inject=SYSCALL:signal=KILL:when=N``). After each kill:

- the next operation succeeds (a snapshot after a snapshot or a restore, the same prune, a
  compaction, the clone again);
- ``git fsck --full --strict`` is clean (right after the kill no error, leftovers allowed;
  after the next operation nothing at all);
- no checkpoint listed before is lost (a prune drops only what its limit drops);
- the desk holds its state before or after the operation (a restore is completed by the next
  operation: then it holds the target);
- no byte outside the desk and the repository changed (an ``outside`` folder, the desk's
  untracked files, the remote a clone reads).

The figures (kill points per operation, kills) are printed with ``-s`` and kept in
``docs/safety.md``. The sweep needs strace (skipped without it) and runs in the slow suite:
``python -m pytest -m slow tests/product/test_kill_points.py -s``; the default suite runs every
60th kill point.
"""

from __future__ import annotations

import random
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from helpers import SCRIPTS
from helpers.builders import checkpoints_in, desk_in, new_workspace, put, repository_in, write
from helpers.gitcli import fsck
from helpers.killpoints import KillPoint, kill_points, needs_strace, run_killed_at, was_killed
from helpers.processes import environment
from helpers.reading import ALLOW, files_of, tracked, untracked, version_of

from trading_checkpoints import Checkpoints
from trading_checkpoints.errors import RepositoryExistsError
from trading_checkpoints.ops import journal
from trading_checkpoints.ops.listing import list_checkpoints

OPERATIONS = ('snapshot', 'restore', 'prune', 'compaction', 'clone')
KEEP = 3  # the prune's limit (the driver's ``prune(keep=3)``)


@dataclass
class World:
    """The template every run copies: a desk with history, unsaved edits and untracked files,
    a backup remote, and a folder outside of everything."""

    root: Path
    ids: list[str] = field(default_factory=list)  # all checkpoints, newest first
    desk_before: dict = field(default_factory=dict)
    target_state: dict = field(default_factory=dict)  # what the restore puts back


def _build(root: Path) -> World:
    workspace = new_workspace(root / 'ws')
    desk = desk_in(workspace)
    cps = checkpoints_in(workspace)
    rng = random.Random(23)
    write(desk, 'scratch.txt', 'untracked, never touched\n')
    write(desk, 'memory_extra/keep.md', 'outside the allowlist\n')
    for turn in range(6):
        write(desk, 'Memory.md', f'memory after turn {turn}\n')
        write(desk, f'notes/n{turn % 3}.md', f'note {turn}\n' * 20)
        write(desk, f'memory/m{turn}.md', rng.randbytes(300).hex())
        cps.snapshot(f'turn {turn}')
        if turn == 3:
            cps.restore(cps.list()[2].checkpoint_id)  # a restore chain in the history
    for i in range(3):
        write(desk, f'notes/n{i}.md', 'unsaved work\n')
    (root / 'ws' / 'desks' / 'main' / 'notes' / 'n2.md').unlink()
    write(root / 'outside', 'precious.txt', 'never touched\n')
    cps.add_remote('backup', str(root / 'remote.git'))
    cps.push('backup')
    world = World(root)
    world.ids = [c.checkpoint_id for c in cps.list(None)]
    target = world.ids[-2]
    (root / 'target').write_text(target + '\n')
    world.desk_before = files_of(desk)
    world.target_state = version_of(repository_in(workspace), target)
    return world


def _copy(world: World, name: str) -> Path:
    copy = world.root.parent / name
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(world.root, copy, symlinks=True)
    return copy


def _driver(operation: str, warm: Path, run: Path) -> list[str]:
    return [sys.executable, str(SCRIPTS / 'kill_sweep_driver.py'), operation, str(warm), str(run)]


def _paths(root: Path, desk_name: str = 'main') -> tuple[Path, Path]:
    workspace = root / 'ws'
    return repository_in(workspace, desk_name), desk_in(workspace, desk_name)


def _ids(repository: Path) -> list[str]:
    return [c.checkpoint_id for c in list_checkpoints(repository, None)]


ANOTHER_WRITER = b'written by another agent after the kill\n'


def _check(operation: str, world: World, run: Path, point: KillPoint) -> None:
    """The checks after one kill (see the module notes); raises AssertionError naming it."""
    where = f'{operation} killed at {point}'
    repository, desk = _paths(run)
    if operation != 'clone':
        fsck(repository, strict_clean=False)
    CHECKS[operation](world, run, where)
    assert not journal.pending(repository), f'{where}: the restore record is still there'
    fsck(repository)
    now = files_of(desk)
    assert untracked(now) == untracked(world.desk_before), f'{where}: an untracked file changed'
    assert files_of(run / 'outside') == files_of(world.root / 'outside'), f'{where}: outside'
    assert files_of(run / 'remote.git') == files_of(world.root / 'remote.git'), f'{where}: remote'


def _after_snapshot(world: World, run: Path, where: str) -> None:
    repository, desk = _paths(run)
    Checkpoints(repository, desk).snapshot_with_result('the next operation')
    assert files_of(desk) == world.desk_before, f'{where}: a snapshot changed the desk'
    ids = _ids(repository)
    assert ids[len(ids) - len(world.ids) :] == world.ids, f'{where}: a checkpoint was lost'


def _after_restore(world: World, run: Path, where: str) -> None:
    """The next operation completes an interrupted restore. Before it, another writer edits a
    file the restore planned, so the completion first saves the desk as found; after it, a
    prune to one checkpoint must keep the restore's chain down to its pre-snapshot."""
    repository, desk = _paths(run)
    record = journal.read(repository, ALLOW) if journal.pending(repository) else None
    edited = record.changes[0].path if record is not None and record.changes else None
    if edited is not None:
        put(desk, edited, '-', ANOTHER_WRITER)
    Checkpoints(repository, desk).snapshot_with_result('the next operation')
    now = tracked(files_of(desk))
    assert now in (tracked(world.desk_before), world.target_state), f'{where}: a half state'
    ids = _ids(repository)
    assert ids[len(ids) - len(world.ids) :] == world.ids, f'{where}: a checkpoint was lost'
    if record is None:
        return
    assert now == world.target_state, f'{where}: the restore was not completed'
    if edited is not None:
        new = ids[: len(ids) - len(world.ids)]
        saved = [version_of(repository, sha).get(edited) for sha in new]
        assert ('-', ANOTHER_WRITER) in saved, f"{where}: the other writer's bytes were lost"
    Checkpoints(repository, desk).prune(keep=1)
    kept = _ids(repository)
    assert any(record.before.startswith(sha) for sha in kept), f'{where}: undo point pruned'
    undo_point = version_of(repository, record.before)
    assert undo_point == tracked(world.desk_before), f'{where}: the undo point lost bytes'


def _after_prune(world: World, run: Path, where: str) -> None:
    """The same prune, then a compaction (which drops what the cut left unreachable)."""
    repository, desk = _paths(run)
    Checkpoints(repository, desk).prune(keep=KEEP)
    fsck(repository)
    Checkpoints(repository, desk).prune()
    ids = _ids(repository)
    assert ids == world.ids[: len(ids)], f'{where}: the history changed'
    assert len(ids) >= KEEP, f'{where}: more was pruned than the limit drops'
    for sha in ids:
        Checkpoints(repository, desk).show(sha, 'Memory.md')  # every kept one reads back


def _after_compaction(world: World, run: Path, where: str) -> None:
    repository, desk = _paths(run)
    Checkpoints(repository, desk).prune()
    assert _ids(repository) == world.ids, f'{where}: a compaction changed the history'
    for sha in world.ids:
        Checkpoints(repository, desk).show(sha, 'Memory.md')


def _after_clone(world: World, run: Path, where: str) -> None:
    """The clone again: it resumes an unfinished one; a finished one it refuses, and then the
    repository must hold every checkpoint already."""
    copy_repository, copy_desk = _paths(run, 'copy')
    try:
        Checkpoints.clone(str(run / 'remote.git'), copy_repository, copy_desk)
    except RepositoryExistsError:
        pass
    fsck(copy_repository)
    assert _ids(copy_repository) == world.ids, f'{where}: the clone lacks checkpoints'
    newest = version_of(_paths(run)[0], world.ids[0])
    assert tracked(files_of(copy_desk)) == newest, f'{where}: the clone is not the newest'


CHECKS = {
    'snapshot': _after_snapshot,
    'restore': _after_restore,
    'prune': _after_prune,
    'compaction': _after_compaction,
    'clone': _after_clone,
}


@dataclass
class Figures:
    points: int = 0
    runs: int = 0
    killed: int = 0


def _sweep(tmp_path: Path, operation: str, step: int) -> Figures:
    world = _build(tmp_path / 'template')
    env = environment({'PYTHONHASHSEED': '0'})
    warm, traced = _copy(world, 'warm'), _copy(world, 'traced')
    points = kill_points(_driver(operation, warm, traced), env)
    figures = Figures(points=len(points))
    for index, point in enumerate(points):
        if index % step:
            continue
        warm, run = _copy(world, 'warm'), _copy(world, f'run-{index}')
        done = run_killed_at(_driver(operation, warm, run), env, point)
        assert was_killed(done) or done.returncode == 0, (
            f'{operation} at {point}: the operation failed:\n{done.stderr[-2000:]}'
        )
        figures.runs += 1
        figures.killed += was_killed(done)
        _check(operation, world, run, point)
        shutil.rmtree(run)
        shutil.rmtree(warm)
    print(
        f'\n{operation}: {figures.points} kill points, {figures.runs} runs, {figures.killed} killed'
    )
    assert figures.killed >= figures.runs * 0.9, 'most runs met their kill point'
    return figures


@needs_strace
@pytest.mark.parametrize('operation', OPERATIONS)
def test_every_60th_kill_point(tmp_path: Path, operation: str) -> None:
    _sweep(tmp_path, operation, step=60)


@pytest.mark.slow
@needs_strace
@pytest.mark.parametrize('operation', OPERATIONS)
def test_every_kill_point(tmp_path: Path, operation: str) -> None:
    _sweep(tmp_path, operation, step=1)
