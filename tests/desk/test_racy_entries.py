"""Racy stat-cache entries are read again also when files were added or removed meanwhile.

A file rewritten with the same size within the clock tick in which the stat cache was written
keeps every stat number the cache holds (size, mtime, ctime, inode, mode); only the racy mark
(its times are not older than the cache) says its cached blob id cannot be trusted. When the
desk's list of files is the cache's, the scan compares the columns in place; when a file was
added or removed, it looks each one up by name, and must honour the mark there too.

The same-tick rewrite is made exactly: the file is rewritten, and the entry the snapshot saved
for it is given the file's new stat (what a rewrite within the tick leaves), its old blob id
kept. Each test pins a safety check: it fails when ``benchmarks/mutation.py`` breaks that
check, and it runs in this process, where mutation testing sees the calls.
"""

from __future__ import annotations

import os
from array import array
from pathlib import Path

import pytest
from helpers.builders import write
from helpers.reading import version_of

from trading_checkpoints import Checkpoints
from trading_checkpoints.desk import statcache
from trading_checkpoints.store.repo import PRIVATE_DIR


def _same_tick_rewrite(repo_dir: Path, desk: Path, path: str, content: bytes) -> None:
    """Rewrites ``path`` in place (same size) and makes its cached stat the file's new one."""
    full = desk / path
    assert len(content) == full.stat().st_size
    with open(full, 'r+b') as handle:
        handle.write(content)
    cache_file = repo_dir / PRIVATE_DIR / 'statcache'
    cache = statcache.load(cache_file, b'')
    position = cache.index[path]
    numbers = array('q', cache.numbers)
    numbers[position * statcache.FIELDS : (position + 1) * statcache.FIELDS] = array(
        'q', statcache.stat_key(os.lstat(full))
    )
    cache.set_columns(list(cache.names), numbers, cache.shas)
    statcache.save(cache_file, cache)
    reloaded = statcache.load(cache_file, b'')
    assert reloaded.key(position) == statcache.stat_key(os.lstat(full))
    assert position in reloaded.racy  # changed after the cache was written: racy


@pytest.mark.parametrize('other', ['added', 'removed'])
def test_a_racy_entry_is_read_again_when_the_file_list_changed(
    cps: Checkpoints, desk: Path, repo_dir: Path, other: str
) -> None:
    write(desk, 'memory/a.md', 'old!')
    write(desk, 'notes/stays.md', 'unchanged')
    write(desk, 'notes/goes.md', 'removed in the step')
    assert cps.snapshot('before the step') is not None
    _same_tick_rewrite(repo_dir, desk, 'memory/a.md', b'new!')
    if other == 'added':
        write(desk, 'notes/new.md', 'added in the same step')
    else:
        (desk / 'notes' / 'goes.md').unlink()
    step = Checkpoints(repo_dir, desk).snapshot('the step')
    assert step is not None
    recorded = version_of(repo_dir, step)
    assert recorded['memory/a.md'] == ('-', b'new!')
    assert ('notes/new.md' in recorded) == (other == 'added')
    assert ('notes/goes.md' in recorded) == (other == 'added')
    assert Checkpoints(repo_dir, desk).snapshot('nothing more') is None


def test_a_racy_entry_is_read_again_when_the_file_list_is_the_same(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    """The control: the in-place comparison of the columns honours the mark too."""
    write(desk, 'memory/a.md', 'old!')
    write(desk, 'notes/stays.md', 'unchanged')
    assert cps.snapshot('before the step') is not None
    _same_tick_rewrite(repo_dir, desk, 'memory/a.md', b'new!')
    step = Checkpoints(repo_dir, desk).snapshot('the step')
    assert step is not None
    assert version_of(repo_dir, step)['memory/a.md'] == ('-', b'new!')
