"""Rewinding one turn: only the paths it wrote, whoever else writes the desk meanwhile."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.builders import write
from helpers.gitcli import git, needs_git
from helpers.reading import tree_of

from trading_checkpoints import Checkpoints
from trading_checkpoints.errors import OverSizeLimitError, TurnConflictError, UnknownTurnError
from trading_checkpoints.ops import snapshot as snapshots
from trading_checkpoints.ops import toolcalls
from trading_checkpoints.ops.toolcalls import ToolCall
from trading_checkpoints.ops.turns import snapshot_in_turn
from trading_checkpoints.store import metadata
from trading_checkpoints.store.metadata import Writer


def agent_write(cps: Checkpoints, session: str, turn: str, path: str, text: str) -> None:
    """A write tool of one session, as the hooks drive it: a snapshot before, a seal after."""
    snapshot_in_turn(cps, turn, f'before write {path}', paths=[path], session=session)
    write(cps.desk_directory, path, text)
    cps.seal()


def writes(cps: Checkpoints, *steps: tuple[str, str, str, str]) -> None:
    """Memory.md at v0 and a checkpoint of it, then each session's write in turn."""
    write(cps.desk_directory, 'Memory.md', 'v0')
    cps.snapshot('start')
    for session, turn, path, text in steps:
        agent_write(cps, session, turn, path, text)


def test_two_sessions_interleaving_each_rewind_their_own(cps: Checkpoints, desk: Path) -> None:
    writes(
        cps,
        ('A', 'a-1', 'notes/a.md', 'a1'),
        ('B', 'b-1', 'notes/b.md', 'b1'),
        ('A', 'a-1', 'Memory.md', 'v1 by A'),
        ('B', 'b-1', 'notes/b.md', 'b2'),
        ('A', 'a-1', 'notes/a.md', 'a2'),
    )

    result = cps.restore_turn('a-1')
    assert sorted(result.written) == ['Memory.md'] and result.deleted == ('notes/a.md',)
    assert tree_of(desk) == {
        'Memory.md': ('-', b'v0'),
        'notes': 'dir',
        'notes/b.md': ('-', b'b2'),
    }, "A's answer is gone, B's stays"
    cps.restore(result.before_id)
    result = cps.restore_turn('b-1')
    assert result.deleted == ('notes/b.md',) and result.written == ()
    assert (desk / 'notes/a.md').read_text() == 'a2' and (desk / 'Memory.md').read_text() == (
        'v1 by A'
    )


def test_a_file_another_session_changed_since_is_a_conflict(cps: Checkpoints, desk: Path) -> None:
    writes(
        cps,
        ('A', 'a-1', 'Memory.md', 'by A'),
        ('A', 'a-1', 'notes/a.md', 'a'),
        ('B', 'b-1', 'Memory.md', 'by A, then B'),
    )
    before, history = tree_of(desk), cps.list(None)

    with pytest.raises(TurnConflictError) as planned:  # a dry run refuses as the run does
        cps.restore_turn('a-1', dry_run=True)
    assert planned.value.paths == ('Memory.md',), 'a dry run names the conflicts'
    assert str(planned.value).startswith('would refuse to rewind turn a-1')
    with pytest.raises(TurnConflictError) as refused:
        cps.restore_turn('a-1')
    assert refused.value.paths == ('Memory.md',) and refused.value.turn == 'a-1'
    assert tree_of(desk) == before and cps.list(None) == history, 'nothing was changed'

    kept = cps.restore_turn('a-1', on_external='keep')
    assert kept.deleted == ('notes/a.md',) and [p for p, _ in kept.kept] == ['Memory.md']
    assert (desk / 'Memory.md').read_text() == 'by A, then B'
    cps.restore(kept.before_id)
    forced = cps.restore_turn('a-1', force=True)
    assert (desk / 'Memory.md').read_text() == 'v0' and forced.external == ('Memory.md',)
    assert cps.show(forced.before_id, 'Memory.md') == b'by A, then B'


