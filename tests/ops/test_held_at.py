"""What the desk held at a moment, the agent's sealed writes counted (``ops/heldat.py``).

Checkpoints carry times to the second, so each step here waits for the next second: the
moments asked about fall between two recorded states.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from helpers.builders import write
from helpers.cli import checkpoints as run
from helpers.gitcli import git, needs_git

from trading_checkpoints import Checkpoints
from trading_checkpoints.errors import InvalidArgumentError, NoCheckpointsError
from trading_checkpoints.ops import engine, heldat, toolcalls
from trading_checkpoints.store.metadata import SEALED_AT, Writer


def next_second() -> None:
    time.sleep(1.05 - time.time() % 1)


def moment_after(stamp: str) -> str:
    return (datetime.fromisoformat(stamp) + timedelta(microseconds=500_000)).isoformat()


def declare_write_seal(cps: Checkpoints, desk: Path, text: str, turn: str) -> None:
    """What the hooks do around an agent's write: declare, write, seal."""
    cps.snapshot('before write_file Memory.md', paths=['Memory.md'], turn=turn, session='S')
    next_second()
    write(desk, 'Memory.md', text)
    cps.seal()


def test_after_a_sealed_write_the_desk_held_the_write(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'Risk limit: 1%\n')
    cps.snapshot('start')
    next_second()
    declare_write_seal(cps, desk, 'Risk limit: 2%\n', 't-1')
    held = cps.held_at('0s')
    assert held.sealed and held.turn == 't-1'
    assert cps.show(held.checkpoint.checkpoint_id, 'Memory.md') == b'Risk limit: 2%\n'
    assert cps.show(None, 'Memory.md', at='0s') == (desk / 'Memory.md').read_bytes()


def test_a_write_superseded_by_the_next_checkpoint_is_still_found(
    cps: Checkpoints, desk: Path
) -> None:
    write(desk, 'Memory.md', 'Risk limit: 1%\n')
    cps.snapshot('start')
    next_second()
    declare_write_seal(cps, desk, 'Risk limit: 2%\n', 't-1')
    sealed_at = cps.held_at('0s').checkpoint.created_at
    next_second()
    declare_write_seal(cps, desk, 'Risk limit: 3%\n', 't-2')  # supersedes the first seal
    between = cps.held_at(moment_after(sealed_at))
    assert between.sealed and between.turn == 't-1' and between.changed_before is None
    assert cps.show(between.checkpoint.checkpoint_id, 'Memory.md') == b'Risk limit: 2%\n'


def test_a_change_nobody_recorded_in_time_is_said(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'v1\n')
    first = cps.snapshot('start')
    next_second()
    at = datetime.now().astimezone().isoformat()
    next_second()
    write(desk, 'Memory.md', 'v2, a person\n')  # no hook saw it
    cps.snapshot('later')
    held = cps.held_at(at)
    assert not held.sealed and held.checkpoint.checkpoint_id == first
    assert held.changed_before is not None, 'the desk changed after it, nobody knows when'


def test_a_write_sealed_after_the_moment_is_not_an_unrecorded_change(
    cps: Checkpoints, desk: Path
) -> None:
    write(desk, 'Memory.md', 'v1\n')
    cps.snapshot('start')
    next_second()
    cps.snapshot('before write_file Memory.md', paths=['Memory.md'], turn='t-1', session='S')
    at = datetime.now().astimezone().isoformat()
    next_second()
    write(desk, 'Memory.md', 'v2\n')
    cps.seal()
    next_second()
    cps.snapshot('before write_file notes/x.md', paths=['notes/x.md'], turn='t-1', session='S')
    held = cps.held_at(at)
    assert not held.sealed and held.changed_before is None
    assert cps.show(held.checkpoint.checkpoint_id, 'Memory.md') == b'v1\n'


def test_the_command_line_prints_the_sealed_write_and_says_so(
    cps: Checkpoints, desk: Path, workspace: Path
) -> None:
    write(desk, 'Memory.md', 'Risk limit: 1%\n')
    cps.snapshot('start')
    next_second()
    declare_write_seal(cps, desk, 'Risk limit: 2%\n', 't-1')
    done = run('show', '--at', '0s', 'Memory.md', workspace=workspace)
    assert done.returncode == 0, done.stderr
    assert done.stdout == 'Risk limit: 2%\n'
    assert "the agent's sealed write in turn t-1" in done.stderr


def test_at_the_very_second_of_the_seal_the_desk_held_the_write(
    cps: Checkpoints, desk: Path
) -> None:
    write(desk, 'Memory.md', 'Risk limit: 1%\n')
    cps.snapshot('start')
    next_second()
    declare_write_seal(cps, desk, 'Risk limit: 2%\n', 't-1')
    sealed = cps.held_at('0s').checkpoint
    assert cps.held_at(sealed.created_at).checkpoint == sealed


def test_a_write_sealed_outside_any_turn_names_no_turn(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'v1\n')
    cps.snapshot('start')
    next_second()
    cps.snapshot('before write_file Memory.md', paths=['Memory.md'])
    write(desk, 'Memory.md', 'v2\n')
    cps.seal()
    held = cps.held_at('0s')
    assert held.sealed and held.turn is None
    assert cps.show(held.checkpoint.checkpoint_id, 'Memory.md') == b'v2\n'


