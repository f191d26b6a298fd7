"""undo()/redo(): walking back one agent step at a time, and forth again."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from helpers.builders import write
from helpers.gitcli import git, needs_git
from helpers.reading import tree_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trading_checkpoints import Checkpoints, NothingToUndoError
from trading_checkpoints.errors import CheckpointError


def agent_write(cps: Checkpoints, desk: Path, path: str, content: str) -> str | None:
    """An agent's write tool: snapshot (declaring the path), then write."""
    checkpoint_id = cps.snapshot(f'before write_file {path}', tool='write_file', paths=[path])
    write(desk, path, content)
    return checkpoint_id


def state(desk: Path) -> dict[str, object]:
    return tree_of(desk)


@pytest.fixture
def session(cps: Checkpoints, desk: Path) -> list[dict[str, object]]:
    """Three writes; returns the desk state before each write and after the last."""
    write(desk, 'Memory.md', 'start\n')
    states = [state(desk)]
    agent_write(cps, desk, 'notes/a.md', 'w1\n')
    states.append(state(desk))
    agent_write(cps, desk, 'Memory.md', 'w2\n')
    states.append(state(desk))
    agent_write(cps, desk, 'notes/a.md', 'w3\n')
    states.append(state(desk))
    return states


def test_three_undos_undo_the_last_three_writes(
    cps: Checkpoints, desk: Path, session: list
) -> None:
    for expected in reversed(session[:-1]):
        result = cps.undo()
        assert result.action == 'undo'
        assert state(desk) == expected
    with pytest.raises(NothingToUndoError, match='nothing left to undo'):
        cps.undo()
    assert state(desk) == session[0]


def test_redo_reverses_undos_in_order_then_stops(
    cps: Checkpoints, desk: Path, session: list
) -> None:
    cps.undo()
    cps.undo()
    cps.undo()
    for expected in session[1:]:
        result = cps.redo()
        assert result.action == 'redo'
        assert state(desk) == expected
    with pytest.raises(NothingToUndoError, match='nothing to redo'):
        cps.redo()


def test_undo_after_redo_walks_back_again(cps: Checkpoints, desk: Path, session: list) -> None:
    cps.undo()
    cps.undo()
    assert state(desk) == session[1]
    cps.redo()
    assert state(desk) == session[2]
    cps.undo()
    assert state(desk) == session[1]
    cps.undo()
    assert state(desk) == session[0]


def test_new_writes_after_an_undo_clear_the_redo_chain(
    cps: Checkpoints, desk: Path, session: list
) -> None:
    cps.undo()
    assert state(desk) == session[2]
    agent_write(cps, desk, 'notes/b.md', 'new branch\n')
    after_new_write = state(desk)
    # The new write touches a file the redo would put back: redo refuses rather than
    # overwrite it, and forced it keeps the write in its pre-snapshot.
    with pytest.raises(CheckpointError, match='notes/b.md'):
        cps.redo()
    assert state(desk) == after_new_write
    # Undo now undoes the new write, not the older ones.
    cps.undo()
    assert state(desk) == session[2]
    cps.redo()
    assert state(desk) == after_new_write
    # A snapshot taken after the new write ends the chain for good.
    agent_write(cps, desk, 'notes/c.md', 'another\n')
    cps.snapshot('after')
    with pytest.raises(NothingToUndoError, match='nothing to redo'):
        cps.redo()


def test_interleaved_undo_redo_write_chain(cps: Checkpoints, desk: Path, session: list) -> None:
    cps.undo()  # back before w3
    cps.undo()  # back before w2
    cps.redo()  # w2 again
    assert state(desk) == session[2]
    agent_write(cps, desk, 'Memory.md', 'w4\n')
    with_w4 = state(desk)
    cps.undo()  # undoes w4
    assert state(desk) == session[2]
    cps.undo()  # then w2
    assert state(desk) == session[1]
    cps.undo()  # then w1
    assert state(desk) == session[0]
    cps.redo()
    cps.redo()
    cps.redo()
    assert state(desk) == with_w4
    with pytest.raises(NothingToUndoError):
        cps.redo()


def test_undo_right_after_a_restore_undoes_that_restore(
    cps: Checkpoints, desk: Path, session: list
) -> None:
    first = cps.list()[-1].checkpoint_id
    cps.restore(first)
    assert state(desk) == session[0]
    cps.undo()
    assert state(desk) == session[3]
    cps.undo()
    assert state(desk) == session[2]


def test_nothing_is_lost_every_undo_is_a_restore(
    cps: Checkpoints, desk: Path, session: list
) -> None:
    result = cps.undo()
    # The write that was undone is in the pre-snapshot, and can be restored directly.
    assert cps.show(result.before_id, 'notes/a.md') == b'w3\n'
    cps.restore(result.before_id)
    assert state(desk) == session[3]


def test_undo_dry_run_changes_nothing(cps: Checkpoints, desk: Path, session: list) -> None:
    count = len(cps.list())
    plan = cps.undo(dry_run=True)
    assert plan.dry_run and plan.written == ('notes/a.md',)
    assert state(desk) == session[3] and len(cps.list()) == count


