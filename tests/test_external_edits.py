"""seal() and external-edit detection: the agent's own changes told apart from later edits."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import tree_of, write

from trading_checkpoints import Checkpoints, ExternalChangesError


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


def test_force_false_refuses_and_changes_nothing(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'a')
    first = cps.snapshot('first')
    assert first
    write(desk, 'Memory.md', 'agent')
    cps.seal()
    write(desk, 'Memory.md', 'person')
    desk_before, count = tree_of(desk), len(cps.list())
    with pytest.raises(ExternalChangesError, match='Memory.md') as raised:
        cps.restore(first, force=False)
    assert raised.value.paths == ('Memory.md',)
    assert tree_of(desk) == desk_before and len(cps.list()) == count


def test_undo_refuses_to_overwrite_external_edits_unless_forced(
    cps: Checkpoints, desk: Path
) -> None:
    write(desk, 'Memory.md', 'start')
    cps.snapshot('before write_file notes/a.md', paths=['notes/a.md'])
    write(desk, 'notes/a.md', 'agent')
    write(desk, 'Memory.md', 'a person edited this meanwhile')
    with pytest.raises(ExternalChangesError, match='Memory.md'):
        cps.undo()
    assert (desk / 'notes/a.md').exists()
    result = cps.undo(force=True)
    assert result.external == ('Memory.md',)
    assert not (desk / 'notes/a.md').exists()
    assert (desk / 'Memory.md').read_text() == 'start'
    # The person's edit is in the pre-snapshot: redo brings it back.
    assert cps.show(result.before_id, 'Memory.md') == b'a person edited this meanwhile'
    cps.redo()
    assert (desk / 'Memory.md').read_text() == 'a person edited this meanwhile'


def test_undo_after_an_undo_notices_edits_made_in_between(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'start')
    cps.snapshot('s1', paths=['notes/a.md'])
    write(desk, 'notes/a.md', 'w1')
    cps.snapshot('s2', paths=['notes/a.md'])
    write(desk, 'notes/a.md', 'w2')
    cps.undo()
    write(desk, 'memory/person.md', 'added by hand')
    assert cps.status().external == ('memory/person.md',)
    with pytest.raises(ExternalChangesError, match='memory/person.md'):
        cps.undo()


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
