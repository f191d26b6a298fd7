"""What a rewind says and records: the refusal's words (which files, how many, whether the turn
only may have written them), the subjects of the checkpoints it makes, and the restore it names
when interrupted."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.builders import write
from helpers.faults import armed, lands_a_desk_file
from helpers.reading import tree_of

from trading_checkpoints import Checkpoints
from trading_checkpoints.errors import NoCheckpointsError, TurnConflictError, UnknownTurnError
from trading_checkpoints.ops import engine, rewind, toolcalls
from trading_checkpoints.ops.recovery import RestoreInterrupted
from trading_checkpoints.ops.session import open_reading
from trading_checkpoints.ops.turns import snapshot_in_turn
from trading_checkpoints.store.metadata import Writer

TAIL = (
    '; nothing was changed (force it to put them back as before the turn, the current ones '
    'kept in the pre-snapshot, or keep them as they are)'
)


def agent_write(cps: Checkpoints, session: str, turn: str, path: str, text: str) -> None:
    """A write tool of one session, as the hooks drive it: a snapshot before, a seal after."""
    snapshot_in_turn(cps, turn, f'before write {path}', paths=[path], session=session)
    write(cps.desk_directory, path, text)
    cps.seal()


def overwritten_by_b(cps: Checkpoints, count: int) -> list[str]:
    """Turn a-1 writes ``count`` notes, then turn b-1 writes each of them again."""
    paths = [f'notes/n{number}.md' for number in range(1, count + 1)]
    write(cps.desk_directory, 'Memory.md', 'v0')
    cps.snapshot('start')
    for path in paths:
        agent_write(cps, 'A', 'a-1', path, 'by A')
    for path in paths:
        agent_write(cps, 'B', 'b-1', path, 'by A, then B')
    return paths


@pytest.mark.parametrize('count', [5, 6])
def test_a_conflict_names_the_first_five_files_and_how_many(
    cps: Checkpoints, desk: Path, count: int
) -> None:
    paths = overwritten_by_b(cps, count)
    before = tree_of(desk)
    with pytest.raises(TurnConflictError) as refused:
        cps.restore_turn('a-1')
    shown = ', '.join(paths[:5]) + (' ...' if count > 5 else '')
    assert str(refused.value) == (
        f'refusing to rewind turn a-1: {count} file(s) it wrote were changed since by another '
        f'turn or writer: {shown}{TAIL}'
    )
    assert refused.value.paths == tuple(paths) and tree_of(desk) == before


def test_a_file_the_turn_may_have_written_is_said_to_be_uncertain(
    cps: Checkpoints, desk: Path
) -> None:
    """A write tool the harness reports failed, after the file changed: the turn may have
    written it, or someone at the same time; the refusal says which of its files are unsure."""
    overwritten_by_b(cps, 2)  # two files a-1 wrote for certain and b-1 changed since
    call = toolcalls.ToolCall('toolu_1', 'claude:Write', Writer('a-1', 'A'))
    toolcalls.before_write(cps, call, 'before Write Memory.md', ['Memory.md'])
    write(desk, 'Memory.md', 'maybe by A')
    assert toolcalls.unfinished(cps.desk_config, call, None, ['Memory.md']) is not None
    with pytest.raises(TurnConflictError) as refused:
        cps.restore_turn('a-1')
    assert refused.value.paths == ('Memory.md', 'notes/n1.md', 'notes/n2.md')
    assert str(refused.value) == (
        'refusing to rewind turn a-1: 3 file(s) it may have written were changed by another '
        'turn or writer at the same time, or by a tool call that was denied or failed '
        f'(1 uncertain): Memory.md, notes/n1.md, notes/n2.md{TAIL}'
    )
    forced = cps.restore_turn('a-1', force=True)
    assert (desk / 'Memory.md').read_text() == 'v0' and not (desk / 'notes').exists()
    assert cps.show(forced.before_id, 'Memory.md') == b'maybe by A'


def test_the_rewind_and_its_pre_snapshot_name_the_turn(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'v0')
    cps.snapshot('start')
    agent_write(cps, 'A', 'a-1', 'Memory.md', 'by A')
    result = cps.restore_turn('a-1')
    assert (desk / 'Memory.md').read_text() == 'v0', 'the write only the seal held, undone'
    rewound, pre_snapshot = cps.list(2)
    assert (rewound.checkpoint_id, pre_snapshot.checkpoint_id) == (
        result.restored_id,
        result.before_id,
    )
    assert (rewound.reason, pre_snapshot.reason) == (
        'rewound turn a-1',
        'before rewinding turn a-1',
    )


def test_an_interrupted_rewind_names_the_turns_first_checkpoint(
    cps: Checkpoints, desk: Path
) -> None:
    write(desk, 'Memory.md', 'v0')
    cps.snapshot('start')
    agent_write(cps, 'A', 'a-1', 'Memory.md', 'by A')
    agent_write(cps, 'A', 'a-1', 'notes/a.md', 'a')
    [turn] = cps.turns(None)

    def interrupt(event: str, args: tuple) -> None:
        if lands_a_desk_file(event, args):
            raise KeyboardInterrupt

    with armed(interrupt), pytest.raises(RestoreInterrupted) as interrupted:
        cps.restore_turn('a-1')
    assert interrupted.value.label == turn.first.checkpoint_id
    assert f'interrupted: the restore of {turn.first.checkpoint_id} stopped' in str(
        interrupted.value
    )
    cps.status()  # the next operation completes it
    assert (desk / 'Memory.md').read_text() == 'v0' and not (desk / 'notes/a.md').exists()


def test_a_write_landing_after_a_denied_one_is_rewound_with_its_turn(
    cps: Checkpoints, desk: Path
) -> None:
    """Two writes of one turn announced, the second denied (the seal is the newest checkpoint
    again), then the first lands: not yet sealed, it is the turn's all the same."""
    write(desk, 'Memory.md', 'v0')
    cps.snapshot('start')
    lands = toolcalls.ToolCall('toolu_1', 'claude:Write', Writer('a-1', 'A'))
    denied = toolcalls.ToolCall('toolu_2', 'claude:Write', Writer('a-1', 'A'))
    toolcalls.before_write(cps, lands, 'before Write Memory.md', ['Memory.md'])
    toolcalls.before_write(cps, denied, 'before Write notes/x.md', ['notes/x.md'])
    toolcalls.unfinished(cps.desk_config, denied, None, ['notes/x.md'])
    write(desk, 'Memory.md', 'by A')
    result = cps.restore_turn('a-1')
    assert result.written == ('Memory.md',) and (desk / 'Memory.md').read_text() == 'v0'


