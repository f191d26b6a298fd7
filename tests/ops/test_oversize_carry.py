"""A tracked file that grows past the size limit keeps its last checkpointed version, also when
the stat cache is gone (a prune removes it; a torn one is thrown away): the version comes from
the newest checkpoint then, never "deleted".

Each test pins a safety check: it fails when ``benchmarks/mutation.py`` breaks that check,
and it runs in this process, where mutation testing sees the calls.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.builders import session_turns, write
from helpers.reading import version_of

from trading_checkpoints import Checkpoints
from trading_checkpoints.store.repo import PRIVATE_DIR


def _cache(repo_dir: Path) -> Path:
    return repo_dir / PRIVATE_DIR / 'statcache'


@pytest.mark.parametrize('cache', ['deleted', 'pruned'])
def test_an_oversize_file_is_carried_over_without_a_stat_cache(
    repo_dir: Path, desk: Path, cache: str
) -> None:
    cps = Checkpoints(repo_dir, desk, max_file_size=1000)
    write(desk, 'notes/grows.md', 'small enough\n')
    session_turns(cps, desk, 3)
    write(desk, 'notes/grows.md', 'x' * 5000)  # past the limit from now on
    if cache == 'deleted':
        _cache(repo_dir).unlink()
    else:
        cps.prune(keep=2)  # drops the stat cache with the storage it named
        assert not _cache(repo_dir).exists()
    write(desk, 'notes/other.md', 'a change, so the snapshot commits\n')
    result = cps.snapshot_with_result('after the growth')
    assert result.checkpoint_id is not None
    assert [path for path, _ in result.skipped] == ['notes/grows.md']
    held = version_of(repo_dir, result.checkpoint_id)
    assert held['notes/grows.md'] == ('-', b'small enough\n')  # carried over, not deleted
    assert held['notes/other.md'] == ('-', b'a change, so the snapshot commits\n')
    status = cps.status()  # such a file shows no change, nor a deletion
    assert status.clean and [path for path, _ in status.skipped] == ['notes/grows.md']


def test_an_oversize_file_never_checkpointed_stays_out(repo_dir: Path, desk: Path) -> None:
    cps = Checkpoints(repo_dir, desk, max_file_size=1000)
    session_turns(cps, desk, 1)
    write(desk, 'notes/big.md', 'y' * 5000)
    _cache(repo_dir).unlink()
    write(desk, 'notes/other.md', 'a change\n')
    result = cps.snapshot_with_result('with a big new file')
    assert result.checkpoint_id is not None
    assert 'notes/big.md' not in version_of(repo_dir, result.checkpoint_id)
