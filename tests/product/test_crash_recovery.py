"""Fault injection: snapshots and restores killed with SIGKILL at random moments lose nothing.

Each trial edits the desk, then runs a snapshot or a restore in a child process and kills it,
either just before its Nth file-system mutation (a random N, so every step of the write path
is hit: object files, packs, refs, the restore record, each desk file) or after a random delay.
After each kill: ``git fsck --strict`` passes, the next operation succeeds (completing an
interrupted restore), the desk holds either its state before the operation or the restore's
target (untracked files untouched, no temporary file left), every commit holds one of those two
states, and every earlier checkpoint still reads back byte for byte.

The default run does 30 trials; ``python -m pytest -m slow tests/product/test_crash_recovery.py``
runs 600 more (the figures are printed with ``-s``).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.builders import mutate, put, remove, seed_desk
from helpers.cli import checkpoints, start
from helpers.faults import Tally, lands_a_desk_file, run_child
from helpers.gitcli import fsck
from helpers.reading import files_of, history, tracked, untracked, version_of

from trading_checkpoints import Checkpoints
from trading_checkpoints.ops import journal as journal_module


def _run_trials(tmp_path: Path, trials: int, seed: int, min_killed: int = 0) -> Tally:
    """Runs ``trials`` kill trials, and more (up to 3x) until ``min_killed`` kills happened.

    Whether a timed kill lands mid-operation depends on the machine's load, so the count of
    real crashes is made sure of by running on rather than hoped for.
    """
    rng = random.Random(seed)
    desk = tmp_path / 'desks' / 'main'
    repo_dir = tmp_path / '.checkpoints' / 'main.git'
    seed_desk(desk, rng)
    cps = Checkpoints(repo_dir, desk)
    versions: dict[str, dict] = {}
    for _ in range(3):
        sha = cps.snapshot('setup')
        assert sha is not None
        versions[history(repo_dir)[0]] = tracked(files_of(desk))
        mutate(desk, rng, 6)
    tally = Tally()
    mutations = {'snapshot': 60, 'restore': 200}
    durations = {'snapshot': 0.05, 'restore': 0.1}
    for trial in range(trials * 3):
        if trial >= trials and tally.killed >= min_killed:
            break
        mutate(desk, rng, rng.choice([1, 3, 8, 80]))  # 80 edits: the objects go into a pack
        before = files_of(desk)
        known = history(repo_dir)
        op = rng.choice(['snapshot', 'restore'])
        target_sha = rng.choice(sorted(versions))
        if op == 'snapshot':

            def action(trial: int = trial) -> None:
                Checkpoints(repo_dir, desk).snapshot(f'trial {trial}')

            expected = [before]
        else:

            def action(target_sha: str = target_sha) -> None:
                Checkpoints(repo_dir, desk).restore(target_sha[:12])

            expected = [before, {**untracked(before), **versions[target_sha]}]
        if rng.random() < 0.6:
            outcome = run_child(action, kill_at=rng.randint(1, mutations[op] + 2))
        else:
            outcome = run_child(action, kill_after=rng.uniform(0, durations[op] * 1.3))
        assert outcome.error is None, f'trial {trial}: the {op} failed: {outcome.error}'
        tally.trials += 1
        tally.snapshots += op == 'snapshot'
        tally.restores += op == 'restore'
        if outcome.killed:
            tally.killed += 1
        else:
            tally.completed += 1
            if outcome.mutations:
                mutations[op] = max(mutations[op], outcome.mutations)
            durations[op] = max(durations[op] * 0.9, outcome.seconds)
        pending = journal_module.pending(repo_dir)
        fsck(repo_dir, strict_clean=False)  # right after the kill: no error, only leftovers

        # The next operation succeeds, completing an interrupted restore first.
        after_cps = Checkpoints(repo_dir, desk)
        noted = False
        if rng.random() < 0.5:
            after_cps.list()
            noted = after_cps.last_recovery is not None
        result = after_cps.snapshot_with_result('after the trial')
        noted = noted or bool(result.recovered)
        assert noted == pending, 'a recovery must happen, and be noted, exactly when needed'
        tally.recoveries += pending
        assert not journal_module.pending(repo_dir)
        fsck(repo_dir)

        now = files_of(desk)
        assert not [p for p in now if '.checkpoint-' in p], f'temporary file left: {sorted(now)}'
        assert now in expected, f'trial {trial} ({op}): the desk is neither before nor target'
        assert untracked(now) == untracked(before), 'an untracked file changed'
        expected_tracked = [tracked(state) for state in expected]

        # The history is linear, keeps every earlier checkpoint, and only whole states.
        current = history(repo_dir)
        assert current[len(current) - len(known) :] == known, 'an earlier checkpoint was lost'
        for sha in current[: len(current) - len(known)]:
            content = version_of(repo_dir, sha)
            assert content in expected_tracked, f'commit {sha[:7]} holds a half state'
            versions[sha] = content
        for sha in rng.sample(sorted(versions), min(3, len(versions))):
            assert version_of(repo_dir, sha) == versions[sha], f'{sha[:7]} changed'
            tally.checked_versions += 1
        if trial % 7 == 6:  # and a real restore of an old one reads back byte for byte
            sha = rng.choice(sorted(versions))
            Checkpoints(repo_dir, desk).restore(sha)
            assert tracked(files_of(desk)) == versions[sha]
            versions[history(repo_dir)[0]] = versions[sha]
    for sha, content in versions.items():  # every version ever seen is still there, intact
        assert version_of(repo_dir, sha) == content
        tally.checked_versions += 1
    return tally


def test_killed_snapshots_and_restores_lose_nothing(tmp_path: Path) -> None:
    tally = _run_trials(tmp_path, trials=30, seed=4, min_killed=15)
    assert tally.trials >= 30 and tally.killed >= 15, tally
    print(f'\nfault injection: {tally}')


@pytest.mark.slow
@pytest.mark.parametrize('seed', range(6))
def test_killed_snapshots_and_restores_lose_nothing_long(tmp_path: Path, seed: int) -> None:
    tally = _run_trials(tmp_path, trials=100, seed=1000 + seed, min_killed=50)
    assert tally.trials >= 100 and tally.killed >= 50, tally
    print(f'\nfault injection (seed {seed}): {tally}')


@pytest.mark.parametrize('atomic', [False, True])
def test_restore_killed_mid_write_is_completed_by_next_operation(
    tmp_path: Path, atomic: bool
) -> None:
    """Killed half way through its writes (rewriting in place, or renaming temporary files
    into place with ``atomic_writes``): the next operation completes it, leaving no temporary
    file, and the restore can be undone."""
    desk = tmp_path / 'desk'
    repo_dir = tmp_path / 'repo.git'
    for i in range(30):
        put(desk, f'notes/f{i:02}.md', '-', b'old %d\n' % i)
    cps = Checkpoints(repo_dir, desk)
    old = cps.snapshot('old')
    for i in range(30):
        put(desk, f'notes/f{i:02}.md', '-', b'new %d\n' % i)
    put(desk, 'notes/added.md', '-', b'created later')
    new_state = files_of(desk)
    cps.snapshot('new')

    # Killed as it puts its 16th file in place: the record is written, half the files are not.
    def killed_half_way() -> None:
        landed = []

        def hook(event: str, args: tuple) -> None:
            if lands_a_desk_file(event, args):
                landed.append(1)
                if len(landed) == 16:
                    os.kill(os.getpid(), signal.SIGKILL)

        sys.addaudithook(hook)
        Checkpoints(repo_dir, desk, atomic_writes=atomic).restore(old)

    outcome = run_child(killed_half_way)
    assert outcome.killed
    assert journal_module.pending(repo_dir)
    half = files_of(desk)
    assert any('.checkpoint-' in path for path in half) == atomic  # its temporary files
    assert half != new_state and tracked(half) != version_of(repo_dir, old)
    recovered = Checkpoints(repo_dir, desk)
    assert recovered.snapshot('next') is None  # the completion recorded the restored state
    recovery = recovered.last_recovery
    assert recovery is not None
    assert 'completed an interrupted restore' in str(recovery)
    assert files_of(desk) == version_of(repo_dir, old)
    assert not journal_module.pending(repo_dir)
    [restored, *_] = recovered.list()
    assert restored.reason == f'restored {old}'
    # Undo works as after any restore.
    Checkpoints(repo_dir, desk).restore(recovery.before_id)
    assert files_of(desk) == new_state
    fsck(repo_dir)


def test_edits_after_a_crash_are_saved_before_completion(tmp_path: Path) -> None:
    desk = tmp_path / 'desk'
    repo_dir = tmp_path / 'repo.git'
    for i in range(10):
        put(desk, f'notes/f{i}.md', '-', b'old')
    cps = Checkpoints(repo_dir, desk)
    old = cps.snapshot('old')
    for i in range(10):
        put(desk, f'notes/f{i}.md', '-', b'new')
    cps.snapshot('new')
    for kill_at in range(1, 60):  # the first kill that leaves the restore half-way
        assert run_child(lambda: Checkpoints(repo_dir, desk).restore(old), kill_at=kill_at).killed
        if journal_module.pending(repo_dir) and (desk / 'notes/f0.md').read_bytes() == b'old':
            break
    assert (desk / 'notes/f9.md').read_bytes() == b'new'
    put(desk, 'notes/f9.md', '-', b'written by someone after the crash')
    result = Checkpoints(repo_dir, desk).snapshot_with_result('next')
    assert result.recovered and 'saved first' in result.recovered
    saved = [c for c in cps.list() if c.reason.startswith('desk as found')]
    assert len(saved) == 1
    assert version_of(repo_dir, saved[0].checkpoint_id)['notes/f9.md'][1] == (
        b'written by someone after the crash'
    )
    assert (desk / 'notes/f9.md').read_bytes() == b'old'


def test_unreadable_record_keeps_the_desk_as_found(tmp_path: Path) -> None:
    desk = tmp_path / 'desk'
    repo_dir = tmp_path / 'repo.git'
    put(desk, 'Memory.md', '-', b'v1')
    cps = Checkpoints(repo_dir, desk)
    cps.snapshot('v1')
    put(desk, 'Memory.md', '-', b'half restored')
    journal_module.record_path(repo_dir).write_text('{"format": 1, "changes": [["../x"')
    result = cps.snapshot_with_result('next')
    assert result.recovered and 'unreadable' in result.recovered
    assert (desk / 'Memory.md').read_bytes() == b'half restored'
    assert version_of(repo_dir, cps.list()[0].checkpoint_id)['Memory.md'][1] == b'half restored'
    assert not journal_module.pending(repo_dir)


def test_record_naming_a_path_outside_the_allowlist_is_never_followed(tmp_path: Path) -> None:
    desk = tmp_path / 'desk'
    repo_dir = tmp_path / 'repo.git'
    put(desk, 'Memory.md', '-', b'v1')
    cps = Checkpoints(repo_dir, desk)
    cps.snapshot('v1')
    sha = '0' * 40
    record = {
        'format': 1,
        'label': 'x',
        'target': sha,
        'before': sha,
        'pids': [1],
        'started_at': 0,
        'changes': [['../outside.txt', None, [33188, sha]]],
    }
    journal_module.record_path(repo_dir).write_text(json.dumps(record))
    before = files_of(tmp_path)
    result = cps.snapshot_with_result('next')
    assert result.recovered and 'unsafe path' in result.recovered
    assert 'restore record' in result.recovered
    assert not (tmp_path / 'outside.txt').exists()
    desk_before = {k[len('desk/') :]: v for k, v in before.items() if k.startswith('desk/')}
    assert files_of(desk) == desk_before


def test_cli_killed_mid_restore_then_next_command_says_so(tmp_path: Path) -> None:
    """The same through the real command line in a real subprocess (python -m)."""
    workspace = tmp_path / 'ws'
    desk = workspace / 'desks' / 'main'
    repo_dir = workspace / '.checkpoints' / 'main.git'
    for i in range(200):
        put(desk, f'notes/f{i:03}.md', '-', b'old %d\n' % i * 50)
    cps = Checkpoints(repo_dir, desk)
    old = cps.snapshot('old')
    for i in range(200):
        put(desk, f'notes/f{i:03}.md', '-', b'new %d\n' % i * 50)
    cps.snapshot('new')
    for attempt in range(20):  # kill it once the record exists, i.e. mid-way through the desk
        child = start(
            'restore',
            old,
            workspace=workspace,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while not journal_module.pending(repo_dir) and child.poll() is None:
            if time.monotonic() > deadline:
                break
            time.sleep(0.0005)
        child.send_signal(signal.SIGKILL)
        child.wait()
        if journal_module.pending(repo_dir):
            break
        Checkpoints(repo_dir, desk).restore(cps.list()[1 if attempt else 0].checkpoint_id)
    assert journal_module.pending(repo_dir), 'never caught the restore mid-way'
    fsck(repo_dir, strict_clean=False)
    done = checkpoints('list', '-n', '3', workspace=workspace)
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith('note: completed an interrupted restore of'), done.stderr
    assert 'Traceback' not in done.stderr
    assert files_of(desk) == version_of(repo_dir, old)
    fsck(repo_dir)


def _sweep(tmp_path: Path, prepare, action, expected_states, step: int) -> int:
    """Kills ``action`` before its 1st, 2nd, ... file-system mutation until it runs through.

    ``step`` 1 tries every crash point (the slow run); the default run tries every third.
    """
    kills = 0
    for kill_at in range(1 + step // 2, 500, step):
        base = tmp_path / f'k{kill_at}'
        desk, repo_dir = base / 'desk', base / 'repo.git'
        prepare(desk, repo_dir)
        before = files_of(desk)
        outcome = run_child(lambda d=desk, r=repo_dir: action(d, r), kill_at=kill_at)
        assert outcome.error is None, outcome.error
        fsck(repo_dir, strict_clean=False)
        after_cps = Checkpoints(repo_dir, desk)
        after_cps.snapshot('next')
        fsck(repo_dir)
        assert files_of(desk) in expected_states(before, repo_dir), f'killed at {kill_at}'
        assert not journal_module.pending(repo_dir)
        if not outcome.killed:
            return kills
        kills += 1
    raise AssertionError('the action never ran through')


@pytest.mark.parametrize('step', [3, pytest.param(1, marks=pytest.mark.slow)])
def test_every_crash_point_of_a_first_snapshot(tmp_path: Path, step: int) -> None:
    def prepare(desk: Path, repo_dir: Path) -> None:
        put(desk, 'Memory.md', '-', b'first')
        put(desk, 'notes/a.md', '-', b'a')

    kills = _sweep(
        tmp_path,
        prepare,
        lambda desk, repo: Checkpoints(repo, desk).snapshot('first'),
        lambda before, repo: [before],
        step,
    )
    assert kills >= 30 // step
    print(f'\nfirst snapshot: {kills} crash points')


@pytest.mark.parametrize('step', [3, pytest.param(1, marks=pytest.mark.slow)])
def test_every_crash_point_of_a_restore(tmp_path: Path, step: int) -> None:
    def prepare(desk: Path, repo_dir: Path) -> None:
        put(desk, 'Memory.md', '-', b'old')
        put(desk, 'notes/gone.md', '-', b'deleted by the restore')
        put(desk, 'notes/type', '-', b'a file that becomes a folder')
        put(desk, 'skills/agent/run.sh', 'x', b'#!/bin/sh\n')
        cps = Checkpoints(repo_dir, desk)
        cps.snapshot('old')
        put(desk, 'Memory.md', '-', b'new')
        remove(desk, 'notes/gone.md')
        put(desk, 'notes/type/inner.md', '-', b'now a folder')
        put(desk, 'notes/link', 'link', b'../Memory.md')
        (desk / 'skills/agent/run.sh').chmod(0o644)
        cps.snapshot('new')
        put(desk, 'Memory.md', '-', b'unsaved')  # the pre-snapshot has work to do too
        put(desk, 'scratch.txt', '-', b'untracked')

    def expected(before, repo_dir: Path):
        old = Checkpoints(repo_dir, repo_dir).list()[-1].checkpoint_id
        return [before, {**untracked(before), **version_of(repo_dir, old)}]

    def restore_oldest(desk: Path, repo_dir: Path) -> None:
        cps = Checkpoints(repo_dir, desk)
        cps.restore(cps.list()[-1].checkpoint_id)

    kills = _sweep(tmp_path, prepare, restore_oldest, expected, step)
    assert kills >= 45 // step
    print(f'\nrestore: {kills} crash points')


def test_a_write_landing_during_a_restore_is_saved_not_lost(tmp_path: Path) -> None:
    """Another writer changes a planned file mid-restore (a real write, timed by an audit hook
    at the restore's first file write): its bytes are committed before the restore finishes."""
    desk = tmp_path / 'desk'
    repo_dir = tmp_path / 'repo.git'
    for i in range(10):
        put(desk, f'notes/f{i}.md', '-', b'old')
    cps = Checkpoints(repo_dir, desk)
    old = cps.snapshot('old')
    for i in range(10):
        put(desk, f'notes/f{i}.md', '-', b'new')
    cps.snapshot('new')

    def restore_with_a_concurrent_writer() -> None:
        fired = []

        def hook(event: str, args: tuple) -> None:
            if not fired and lands_a_desk_file(event, args):
                fired.append(True)
                with open(desk / 'notes' / 'f9.md', 'wb') as handle:
                    handle.write(b'written by another agent during the restore')

        sys.addaudithook(hook)
        result = Checkpoints(repo_dir, desk).restore_with_result(old)
        assert result.recovered and 'f9.md was changed by another writer' in result.recovered
        assert 'saved first' in result.recovered

    outcome = run_child(restore_with_a_concurrent_writer)
    assert outcome.error is None, outcome.error
    assert tracked(files_of(desk)) == version_of(repo_dir, old)
    saved = [c for c in cps.list() if c.reason.startswith('desk as found')]
    assert len(saved) == 1
    content = version_of(repo_dir, saved[0].checkpoint_id)
    assert content['notes/f9.md'][1] == b'written by another agent during the restore'
    assert not journal_module.pending(repo_dir)
    fsck(repo_dir)