def test_another_sessions_write_landing_unsealed_is_never_rewound_with_this_turn(
    cps: Checkpoints, desk: Path
) -> None:
    """Session A's write is at work when session B's turn begins and B's write is denied (the
    seal is B's checkpoint again); A's write lands: the call record says it is A's, so a
    rewind of B's turn leaves it, and a rewind of A's turn puts it back."""
    write(desk, 'Memory.md', 'v0')
    cps.snapshot('start')
    lands = toolcalls.ToolCall('toolu_1', 'claude:Write', Writer('a-1', 'A'))
    denied = toolcalls.ToolCall('toolu_2', 'claude:Write', Writer('b-1', 'B'))
    toolcalls.before_write(cps, lands, 'before Write Memory.md', ['Memory.md'])
    toolcalls.before_write(cps, denied, 'before Write notes/x.md', ['notes/x.md'])
    toolcalls.unfinished(cps.desk_config, denied, None, ['notes/x.md'])
    write(desk, 'Memory.md', 'by A')
    result = cps.restore_turn('b-1')
    assert result.written == () and (desk / 'Memory.md').read_text() == 'by A'
    result = cps.restore_turn('a-1')
    assert result.written == ('Memory.md',) and (desk / 'Memory.md').read_text() == 'v0'


def test_a_write_landing_after_another_sessions_seal_is_uncertain_for_both(
    cps: Checkpoints, desk: Path
) -> None:
    """A's and B's writes of one file at work together; A's lands and is sealed, then the file
    changes again before B's ends: either may have written it last. Each rewind refuses it
    as uncertain; B's, forced, puts back A's sealed version."""
    write(desk, 'Memory.md', 'v0')
    cps.snapshot('start')
    a_call = toolcalls.ToolCall('toolu_1', 'claude:Write', Writer('a-1', 'A'))
    b_call = toolcalls.ToolCall('toolu_2', 'claude:Write', Writer('b-1', 'B'))
    toolcalls.before_write(cps, a_call, 'before Write Memory.md', ['Memory.md'])
    toolcalls.before_write(cps, b_call, 'before Write Memory.md', ['Memory.md'])
    write(desk, 'Memory.md', 'by A')
    toolcalls.after_write(cps.desk_config, a_call, ['Memory.md'])
    write(desk, 'Memory.md', 'by A, then B')
    for turn in ('a-1', 'b-1'):
        with pytest.raises(TurnConflictError) as refused:
            cps.restore_turn(turn, dry_run=True)
        assert refused.value.paths == ('Memory.md',)
        assert '(1 uncertain)' in str(refused.value), turn
    result = cps.restore_turn('b-1', force=True)
    assert result.written == ('Memory.md',) and (desk / 'Memory.md').read_text() == 'by A'