def test_undo_skips_checkpoints_equal_to_the_desk(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'a\n')
    cps.snapshot('one')
    write(desk, 'Memory.md', 'b\n')
    cps.snapshot('two')  # the desk still equals this one: nothing to undo there
    cps.undo()
    assert (desk / 'Memory.md').read_text() == 'a\n'


def test_undo_without_checkpoints(cps: Checkpoints, desk: Path) -> None:
    with pytest.raises(CheckpointError, match='no checkpoints yet'):
        cps.undo()
    with pytest.raises(CheckpointError, match='no checkpoints yet'):
        cps.redo()
    write(desk, 'Memory.md', 'a\n')
    cps.snapshot('only')
    with pytest.raises(NothingToUndoError):
        cps.undo()
    with pytest.raises(NothingToUndoError):
        cps.redo()


def test_state_lives_in_the_repository(cps: Checkpoints, desk: Path, session: list) -> None:
    cps.undo()
    fresh = Checkpoints(cps.repository_directory, desk)
    fresh.undo()
    assert state(desk) == session[1]
    Checkpoints(cps.repository_directory, desk).redo()
    assert state(desk) == session[2]


@needs_git
def test_git_accepts_the_repository_after_undo_redo_and_partial_restore(
    cps: Checkpoints, desk: Path, session: list
) -> None:
    cps.undo()
    cps.redo()
    cps.restore(cps.list()[-1].checkpoint_id, paths=['notes'])
    cps.seal()
    git(cps.repository_directory, 'fsck', '--strict', '--no-dangling')
    trailers = git(cps.repository_directory, 'log', '--format=%(trailers:key=Checkpoint-Action)')
    assert 'Checkpoint-Action: undo' in trailers and 'Checkpoint-Action: redo' in trailers


def test_write_after_undoing_everything_then_undo_goes_back_to_that_state(
    cps: Checkpoints, desk: Path, session: list
) -> None:
    cps.undo()
    cps.undo()
    cps.undo()
    assert state(desk) == session[0]
    agent_write(cps, desk, 'notes/z.md', 'new start\n')
    cps.undo()
    assert state(desk) == session[0]  # not some older branch state
    with pytest.raises(NothingToUndoError):
        cps.undo()
    cps.redo()
    assert (desk / 'notes/z.md').read_text() == 'new start\n'


def test_write_after_a_restore_then_undo_returns_to_the_restored_state(
    cps: Checkpoints, desk: Path, session: list
) -> None:
    cps.restore(cps.list()[-1].checkpoint_id)
    assert state(desk) == session[0]
    agent_write(cps, desk, 'Memory.md', 'after restore\n')
    cps.undo()
    assert state(desk) == session[0]
    cps.undo()  # then the restore itself
    assert state(desk) == session[3]


# -- undo/redo against a model: an editor's linear history with a cursor --------------------

_CONTENTS = st.sampled_from(['a\n', 'b\n', 'c\n'])
_OP = st.one_of(
    st.tuples(st.just('write'), st.sampled_from(['Memory.md', 'notes/a.md']), _CONTENTS),
    st.tuples(st.just('undo')),
    st.tuples(st.just('redo')),
    st.tuples(st.just('snapshot')),
    st.tuples(st.just('restore-first')),
)


def check_against_model(ops: list[tuple]) -> None:
    """Writes, snapshots, restores, undos and redos behave like an editor's undo history."""
    with tempfile.TemporaryDirectory() as folder:
        desk = Path(folder) / 'desk'
        write(desk, 'Memory.md', 'start\n')
        cps = Checkpoints(Path(folder) / 'repo.git', desk)
        states = [state(desk)]
        cursor = 0
        first: str | None = None

        def edit(now: dict) -> None:
            nonlocal states, cursor
            if now != states[cursor]:
                states = [*states[: cursor + 1], now]
                cursor += 1

        for op in ops:
            if op[0] == 'write':
                taken = agent_write(cps, desk, op[1], op[2])
                first = first or taken
                edit(state(desk))
            elif op[0] == 'snapshot':
                first = first or cps.snapshot('explicit')
            elif op[0] == 'restore-first':
                if first is None:
                    with pytest.raises(CheckpointError):
                        cps.restore(first)
                    continue
                cps.restore(first)
                edit(state(desk))
            elif op[0] == 'undo':
                if cursor == 0:
                    with pytest.raises(CheckpointError):
                        cps.undo()
                else:
                    cps.undo()
                    cursor -= 1
            else:
                if cursor == len(states) - 1:
                    with pytest.raises(CheckpointError):
                        cps.redo()
                else:
                    cps.redo()
                    cursor += 1
            assert state(desk) == states[cursor], (op, cursor, len(states))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(_OP, max_size=12))
def test_undo_redo_follow_an_editor_history_model(ops: list[tuple]) -> None:
    check_against_model(ops)


@pytest.mark.slow
@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(_OP, max_size=30))
def test_undo_redo_model_long_runs(ops: list[tuple]) -> None:
    check_against_model(ops)


def test_concurrent_undos_are_serialised(cps: Checkpoints, desk: Path, session: list) -> None:
    """Two threads undoing at once: the lock makes it two undos in a row, not one twice."""
    import threading

    errors: list[BaseException] = []

    def undo_once() -> None:
        try:
            Checkpoints(cps.repository_directory, desk).undo()
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=undo_once) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert state(desk) == session[1]
