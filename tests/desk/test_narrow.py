"""A scan narrowed to the folders named as touched equals a full scan of the desk.

No watcher here: the folders are named by the test, each the least a watcher would name (the
folder holding the change only), so each rule of ``walk_since`` is pinned on its own: a known
subfolder gone from its folder's listing, a folder the cache does not know walked whole, every
tracked entry looked at again.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.builders import write

from trading_checkpoints.core.paths import Allowlist
from trading_checkpoints.desk import scan as scans
from trading_checkpoints.desk.narrow import Since
from trading_checkpoints.desk.statcache import StatCache
from trading_checkpoints.desk.state import DeskState, record_scan

TRACKED = ('notes', 'Memory.md', 'skills/agent')
LIMIT = 64
OLD = 1_600_000_000  # seconds: no entry of the cache is racy


def build(desk: Path) -> None:
    for day in range(3):
        for index in range(3):
            write(desk, f'notes/day{day}/n{index}.md', f'note {day} {index}\n')
    write(desk, 'notes/day0/deep/inner.md', 'inner\n')
    write(desk, 'notes/top.md', 'top\n')
    write(desk, 'notes/odd\\name.md', 'a name git cannot store\n')
    write(desk, 'notes/big.bin', b'x' * (LIMIT + 1))
    (desk / 'notes/link').symlink_to('day0/n0.md')
    write(desk, 'Memory.md', 'memory\n')
    write(desk, 'skills/agent/skill.md', 'skill\n')
    for folder, _, names in os.walk(desk):
        for name in names:
            os.utime(os.path.join(folder, name), (OLD, OLD), follow_symlinks=False)


CHANGES: dict[str, tuple[Callable[[Path], object], set[str]]] = {
    'write': (lambda desk: (desk / 'notes/day0/n0.md').write_text('changed\n'), {'notes/day0'}),
    'create': (lambda desk: write(desk, 'notes/day1/new.md', 'new\n'), {'notes/day1'}),
    'top file': (lambda desk: (desk / 'Memory.md').write_text('memory 2\n'), {''}),
    'top file removed': (lambda desk: (desk / 'Memory.md').unlink(), {''}),
    'folder removed': (lambda desk: shutil.rmtree(desk / 'notes/day2'), {'notes'}),
    'mkdir and write': (lambda desk: write(desk, 'notes/fresh/deeper/a.md', 'a\n'), {'notes'}),
    'folder becomes a file': (
        lambda desk: (shutil.rmtree(desk / 'notes/day0/deep'), write(desk, 'notes/day0/deep')),
        {'notes/day0'},
    ),
    'tracked folder removed': (lambda desk: shutil.rmtree(desk / 'skills/agent'), {'skills'}),
    'grows past the limit': (
        lambda desk: (desk / 'notes/day1/n0.md').write_bytes(b'y' * (LIMIT + 1)),
        {'notes/day1'},
    ),
    'renamed between folders': (
        lambda desk: (desk / 'notes/day0/n1.md').rename(desk / 'notes/day2/n1.md'),
        {'notes/day0', 'notes/day2'},
    ),
}


@pytest.mark.parametrize('change', sorted(CHANGES))
def test_a_narrowed_scan_equals_a_full_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    desk = tmp_path / 'desk'
    build(desk)
    state = DeskState(desk, Allowlist(TRACKED), tmp_path / 'statcache', max_file_size=LIMIT)
    cache = StatCache(context=state.context)
    first = state.scan(cache)
    trees, _ = state.trees(first, cache)
    record_scan(cache, first, trees, b'0' * 40)
    cache.racy = scans.array('q')
    make, touched = CHANGES[change]
    make(desk)
    full = state.scan(cache)
    walks: list[int] = []
    walk = scans.walk
    monkeypatch.setattr(scans, 'walk', lambda *args: walks.append(1) or walk(*args))
    narrowed = state.scan(cache, since=Since(frozenset(touched), tuple(first.skipped)))
    assert walks == []  # narrowed, not walked
    assert narrowed.files == full.files
    assert sorted(narrowed.skipped) == sorted(full.skipped)
    assert (narrowed.changed, narrowed.removed) == (full.changed, full.removed)
    assert (narrowed.carried, narrowed.oversize) == (full.carried, full.oversize)
    assert state.trees(narrowed, cache)[0][''] == state.trees(full, cache)[0]['']