# -- what the plan counts as the turn's ------------------------------------------------------


def test_a_new_file_the_turn_is_writing_is_removed(cps: Checkpoints, desk: Path) -> None:
    """The turn declared a new file and wrote it; its hook after has not run (no seal)."""
    write(desk, 'Memory.md', 'v0')
    cps.snapshot('start')
    snapshot_in_turn(cps, 'a-1', 'before write notes/new.md', paths=['notes/new.md'], session='A')
    write(desk, 'notes/new.md', 'being written')
    result = cps.restore_turn('a-1')
    assert result.deleted == ('notes/new.md',) and not (desk / 'notes/new.md').exists()


def test_a_persons_edit_since_the_turns_next_declaration_is_a_conflict(
    cps: Checkpoints, desk: Path
) -> None:
    """The turn wrote Memory.md, then declared another file (its checkpoint holds the write);
    a person edits Memory.md before the turn writes again: not the turn's."""
    write(desk, 'Memory.md', 'v0')
    cps.snapshot('start')
    agent_write(cps, 'A', 'a-1', 'Memory.md', 'by A')
    snapshot_in_turn(cps, 'a-1', 'before write notes/b.md', paths=['notes/b.md'], session='A')
    write(desk, 'Memory.md', 'by A, then a person')
    write(desk, 'notes/mine.md', 'a person wrote this')  # a file the turn never wrote
    with pytest.raises(TurnConflictError) as refused:
        cps.restore_turn('a-1')
    assert refused.value.paths == ('Memory.md',)
    kept = cps.restore_turn('a-1', on_external='keep')
    assert [path for path, _ in kept.kept] == ['Memory.md'] and kept.deleted == ()
    assert (desk / 'notes/mine.md').read_text() == 'a person wrote this'


def test_a_file_another_turn_wrote_and_someone_changed_after_is_left_alone(
    cps: Checkpoints, desk: Path
) -> None:
    write(desk, 'Memory.md', 'v0')
    cps.snapshot('start')
    agent_write(cps, 'A', 'a-1', 'Memory.md', 'by A')
    agent_write(cps, 'B', 'b-1', 'notes/b.md', 'by B')
    write(desk, 'notes/b.md', 'by B, then a person')  # after B's seal: changed after
    cps.snapshot('later')
    result = cps.restore_turn('a-1')
    assert result.written == ('Memory.md',) and result.deleted == ()
    assert (desk / 'notes/b.md').read_text() == 'by B, then a person'


def test_a_file_the_turn_wrote_that_two_others_may_have_changed_is_a_conflict(
    cps: Checkpoints, desk: Path
) -> None:
    """After the turn's write, B's command and C's write of the same file were at work together
    when it changed: either may have; the turn's rewind refuses it."""
    write(desk, 'Memory.md', 'v0')
    cps.snapshot('start')
    agent_write(cps, 'A', 'a-1', 'Memory.md', 'by A')
    shell = toolcalls.ToolCall('toolu_b', 'claude:Bash', Writer('b-1', 'B'))
    other = toolcalls.ToolCall('toolu_c', 'claude:Write', Writer('c-1', 'C'))
    toolcalls.before_shell(cps.desk_config, shell, 'before Bash: edit')
    toolcalls.before_write(cps, other, 'before Write Memory.md', ['Memory.md'])
    write(desk, 'Memory.md', 'by B or C')
    toolcalls.after_shell(cps.desk_config, shell, 'after Bash: edit')
    with pytest.raises(TurnConflictError) as refused:
        cps.restore_turn('a-1')
    assert refused.value.paths == ('Memory.md',)
    assert 'it wrote were changed since' in str(refused.value), 'not uncertain for a-1'


