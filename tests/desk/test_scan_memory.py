"""A scan that records a snapshot keeps the fresh small blobs it reads in memory only up to
``MEMORY_BUDGET`` bytes, counting each distinct blob once: past the budget it hands the batch
to the store and starts counting again; a blob already handed over is not kept again.

Real files (8 MiB each, the largest size read whole: ``STREAM_THRESHOLD``) in a temporary desk,
scanned into a real repository's store (``StoreSink``); the batches are seen in the scan's
``stored`` (handed to the store) and ``new_blobs`` (still in memory). Each test pins a check
found by ``benchmarks/mutation.py`` (scan; the seal's, vouched).
"""

from __future__ import annotations

import os
from pathlib import Path

from helpers.builders import write
from helpers.gitcli import git, needs_git

from trading_checkpoints import Checkpoints
from trading_checkpoints.core.paths import TRACKED_PATHS, Allowlist
from trading_checkpoints.core.trees import blob_id
from trading_checkpoints.desk.folders import DeskFolders
from trading_checkpoints.desk.scan import MEMORY_BUDGET, STREAM_THRESHOLD, Scan
from trading_checkpoints.desk.scan import scan as scan_desk
from trading_checkpoints.desk.statcache import StatCache
from trading_checkpoints.store.objectio import StoreSink
from trading_checkpoints.store.repo import ShadowRepo

SIZE = STREAM_THRESHOLD  # read whole, not streamed
PER_BUDGET = MEMORY_BUDGET // SIZE  # files that fill the budget exactly


def _content(number: int) -> bytes:
    """8 MiB, distinct per number, cheap to compress."""
    head = f'file {number}\n'.encode()
    return head + b'\0' * (SIZE - len(head))


def _scan_into_store(repo_dir: Path, desk: Path) -> tuple[Scan, ShadowRepo]:
    repo = ShadowRepo.open(repo_dir)
    assert repo is not None
    with DeskFolders(desk) as folders:
        result = scan_desk(folders, Allowlist(TRACKED_PATHS), StatCache(), sink=StoreSink(repo))
    return result, repo


def _empty_repository(cps: Checkpoints, desk: Path) -> None:
    """The repository made by a first snapshot, its file then removed from the desk."""
    write(desk, 'Memory.md', 'x')
    assert cps.snapshot('the repository') is not None
    (desk / 'Memory.md').unlink()


def test_the_budget_is_filled_exactly_before_a_batch_goes_to_the_store(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    """Twice the budget and one file more: the first batch goes when the budget is passed
    (one file past it, not at it), the next files count from zero and fill the budget
    exactly, so they stay in memory."""
    assert PER_BUDGET * SIZE == MEMORY_BUDGET
    _empty_repository(cps, desk)
    contents = {f'memory/m{n:02}.md': _content(n) for n in range(2 * PER_BUDGET + 1)}
    for path, data in contents.items():
        write(desk, path, data)
    result, repo = _scan_into_store(repo_dir, desk)
    try:
        order = [path for path in result.names if path in contents]
        assert sorted(order) == sorted(contents)
        first = {blob_id(contents[path]) for path in order[: PER_BUDGET + 1]}
        rest = {blob_id(contents[path]) for path in order[PER_BUDGET + 1 :]}
        assert result.stored == first
        assert set(result.new_blobs) == rest
        assert {sha: result.new_blobs[sha] for sha in rest} == {
            blob_id(contents[path]): contents[path] for path in order[PER_BUDGET + 1 :]
        }
        assert all(repo.contains(sha) for sha in first)
        assert not any(repo.contains(sha) for sha in rest)
    finally:
        repo.close()


def test_a_blob_read_again_is_counted_once(cps: Checkpoints, desk: Path, repo_dir: Path) -> None:
    """One more copy of the same 8 MiB than the budget holds: one distinct blob, kept in
    memory, nothing handed to the store."""
    _empty_repository(cps, desk)
    data = _content(0)
    for n in range(PER_BUDGET + 1):
        write(desk, f'memory/copy{n}.md', data)
    result, repo = _scan_into_store(repo_dir, desk)
    try:
        assert result.stored == set()
        assert result.new_blobs == {blob_id(data): data}
    finally:
        repo.close()


def test_a_symlink_passing_the_budget_hands_the_batch_to_the_store(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    """The budget filled by files in ``memory/``; the symlink in ``notes/`` (walked after them)
    passes it: the whole batch, the link's target with it, goes to the store."""
    _empty_repository(cps, desk)
    contents = {f'memory/m{n}.md': _content(n) for n in range(PER_BUDGET)}
    for path, data in contents.items():
        write(desk, path, data)
    (desk / 'notes').mkdir(exist_ok=True)
    os.symlink('../memory/m0.md', desk / 'notes' / 'link.md')
    result, repo = _scan_into_store(repo_dir, desk)
    try:
        assert result.names[-1] == 'notes/link.md'
        handed = {blob_id(data) for data in contents.values()} | {blob_id(b'../memory/m0.md')}
        assert result.stored == handed and result.new_blobs == {}
        assert all(repo.contains(sha) for sha in handed)
    finally:
        repo.close()


@needs_git
def test_a_seal_past_the_budget_stores_every_blob_it_names(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    """A seal (its scan made to record, ``ops/vouched.py``) of more fresh blobs than the budget
    holds: the batch handed over past the budget went to the store, so every file the seal
    names is in the repository (a scan that does not record drops that batch from memory)."""
    _empty_repository(cps, desk)
    contents = {f'memory/m{n}.md': _content(n) for n in range(PER_BUDGET + 1)}
    for path, data in contents.items():
        write(desk, path, data)
    cps.seal()
    for path, data in contents.items():
        named = git(repo_dir, 'rev-parse', f'refs/checkpoints/sealed:{path}').strip()
        assert named == blob_id(data).decode()
        git(repo_dir, 'cat-file', '-e', named)  # fails when the blob is missing
