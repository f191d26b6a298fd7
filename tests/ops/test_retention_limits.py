"""Retention limits: numbers taken as given, stored limits read back or named when bad, the
count and age limits choosing the newest, and a keep that is no whole number refused.

Each test pins a safety check: it fails when ``benchmarks/mutation.py`` breaks that check,
and it runs in this process, where mutation testing sees the calls.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
from helpers.builders import put

from trading_checkpoints import TRACKED_PATHS, CheckpointError, Checkpoints
from trading_checkpoints.ops import retention
from trading_checkpoints.store.commitinfo import CommitInfo
from trading_checkpoints.store.repo import ShadowRepo


def test_numeric_limits_are_taken_as_given() -> None:
    assert retention.parse_duration(0) == 0.0 and retention.parse_duration(0.5) == 0.5
    assert retention.parse_duration(7) == 7.0
    assert retention.parse_size(0) == 0 and retention.parse_size(4096) == 4096
    for parse, what in ((retention.parse_duration, 'period'), (retention.parse_size, 'size')):
        with pytest.raises(CheckpointError) as caught:
            parse(True)  # a bool is no number of seconds or bytes
        assert f'is not a {what}' in str(caught.value)
    with pytest.raises(CheckpointError) as negative:
        retention.parse_duration(-1)
    assert str(negative.value) == 'a retention period cannot be negative: -1'
    with pytest.raises(CheckpointError) as negative:
        retention.parse_size(-1)
    assert str(negative.value) == 'a size cannot be negative: -1'


def test_stored_limits_are_read_and_bad_ones_named(tmp_path: Path) -> None:
    desk = tmp_path / 'desk'
    put(desk, 'notes/a.md', '-', b'a')
    repo_dir = tmp_path / 'repo.git'
    Checkpoints(repo_dir, desk).snapshot('a')
    config = (repo_dir / 'config').read_bytes()
    (repo_dir / 'config').write_bytes(
        config + b'[checkpoints]\n\tkeep = 5\n\tretention = 2w\n\tmaxsize = 500M\n'
    )
    assert retention.read_limits(repo_dir) == retention.Limits(5, '2w', '500M')
    (repo_dir / 'config').write_bytes(config + b'[checkpoints]\n\tkeep = \xff\xfe5\n')
    with pytest.raises(CheckpointError) as caught:
        retention.read_limits(repo_dir)
    line = config.count(b'\n') + 2
    assert str(caught.value) == (
        f'checkpoints.keep in {repo_dir / "config"} (line {line}) is not a whole number of '
        'at least 1'
    )


def _info(number: int, created_at: str, message: str = 'turn\n') -> CommitInfo:
    return CommitInfo(f'{number:040x}', b'', (), created_at, message)


def test_count_and_age_limits_choose_the_newest() -> None:
    history = [_info(i, f'2024-01-0{9 - i}T00:00:00+00:00') for i in range(5)]  # newest first
    day = 86400.0
    now = datetime.fromisoformat('2024-01-09T00:00:00+00:00').timestamp()
    assert retention.choose_kept(history, 1, None, now) == 1
    assert retention.choose_kept(history, 0, None, now) == 1  # at least one is kept
    assert retention.choose_kept(history, 3, None, now) == 3
    assert retention.choose_kept(history, 9, None, now) == 5
    assert retention.choose_kept(history, None, 2 * day, now) == 3  # exactly 2 days old: kept
    assert retention.choose_kept(history, None, 2 * day - 1, now) == 2
    assert retention.choose_kept(history, None, 0.5, now) == 1
    assert retention.choose_kept(history, None, 0.5, now + 10 * day) == 1  # all old: the newest
    assert retention.choose_kept(history, 2, 3 * day, now) == 2
    assert retention.choose_kept([], 3, None, now) == 0
    assert retention.choose_kept([], None, None, now) == 0


@pytest.mark.parametrize('keep', [True, '3', 0, 1.5])
def test_a_keep_that_is_no_whole_number_is_refused(tmp_path: Path, keep: object) -> None:
    repo = ShadowRepo.create(tmp_path / 'repo.git', TRACKED_PATHS)
    try:
        with pytest.raises(CheckpointError) as caught:
            retention.prune(repo, keep=keep)  # type: ignore[arg-type]
        assert str(caught.value) == f'keep must be a whole number of at least 1, not {keep!r}'
    finally:
        repo.close()


@pytest.mark.parametrize(('value', 'good'), [('1', True), ('12', True), ('0', False), ('x', False)])
def test_a_stored_keep_must_be_a_whole_number_of_at_least_one(
    tmp_path: Path, value: str, good: bool
) -> None:
    repo_dir = tmp_path / 'repo.git'
    ShadowRepo.create(repo_dir, TRACKED_PATHS).close()
    retention.write_limits(repo_dir, retention.Limits(None, None, '2G'))
    (repo_dir / 'config').write_bytes(
        (repo_dir / 'config')
        .read_bytes()
        .replace(b'[checkpoints]', f'[checkpoints]\n\tkeep = {value}'.encode())
    )
    if good:
        assert retention.read_limits(repo_dir) == retention.Limits(int(value), None, '2G')
    else:
        with pytest.raises(CheckpointError, match='is not a whole number of at least 1'):
            retention.read_limits(repo_dir)


def test_limits_written_are_read_back(tmp_path: Path) -> None:
    repo_dir = tmp_path / 'repo.git'
    ShadowRepo.create(repo_dir, TRACKED_PATHS).close()
    retention.write_limits(repo_dir, retention.Limits(None, '30d', '1G'))
    assert retention.read_limits(repo_dir) == retention.Limits(None, '30d', '1G')
    retention.write_limits(repo_dir, retention.Limits(7, None, None))
    assert retention.read_limits(repo_dir) == retention.Limits(7, '30d', '1G')
