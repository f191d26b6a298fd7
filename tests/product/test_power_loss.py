"""The power-loss check: snapshot, restore, undo, prune, compaction, clone, a hook event and
the watch's checkpoint, each cut off by a simulated power loss in every state a stated
persistence model allows.

How: an ALICE-style model over a recorded trace (Pillai et al., OSDI 2014). Each operation
runs once for real, on a copy of the world of the kill-point sweep (``helpers/sweepworld.py``),
under ``strace -f`` with every written byte dumped (``helpers/fstrace.py``); the calls under
the copy are replayed on a model of its files (``helpers/crashfs.py``), which must end exactly
as the real folder did (checked: a call the model got wrong fails here, not later); then
``helpers/crashstates.py`` builds, at every point between two calls, the states a power cut
may leave there (its module notes state the model: unflushed pages lost in any combination,
folder entries lost in any order per folder consistent with the flushes made), merges those
holding the same bytes, and each distinct state is written out as real files and checked as
the kill-point sweep checks a kill (``sweepworld.check``): the next operation succeeds,
``git fsck --full --strict`` is clean, no checkpoint listed before is lost, the desk is its
state before or after the operation (a restore completed), nothing outside changed. Two more
promises hold once the operation reported that it returned (the ``REPORTED`` line of the
driver; a hook's exit): every checkpoint it made is still there, and a restore's desk is the
restored one before anything runs. Then a restore to the oldest checkpoint works.

Why this method: it needs only the strace binary the kill-point sweep already uses (no FUSE
library, no new dependency, no mount), it sees every call of every thread (the flush pool,
dulwich, the watch's notifier), and it replays the run deterministically, so a failing state
is named by its crash point and the changes it lost, and reproduced by the same seed. A FUSE
layer would see the same calls and add a file system to maintain. The model cannot keep inode
numbers or times across the rewrite (a stat cache is then never trusted, the safe side).

Figures (operations, calls, crash points, states allowed, built, distinct, checked) print with
``-s`` and are kept in docs/safety.md. The default suite checks a few states per operation
(those a SIGKILL cannot leave first); ``-m slow`` checks every one:
``python -m pytest -m slow -n 0 tests/product/test_power_loss.py -s``.
"""

from __future__ import annotations

import os
import random
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import ROOT, SCRIPTS
from helpers.crashfs import REPORT, Disk, Op, Replay, materialize
from helpers.crashstates import Figures, State, enumerate_states
from helpers.flushes import strace_works
from helpers.fstrace import record
from helpers.hookrun import event
from helpers.processes import environment
from helpers.reading import files_of, tracked, version_of
from helpers.scripts.kill_sweep_driver import WATCHED
from helpers.sweepworld import Expected, World, build, copy, ids_of, paths, remove
from helpers.sweepworld import check as check_next

from trading_checkpoints import Checkpoints
from trading_checkpoints.ops import announced, external
from trading_checkpoints.store import metadata
from trading_checkpoints.store.repo import ShadowRepo

OPERATIONS = (
    'snapshot',
    'restore',
    'undo',
    'prune',
    'compaction',
    'clone',
    'hook',
    'watch',
    'announce',
    'reseal',
)
SAMPLE = 3  # states per operation in the default suite


@pytest.fixture(scope='module')
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    why = strace_works()
    if why is not None:
        pytest.skip(why)
    return build(tmp_path_factory.mktemp('power-loss') / 'template')


