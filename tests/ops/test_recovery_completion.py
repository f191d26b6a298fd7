"""Completing an interrupted restore from its record: a write landing meanwhile is saved first
and reported, an undo completes as an undo, and a completion that cannot finish, or a record
naming a checkpoint the repository lacks, says so and keeps or drops the record as it should.

Each test pins a safety check: it fails when ``benchmarks/mutation.py`` breaks that check,
and it runs in this process, where mutation testing sees the calls.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest
from helpers.builders import put
from helpers.faults import armed, kill_until_pending, lands_a_desk_file
from helpers.reading import files_of, head_of, version_of

from trading_checkpoints import TRACKED_PATHS, CheckpointError, Checkpoints
from trading_checkpoints.ops import journal as journal_module
from trading_checkpoints.store.repo import ShadowRepo


def _two_versions(tmp_path: Path, count: int = 10) -> tuple[Path, Path, Checkpoints, str, str]:
    desk = tmp_path / 'desk'
    repo_dir = tmp_path / 'repo.git'
    for i in range(count):
        put(desk, f'notes/f{i}.md', '-', b'old')
    cps = Checkpoints(repo_dir, desk)
    old = cps.snapshot('old')
    for i in range(count):
        put(desk, f'notes/f{i}.md', '-', b'new')
    new = cps.snapshot('new')
    assert old is not None and new is not None
    return desk, repo_dir, cps, old, new


@pytest.mark.parametrize(('count', 'changed'), [(10, 'f9'), (200, 'f1')])  # 200: two batches
def test_a_write_landing_during_a_restore_in_process_is_saved_and_reported(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, count: int, changed: str
) -> None:
    desk, repo_dir, cps, old, new = _two_versions(tmp_path, count)
    rewritten = 1 if count == 10 else count - 1  # all after the changed one, in sorted order
    fired = []

    def writer(event: str, args: tuple) -> None:
        if not fired and lands_a_desk_file(event, args):
            fired.append(True)
            with open(desk / 'notes' / f'{changed}.md', 'wb') as handle:
                handle.write(b'written by another agent during the restore')

    with caplog.at_level(logging.WARNING, logger='trading_checkpoints'), armed(writer):
        result = cps.restore_with_result(old)
    assert fired
    recovery = cps.last_recovery  # before another verb resets it
    [restored, saved, *_] = cps.list()
    cause = f'a restore during which notes/{changed}.md was changed by another writer of {old[:7]}'
    assert saved.reason == f'desk as found after {cause}'
    expected = (
        f'completed {cause} ({rewritten} written, 0 deleted); undo with: checkpoints restore '
        f'{new[:7]}; '
        f'the desk as found was saved first as {saved.checkpoint_id[:7]}'
    )
    assert result.recovered == expected
    assert (result.before_id, result.target_id) == (new[:7], old[:7])
    assert result.restored_id == restored.checkpoint_id[:7] and restored.reason == f'restored {old}'
    assert (len(result.written), result.deleted, result.action) == (rewritten, (), 'restore')
    assert f'notes/{changed}.md' in result.written
    assert recovery is not None and str(recovery) == expected
    assert (recovery.label, recovery.target_id, recovery.before_id) == (old, old[:7], new[:7])
    assert recovery.saved_id == saved.checkpoint_id[:7]
    assert [r.getMessage() for r in caplog.records] == [expected]
    assert files_of(desk) == {f'notes/f{i}.md': ('-', b'old') for i in range(count)}
    assert not journal_module.pending(repo_dir)


def test_an_undo_whose_deleted_file_changes_meanwhile_is_completed_as_an_undo(
    tmp_path: Path,
) -> None:
    """Another writer edits a file the undo deletes, while the undo writes its record (in
    this process, timed by an audit hook): saved first, then deleted, and reported as such."""
    desk, repo_dir, cps, old, new = _two_versions(tmp_path)
    put(desk, 'notes/extra.md', '-', b'only in the newest')
    newest = cps.snapshot('newest')
    fired = []

    def writer(event: str, args: tuple) -> None:
        if event == 'open' and 'restore-journal' in str(args[0]) and not fired:
            fired.append(True)
            put(desk, 'notes/extra.md', '-', b'edited by another agent during the undo')

    with armed(writer):
        result = cps.undo()
    recovery = cps.last_recovery
    assert fired and recovery is not None
    assert (recovery.written, recovery.deleted) == ((), ('notes/extra.md',))
    assert (result.action, result.deleted) == ('undo', ('notes/extra.md',))
    [undone, saved, *_] = cps.list()
    assert saved.reason.startswith('desk as found after a restore during which notes/extra.md')
    assert undone.reason == f'undo: back to {new} (new)'
    assert version_of(repo_dir, saved.checkpoint_id)['notes/extra.md'] == (
        '-',
        b'edited by another agent during the undo',
    )
    assert not (desk / 'notes' / 'extra.md').exists() and newest is not None


def test_a_completion_racing_the_same_writer_again_keeps_its_record(tmp_path: Path) -> None:
    desk, repo_dir, cps, old, _ = _two_versions(tmp_path)
    edits = []

    def writer(event: str, args: tuple) -> None:
        if lands_a_desk_file(event, args):
            edits.append(True)
            put(desk, 'notes/f9.md', '-', b'edit %d' % len(edits))

    record = journal_module.record_path(repo_dir)
    with armed(writer), pytest.raises(CheckpointError) as caught:
        cps.restore(old)
    assert str(caught.value) == (
        f'a restore during which notes/f9.md was changed by another writer of {old} cannot be '
        f'completed: notes/f9.md keeps changing; its record is kept ({record}), run any '
        'command again'
    )
    assert journal_module.pending(repo_dir)
    assert cps.snapshot_with_result('next').recovered  # the writer is gone: completed
    assert files_of(desk) == {f'notes/f{i}.md': ('-', b'old') for i in range(10)}


def test_completing_an_undo_keeps_its_message_and_touches_only_its_paths(tmp_path: Path) -> None:
    desk, repo_dir, cps, old, new = _two_versions(tmp_path)
    kill_until_pending(repo_dir, lambda: Checkpoints(repo_dir, desk).undo())
    put(desk, 'notes/added-after-the-crash.md', '-', b'not part of the undo')
    result = Checkpoints(repo_dir, desk).snapshot_with_result('next')
    assert result.recovered and result.recovered.startswith(
        f'completed an interrupted restore of {old[:7]} ('
    )
    assert [c.reason for c in cps.list()[:2]] == [f'undo: back to {old[:7]} (old)', 'new']
    assert files_of(desk) == {
        **{f'notes/f{i}.md': ('-', b'old') for i in range(10)},
        'notes/added-after-the-crash.md': ('-', b'not part of the undo'),
    }
    assert cps.redo() is not None  # the completed step is an undo, so it can be redone
    assert (desk / 'notes' / 'f0.md').read_bytes() == b'new'


def test_a_completion_that_cannot_finish_says_where_the_record_is(tmp_path: Path) -> None:
    desk, repo_dir, cps, old, _ = _two_versions(tmp_path)
    kill_until_pending(repo_dir, lambda: Checkpoints(repo_dir, desk).restore(old))
    outside = tmp_path / 'outside'
    outside.mkdir()
    os.rename(desk / 'notes', tmp_path / 'moved-notes')
    os.symlink(outside, desk / 'notes')  # now in the way of every planned path
    record = journal_module.record_path(repo_dir)
    with pytest.raises(CheckpointError) as caught:
        Checkpoints(repo_dir, desk).snapshot('next')
    message = str(caught.value)
    assert message.startswith(f'an interrupted restore of {old} cannot be completed: ')
    assert message.endswith(f'(its record is {record}; fix the cause and run any command again)')
    assert os.listdir(outside) == [] and journal_module.pending(repo_dir)


def test_a_record_naming_a_missing_checkpoint_is_refused_saying_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    desk = tmp_path / 'desk'
    repo_dir = tmp_path / 'repo.git'
    put(desk, 'notes/a.md', '-', b'v1')
    cps = Checkpoints(repo_dir, desk)
    assert cps.snapshot('v1') is not None
    head = head_of(repo_dir)
    put(desk, 'notes/a.md', '-', b'half restored')
    missing = 'ab' * 20
    record = {
        'format': 2,
        'label': 'x',
        'target': missing,
        'before': head,
        'pids': [1],
        'started_at': 0,
        'changes': [['notes/a.md', None, [33188, missing]]],
        'message': 'restored x\n',
    }
    journal_module.record_path(repo_dir).write_text(json.dumps(record))
    with caplog.at_level(logging.WARNING, logger='trading_checkpoints'):
        result = cps.snapshot_with_result('next')
    recovery = cps.last_recovery
    [saved, *_] = cps.list()
    assert saved.reason == 'desk as found after an interrupted restore'
    expected = (
        f'the restore record names a target checkpoint {missing[:7]} that this repository '
        'does not hold; nothing was restored, the desk was left as found and recorded as '
        f'{saved.checkpoint_id[:7]}'
    )
    assert result.recovered == expected
    assert [r.getMessage() for r in caplog.records] == [expected]
    assert recovery is not None
    assert (recovery.before_id, recovery.saved_id) == (saved.checkpoint_id[:7],) * 2
    assert (recovery.label, recovery.target_id, recovery.restored_id) == ('', '', None)
    assert (recovery.written, recovery.deleted) == ((), ())
    assert (desk / 'notes' / 'a.md').read_bytes() == b'half restored'


def test_a_bad_record_in_a_repository_with_no_checkpoints_and_no_desk(tmp_path: Path) -> None:
    repo_dir = tmp_path / 'repo.git'
    desk = tmp_path / 'desk'  # never made
    ShadowRepo.create(repo_dir, TRACKED_PATHS).close()  # a repository with no checkpoint
    cps = Checkpoints(repo_dir, desk)
    journal_module.record_path(repo_dir).parent.mkdir(exist_ok=True)
    journal_module.record_path(repo_dir).write_text('{"format": 2')
    assert cps.list() == []
    recovery = cps.last_recovery
    assert recovery is not None and (recovery.before_id, recovery.saved_id) == ('', None)
    assert recovery.message.endswith(
        'nothing was restored, the desk was left as found and recorded as '
    )
    assert not journal_module.pending(repo_dir)
