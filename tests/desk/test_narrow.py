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
from trading_checkpoints.desk.narrow import Since, scan_since
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
    write(desk, 'notes/day1/run.sh', '#!/bin/sh\n')
    (desk / 'notes/day1/run.sh').chmod(0o755)
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
    'executable grows past the limit': (
        lambda desk: (desk / 'notes/day1/run.sh').write_bytes(b'#' * (LIMIT + 1)),
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


def recorded(tmp_path: Path, limit: int = LIMIT) -> tuple[Path, DeskState, StatCache, scans.Scan]:
    """A built desk, its scan and the stat cache recorded from it (nothing racy)."""
    desk = tmp_path / 'desk'
    build(desk)
    state = DeskState(desk, Allowlist(TRACKED), tmp_path / 'statcache', max_file_size=limit)
    cache = StatCache(context=state.context)
    first = state.scan(cache)
    trees, _ = state.trees(first, cache)
    record_scan(cache, first, trees, b'0' * 40)
    cache.racy = scans.array('q')
    return desk, state, cache, first


def same_scans(state: DeskState, cache: StatCache, narrowed: scans.Scan, full: scans.Scan) -> None:
    assert narrowed.files == full.files
    assert sorted(narrowed.skipped) == sorted(full.skipped)
    assert (narrowed.changed, narrowed.removed) == (full.changed, full.removed)
    assert (narrowed.carried, narrowed.oversize) == (full.carried, full.oversize)
    assert state.trees(narrowed, cache)[0][''] == state.trees(full, cache)[0]['']


@pytest.mark.parametrize(('touched', 'narrows'), [('notes/day0', False), ('notes/day1', True)])
def test_a_carried_file_outside_the_touched_folders_makes_the_scan_walk_everything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, touched: str, narrows: bool
) -> None:
    """A file carried from the last checkpoint has a row no stat matches: outside the folders
    walked it would be taken as found, so the scan walks everything; inside them it is looked
    at again like any other."""
    desk, state, cache, _ = recorded(tmp_path)
    (desk / 'notes/day1/n0.md').write_bytes(b'y' * (LIMIT + 1))
    carried = state.scan(cache)
    assert carried.carried == {'notes/day1/n0.md'}
    trees, _ = state.trees(carried, cache)
    record_scan(cache, carried, trees, b'1' * 40)
    cache.racy = scans.array('q')
    write(desk, f'{touched}/n1.md', 'changed again\n')
    full = state.scan(cache)
    walks: list[int] = []
    walk = scans.walk
    monkeypatch.setattr(scans, 'walk', lambda *args: walks.append(1) or walk(*args))
    narrowed = state.scan(cache, since=Since(frozenset({touched}), tuple(carried.skipped)))
    assert walks == ([] if narrows else [1])
    same_scans(state, cache, narrowed, full)
    assert 'notes/day1/n0.md' in narrowed.carried


@pytest.mark.parametrize('spliced', [False, True], ids=['in place', 'spliced'])
def test_racy_rows_are_read_again_inside_and_outside_the_touched_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spliced: bool
) -> None:
    """Two files rewritten with the same size after the cache recorded them, their rows racy
    (recorded with the stat they have now, as when a write lands in the same clock tick as the
    hashing): one in the folder walked, one after it in the cache's order and outside it. Both
    are read again and found changed, whether the walk found the same files (compared in
    place) or one more (the cache's rows spliced)."""
    desk, state, cache, first = recorded(tmp_path)
    racy = ['notes/day0/n1.md', 'skills/agent/skill.md']
    for name in racy:
        (desk / name).write_text((desk / name).read_text().upper())
        row = cache.names.index(name)
        now = os.lstat(desk / name)
        stat = (now.st_size, now.st_mtime_ns, now.st_ctime_ns, now.st_ino, now.st_mode)
        cache.numbers[row * 5 : row * 5 + 5] = scans.array('q', stat)
    cache.racy = scans.array('q', sorted(cache.names.index(name) for name in racy))
    if spliced:
        write(desk, 'notes/day0/new.md', 'new\n')
    full = state.scan(cache)
    assert set(racy) <= full.changed
    walks: list[int] = []
    walk = scans.walk
    monkeypatch.setattr(scans, 'walk', lambda *args: walks.append(1) or walk(*args))
    narrowed = state.scan(cache, since=Since(frozenset({'notes/day0'}), tuple(first.skipped)))
    assert walks == []
    same_scans(state, cache, narrowed, full)


def test_without_a_size_limit_every_file_is_kept(tmp_path: Path) -> None:
    """``scan_since`` called without a limit keeps files of any size, as a scan without one."""
    desk, state, cache, first = recorded(tmp_path, limit=0)
    write(desk, 'notes/day0/huge.md', 'z' * (4 * LIMIT))
    full = scans.scan(state.folders, state.allowlist, cache)
    narrowed = scan_since(
        state.folders,
        state.allowlist,
        cache,
        Since(frozenset({'notes/day0'}), tuple(first.skipped)),
    )
    assert narrowed is not None
    assert 'notes/day0/huge.md' in narrowed.files
    assert narrowed.oversize == set()
    same_scans(state, cache, narrowed, full)