def test_a_plan_without_checkpoints_or_without_the_turn_is_refused(cps: Checkpoints) -> None:
    """The verb checks both before it takes the lock; the plan checks again under it."""
    with engine.locked(cps.desk_config, light=True):
        pass  # the repository, without a checkpoint
    with open_reading(cps.desk_config) as session:
        assert session is not None
        with pytest.raises(NoCheckpointsError) as none:
            rewind.plan(session, 'a-1', {}, ())
        path = session.repo.path
    assert str(none.value) == f'no checkpoints yet in {path}'
    assert none.value.repository == str(path)
    write(cps.desk_directory, 'Memory.md', 'v0')
    cps.snapshot('start')
    with open_reading(cps.desk_config) as session:
        assert session is not None
        with pytest.raises(UnknownTurnError) as unknown:
            rewind.plan(session, 'a-1', {}, ())
    assert str(unknown.value) == f"no turn 'a-1' in {path} (`checkpoints turns` lists them)"
    assert unknown.value.turn == 'a-1'


def test_a_turn_whose_first_checkpoint_is_its_commands_capture_puts_back_what_it_changed(
    cps: Checkpoints, desk: Path
) -> None:
    """The turn's command found the desk unchanged (no checkpoint before it), so the turn's
    first checkpoint is the capture of what the command changed: measured from the one before."""
    write(desk, 'Memory.md', 'v0')
    write(desk, 'notes/other.md', 'untouched')
    cps.snapshot('start')
    shell = toolcalls.ToolCall('toolu_1', 'claude:Bash', Writer('a-1', 'A'))
    assert toolcalls.before_shell(cps.desk_config, shell, 'before Bash: edit') is None
    write(desk, 'Memory.md', 'by the command')
    toolcalls.after_shell(cps.desk_config, shell, 'after Bash: edit')
    result = cps.restore_turn('a-1')
    assert result.written == ('Memory.md',) and result.deleted == ()
    assert tree_of(desk) == {
        'Memory.md': ('-', b'v0'),
        'notes': 'dir',
        'notes/other.md': ('-', b'untouched'),
    }


def test_a_persons_edit_after_a_calls_sealed_write_is_a_conflict(
    cps: Checkpoints, desk: Path
) -> None:
    """The call record says A's write ended with what it left; a person changed the file
    after: A wrote it, someone changed it after, so A's rewind refuses it."""
    write(desk, 'Memory.md', 'v0')
    cps.snapshot('start')
    call = toolcalls.ToolCall('toolu_1', 'claude:Write', Writer('a-1', 'A'))
    toolcalls.before_write(cps, call, 'before Write Memory.md', ['Memory.md'])
    write(desk, 'Memory.md', 'by A')
    toolcalls.after_write(cps.desk_config, call, ['Memory.md'])
    write(desk, 'Memory.md', 'by A, then a person')
    with pytest.raises(TurnConflictError) as refused:
        cps.restore_turn('a-1')
    assert refused.value.paths == ('Memory.md',)
    assert 'it wrote were changed since' in str(refused.value)


def test_a_checkpoint_without_a_record_after_a_capture_credits_no_turn(
    cps: Checkpoints, desk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """History written without records (an older version): a checkpoint's changes are the turn's
    of the checkpoint before it only when that one was taken before a turn's write, not after
    its command (a capture)."""
    from trading_checkpoints.ops import snapshot as snapshots

    write(desk, 'Memory.md', 'v0')
    cps.snapshot('start')
    snapshot_in_turn(cps, 'a-1', 'before write Memory.md', paths=['Memory.md'], session='A')
    monkeypatch.setattr(snapshots, 'writes', lambda *args: lambda changed: [])
    shell = toolcalls.ToolCall('toolu_1', 'claude:Bash', Writer('a-1', 'A'))
    toolcalls.before_shell(cps.desk_config, shell, 'before Bash: edit')
    write(desk, 'Memory.md', 'by A')
    toolcalls.after_shell(cps.desk_config, shell, 'after Bash: edit')
    write(desk, 'Memory.md', 'by A, then a person')
    cps.snapshot('later')
    monkeypatch.undo()
    with pytest.raises(TurnConflictError) as refused:
        cps.restore_turn('a-1')
    assert refused.value.paths == ('Memory.md',)
