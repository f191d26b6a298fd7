"""Odd inputs (a very deep tree, lock timeouts of any type, the longest names, a restore of them
killed midway): each gives a result or a CheckpointError, never a traceback."""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

import pytest
from helpers.builders import put, write
from helpers.faults import run_child
from helpers.rawobjects import BLOB, TREE, blob, commit, tree
from helpers.reading import files_of

from trading_checkpoints import CheckpointError, Checkpoints
from trading_checkpoints.core.lock import DEFAULT_TIMEOUT
from trading_checkpoints.desk.checkout import temporary_name
from trading_checkpoints.ops import journal

DEPTH = 1_100


def test_log_of_a_very_deep_tree(cps: Checkpoints, desk: Path, repo_dir: Path) -> None:
    write(desk, 'notes/top.md', 'top')
    cps.snapshot('shallow')
    inner = tree(repo_dir, (BLOB, b'deep.md', blob(repo_dir, b'deep')))
    for _ in range(DEPTH):
        inner = tree(repo_dir, (TREE, b'd', inner))
    root = tree(
        repo_dir,
        (
            TREE,
            b'notes',
            tree(repo_dir, (TREE, b'd', inner), (BLOB, b'top.md', blob(repo_dir, b'top'))),
        ),
    )
    sha = commit(repo_dir, root, b'a very deep tree\n')
    (repo_dir / 'refs' / 'heads' / 'main').write_text(sha + '\n')
    entries = cps.log()
    assert len(entries) == 2
    (changed,) = entries[0].changed
    assert changed.count('/') == DEPTH + 2 and changed.endswith('/deep.md')
    assert cps.diff(cps.list()[1].checkpoint_id, cps.list()[0].checkpoint_id).paths == (changed,)


@pytest.mark.parametrize('value', ['x', '5', math.nan, math.inf, -1, -0.5, True, None, [1]])
def test_a_bad_lock_timeout_is_a_clear_error(repo_dir: Path, desk: Path, value: object) -> None:
    with pytest.raises(CheckpointError, match='lock_timeout'):
        Checkpoints(repo_dir, desk, lock_timeout=value)  # type: ignore[arg-type]


@pytest.mark.parametrize('value', [0, 0.0, 2, 2.5, DEFAULT_TIMEOUT])
def test_good_lock_timeouts_are_accepted(repo_dir: Path, desk: Path, value: float) -> None:
    write(desk, 'Memory.md', 'x')
    started = time.monotonic()
    assert Checkpoints(repo_dir, desk, lock_timeout=value).snapshot('s') is not None
    assert time.monotonic() - started < 30


@pytest.mark.parametrize('length', [200, 233, 240, 255])
def test_files_with_the_longest_names_are_restored(tmp_path: Path, length: int) -> None:
    """The temporary file beside a long name must fit the 255-byte limit too (it did not: the
    restore failed half-way and every later command with it)."""
    desk = tmp_path / 'desk'
    repo_dir = tmp_path / 'repo.git'
    name = 'n' * length
    for i in range(5):
        put(desk, f'notes/{i}.md', '-', b'v1')
    put(desk, f'notes/{name}', '-', b'v1')
    cps = Checkpoints(repo_dir, desk)
    first = cps.snapshot('v1')
    assert first is not None
    for i in range(5):
        put(desk, f'notes/{i}.md', '-', b'v2')
    put(desk, f'notes/{name}', '-', b'v2')
    cps.snapshot('v2')
    cps.restore(first)
    assert (desk / 'notes' / name).read_bytes() == b'v1'
    assert not journal.pending(repo_dir)
    assert sorted(os.listdir(desk / 'notes')) == sorted([*(f'{i}.md' for i in range(5)), name])
    for pid in (1, 4_194_304):
        assert len(os.fsencode(temporary_name(name, pid))) <= 255
    assert temporary_name(name, 7) == temporary_name(name, 7) != temporary_name('m' * length, 7)


def test_a_killed_restore_of_a_long_name_is_completed(tmp_path: Path) -> None:
    desk = tmp_path / 'desk'
    repo_dir = tmp_path / 'repo.git'
    names = [f'{i}' + 'n' * 250 for i in range(6)]
    for name in names:
        put(desk, f'notes/{name}', '-', b'old')
    cps = Checkpoints(repo_dir, desk)
    old = cps.snapshot('old')
    assert old is not None
    for name in names:
        put(desk, f'notes/{name}', '-', b'new')
    cps.snapshot('new')
    for kill_at in range(1, 60):  # the first kill that leaves the restore half-way
        assert run_child(lambda: Checkpoints(repo_dir, desk).restore(old), kill_at=kill_at).killed
        if journal.pending(repo_dir) and (desk / 'notes' / names[0]).read_bytes() == b'old':
            break
    assert journal.pending(repo_dir)
    result = Checkpoints(repo_dir, desk).snapshot_with_result('next')
    assert result.recovered and 'completed' in result.recovered
    assert files_of(desk) == {f'notes/{name}': ('-', b'old') for name in names}
    assert not journal.pending(repo_dir)
