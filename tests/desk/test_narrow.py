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
from helpers.faults import armed, opened_for_reading

from trading_checkpoints.core.paths import Allowlist
from trading_checkpoints.core.trees import blob_id
from trading_checkpoints.desk import scan as scans
from trading_checkpoints.desk.narrow import Since, scan_since
from trading_checkpoints.desk.statcache import StatCache
from trading_checkpoints.desk.state import DeskState, record_scan
from trading_checkpoints.store.objectio import StoreSink
from trading_checkpoints.store.repo import ShadowRepo

TRACKED = ('notes', 'Memory.md', 'skills/agent')
LIMIT = 64
OLD = 1_600_000_000  # seconds: no entry of the cache is racy
BEFORE_1970 = -86_400 * 10**9  # nanoseconds: a stat column may hold negative numbers


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
    os.utime(desk / 'notes/day2/n2.md', ns=(BEFORE_1970, BEFORE_1970))


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
    'file becomes a fifo': (
        lambda desk: ((desk / 'notes/day0/n2.md').unlink(), os.mkfifo(desk / 'notes/day0/n2.md')),
        {'notes/day0'},
    ),
    'nothing changed': (lambda desk: None, {'notes/day0'}),
    'rewritten the same': (
        lambda desk: (desk / 'notes/day0/n0.md').write_text('note 0 0\n'),
        {'notes/day0'},
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
    assert (narrowed.unchanged, narrowed.refreshed) == (full.unchanged, full.refreshed)
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


STREAMED = scans.STREAM_THRESHOLD + 1  # streamed into the store, not read whole


@pytest.mark.parametrize('where', ['in place', 'spliced', 'kept racy'])
def test_a_streamed_file_goes_into_the_store(tmp_path: Path, where: str) -> None:
    """A file over the streaming threshold that the narrowed scan reads is streamed into the
    store it was given, as in a full scan: one rewritten where the walk found the same files
    (in place), one made there (spliced), one racy outside the folder walked (its row kept)."""
    desk = tmp_path / 'desk'
    name = 'skills/agent/stream.bin' if where == 'kept racy' else 'notes/day0/stream.bin'
    if where != 'spliced':
        write(desk, name, b'a' * STREAMED)
    desk, state, cache, first = recorded(tmp_path, limit=0)
    content = b'b' * STREAMED
    (desk / name).write_bytes(content)
    if where == 'kept racy':
        row = cache.names.index(name)
        now = os.lstat(desk / name)
        stat = (now.st_size, now.st_mtime_ns, now.st_ctime_ns, now.st_ino, now.st_mode)
        cache.numbers[row * 5 : row * 5 + 5] = scans.array('q', stat)
        cache.racy = scans.array('q', [row])
        write(desk, 'notes/day0/new.md', 'new\n')
    repo = ShadowRepo.create(tmp_path / 'repo', TRACKED)
    full = state.scan(cache, sink=StoreSink(repo))
    since = Since(frozenset({'notes/day0'}), tuple(first.skipped))
    narrowed = state.scan(cache, sink=StoreSink(repo), since=since)
    assert blob_id(content) in full.stored
    assert blob_id(content) in narrowed.stored
    same_scans(state, cache, narrowed, full)


def test_a_file_growing_past_the_limit_as_it_is_read_is_left_out(tmp_path: Path) -> None:
    """Under the limit when walked, past it when opened for reading: left out as too large,
    as a full scan does (the narrowed scan reads with the desk's limit)."""
    desk, state, cache, first = recorded(tmp_path)
    path = desk / 'notes/day0/n0.md'
    path.write_text('short\n')
    done: list[str] = []

    def grow(event: str, args: tuple) -> None:
        if not done and opened_for_reading('n0.md', event, args):
            done.append('n0.md')
            with open(path, 'ab') as handle:
                handle.write(b'g' * (2 * LIMIT))

    with armed(grow):
        narrowed = state.scan(cache, since=Since(frozenset({'notes/day0'}), tuple(first.skipped)))
    assert done == ['n0.md']
    assert 'notes/day0/n0.md' in narrowed.oversize
    assert ('notes/day0/n0.md', scans.too_large(LIMIT)) in narrowed.skipped
