"""seal() and external-edit detection: the agent's own changes told apart from later edits."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers.builders import write
from helpers.reading import tree_of

from trading_checkpoints import CheckpointError, Checkpoints, ExternalChangesError


def test_status_before_any_checkpoint(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'a')
    status = cps.status()
    assert status.newest_id is None and status.basis == 'none'
    assert [(c.path, c.kind) for c in status.changes] == [('Memory.md', 'added')]


def test_seal_makes_later_edits_external(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'a')
    first = cps.snapshot('before write_file notes/plan.md')
    write(desk, 'notes/plan.md', 'agent wrote this')
    cps.seal()
    status = cps.status()
    assert status.newest_id == first and status.basis == 'sealed'
    assert [c.path for c in status.changes] == ['notes/plan.md']
    assert status.external == ()
    write(desk, 'Memory.md', 'a person edited this')
    status = cps.status()
    assert status.external == ('Memory.md',)
    assert {c.path for c in status.changes} == {'Memory.md', 'notes/plan.md'}


def test_detection_is_by_content_not_mtime(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'same size 1')
    cps.snapshot('one')
    cps.seal()
    st = os.stat(desk / 'Memory.md')
    write(desk, 'Memory.md', 'same size 2')
    os.utime(desk / 'Memory.md', ns=(st.st_atime_ns, st.st_mtime_ns))
    assert cps.status().external == ('Memory.md',)
    # Touching without changing content is not an edit.
    write(desk, 'Memory.md', 'same size 1')
    os.utime(desk / 'Memory.md', ns=(st.st_atime_ns + 10**9, st.st_mtime_ns + 10**9))
    assert cps.status().external == ()


def test_declared_paths_attribute_changes_without_a_seal(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'a')
    cps.snapshot('before write_file notes', tool='write_file', paths=['notes'])
    write(desk, 'notes/x.md', 'agent')
    assert cps.status().basis == 'declared' and cps.status().external == ()
    write(desk, 'Memory.md', 'someone else')
    assert cps.status().external == ('Memory.md',)


def test_unknown_when_nothing_was_sealed_or_declared(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'a')
    cps.snapshot('plain')
    write(desk, 'Memory.md', 'b')
    status = cps.status()
    assert status.basis == 'unknown' and status.external == ()
    assert [c.path for c in status.changes] == ['Memory.md']


def test_next_snapshot_reports_external_edits_and_supersedes_the_seal(
    cps: Checkpoints, desk: Path
) -> None:
    write(desk, 'Memory.md', 'a')
    cps.snapshot('before write 1', paths=['notes/a.md'])
    write(desk, 'notes/a.md', 'agent')
    cps.seal()
    write(desk, 'Memory.md', 'person')
    result = cps.snapshot_with_result('before write 2', paths=['notes/b.md'])
    assert result.checkpoint_id is not None
    assert result.external == ('Memory.md',) and result.basis == 'sealed'
    # The new checkpoint holds both: nothing is lost.
    assert cps.show(result.checkpoint_id, 'Memory.md') == b'person'
    assert cps.show(result.checkpoint_id, 'notes/a.md') == b'agent'
    # The seal no longer holds; the new checkpoint's declared path does.
    write(desk, 'notes/b.md', 'agent again')
    assert cps.status().basis == 'declared' and cps.status().external == ()


def test_unchanged_snapshot_still_announces_the_declared_paths(
    cps: Checkpoints, desk: Path
) -> None:
    write(desk, 'Memory.md', 'a')
    first = cps.snapshot('first', paths=['Memory.md'])
    cps.seal()
    assert cps.snapshot('before write notes/x.md', paths=['notes/x.md']) is None
    write(desk, 'notes/x.md', 'agent')
    assert cps.status().external == ()
    write(desk, 'Memory.md', 'person')
    assert cps.status().external == ('Memory.md',)
    assert cps.list()[0].checkpoint_id == first  # no checkpoint was added


def test_restore_reports_and_keeps_overwritten_external_edits(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'a')
    write(desk, 'notes/x.md', 'x1')
    first = cps.snapshot('first')
    write(desk, 'notes/x.md', 'x2')
    second = cps.snapshot('second')
    assert first and second
    cps.restore(first)  # a restore seals the state it wrote
    write(desk, 'Memory.md', 'person')
    assert cps.status().external == ('Memory.md',)
    plan = cps.restore(second, paths=['notes'], dry_run=True)
    assert plan.written == ('notes/x.md',) and plan.external == ()  # Memory.md not touched
    assert cps.restore(second, dry_run=True).external == ('Memory.md',)
    plan = cps.restore(first, paths=['Memory.md'], dry_run=True)
    assert plan.external == ('Memory.md',)
    result = cps.restore_with_result(first, paths=['Memory.md'])
    assert result.external == ('Memory.md',)
    assert (desk / 'Memory.md').read_text() == 'a'
    assert cps.show(result.before_id, 'Memory.md') == b'person'


def test_refuse_option_refuses_and_changes_nothing(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'a')
    first = cps.snapshot('first')
    assert first
    write(desk, 'Memory.md', 'agent')
    cps.seal()
    write(desk, 'Memory.md', 'person')
    desk_before, count = tree_of(desk), len(cps.list())
    with pytest.raises(ExternalChangesError, match='Memory.md') as raised:
        cps.restore(first, on_external='refuse')
    assert raised.value.paths == ('Memory.md',)
    assert tree_of(desk) == desk_before and len(cps.list()) == count
    with pytest.raises(CheckpointError, match='on_external'):
        cps.restore(first, on_external='sometimes')


def test_non_forced_restore_reverts_the_agent_and_keeps_the_person(
    cps: Checkpoints, desk: Path
) -> None:
    """The common flows: the agent writes through a guard; a person then edits a file the
    agent wrote, recreates a file the agent deleted, and edits an unrelated one."""
    write(desk, 'Memory.md', 'start')
    write(desk, 'notes/gone.md', 'to be deleted by the agent')
    first = cps.snapshot('first')
    with cps.guard('write_file notes/a.md'):
        write(desk, 'notes/a.md', 'agent created')
    with cps.guard('write_file notes/b.md'):
        write(desk, 'notes/b.md', 'agent created, then edited by a person')
    with cps.guard('delete notes/gone.md'):
        (desk / 'notes/gone.md').unlink()
    write(desk, 'notes/b.md', "the person's edit")
    write(desk, 'notes/gone.md', 'recreated by the person')
    write(desk, 'Memory.md', "the person's memory")
    result = cps.restore_with_result(first, force=False)
    assert result.attribution == 'sealed'
    assert not (desk / 'notes/a.md').exists(), 'the agent-only file is reverted'
    assert (desk / 'notes/b.md').read_text() == "the person's edit"
    assert (desk / 'notes/gone.md').read_text() == 'recreated by the person'
    assert (desk / 'Memory.md').read_text() == "the person's memory"
    assert dict(result.kept) == {
        'Memory.md': 'changed outside the agent',
        'notes/b.md': 'changed outside the agent',
        'notes/gone.md': 'changed outside the agent',
    }
    assert result.deleted == ('notes/a.md',) and result.external == ()
    # force (the default) makes everything match and says what it overwrote.
    result = cps.restore_with_result(first)
    assert result.external == ('Memory.md', 'notes/b.md', 'notes/gone.md')
    assert tree_of(desk) == {
        'Memory.md': ('-', b'start'),
        'notes': 'dir',
        'notes/gone.md': ('-', b'to be deleted by the agent'),
    }


def test_non_forced_restore_without_a_record_restores_all_and_says_so(
    cps: Checkpoints, desk: Path
) -> None:
    write(desk, 'Memory.md', 'start')
    first = cps.snapshot('first')
    write(desk, 'Memory.md', 'who wrote this? nothing recorded it')
    result = cps.restore_with_result(first, force=False)
    assert result.attribution == 'unknown' and result.kept == ()
    assert (desk / 'Memory.md').read_text() == 'start'


def test_undo_reverts_the_agents_step_and_keeps_unrelated_outside_edits(
    cps: Checkpoints, desk: Path
) -> None:
    write(desk, 'Memory.md', 'start')
    cps.snapshot('before write_file notes/a.md', paths=['notes/a.md'])
    write(desk, 'notes/a.md', 'agent')
    write(desk, 'Memory.md', 'a person edited this meanwhile')
    result = cps.undo()
    assert not (desk / 'notes/a.md').exists()
    assert (desk / 'Memory.md').read_text() == 'a person edited this meanwhile'
    assert dict(result.kept) == {'Memory.md': 'changed outside the agent'}
    # The person's edit still counts as made outside the agent after the undo.
    assert cps.status().external == ('Memory.md',)


def test_forced_undo_overwrites_outside_edits_and_keeps_them_in_the_pre_snapshot(
    cps: Checkpoints, desk: Path
) -> None:
    write(desk, 'Memory.md', 'start')
    cps.snapshot('before write_file notes/a.md', paths=['notes/a.md'])
    write(desk, 'notes/a.md', 'agent')
    write(desk, 'Memory.md', 'a person edited this meanwhile')
    planned = cps.undo(dry_run=True)
    assert dict(planned.kept) == {'Memory.md': 'changed outside the agent'}
    result = cps.undo(force=True)
    assert result.external == ('Memory.md',)
    assert (desk / 'Memory.md').read_text() == 'start'
    assert not (desk / 'notes/a.md').exists()
    assert cps.show(result.before_id, 'Memory.md') == b'a person edited this meanwhile'
    cps.redo(force=True)
    assert (desk / 'Memory.md').read_text() == 'a person edited this meanwhile'


def test_undo_refuses_where_a_person_changed_what_the_step_wrote(
    cps: Checkpoints, desk: Path
) -> None:
    write(desk, 'Memory.md', 'start')
    cps.snapshot('start')
    with cps.guard('write_file notes/a.md'):
        write(desk, 'notes/a.md', 'agent')
    write(desk, 'notes/a.md', 'the person improved it')
    desk_before, count = tree_of(desk), len(cps.list())
    with pytest.raises(ExternalChangesError, match='notes/a.md') as raised:
        cps.undo()
    assert raised.value.paths == ('notes/a.md',)
    assert tree_of(desk) == desk_before and len(cps.list()) == count
    kept = cps.undo(keep_external=True)
    assert (desk / 'notes/a.md').read_text() == 'the person improved it'
    assert dict(kept.kept) == {'notes/a.md': 'changed outside the agent'}
    with pytest.raises(CheckpointError, match='not both'):
        cps.undo(force=True, keep_external=True)


def test_undo_after_an_undo_keeps_edits_made_in_between(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'start')
    cps.snapshot('s1', paths=['notes/a.md'])
    write(desk, 'notes/a.md', 'w1')
    cps.snapshot('s2', paths=['notes/a.md'])
    write(desk, 'notes/a.md', 'w2')
    cps.undo()
    write(desk, 'memory/person.md', 'added by hand')
    assert cps.status().external == ('memory/person.md',)
    result = cps.undo()
    assert (desk / 'memory/person.md').read_text() == 'added by hand'
    assert ('memory/person.md', 'changed outside the agent') in result.kept
    assert not (desk / 'notes/a.md').exists()


def test_declared_paths_may_be_absolute_or_dotted(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'a')
    cps.snapshot('before', paths=[str(desk / 'notes' / 'x.md'), './memory/'])
    write(desk, 'notes/x.md', 'agent')
    write(desk, 'memory/y.md', 'agent')
    status = cps.status()
    assert status.basis == 'declared' and status.external == ()
    write(desk, 'Memory.md', 'person')
    assert cps.status().external == ('Memory.md',)


def test_paths_declared_outside_the_desk_attribute_nothing(
    cps: Checkpoints, desk: Path, tmp_path: Path
) -> None:
    write(desk, 'Memory.md', 'a')
    cps.snapshot('before', paths=[str(tmp_path / 'elsewhere.md')])
    write(desk, 'Memory.md', 'b')
    assert cps.status().basis == 'unknown'
