"""Inputs that used to end in a traceback: each is now a result or a CheckpointError."""

from __future__ import annotations

import math
import time
from pathlib import Path

import pytest
from conftest import write
from test_hostile_repositories import BLOB, TREE, blob, commit, tree

from trading_checkpoints import CheckpointError, Checkpoints
from trading_checkpoints.lock import DEFAULT_TIMEOUT

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
