"""What a prune keeps and leaves behind: the dry run's estimate is the size a prune leaves, a
size budget keeps exactly as many as fit, the results and the repository after a prune (shallow
boundary, reflog), and a prune refused while a restore record exists.

Each test pins a safety check: it fails when ``benchmarks/mutation.py`` breaks that check,
and it runs in this process, where mutation testing sees the calls.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from helpers.reading import head_of

from trading_checkpoints import TRACKED_PATHS, CheckpointError, Checkpoints
from trading_checkpoints.ops import retention
from trading_checkpoints.store import storage
from trading_checkpoints.store.pack import folder as packfolder
from trading_checkpoints.store.repo import ShadowRepo


def _big_turns(tmp_path: Path, turns: int) -> tuple[Path, Path]:
    desk = tmp_path / 'desk'
    (desk / 'notes').mkdir(parents=True)
    repo_dir = tmp_path / 'repo.git'
    cps = Checkpoints(repo_dir, desk)
    for turn in range(turns):
        (desk / 'notes' / 'big.bin').write_bytes(os.urandom(20_000))  # no deltas
        cps.snapshot(f'big {turn}')
    return desk, repo_dir


@pytest.mark.parametrize('packed', [True, False])
def test_the_dry_run_estimate_is_the_size_a_prune_leaves(tmp_path: Path, packed: bool) -> None:
    desk, repo_dir = _big_turns(tmp_path, 8)
    if packed:
        Checkpoints(repo_dir, desk).prune()  # one pack; else every object is loose
    for keep in (1, 3, 6):
        copy = tmp_path / f'copy-{keep}.git'
        packfolder.wait_for_removals()  # a replaced pack vanishing mid-copy fails the copy
        shutil.copytree(repo_dir, copy)
        cps = Checkpoints(copy, desk)
        estimate = cps.prune(keep=keep, dry_run=True)
        assert estimate.dry_run and estimate.checkpoints_after == keep
        done = cps.prune(keep=keep)
        assert estimate.bytes_after == done.bytes_after == storage.objects_size(copy)


def test_a_size_budget_keeps_exactly_as_many_as_fit(tmp_path: Path) -> None:
    desk, repo_dir = _big_turns(tmp_path, 10)
    Checkpoints(repo_dir, desk).prune()
    sizes = {}
    for keep in range(1, 11):
        sizes[keep] = Checkpoints(repo_dir, desk).prune(keep=keep, dry_run=True).bytes_after
    for keep in (2, 4, 7, 10):
        for budget, kept in ((sizes[keep], keep), (sizes[keep] - 1, keep - 1)):
            estimate = Checkpoints(repo_dir, desk).prune(max_bytes=budget, dry_run=True)
            assert estimate.checkpoints_after == max(kept, 1), (keep, budget)


def test_pruning_an_empty_repository_changes_nothing(tmp_path: Path) -> None:
    repo = ShadowRepo.create(tmp_path / 'repo.git', TRACKED_PATHS)
    try:
        for dry_run in (True, False):
            result = retention.prune(repo, keep=1, dry_run=dry_run)
            assert (result.checkpoints_before, result.checkpoints_after) == (0, 0)
            assert (result.pruned, result.oldest_kept, result.dry_run) == ((), None, dry_run)
    finally:
        repo.close()


def test_prune_results_and_what_a_prune_leaves_behind(tmp_path: Path) -> None:
    desk, repo_dir = _big_turns(tmp_path, 6)
    cps = Checkpoints(repo_dir, desk)
    ids = [c.checkpoint_id for c in cps.list()]  # newest first
    before = storage.objects_size(repo_dir)
    private = repo_dir / 'checkpoints'
    assert list(private.glob('statcache*'))
    estimate = cps.prune(keep=4, dry_run=True)
    assert (estimate.checkpoints_before, estimate.checkpoints_after) == (6, 4)
    assert (estimate.bytes_before, estimate.dry_run) == (before, True)
    assert estimate.bytes_after < before
    assert (estimate.pruned, estimate.oldest_kept) == (tuple(ids[4:]), ids[3])
    nothing = cps.prune(keep=6, dry_run=True)
    assert (nothing.bytes_after, nothing.pruned, nothing.oldest_kept) == (before, (), ids[5])
    assert storage.objects_size(repo_dir) == before  # a dry run changes nothing
    done = cps.prune(keep=4)
    assert (done.checkpoints_before, done.checkpoints_after, done.dry_run) == (6, 4, False)
    assert (done.bytes_before, done.pruned, done.oldest_kept) == (before, tuple(ids[4:]), ids[3])
    assert done.bytes_after == storage.objects_size(repo_dir) == estimate.bytes_after
    assert not list(private.glob('statcache*'))  # it may name trees that are gone
    full = [c.checkpoint_id for c in cps.list()]
    assert full == ids[:4]
    # The shallow file holds the one boundary, the reflog only what moved to a kept commit.
    head = head_of(repo_dir)
    reflog = (repo_dir / 'logs' / 'refs' / 'heads' / 'main').read_bytes().splitlines()
    assert len(reflog) == 4 and reflog[0].startswith(b'0' * 40 + b' ')
    assert reflog[-1].split(b' ')[1] == head.encode()
    boundary = (repo_dir / 'shallow').read_bytes()
    cps.prune(keep=2)
    assert (repo_dir / 'shallow').read_bytes() != boundary
    assert len((repo_dir / 'shallow').read_bytes().split()) == 1
    assert len((repo_dir / 'logs' / 'refs' / 'heads' / 'main').read_bytes().splitlines()) == 2


def test_malformed_reflog_lines_are_dropped_and_the_rest_kept(tmp_path: Path) -> None:
    desk, repo_dir = _big_turns(tmp_path, 4)
    reflog = repo_dir / 'logs' / 'refs' / 'heads' / 'main'
    lines = reflog.read_bytes().splitlines(keepends=True)
    head = lines[-1].split(b' ')[1]  # kept: a malformed line moving to it is dropped all the same
    reflog.write_bytes(
        b'short '
        + head
        + b' x <x@x> 1 +0000\tforged\n'
        + b'short '
        + b'1' * 40
        + b' x <x@x> 1 +0000\tbroken\n'
        + b'2' * 40
        + b' short x <x@x> 1 +0000\tbroken\n'
        + b'no spaces at all\n'
        + b''.join(lines)
    )
    Checkpoints(repo_dir, desk).prune(keep=3)
    kept = reflog.read_bytes().splitlines(keepends=True)
    assert kept == [b'0' * 40 + lines[1][40:], *lines[2:]]


def test_a_size_budget_never_keeps_two_that_do_not_fit(tmp_path: Path) -> None:
    desk, repo_dir = _big_turns(tmp_path, 3)
    result = Checkpoints(repo_dir, desk).prune(keep=2, max_bytes=1)
    assert result.checkpoints_after == 1


def test_prune_refuses_while_a_restore_record_exists_saying_why(tmp_path: Path) -> None:
    desk, repo_dir = _big_turns(tmp_path, 2)
    record = repo_dir / 'checkpoints' / 'restore-journal.part'
    record.write_text('{}')
    repo = ShadowRepo.open(repo_dir)
    assert repo is not None
    try:
        with pytest.raises(CheckpointError) as caught:
            retention.prune(repo, keep=1)
    finally:
        repo.close()
    assert str(caught.value) == (
        f'a restore is in progress or was interrupted ({record}); finish it (run the '
        'restore again) before pruning, so the checkpoints it needs stay'
    )
