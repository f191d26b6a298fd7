"""The seed contract: snapshot, list and restore on a real shadow repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers.builders import write
from helpers.reading import tree_of

from trading_checkpoints import TRACKED_PATHS, Checkpoint, CheckpointError, Checkpoints


def test_tracked_paths_constant() -> None:
    assert TRACKED_PATHS == ('Memory.md', 'memory', 'notes', 'skills/agent')
    assert issubclass(CheckpointError, RuntimeError)


def test_constructor_touches_no_disk(tmp_path: Path) -> None:
    cps = Checkpoints(tmp_path / 'repo.git', tmp_path / 'desk')
    assert cps.repository_directory == tmp_path / 'repo.git'
    assert cps.desk_directory == tmp_path / 'desk'
    assert list(tmp_path.iterdir()) == []


def test_list_is_empty_before_any_snapshot(cps: Checkpoints, repo_dir: Path) -> None:
    assert cps.list() == []
    assert not repo_dir.exists()


def test_first_snapshot_creates_repository_and_returns_short_id(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    write(desk, 'Memory.md', 'hello')
    checkpoint_id = cps.snapshot('first')
    assert checkpoint_id is not None and re.fullmatch(r'[0-9a-f]{7}', checkpoint_id)
    assert (repo_dir / 'HEAD').read_text() == 'ref: refs/heads/main\n'
    [only] = cps.list()
    assert only.checkpoint_id == checkpoint_id and only.reason == 'first'


def test_snapshot_of_unchanged_desk_returns_none(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'hello')
    assert cps.snapshot('one') is not None
    assert cps.snapshot('two') is None
    assert Checkpoints(cps.repository_directory, desk).snapshot('fresh object') is None
    assert len(cps.list()) == 1


def test_untracked_changes_do_not_make_a_snapshot(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'hello')
    cps.snapshot('one')
    write(desk, 'scratch.txt', 'untracked')
    write(desk, 'memory_extra/a.md', 'not under memory/')
    write(desk, 'skills/other/a.md', 'not under skills/agent')
    assert cps.snapshot('two') is None


def test_empty_desk_snapshot_then_first_file(cps: Checkpoints, desk: Path) -> None:
    first = cps.snapshot('empty desk')
    assert first is not None
    assert cps.snapshot('still empty') is None
    write(desk, 'notes/a.md', 'a')
    assert cps.snapshot('a note') is not None


def test_list_newest_first_with_limit_and_iso_dates(cps: Checkpoints, desk: Path) -> None:
    ids = []
    for i in range(5):
        write(desk, 'Memory.md', f'v{i}')
        ids.append(cps.snapshot(f'step {i}'))
    listed = cps.list()
    assert [c.checkpoint_id for c in listed] == ids[::-1]
    assert [c.reason for c in listed] == [f'step {i}' for i in range(4, -1, -1)]
    assert [c.checkpoint_id for c in cps.list(limit=2)] == ids[:-3:-1]
    assert cps.list(limit=0) == []
    for checkpoint in listed:
        assert isinstance(checkpoint, Checkpoint)
        assert re.fullmatch(r'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d', checkpoint.created_at)


def test_reason_subject_is_first_line(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'x')
    cps.snapshot('  subject line\nbody text  ')
    assert cps.list()[0].reason == 'subject line'


def test_restore_brings_back_content_and_deletes_files_created_since(
    cps: Checkpoints, desk: Path
) -> None:
    write(desk, 'Memory.md', 'v1')
    write(desk, 'memory/a.md', 'a1')
    target = cps.snapshot('v1')
    state_v1 = tree_of(desk)
    write(desk, 'Memory.md', 'v2')
    write(desk, 'notes/new/deep.md', 'created since')
    (desk / 'memory' / 'a.md').unlink()
    cps.snapshot('v2')
    before = cps.restore(target)
    assert tree_of(desk) == state_v1
    assert not (desk / 'notes').exists(), 'folders left empty by the restore are removed'
    reasons = [c.reason for c in cps.list()]
    assert reasons[0] == f'restored {target}'
    assert before == cps.list()[1].checkpoint_id  # v2 was already snapshotted: nothing new


def test_restore_snapshots_unsaved_changes_first_and_can_be_undone(
    cps: Checkpoints, desk: Path
) -> None:
    write(desk, 'Memory.md', 'v1')
    target = cps.snapshot('v1')
    write(desk, 'Memory.md', 'unsaved work')
    write(desk, 'notes/n.md', 'unsaved note')
    unsaved = tree_of(desk)
    before = cps.restore(target)
    reasons = [c.reason for c in cps.list()][:2]
    assert reasons == [f'restored {target}', f'before restoring {target}']
    assert cps.list()[1].checkpoint_id == before
    assert (desk / 'Memory.md').read_text() == 'v1'
    cps.restore(before)
    assert tree_of(desk) == unsaved


@pytest.mark.parametrize('typed', ['prefix', 'full', 'upper'])
def test_restore_commits_name_the_short_id_whatever_was_typed(
    cps: Checkpoints, desk: Path, repo_dir: Path, typed: str
) -> None:
    write(desk, 'Memory.md', 'v1')
    target = cps.snapshot('v1')
    assert target is not None
    full = (repo_dir / 'refs' / 'heads' / 'main').read_text().strip()
    assert len(full) == 40 and full.startswith(target)
    write(desk, 'Memory.md', 'v2, not saved yet')
    given = {'prefix': target[:4], 'full': full, 'upper': target.upper()}[typed]
    result = cps.restore_with_result(given)
    assert result.target_id == target
    assert [c.reason for c in cps.list()][:2] == [
        f'restored {target}',
        f'before restoring {target}',
    ]


def test_restore_to_current_state_returns_current_id_and_commits_nothing(
    cps: Checkpoints, desk: Path
) -> None:
    write(desk, 'Memory.md', 'v1')
    current = cps.snapshot('v1')
    assert cps.restore(current) == current
    assert len(cps.list()) == 1


def test_restore_accepts_full_sha(cps: Checkpoints, desk: Path, repo_dir: Path) -> None:
    write(desk, 'Memory.md', 'v1')
    short = cps.snapshot('v1')
    write(desk, 'Memory.md', 'v2')
    cps.snapshot('v2')
    full = (repo_dir / 'logs' / 'refs' / 'heads' / 'main').read_text().splitlines()[0].split()[1]
    assert full.startswith(short) and len(full) == 40
    cps.restore(full.upper())
    assert (desk / 'Memory.md').read_text() == 'v1'


@pytest.mark.parametrize('bad', ['zzzzzzz', '', '12', 'abc def', '0' * 41, '../etc'])
def test_malformed_id_is_refused_and_nothing_changes(
    cps: Checkpoints, desk: Path, bad: str
) -> None:
    write(desk, 'Memory.md', 'v1')
    cps.snapshot('v1')
    write(desk, 'Memory.md', 'unsaved')
    with pytest.raises(CheckpointError, match='not a checkpoint id'):
        cps.restore(bad)
    assert (desk / 'Memory.md').read_text() == 'unsaved'
    assert len(cps.list()) == 1


def test_unknown_id_is_refused_and_nothing_changes(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'v1')
    cps.snapshot('v1')
    write(desk, 'Memory.md', 'unsaved')
    with pytest.raises(CheckpointError, match="no checkpoint 'deadbeef'"):
        cps.restore('deadbeef')
    assert (desk / 'Memory.md').read_text() == 'unsaved'
    assert len(cps.list()) == 1


def test_id_of_a_non_commit_object_is_unknown(cps: Checkpoints, desk: Path, repo_dir: Path) -> None:
    write(desk, 'Memory.md', 'v1')
    cps.snapshot('v1')
    from dulwich.objects import Blob

    non_commit = Blob.from_string(b'v1').id.decode()  # stored, but a blob
    assert cps.show(cps.list()[0].checkpoint_id, 'Memory.md') == b'v1'
    with pytest.raises(CheckpointError, match='no checkpoint'):
        cps.restore(non_commit)


def test_restore_without_any_checkpoint(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'v1')
    with pytest.raises(CheckpointError, match='no checkpoints yet'):
        cps.restore('abcdef1')
    assert (desk / 'Memory.md').read_text() == 'v1'


def test_snapshot_of_missing_desk_is_a_clear_error(tmp_path: Path) -> None:
    cps = Checkpoints(tmp_path / 'repo.git', tmp_path / 'nowhere')
    with pytest.raises(CheckpointError, match='does not exist'):
        cps.snapshot('x')
    assert not (tmp_path / 'repo.git').exists()


def test_reason_must_be_a_string(cps: Checkpoints) -> None:
    with pytest.raises(CheckpointError, match='reason must be a string'):
        cps.snapshot(None)  # type: ignore[arg-type]


def test_executable_bit_is_snapshotted_and_restored(cps: Checkpoints, desk: Path) -> None:
    script = write(desk, 'skills/agent/run.sh', '#!/bin/sh\necho hi\n')
    script.chmod(0o755)
    target = cps.snapshot('executable')
    script.chmod(0o644)
    assert cps.snapshot('mode only') is not None, 'a chmod alone is a change'
    cps.restore(target)
    assert (desk / 'skills/agent/run.sh').stat().st_mode & 0o111


def test_metadata_is_kept_as_trailers_and_listed(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'v1')
    cps.snapshot(
        'before write_file Memory.md',
        tool='write_file',
        paths=['Memory.md', 'notes/a'],
        turn='turn-7',
    )
    [item] = cps.list()
    assert item.reason == 'before write_file Memory.md'
    assert (item.tool, item.paths, item.turn) == ('write_file', ('Memory.md', 'notes/a'), 'turn-7')
    write(desk, 'Memory.md', 'v2')
    cps.snapshot('plain')
    newest = cps.list()[0]
    assert newest == Checkpoint(
        newest.checkpoint_id,
        newest.created_at,
        'plain',
        files_changed=1,
        lines_added=1,
        lines_removed=1,
    )
    assert (item.files_changed, item.lines_added, item.lines_removed) == (1, 1, 0)
