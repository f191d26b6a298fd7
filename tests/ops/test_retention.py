"""Pruning: stable ids, protected checkpoints, a repository git still reads, configured limits."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from helpers.builders import write
from helpers.cli import checkpoints
from helpers.gitcli import git, needs_git
from helpers.reading import tree_of

from trading_checkpoints import CheckpointError, Checkpoints, UnknownCheckpointError
from trading_checkpoints.ops import retention
from trading_checkpoints.store import storage
from trading_checkpoints.store.repo import ShadowRepo


def _turns(cps: Checkpoints, desk: Path, count: int, start: int = 0) -> list[str]:
    ids = []
    for turn in range(start, start + count):
        with open(desk / 'Memory.md', 'a') as handle:
            handle.write(f'- turn {turn}: a line of memory that grows the file a little\n')
        write(desk, f'notes/n{turn % 3}.md', f'note version {turn}\n' * 20)
        checkpoint_id = cps.snapshot(f'turn {turn}')
        assert checkpoint_id is not None
        ids.append(checkpoint_id)
    return ids


def _ids(cps: Checkpoints) -> list[str]:
    return [c.checkpoint_id for c in cps.list(100_000)]


def _loose_objects(repo: Path) -> int:
    return storage.loose_count(repo)


@needs_git
def test_prune_keep_keeps_ids_and_git_reads_the_result(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    ids = _turns(cps, desk, 30)
    before_list = cps.list(100)
    result = cps.prune(keep=10)
    assert (result.checkpoints_before, result.checkpoints_after) == (30, 10)
    assert result.bytes_after < result.bytes_before
    assert result.pruned == tuple(ids[:20][::-1])
    assert result.oldest_kept == ids[20]
    assert cps.list(100) == before_list[:10]  # same ids, times, reasons
    git(repo_dir, 'fsck', '--strict', '--no-dangling')
    assert git(repo_dir, 'log', '--format=%h', '--abbrev=7').split() == ids[20:][::-1]
    assert git(repo_dir, 'count-objects', '-v').count('count: 0') == 1  # nothing loose
    reflog = git(repo_dir, 'reflog', 'show', '--format=%h', '--abbrev=7', 'main').split()
    assert reflog == ids[20:][::-1]
    # The pruned ids are gone; the kept ones still restore; new snapshots build on top.
    with pytest.raises(UnknownCheckpointError):
        cps.restore(ids[5])
    cps.restore(ids[20])
    assert (desk / 'Memory.md').read_text().count('turn') == 21
    more = _turns(cps, desk, 2, start=100)
    git(repo_dir, 'fsck', '--strict')
    assert _ids(cps)[:2] == more[::-1]


def test_prune_older_than_uses_checkpoint_times(cps: Checkpoints, desk: Path) -> None:
    ids = _turns(cps, desk, 6)
    now = time.time()
    from trading_checkpoints.store.repo import ShadowRepo

    shadow = ShadowRepo.open(cps.repository_directory)
    assert shadow is not None
    try:
        dry = retention.prune(shadow, older_than='1h', dry_run=True, now=now + 7200)
    finally:
        shadow.close()
    assert dry.dry_run and dry.checkpoints_after == 1  # never below the newest
    assert _ids(cps) == ids[::-1]  # a dry run changes nothing
    assert cps.prune(older_than='1h').checkpoints_after == 6  # all younger than an hour


def test_prune_never_drops_the_newest_nor_a_kept_restores_undo_point(
    cps: Checkpoints, desk: Path
) -> None:
    ids = _turns(cps, desk, 8)
    write(desk, 'Memory.md', 'an edit not yet snapshotted\n')
    undo = cps.restore(ids[1])
    result = cps.prune(keep=1)
    kept = cps.list(10)
    assert [c.reason for c in kept] == [f'restored {ids[1]}', f'before restoring {ids[1]}']
    assert kept[1].checkpoint_id == undo and result.checkpoints_after == 2
    cps.restore(undo)
    assert (desk / 'Memory.md').read_text() == 'an edit not yet snapshotted\n'


def test_prune_completes_an_interrupted_restore_first_and_keeps_its_pre_snapshot(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    from helpers.faults import run_child
    from helpers.reading import files_of

    from trading_checkpoints.ops import journal as journal_module

    for i in range(30):
        write(desk, f'notes/f{i:02}.md', f'old {i}')
    old = cps.snapshot('old')
    old_state = files_of(desk)
    for i in range(30):
        write(desk, f'notes/f{i:02}.md', f'new {i}')
    newest_state = files_of(desk)
    cps.snapshot('new')
    # A restore killed half-way (a real SIGKILL of a real child process) leaves its record.
    outcome = run_child(lambda: Checkpoints(repo_dir, desk).restore(old), kill_at=40)
    assert outcome.killed and journal_module.pending(repo_dir)
    result = Checkpoints(repo_dir, desk).prune(keep=1)
    # The interrupted restore was completed before anything was pruned ...
    assert not journal_module.pending(repo_dir)
    assert files_of(desk) == old_state
    kept = cps.list()
    assert kept[0].reason == f'restored {old}'
    # ... and the restore stays undoable: its pre-snapshot was kept with it.
    assert result.checkpoints_after == 2
    Checkpoints(repo_dir, desk).restore(kept[1].checkpoint_id)
    assert files_of(desk) == newest_state


def test_prune_refuses_while_a_restore_journal_exists_without_the_lock(repo_dir: Path) -> None:
    """retention.prune itself (called under the lock, after recovery) refuses a leftover record."""
    from trading_checkpoints.ops import retention
    from trading_checkpoints.store.repo import ShadowRepo

    repo_dir.mkdir(parents=True)
    repo = ShadowRepo.create(repo_dir, ['Memory.md'])
    (repo_dir / 'checkpoints').mkdir()
    (repo_dir / 'checkpoints' / 'restore-journal').write_text('{}')
    try:
        with pytest.raises(CheckpointError, match='restore is in progress'):
            retention.prune(repo, keep=1)
    finally:
        repo.close()


def test_prune_max_bytes_drops_oldest_until_it_fits(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    for turn in range(12):
        write(desk, 'notes/big.bin', os.urandom(20_000))  # incompressible, no deltas
        cps.snapshot(f'big {turn}')
    cps.prune()  # compact only: everything in one pack
    full = storage.objects_size(repo_dir)
    result = cps.prune(max_bytes=full // 2)
    assert 4 <= result.checkpoints_after <= 6
    assert storage.objects_size(repo_dir) <= full // 2 + 4096
    assert result.bytes_after == storage.objects_size(repo_dir)
    assert cps.prune(max_bytes='1k').checkpoints_after == 1


def test_prune_without_limits_only_compacts(cps: Checkpoints, desk: Path, repo_dir: Path) -> None:
    _turns(cps, desk, 10)
    repo = ShadowRepo.open(repo_dir)
    assert repo is not None
    try:  # an orphan, and a second pack: what compacting removes and merges
        orphan = repo.make_commit(repo.commit_info(repo.head() or b'').tree, None, 'orphan\n')
        storage.object_store(repo).add_object(orphan)
        write(desk, 'notes/big.bin', os.urandom(300_000))  # a pack too big to extend
        cps.snapshot('big')
        write(desk, 'notes/n0.md', 'after the big one\n')
        cps.snapshot('after')  # a pack of its own
        assert _loose_objects(repo_dir) == 1 and storage.pack_count(repo_dir) == 2
    finally:
        repo.close()
    result = cps.prune()
    assert result.checkpoints_before == result.checkpoints_after == 12
    assert _loose_objects(repo_dir) == 0 and storage.pack_count(repo_dir) == 1
    assert result.bytes_after < result.bytes_before


def test_prune_twice_and_on_an_empty_repository(cps: Checkpoints, desk: Path) -> None:
    assert cps.prune(keep=3).checkpoints_before == 0
    _turns(cps, desk, 6)
    cps.prune(keep=3)
    second = cps.prune(keep=3)
    assert (second.checkpoints_before, second.checkpoints_after) == (3, 3)
    assert cps.prune(keep=2).checkpoints_after == 2
    with pytest.raises(CheckpointError, match='at least 1'):
        cps.prune(keep=0)
    with pytest.raises(CheckpointError, match='not a period'):
        cps.prune(older_than='soon')
    with pytest.raises(CheckpointError, match='not a size'):
        cps.prune(max_bytes='lots')


def test_parse_limits() -> None:
    assert retention.parse_duration('30d') == 30 * 86400
    assert retention.parse_duration('90m') == 5400
    assert retention.parse_duration('2w') == 14 * 86400
    assert retention.parse_size('500M') == 500 * 1024**2
    assert retention.parse_size('1.5GiB') == int(1.5 * 1024**3)
    assert retention.parse_size('800k') == 800 * 1024


def test_open_prunes_to_arguments_and_to_stored_limits(repo_dir: Path, desk: Path) -> None:
    cps = Checkpoints(repo_dir, desk)
    ids = _turns(cps, desk, 9)
    opened = Checkpoints.open(repo_dir, desk, keep=5)
    assert _ids(opened) == ids[4:][::-1]
    retention.write_limits(repo_dir, retention.Limits(keep=3))
    assert retention.read_limits(repo_dir).keep == 3
    Checkpoints.open(repo_dir, desk)
    assert _ids(cps) == ids[6:][::-1]
    assert Checkpoints.open(repo_dir / 'missing.git', desk).list() == []


def test_cli_prune_dry_run_json_save_and_snapshot_applies_saved_limits(
    cps: Checkpoints, desk: Path, workspace: Path
) -> None:
    ids = _turns(cps, desk, 8)
    dry = checkpoints('prune', '--keep', '3', '--dry-run', '--json', workspace=workspace)
    assert dry.returncode == 0, dry.stderr
    figures = json.loads(dry.stdout)
    assert figures['dry_run'] and figures['checkpoints_after'] == 3
    assert figures['pruned'] == ids[:5][::-1]
    assert _ids(cps) == ids[::-1]
    saved = checkpoints('prune', '--keep', '4', '--save', workspace=workspace)
    assert saved.returncode == 0, saved.stderr
    assert 'Pruned 4 of 8 checkpoints' in saved.stdout
    write(desk, 'notes/new.md', 'new')
    assert checkpoints('snapshot', '-m', 'after save', workspace=workspace).returncode == 0
    assert len(_ids(cps)) == 4  # the saved limit holds after the write too
    again = checkpoints('prune', '--json', workspace=workspace)
    assert json.loads(again.stdout)['checkpoints_after'] == 4
    bad = checkpoints('prune', '--older-than', 'yesterday', workspace=workspace)
    assert bad.returncode == 1 and 'not a period' in bad.stderr and 'Traceback' not in bad.stderr


def test_prune_then_desk_state_is_intact(cps: Checkpoints, desk: Path) -> None:
    _turns(cps, desk, 10)
    before = tree_of(desk)
    cps.prune(keep=2)
    assert tree_of(desk) == before
    assert cps.snapshot('nothing changed') is None


def test_open_does_not_prune_while_a_restore_journal_exists(repo_dir: Path, desk: Path) -> None:
    cps = Checkpoints(repo_dir, desk)
    ids = _turns(cps, desk, 4)
    (repo_dir / 'checkpoints' / 'restore-journal').write_text('unfinished')
    opened = Checkpoints.open(repo_dir, desk, keep=1)
    assert _ids(opened) == ids[::-1]


@needs_git
def test_a_prune_interrupted_before_repacking_leaves_a_readable_repository(
    cps: Checkpoints, desk: Path, repo_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = _turns(cps, desk, 10)

    def killed(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt  # as if the process died between the cut and the repack

    with monkeypatch.context() as patch:
        patch.setattr(storage, 'consolidate', killed)
        with pytest.raises(KeyboardInterrupt):
            cps.prune(keep=4)
    assert _ids(cps) == ids[6:][::-1]  # the cut is already in effect
    git(repo_dir, 'fsck', '--strict')
    result = cps.prune(keep=4)  # nothing more to drop; the leftovers go with the next repack
    assert (result.checkpoints_before, result.checkpoints_after) == (4, 4)
    assert 'unreachable' in git(repo_dir, 'fsck', '--unreachable', '--strict')
    cps.prune()
    git(repo_dir, 'fsck', '--strict', '--no-dangling')
    assert 'unreachable' not in git(repo_dir, 'fsck', '--unreachable', '--strict')


def test_prune_keeps_the_pre_snapshot_of_a_kept_undo_so_redo_still_works(cps, desk) -> None:
    write(desk, 'notes/a.md', 'one')
    cps.snapshot('one')
    write(desk, 'notes/a.md', 'two')
    cps.snapshot('two')
    write(desk, 'notes/a.md', 'three, never snapshotted')
    cps.undo(force=True)
    assert (desk / 'notes/a.md').read_text() == 'two'
    assert [c.action for c in cps.list(2)] == ['undo', 'before-undo']
    cps.prune(keep=1)
    assert [c.action for c in cps.list()] == ['undo', 'before-undo']
    cps.redo(force=True)
    assert (desk / 'notes/a.md').read_text() == 'three, never snapshotted'


def test_keep_holds_after_every_write_of_an_open_object(tmp_path: Path) -> None:
    desk = tmp_path / 'desk'
    desk.mkdir()
    cps = Checkpoints.open(tmp_path / 'repo.git', desk, keep=3)
    for i in range(6):
        write(desk, 'Memory.md', f'version {i}')
        cps.snapshot(f's{i}')
        assert len(cps.list()) == min(i + 1, 3)
    assert [c.reason for c in cps.list()] == ['s5', 's4', 's3']
    # A restore keeps its pre-snapshot, even past the limit, so it stays undoable.
    write(desk, 'Memory.md', 'unsaved')
    result = cps.restore_with_result(cps.list()[-1].checkpoint_id)
    kept = cps.list()
    assert [c.action for c in kept[:2]] == ['restore', 'before-restore']
    assert kept[1].checkpoint_id == result.before_id
    cps.restore(result.before_id)
    assert (desk / 'Memory.md').read_text() == 'unsaved'


def test_keep_saved_from_the_cli_holds_after_every_cli_snapshot(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from trading_checkpoints.cli import cli

    desk = tmp_path / 'desks' / 'main'
    write(desk, 'Memory.md', 'start')
    runner = CliRunner()

    def run(*args: str) -> str:
        result = runner.invoke(cli, ['--workspace', str(tmp_path), *args])
        assert result.exit_code == 0, result.output
        return result.output

    run('snapshot', '-m', 'start')
    run('prune', '--keep', '3', '--save', '--yes')
    for i in range(6):
        write(desk, 'Memory.md', f'version {i}')
        run('snapshot', '-m', f's{i}')
    cps = Checkpoints(tmp_path / '.checkpoints' / 'main.git', desk)
    assert [c.reason for c in cps.list()] == ['s5', 's4', 's3']


def test_a_pruned_id_is_reported_as_pruned_not_as_unknown(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'old')
    old = cps.snapshot('old')
    write(desk, 'Memory.md', 'new')
    cps.snapshot('new')
    cps.prune(keep=1)
    with pytest.raises(UnknownCheckpointError, match=f'checkpoint {old} was pruned on '):
        cps.restore(old)
    with pytest.raises(UnknownCheckpointError, match=r'was pruned on .*\(it was taken '):
        cps.diff(old)
    with pytest.raises(UnknownCheckpointError, match="no checkpoint 'abcdef1'"):
        cps.restore('abcdef1')


def test_limits_enforced_per_write_compact_the_storage_in_batches(tmp_path: Path) -> None:
    from trading_checkpoints.ops import retention
    from trading_checkpoints.store import prunedlog, storage

    desk = tmp_path / 'desk'
    desk.mkdir()
    repo_dir = tmp_path / 'repo.git'
    cps = Checkpoints.open(repo_dir, desk, keep=2)
    sizes = []
    for i in range(retention.COMPACT_AFTER + 4):
        write(desk, 'notes/big.bin', os.urandom(20_000))
        cps.snapshot(f's{i}')
        sizes.append(storage.objects_size(repo_dir))
    assert len(cps.list()) == 2
    # Dropped checkpoints' objects are removed in one rewrite once enough were dropped.
    assert prunedlog.since_compaction(repo_dir) < retention.COMPACT_AFTER
    assert min(sizes[retention.COMPACT_AFTER :]) < max(sizes) / 4
