"""The kill-point sweep: snapshot, restore, prune, compaction and clone, each killed with
SIGKILL at every file-system call it makes, in turn.

For each operation one run is traced with strace (``helpers/killpoints.py``) and every call
that changes the file system or flushes it is a kill point; the operation then runs once per
kill point on a fresh copy of the same world (``helpers/sweepworld.py``), killed as it enters
that call (``strace --inject=SYSCALL:signal=KILL:when=N``). strace counts a call's N-th time
per thread, so the driver flushes from one pool thread: every run makes the same calls in each
thread, every kill point is met (checked, and the lists of three traced runs compared).
After each kill (``sweepworld.check``):

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

import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import SCRIPTS
from helpers.killpoints import KillPoint, kill_points, needs_strace, run_killed_at, was_killed
from helpers.processes import environment
from helpers.sweepworld import Expected, World, build, check, copy, remove

OPERATIONS = ('snapshot', 'restore', 'prune', 'compaction', 'clone')


def _driver(operation: str, warm: Path, run: Path) -> list[str]:
    return [sys.executable, str(SCRIPTS / 'kill_sweep_driver.py'), operation, str(warm), str(run)]


def _check(operation: str, world: World, run: Path, point: KillPoint) -> None:
    if operation == 'restore':
        expected = Expected(world.target_state, restores=True)
    else:
        expected = Expected(world.desk_before)
    check(operation, world, run, f'{operation} killed at {point}', expected)


@dataclass
class Figures:
    points: int = 0
    runs: int = 0
    killed: int = 0


def _sweep(tmp_path: Path, operation: str, step: int) -> Figures:
    world = build(tmp_path / 'template')
    env = environment({'PYTHONHASHSEED': '0'})
    warm, traced = copy(world, 'warm'), copy(world, 'traced')
    points = kill_points(_driver(operation, warm, traced), env)
    figures = Figures(points=len(points))
    for index, point in enumerate(points):
        if index % step:
            continue
        warm, run = copy(world, 'warm'), copy(world, f'run-{index}')
        done = run_killed_at(_driver(operation, warm, run), env, point)
        assert was_killed(done) or done.returncode == 0, (
            f'{operation} at {point}: the operation failed:\n{done.stderr[-2000:]}'
        )
        figures.runs += 1
        figures.killed += was_killed(done)
        _check(operation, world, run, point)
        remove(run)
        remove(warm)
    print(
        f'\n{operation}: {figures.points} kill points, {figures.runs} runs, {figures.killed} killed'
    )
    assert figures.killed == figures.runs, 'every run met its kill point'
    return figures


@needs_strace
def test_the_kill_points_are_the_same_every_run(tmp_path: Path) -> None:
    """A kill point is a call's N-th time in its thread: the flushes run on one pool thread
    under the sweep (see the driver), so every traced run lists the same points, in order, and
    the killed run meets the call the traced one made."""
    world = build(tmp_path / 'template')
    env = environment({'PYTHONHASHSEED': '0'})
    runs = []
    for _ in range(3):
        warm, traced = copy(world, 'warm'), copy(world, 'traced')
        runs.append(kill_points(_driver('restore', warm, traced), env))
    assert runs[0] and runs[1] == runs[0] and runs[2] == runs[0]
    assert any(point.syscall == 'fsync' for point in runs[0])


@needs_strace
@pytest.mark.parametrize('operation', OPERATIONS)
def test_every_60th_kill_point(tmp_path: Path, operation: str) -> None:
    _sweep(tmp_path, operation, step=60)


@pytest.mark.slow
@needs_strace
@pytest.mark.parametrize('operation', OPERATIONS)
def test_every_kill_point(tmp_path: Path, operation: str) -> None:
    _sweep(tmp_path, operation, step=1)