def test_a_persons_edit_after_the_turn_is_kept_or_refused(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'v0')
    write(desk, 'notes/plan.md', 'plan 0')
    cps.snapshot('start')
    agent_write(cps, 'A', 'a-1', 'Memory.md', 'by A')
    agent_write(cps, 'A', 'a-1', 'notes/plan.md', 'plan by A')
    write(desk, 'notes/plan.md', 'plan by A, edited by a person')  # after the seal
    write(desk, 'notes/mine.md', 'a person wrote this')
    with pytest.raises(TurnConflictError) as refused:
        cps.restore_turn('a-1')
    assert refused.value.paths == ('notes/plan.md',)
    result = cps.restore_turn('a-1', on_external='keep')
    assert result.written == ('Memory.md',) and (desk / 'Memory.md').read_text() == 'v0'
    assert (desk / 'notes/plan.md').read_text() == 'plan by A, edited by a person'
    assert (desk / 'notes/mine.md').exists(), 'what the turn never wrote is never touched'


def test_a_restores_pre_snapshot_records_who_wrote_what(cps: Checkpoints, desk: Path) -> None:
    """A person's edit saved by a restore's pre-snapshot is not the turn's."""
    writes(cps, ('A', 'a-1', 'notes/a.md', 'a'), ('A', 'a-1', 'Memory.md', 'by A'))
    start = cps.list(None)[-1].checkpoint_id
    write(desk, 'Memory.md', 'by A, then a person')
    write(desk, 'notes/other.md', 'other')
    cps.restore(start, paths=['notes/other.md'])  # its pre-snapshot holds the person's edit
    with pytest.raises(TurnConflictError) as refused:
        cps.restore_turn('a-1')
    assert refused.value.paths == ('Memory.md',)


def test_a_snapshot_records_a_persons_edit_over_the_turns_write(
    cps: Checkpoints, desk: Path
) -> None:
    writes(cps, ('A', 'a-1', 'Memory.md', 'by A'))
    write(desk, 'Memory.md', 'by A, then a person')  # after A's seal
    snapshot_in_turn(cps, 'b-1', 'before write notes/b.md', paths=['notes/b.md'], session='B')
    from trading_checkpoints.store.repo import ShadowRepo

    repo = ShadowRepo.open(cps.repository_directory)
    assert repo is not None
    record = metadata.written(repo.commit_info(repo.head()).message)
    repo.close()
    assert record is not None and record.writer.turn == 'a-1'
    assert record.paths == {'Memory.md'} and record.changed_after == {'Memory.md'}
    with pytest.raises(TurnConflictError) as refused:
        cps.restore_turn('a-1')
    assert refused.value.paths == ('Memory.md',)
    forced = cps.restore_turn('a-1', force=True)
    assert (desk / 'Memory.md').read_text() == 'v0' and forced.external == ('Memory.md',)


def test_a_rewind_of_a_rewind_is_not_a_conflict(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'v0')
    cps.snapshot('start')
    agent_write(cps, 'A', 'a-1', 'Memory.md', 'v1')
    agent_write(cps, 'A', 'a-1', 'notes/a.md', 'a')
    first = cps.restore_turn('a-1')
    cps.restore(first.before_id)  # undo the rewind: the turn's files are back
    again = cps.restore_turn('a-1')
    assert sorted(again.written + again.deleted) == ['Memory.md', 'notes/a.md']
    assert (desk / 'Memory.md').read_text() == 'v0' and not (desk / 'notes/a.md').exists()


def test_checkpoints_record_who_wrote_what(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'v0')
    cps.snapshot('start')
    agent_write(cps, 'A', 'a-1', 'Memory.md', 'by A')
    write(desk, 'notes/x.md', 'a person')  # after A's seal: not A's
    snapshot_in_turn(cps, 'b-1', 'before write notes/b.md', paths=['notes/b.md'], session='B')
    [info] = [c for c in cps.list(1)]
    from trading_checkpoints.store.repo import ShadowRepo

    repo = ShadowRepo.open(cps.repository_directory)
    assert repo is not None
    message = repo.commit_info(repo.head()).message
    repo.close()
    record = metadata.written(message)
    assert record is not None and info.turn == 'b-1'
    assert record.writer == metadata.Writer('a-1', 'A') and record.paths == {'Memory.md'}
    assert metadata.parse(message).session == 'B'


