"""The record of the turns near the branch's tip (``ops/turnindex.py``): whatever it says, a
turn counts as started exactly when one of the newest checkpoints carries it."""

from __future__ import annotations

import random
from pathlib import Path

from helpers.builders import write
from helpers.gitcli import git, needs_git

from trading_checkpoints import Checkpoints
from trading_checkpoints.ops import engine, turnindex
from trading_checkpoints.ops.turns import snapshot_in_turn
from trading_checkpoints.store import metadata
from trading_checkpoints.store.repo import ShadowRepo


def walked(repo_dir: Path, turn: str, lookback: int = 200) -> bool:
    """The answer without any record: the newest ``lookback`` checkpoints read one by one."""
    repo = ShadowRepo.open(repo_dir)
    assert repo is not None
    try:
        return any(metadata.parse(i.message).turn == turn for i in repo.history(lookback))
    finally:
        repo.close()


def ask(cps: Checkpoints, turn: str, lookback: int = 200) -> bool:
    """The answer as a hook event gets it: under the lock, the record written down."""
    with engine.locked(cps.desk_config, light=True) as session:
        return turnindex.started(session.repo, turn, lookback, remember=True)


def record(repo_dir: Path) -> turnindex.Near | None:
    repo = ShadowRepo.open(repo_dir)
    assert repo is not None
    try:
        return turnindex.read(repo)
    finally:
        repo.close()


def checkpoints(cps: Checkpoints, count: int, turn: str | None = None) -> None:
    for number in range(count):
        write(cps.desk_directory, 'Memory.md', f'{turn} {number} {random.random()}')
        cps.snapshot(f'step {number}', turn=turn)


def test_the_record_is_written_after_a_long_walk_and_read_back(cps: Checkpoints) -> None:
    checkpoints(cps, 3, 'old-turn')
    checkpoints(cps, turnindex.REMEMBER_AFTER + 2)
    assert not ask(cps, 'new-turn')
    near = record(cps.repository_directory)
    assert near is not None, 'a walk of more than REMEMBER_AFTER checkpoints is written down'
    assert near.tip == git(cps.repository_directory, 'rev-parse', 'main').strip()
    assert near.depths == {'old-turn': turnindex.REMEMBER_AFTER + 2}
    checkpoints(cps, 2, 'new-turn')
    assert ask(cps, 'new-turn') and ask(cps, 'old-turn')
    assert not ask(cps, 'old-turn', lookback=turnindex.REMEMBER_AFTER + 4)


def test_a_short_walk_from_the_recorded_tip_writes_nothing(cps: Checkpoints) -> None:
    checkpoints(cps, turnindex.REMEMBER_AFTER + 1)
    ask(cps, 'a-turn')
    first = (cps.repository_directory / turnindex.NAME).stat().st_mtime_ns
    checkpoints(cps, 1, 'other')
    assert not ask(cps, 'a-turn') and ask(cps, 'other')
    assert (cps.repository_directory / turnindex.NAME).stat().st_mtime_ns == first


def test_answers_equal_the_walk_whatever_the_history(cps: Checkpoints) -> None:
    """Turns interleaved at random, the record written at several tips along the way: every
    turn, at every window, answers as reading the checkpoints one by one does."""
    rng = random.Random(7)
    turns = [f'turn-{n}' for n in range(6)]
    for _ in range(12):
        for _ in range(rng.randrange(1, 30)):
            checkpoints(cps, 1, rng.choice([*turns, None]))
        for turn in turns:
            for lookback in (1, 3, 10, 40, 200):
                assert ask(cps, turn, lookback) == walked(cps.repository_directory, turn, lookback)


@needs_git
def test_a_branch_moved_back_before_the_turn_began_makes_it_new_again(
    cps: Checkpoints, desk: Path
) -> None:
    """The record names the turn near its tip; the branch then points at a checkpoint from
    before the turn (moved by hand, as a rewrite of the ref would): the turn is not started, and
    a hook's write in it marks its start again, so restore-turn goes back to the right state."""
    checkpoints(cps, turnindex.REMEMBER_AFTER + 2)
    before = git(cps.repository_directory, 'rev-parse', 'main').strip()
    write(desk, 'Memory.md', 'the desk before the turn')
    cps.snapshot('before the turn')
    snapshot_in_turn(cps, 'the-turn', 'before write_file Memory.md', paths=['Memory.md'])
    assert not ask(cps, 'unrelated')  # a full walk: the record now names the-turn at depth 0
    near = record(cps.repository_directory)
    assert near is not None and near.depths.get('the-turn') == 0
    git(cps.repository_directory, 'update-ref', 'refs/heads/main', before)
    assert not ask(cps, 'the-turn'), 'a turn whose checkpoints left the branch is new again'
    write(desk, 'Memory.md', 'written later')
    snapshot_in_turn(cps, 'the-turn', 'before write_file Memory.md', paths=['Memory.md'])
    assert cps.list()[0].turn == 'the-turn' and ask(cps, 'the-turn')
    write(desk, 'Memory.md', 'the turn wrote this')
    cps.restore_turn('the-turn')
    assert (desk / 'Memory.md').read_text() == 'written later'


def test_a_pruned_branch_answers_as_the_walk(cps: Checkpoints) -> None:
    """A prune cuts the history (the recorded depths reach past the cut): the answer comes
    from a full walk."""
    checkpoints(cps, 4, 'dropped')
    checkpoints(cps, turnindex.REMEMBER_AFTER + 2, 'kept')
    assert not ask(cps, 'nothing')
    near = record(cps.repository_directory)
    assert near is not None and set(near.depths) == {'dropped', 'kept'}
    cps.prune(keep=turnindex.REMEMBER_AFTER + 2)
    for turn in ('dropped', 'kept'):
        assert ask(cps, turn) == walked(cps.repository_directory, turn)
    assert not ask(cps, 'dropped')


def test_a_damaged_record_or_one_of_another_tip_changes_no_answer(cps: Checkpoints) -> None:
    checkpoints(cps, 3, 'real')
    checkpoints(cps, turnindex.REMEMBER_AFTER)
    ask(cps, 'other')
    path = cps.repository_directory / turnindex.NAME
    first = path.read_text().splitlines()[0]  # '<tip> <boundary>'
    tip, boundary = first.split()
    for data in (
        f'{"0" * 40} {boundary}\n0 forged\n0 real\n'.encode(),  # a tip not on the branch
        f'{tip} {"0" * 16}\n0 forged\n0 real\n'.encode(),  # another boundary
        f'{tip} {boundary}\nx real\n'.encode(),
        f'{tip} {boundary}\n0 forged\n0 real'.encode(),  # torn
        f'{tip} {boundary}\n0 two words\n'.encode(),
        f'{tip}\n0 forged\n'.encode(),
        f'{tip[:39]} {boundary}\n0 forged\n'.encode(),
        b'\xff\xfe\n',
        b'',
    ):
        path.write_bytes(data)
        assert not ask(cps, 'forged'), data
        for lookback in (3, 4, 200):
            assert ask(cps, 'real', lookback) == walked(cps.repository_directory, 'real', lookback)
