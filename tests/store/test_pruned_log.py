"""The record of pruned checkpoints stays bounded and keeps its newest entries: after tens of
thousands of pruned checkpoints an id pruned just now is still reported as pruned (``pruned on
<date>``), not as unknown, and so are the ones pruned shortly before it.

Each test pins a safety check: it fails when ``benchmarks/mutation.py`` breaks that check,
and it runs in this process, where mutation testing sees the calls.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from helpers.builders import session_turns

from trading_checkpoints import Checkpoints, UnknownCheckpointError
from trading_checkpoints.store import prunedlog
from trading_checkpoints.store.repo import PRIVATE_DIR

TAKEN = '2025-01-02T03:04:05+00:00'


def _earlier_prunes(repository: Path, entries: int, batch: int = 1000) -> list[str]:
    """``entries`` checkpoints pruned before, ``batch`` at a time (the newest of each batch
    found right after it); returns their ids."""
    rng = random.Random(26)
    ids = [rng.randbytes(20).hex() for _ in range(entries)]
    for start in range(0, entries, batch):
        prunedlog.record(repository, [(sha, TAKEN) for sha in ids[start : start + batch]])
        newest = ids[min(start + batch, entries) - 1]
        assert prunedlog.find(repository, newest) is not None, f'lost after {start + batch}'
    return ids


def _lines(repository: Path) -> int:
    return len((repository / PRIVATE_DIR / prunedlog.NAME).read_bytes().splitlines())


def test_the_newest_pruned_ids_are_found_after_thirty_thousand(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    ids = session_turns(cps, desk, 3)
    earlier = _earlier_prunes(repo_dir, 30_000)
    assert _lines(repo_dir) <= prunedlog.MAX_LINES, 'the record is no longer trimmed'
    result = cps.prune(keep=1)
    assert result.pruned == (ids[1], ids[0])
    for old in ids[:2]:
        with pytest.raises(UnknownCheckpointError, match=f'checkpoint {old} was pruned on '):
            cps.restore(old)
    # The entries just before the real prune are kept too; the oldest went with the trimming.
    assert prunedlog.find(repo_dir, earlier[-1]) is not None
    assert prunedlog.find(repo_dir, earlier[-5000]) is not None
    assert prunedlog.find(repo_dir, earlier[0]) is None
    assert _lines(repo_dir) <= prunedlog.MAX_LINES


def test_a_compaction_is_counted_from_the_trimmed_record(repo_dir: Path, desk: Path) -> None:
    cps = Checkpoints(repo_dir, desk)
    session_turns(cps, desk, 1)
    _earlier_prunes(repo_dir, 30_000)
    prunedlog.record_compaction(repo_dir)
    prunedlog.record(repo_dir, [('a' * 40, TAKEN), ('b' * 40, TAKEN)])
    assert prunedlog.since_compaction(repo_dir) == 2
