"""restore(id=None, paths=..., dry_run=...): default target, partial and dry-run restores."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.builders import write
from helpers.reading import tree_of

from trading_checkpoints import CheckpointError, Checkpoints, RestoreResult


def three_states(cps: Checkpoints, desk: Path) -> tuple[str, str]:
    write(desk, 'Memory.md', 'm1')
    write(desk, 'notes/a.md', 'a1')
    write(desk, 'notes/sub/b.md', 'b1')
    one = cps.snapshot('one')
    write(desk, 'Memory.md', 'm2')
    write(desk, 'notes/a.md', 'a2')
    (desk / 'notes/sub/b.md').unlink()
    write(desk, 'notes/new.md', 'n2')
    two = cps.snapshot('two')
    assert one and two
    return one, two


def test_restore_returns_the_id_of_its_pre_snapshot(cps: Checkpoints, desk: Path) -> None:
    one, two = three_states(cps, desk)
    write(desk, 'Memory.md', 'm3')
    before = cps.restore(one)
    assert isinstance(before, str)
    assert cps.list()[1].checkpoint_id == before
    assert cps.show(before, 'Memory.md') == b'm3'


def _without_memo(files: dict[str, object]) -> dict[str, object]:
    """The repository's files but the packed-commit memo: a cache of commits read (a dry run
    reads the target commit, from a pack), not part of the repository."""
    return {path: value for path, value in files.items() if path != 'checkpoints/commits'}


def test_dry_run_changes_nothing_and_returns_the_plan(cps: Checkpoints, desk: Path) -> None:
    one, two = three_states(cps, desk)
    write(desk, 'Memory.md', 'm3')
    files_before = tree_of(desk)
    repo_before = _without_memo(tree_of(cps.repository_directory))
    plan = cps.restore(one, dry_run=True)
    assert isinstance(plan, RestoreResult) and plan.dry_run
    assert plan.written == ('Memory.md', 'notes/a.md', 'notes/sub/b.md')
    assert plan.created == ('notes/sub/b.md',)
    assert plan.deleted == ('notes/new.md',)
    assert plan.before_id == two and plan.restored_id is None
    assert tree_of(desk) == files_before
    assert _without_memo(tree_of(cps.repository_directory)) == repo_before
    # The real restore then does exactly what the plan said.
    result = cps.restore_with_result(one)
    assert (result.written, result.deleted, result.created) == (
        plan.written,
        plan.deleted,
        plan.created,
    )


def test_no_id_restores_the_newest_checkpoint(cps: Checkpoints, desk: Path) -> None:
    one, two = three_states(cps, desk)
    write(desk, 'Memory.md', 'oops')
    write(desk, 'notes/stray.md', 'stray')
    result = cps.restore_with_result()
    assert result.target_id == two
    assert (desk / 'Memory.md').read_text() == 'm2'
    assert not (desk / 'notes/stray.md').exists()
    # The discarded changes are in the pre-snapshot.
    assert cps.show(result.before_id, 'notes/stray.md') == b'stray'
    # Nothing changed since: a second bare restore is a no-op.
    again = cps.restore_with_result()
    assert again.written == () and again.deleted == ()


def test_no_id_without_checkpoints_is_an_error(cps: Checkpoints, desk: Path) -> None:
    with pytest.raises(CheckpointError, match='no checkpoints yet'):
        cps.restore()


def test_partial_restore_touches_only_the_given_paths(cps: Checkpoints, desk: Path) -> None:
    one, two = three_states(cps, desk)
    write(desk, 'notes/new.md', 'n3')
    result = cps.restore_with_result(one, paths=['notes/a.md', 'notes/sub'])
    assert result.written == ('notes/a.md', 'notes/sub/b.md')
    assert result.deleted == ()
    assert (desk / 'notes/a.md').read_text() == 'a1'
    assert (desk / 'notes/sub/b.md').read_text() == 'b1'
    assert (desk / 'Memory.md').read_text() == 'm2'  # not selected: untouched
    assert (desk / 'notes/new.md').read_text() == 'n3'
    # The pre-snapshot holds the whole desk as it was; the new checkpoint the mixed state.
    assert cps.show(result.before_id, 'notes/new.md') == b'n3'
    assert result.restored_id is not None
    assert cps.show(result.restored_id, 'notes/a.md') == b'a1'
    assert cps.show(result.restored_id, 'Memory.md') == b'm2'
    assert cps.list()[0].paths == ('notes/a.md', 'notes/sub')
    assert cps.snapshot('nothing changed since the partial restore') is None


def test_partial_restore_of_a_folder_deletes_files_created_since(
    cps: Checkpoints, desk: Path
) -> None:
    one, two = three_states(cps, desk)
    result = cps.restore_with_result(one, paths=['notes'])
    assert result.deleted == ('notes/new.md',)
    assert (desk / 'Memory.md').read_text() == 'm2'
    assert {p for p in tree_of(desk) if p.startswith('notes/')} == {
        'notes/a.md',
        'notes/sub',
        'notes/sub/b.md',
    }


def test_partial_restore_of_a_file_absent_from_the_target_deletes_it(
    cps: Checkpoints, desk: Path
) -> None:
    one, two = three_states(cps, desk)
    result = cps.restore_with_result(one, paths='notes/new.md')
    assert result.deleted == ('notes/new.md',) and result.written == ()
    assert not (desk / 'notes/new.md').exists()


def test_partial_dry_run(cps: Checkpoints, desk: Path) -> None:
    one, two = three_states(cps, desk)
    before = tree_of(desk)
    plan = cps.restore(one, ['Memory.md'], dry_run=True)
    assert plan.written == ('Memory.md',) and plan.deleted == ()
    assert tree_of(desk) == before


def test_partial_restore_refuses_paths_that_never_existed_or_are_untracked(
    cps: Checkpoints, desk: Path
) -> None:
    one, two = three_states(cps, desk)
    count = len(cps.list())
    with pytest.raises(CheckpointError, match='neither in checkpoint'):
        cps.restore(one, paths=['notes/never.md'])
    with pytest.raises(CheckpointError, match='not tracked'):
        cps.restore(one, paths=['scratch.txt'])
    with pytest.raises(CheckpointError, match='not a usable desk path'):
        cps.restore(one, paths=['notes/../../etc'])
    with pytest.raises(CheckpointError, match='no paths'):
        cps.restore(one, paths=[])
    assert len(cps.list()) == count  # a refused restore takes no pre-snapshot


def test_partial_restore_at_the_newest_checkpoint_discards_one_file(
    cps: Checkpoints, desk: Path
) -> None:
    one, two = three_states(cps, desk)
    write(desk, 'Memory.md', 'bad')
    write(desk, 'notes/a.md', 'good')
    cps.restore(paths=['Memory.md'])
    assert (desk / 'Memory.md').read_text() == 'm2'
    assert (desk / 'notes/a.md').read_text() == 'good'