@needs_git
def test_the_record_is_plain_git_trailers(cps: Checkpoints, desk: Path, repo_dir: Path) -> None:
    write(desk, 'Memory.md', 'v0')
    cps.snapshot('start')
    agent_write(cps, 'A', 'a-1', 'Memory.md', 'by A')
    cps.snapshot('after')
    out = git(repo_dir, 'log', '-1', '--format=%(trailers:only,unfold)')
    assert 'Checkpoint-Wrote-By: a-1\n' in out and 'Checkpoint-Wrote-Session: A\n' in out
    assert 'Checkpoint-Wrote: Memory.md\n' in out


def test_checkpoints_without_the_record_credit_the_turn_before_them(
    cps: Checkpoints, desk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """History written by a version that recorded no writers: each checkpoint's changes are
    the turn's of the checkpoint before it, on the paths that one declared."""
    monkeypatch.setattr(snapshots, 'writes', lambda *args: lambda changed: [])
    write(desk, 'Memory.md', 'v0')
    cps.snapshot('start')
    agent_write(cps, 'A', 'a-1', 'Memory.md', 'by A')
    write(desk, 'notes/x.md', 'undeclared: no turn')
    agent_write(cps, 'B', 'b-1', 'notes/b.md', 'by B')
    cps.snapshot('end')
    monkeypatch.undo()
    result = cps.restore_turn('a-1')
    assert result.written == ('Memory.md',) and result.deleted == ()
    assert (desk / 'Memory.md').read_text() == 'v0'
    assert (desk / 'notes/x.md').exists() and (desk / 'notes/b.md').exists()


def test_a_turn_whose_start_was_pruned_is_refused_not_guessed(cps: Checkpoints, desk: Path) -> None:
    """Pruning dropped the turn's first checkpoint: the oldest kept one already holds the
    turn's write of Memory.md, and what Memory.md held before the turn went with the pruned
    one. Rewinding refuses with a typed error and changes nothing (it deleted Memory.md,
    which existed before the turn). A turn whose start is still kept rewinds as ever."""
    writes(
        cps,
        ('A', 't-1', 'Memory.md', 'v1 by t-1\n'),
        ('A', 't-1', 'notes/a.md', 'a by t-1\n'),
        ('B', 'u-1', 'notes/b.md', 'b by u-1\n'),
    )
    cps.snapshot('end')
    cps.prune(keep=3)
    before = tree_of(desk)
    with pytest.raises(UnknownTurnError, match='its start was pruned'):
        cps.restore_turn('t-1')
    assert tree_of(desk) == before
    cps.restore_turn('u-1')
    assert not (desk / 'notes/b.md').exists()
    assert (desk / 'Memory.md').read_text() == 'v1 by t-1\n'


def test_a_turn_that_grew_a_file_past_the_size_limit_is_refused(
    workspace: Path, desk: Path
) -> None:
    """A file over the maximum size is never stored (snapshots carry its last entry), so no
    checkpoint holds what the turn wrote there: rewinding the turn refuses, naming it, and
    changes nothing (it left the file as the turn left it and reported success)."""
    write(desk, 'notes/log.md', 'small log\n')
    cps = Checkpoints(workspace / '.checkpoints' / 'main.git', desk, max_file_size=1000)
    cps.snapshot('start')
    one = Writer('t-1', 'A')
    for number, (path, text) in enumerate(
        (('notes/log.md', 'agent output\n' * 400), ('notes/a.md', 'a\n'))
    ):
        call = ToolCall(f'toolu_{number}', 'claude:Write', one)
        toolcalls.before_write(cps, call, f'before Write {path}', [path])
        write(desk, path, text)
        toolcalls.after_write(cps.desk_config, call, [path])
    before = tree_of(desk)
    with pytest.raises(OverSizeLimitError) as refused:
        cps.restore_turn('t-1')
    assert refused.value.path == 'notes/log.md'
    assert tree_of(desk) == before