def test_two_sessions_writes_superseded_together_are_found_at_the_seal(
    cps: Checkpoints, desk: Path
) -> None:
    """Two sessions' writes sealed one after the other, then one checkpoint holding both (and
    a file neither touched): at the last seal's second the desk held both writes."""
    write(desk, 'Memory.md', 'v0\n')
    write(desk, 'notes/other.md', 'untouched\n')
    cps.snapshot('start')
    next_second()
    a = toolcalls.ToolCall('toolu_a', 'claude:Write', Writer('t-a', 'A'))
    b = toolcalls.ToolCall('toolu_b', 'claude:Write', Writer('t-b', 'B'))
    toolcalls.before_write(cps, a, 'before Write Memory.md', ['Memory.md'])
    toolcalls.before_write(cps, b, 'before Write notes/b.md', ['notes/b.md'])
    next_second()
    write(desk, 'Memory.md', 'by A\n')
    toolcalls.after_write(cps.desk_config, a, ['Memory.md'])
    write(desk, 'notes/b.md', 'by B\n')
    toolcalls.after_write(cps.desk_config, b, ['notes/b.md'])
    sealed_at = cps.held_at('0s').checkpoint.created_at
    next_second()
    later = cps.snapshot('later')
    between = cps.held_at(sealed_at)
    assert between.sealed and between.changed_before is None
    assert between.checkpoint.checkpoint_id == later
    assert between.turn in ('t-a', 't-b')


def test_a_declared_write_never_sealed_is_a_change_of_unknown_time(
    cps: Checkpoints, desk: Path
) -> None:
    """The next checkpoint credits the write to the turn, but no seal says when it landed."""
    write(desk, 'Memory.md', 'v1\n')
    write(desk, 'notes/other.md', 'untouched\n')
    cps.snapshot('start')
    next_second()
    declared = cps.snapshot('before write_file Memory.md', paths=['Memory.md'], turn='t-1')
    at = datetime.now().astimezone().isoformat()
    next_second()
    write(desk, 'Memory.md', 'v2\n')
    cps.snapshot('later')
    held = cps.held_at(at)
    assert not held.sealed and held.checkpoint.checkpoint_id == declared
    assert held.changed_before is not None


def commit_on_top(repo_dir: Path, sealed_at: str) -> None:
    """A commit another tool made: the newest checkpoint's files again, claiming a seal."""
    head = git(repo_dir, 'rev-parse', 'HEAD').strip()
    tree = git(repo_dir, 'rev-parse', 'HEAD^{tree}').strip()
    message = f'hand-made\n\n{SEALED_AT}: {sealed_at}\n'
    who = ('-c', 'user.name=Someone', '-c', 'user.email=someone@example.com')
    sha = git(repo_dir, *who, 'commit-tree', tree, '-p', head, '-m', message).strip()
    git(repo_dir, 'update-ref', 'HEAD', sha)


@needs_git
@pytest.mark.parametrize('sealed_at', ['2000-01-01T00:00:00+00:00', '2000-01-01T00:00:00'])
def test_a_seal_time_on_a_commit_changing_nothing_is_no_sealed_write(
    cps: Checkpoints, desk: Path, repo_dir: Path, sealed_at: str
) -> None:
    """A hand-made commit (the repository is untrusted) with the same files as the one before
    it, or a seal time without an offset: the checkpoint before it is what the desk held."""
    write(desk, 'Memory.md', 'v1\n')
    first = cps.snapshot('start')
    next_second()
    at = datetime.now().astimezone().isoformat()
    next_second()
    commit_on_top(repo_dir, sealed_at)
    held = cps.held_at(at)
    assert held.checkpoint.checkpoint_id == first
    assert not held.sealed and held.changed_before is None


def test_a_repository_without_checkpoints_is_named(cps: Checkpoints) -> None:
    with engine.locked(cps.desk_config, light=True):
        pass  # the repository, without a checkpoint
    with pytest.raises(NoCheckpointsError) as caught:
        heldat.held(cps.repository_directory, '0s')
    assert caught.value.repository == str(cps.repository_directory)


def test_an_id_and_a_time_together_are_refused_naming_both(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'v1\n')
    newest = cps.snapshot('start')
    assert newest is not None
    moment = datetime(2025, 3, 14, 14, 30).astimezone()
    for at, shown in (('0s', "'0s'"), (moment, repr(moment))):
        with pytest.raises(InvalidArgumentError) as caught:
            cps.show(newest, 'Memory.md', at=at)
        assert str(caught.value) == (
            f'give a checkpoint id or a time, not both (id {newest!r}, at {shown})'
        )
        expected = at if isinstance(at, str) else moment.isoformat()
        assert (caught.value.name, caught.value.value) == ('at', expected)
    with pytest.raises(InvalidArgumentError) as neither:
        cps.diff()
    assert str(neither.value) == 'give from_id (a checkpoint id) or at (a time)'
    assert (neither.value.name, neither.value.value) == ('from_id', None)