@dataclass
class Traced:
    """One run of an operation, recorded: the model before it, its changes, what it left."""

    base: Disk
    ops: list[Op]
    expected: Expected
    made: list[str]  # the checkpoints it made, reported once it returned


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _trace(world: World, operation: str) -> Traced:
    root = copy(world, 'traced')
    base = Disk.load(str(root))
    env = environment({'PYTHONHASHSEED': '0'})
    stdin = None
    if operation == 'hook':
        argv = [sys.executable, '-m', 'trading_checkpoints', 'hook']
        stdin = event('claude_pre_tool_use_write.json', root / 'ws')
    else:
        warm = copy(world, 'warm')
        argv = [
            sys.executable,
            str(SCRIPTS / 'kill_sweep_driver.py'),
            operation,
            str(warm),
            str(root),
        ]
    trace, done = record(
        argv, world.root.parent / f'{operation}.strace', env, stdin=stdin, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr.decode(errors='replace')[-3000:]
    ops = Replay(base.copy(), str(root), str(ROOT), _umask()).run(trace)
    replayed = base.copy()
    for op in ops:
        replayed.apply(op)
    assert replayed.image() == Disk.load(str(root)).image(), 'the model lost track of a call'
    if operation == 'hook':  # the harness goes on once the hook has exited
        ops.append(Op(REPORT, trace.lines, trace.lines, 'the hook exited'))
    repository, desk = paths(root, 'copy' if operation == 'clone' else 'main')
    made = [sha for sha in ids_of(repository) if sha not in world.ids]
    after = tracked(files_of(desk))
    others = frozenset(['/'.join(WATCHED)] if operation == 'watch' else [])
    restores = operation in ('restore', 'undo')
    return Traced(base, ops, Expected(after, restores, others), made)


def _check(world: World, operation: str, traced: Traced, state: State, run: Path) -> None:
    lost = ', '.join(state.lost) or 'nothing'
    where = f'{operation}, power cut at point {state.point} losing: {lost}'
    materialize(state.image, str(run))
    repository, desk = paths(run)
    _check_announcement(repository, where, ended=state.reported and operation == 'reseal')
    if state.reported and traced.expected.restores:
        assert tracked(files_of(desk)) == traced.expected.after, f'{where}: the restore is gone'
    check_next(operation, world, run, where, traced.expected)
    if operation == 'clone':
        return
    ids = ids_of(repository)
    if state.reported:
        missing = [sha for sha in traced.made if sha not in ids]
        assert not missing, f'{where}: reported checkpoints lost: {missing}'
    oldest = ids[-1]
    Checkpoints(repository, desk).restore(oldest)
    assert tracked(files_of(desk)) == version_of(repository, oldest), f'{where}: the restore'


def _check_announcement(repository: Path, where: str, ended: bool) -> None:
    """An announcement the product reads (only the record is read: nothing is written) is
    whole and stands on the newest checkpoint, which is on the disk; once a seal ended it
    (``ended``), none is read, even where the seal ref holds the value it stood on."""
    repo = ShadowRepo.open(repository)
    assert repo is not None
    try:
        _, found = announced.read(repo, external.SEAL_REF, again=False)
        on_disk = found is not None and repo.contains(found.parents[0])
        head = repo.head()
    finally:
        repo.close()
    assert not (ended and found is not None), f'{where}: the announcement came back'
    if found is not None:
        assert on_disk, f'{where}: an announcement on a checkpoint the cut lost'
        assert metadata.parse(found.message).paths == ('notes/n0.md',), f'{where}: not whole'
        assert found.parents == (head,), f'{where}: not on the newest checkpoint'


def _chosen(states: list[State], operation: str, every: bool) -> list[State]:
    if every:
        return states
    rng = random.Random(operation)
    only_power = [state for state in states if not state.killed]
    return rng.sample(only_power, min(SAMPLE, len(only_power)))


def _run(world: World, operation: str, every: bool) -> Figures:
    traced = _trace(world, operation)
    states, figures = enumerate_states(traced.base, traced.ops)
    checked = _chosen(states, operation, every)
    for number, state in enumerate(checked):
        run = world.root.parent / f'{operation}-state-{number}'
        _check(world, operation, traced, state, run)
        remove(run)
    power_only = sum(not state.killed for state in states)
    print(
        f'\n{operation}: {len(traced.ops)} ops, {figures.points} crash points, '
        f'{figures.allowed} states allowed ({figures.exhaustive_points} points built whole), '
        f'{figures.built} built, {figures.distinct} distinct ({power_only} no SIGKILL leaves), '
        f'{len(checked)} checked and recovered'
    )
    return figures


@pytest.mark.parametrize('operation', OPERATIONS)
def test_a_sample_of_power_cuts_recovers(world: World, operation: str) -> None:
    _run(world, operation, every=False)


@pytest.mark.slow
@pytest.mark.parametrize('operation', OPERATIONS)
def test_every_power_cut_recovers(world: World, operation: str) -> None:
    _run(world, operation, every=True)
