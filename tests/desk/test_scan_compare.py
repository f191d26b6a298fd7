"""The scan's two comparisons with the stat cache at their edges: in place (the walk found the
cache's names in its order) and by name (a file was added or removed).

- a changed file that vanishes just before it is read, the only change, is recorded as deleted;
- a file whose stat moves while it is read is recorded as read and marked never to be trusted
  by its stat (the next scan reads it again);
- a change of the executable bit alone is found whatever the stat numbers of the files beside
  it (the comparison reads each file's own mode, in the cache and on the desk).

Files change at an exact moment, in this process where mutation testing sees the calls: at an
audit event (``helpers.faults.armed``) or, between the scan's opening of a file and its first
read, from a profile hook. Each test pins a check found by ``benchmarks/mutation.py`` (scan).
"""

from __future__ import annotations

import os
import time
from functools import partial
from pathlib import Path

import pytest
from helpers.builders import write
from helpers.faults import armed, at_first_read, opened_for_reading
from helpers.reading import version_of

from trading_checkpoints import Checkpoints
from trading_checkpoints.desk import statcache
from trading_checkpoints.store.repo import PRIVATE_DIR


def _cache(repo_dir: Path) -> statcache.StatCache:
    return statcache.load(repo_dir / PRIVATE_DIR / 'statcache', b'')


def test_a_changed_file_vanishing_before_it_is_read_is_recorded_as_deleted(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    """The walk sees ``notes/a.md`` changed (the only change); it is gone when the scan opens
    it: the snapshot records it as deleted, as a snapshot taken a moment later would."""
    write(desk, 'notes/a.md', 'first\n')
    write(desk, 'notes/b.md', 'stays\n')
    assert cps.snapshot('first') is not None
    write(desk, 'notes/a.md', 'changed, then removed\n')
    done: list[str] = []
    is_it = partial(opened_for_reading, 'a.md')

    def remove(event: str, args: tuple) -> None:
        if not done and is_it(event, args):
            done.append('a.md')
            os.unlink(desk / 'notes' / 'a.md')

    with armed(remove):
        result = cps.snapshot_with_result('a.md vanishes while the desk is read')
    assert done and result.checkpoint_id is not None
    assert version_of(repo_dir, result.checkpoint_id) == {'notes/b.md': ('-', b'stays\n')}
    assert cps.snapshot('nothing more') is None


@pytest.mark.parametrize('listing', ['same files', 'a file added'])
def test_a_file_changing_while_read_is_recorded_and_never_trusted_by_its_stat(
    cps: Checkpoints, desk: Path, repo_dir: Path, listing: str
) -> None:
    """``notes/a.md`` grows between the scan's opening of it and its first read: the snapshot
    records what was read, and the stat cache marks the entry unstable (the next scan reads
    it again instead of trusting a stat taken while it moved)."""
    write(desk, 'notes/a.md', 'first\n')
    write(desk, 'notes/b.md', 'stays\n')
    assert cps.snapshot('first') is not None
    write(desk, 'notes/a.md', 'second\n')
    if listing == 'a file added':
        write(desk, 'notes/c.md', 'added\n')

    def grow() -> None:
        with open(desk / 'notes' / 'a.md', 'ab') as handle:
            handle.write(b'grown while read\n')

    with at_first_read('a.md', grow) as done:
        result = cps.snapshot_with_result('a.md grows while it is read')
    assert done and result.checkpoint_id is not None
    recorded = version_of(repo_dir, result.checkpoint_id)
    assert recorded['notes/a.md'] == ('-', b'second\ngrown while read\n')
    assert ('notes/c.md' in recorded) == (listing == 'a file added')
    cache = _cache(repo_dir)
    assert cache.key(cache.index['notes/a.md'])[0] == statcache.UNSTABLE
    assert cache.key(cache.index['notes/b.md'])[0] == len('stays\n')
    assert cps.snapshot('nothing more') is None
    assert cps.status().changes == ()


# Bits of an mtime (in ns) that, masked as a mode is (file type and executable bits), read as a
# plain file's or an executable's mode: set on the files beside the one whose mode changes, so
# a comparison that read a neighbour's mtime instead of the file's own mode would match.
_LOOKS_PLAIN = 0o100000
_LOOKS_EXECUTABLE = 0o100111
_MASK = 0o170111


@pytest.mark.parametrize('listing', ['same files', 'a file added'])
@pytest.mark.parametrize('neighbours', [_LOOKS_PLAIN, _LOOKS_EXECUTABLE])
def test_a_mode_change_alone_is_found_whatever_the_neighbours_stat(
    cps: Checkpoints, desk: Path, repo_dir: Path, listing: str, neighbours: int
) -> None:
    names = ['notes/a.md', 'notes/b.md', 'notes/c.md', 'memory/d.md']
    for name in names:
        write(desk, name, f'{name}\n')
    mtime = (1_600_000_000_123_456_789 & ~_MASK) | neighbours
    assert mtime & _MASK == neighbours
    for name in names:
        if name != 'notes/b.md':
            os.utime(desk / name, ns=(mtime, mtime))
    # Past the racy window of the first snapshot: only b.md is read again by the later ones
    # (a neighbour read again would rebuild b.md's folder and hide a missed mode change).
    time.sleep(2 * statcache.RACY_WINDOW_NS / 1e9)
    assert cps.snapshot('first') is not None
    assert len(_cache(repo_dir).racy) == 0
    (desk / 'notes' / 'b.md').chmod(0o755)  # the same bytes, now executable
    if listing == 'a file added':
        write(desk, 'memory/e.md', 'added in another folder\n')
        os.utime(desk / 'memory' / 'e.md', ns=(mtime, mtime))
    step = cps.snapshot('b.md made executable')
    assert step is not None
    assert version_of(repo_dir, step)['notes/b.md'] == ('x', b'notes/b.md\n')
    (desk / 'notes' / 'b.md').chmod(0o644)
    back = cps.snapshot('b.md plain again')
    assert back is not None
    assert version_of(repo_dir, back)['notes/b.md'] == ('-', b'notes/b.md\n')


def test_a_file_touched_without_a_change_gets_its_new_stat_cached(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    """``notes/a.md`` is given a new mtime, its bytes unchanged: the snapshot records nothing,
    and the stat cache takes the new stat, so the next scan trusts it instead of reading the
    file again."""
    write(desk, 'notes/a.md', 'the same bytes\n')
    write(desk, 'notes/b.md', 'stays\n')
    # Past the racy window: b.md is not read again (an unchanged file read again with its
    # cached stat would get the columns saved whatever a.md's comparison found).
    time.sleep(2 * statcache.RACY_WINDOW_NS / 1e9)
    assert cps.snapshot('first') is not None
    assert len(_cache(repo_dir).racy) == 0
    st = os.lstat(desk / 'notes' / 'a.md')
    older = st.st_mtime_ns - 5_000_000_000
    os.utime(desk / 'notes' / 'a.md', ns=(older, older))
    assert cps.snapshot('touched only') is None
    cache = _cache(repo_dir)
    assert cache.key(cache.index['notes/a.md']) == statcache.stat_key(
        os.lstat(desk / 'notes' / 'a.md')
    )


@pytest.mark.parametrize('others', ['unchanged', 'changed'])
def test_a_file_vanishing_mid_scan_by_name_leaves_every_other_row_in_place(
    cps: Checkpoints, desk: Path, repo_dir: Path, others: str
) -> None:
    """A file is added (the scan compares by name), and a changed file vanishes when the scan
    opens it, the fifth of six in walk order; the others are unchanged (their ids come from the
    cache) or changed (read): every other file keeps its own content in the snapshot."""
    paths = [f'notes/f{n}.md' for n in range(6)]
    for path in paths:
        write(desk, path, f'{path}, first\n')
    time.sleep(2 * statcache.RACY_WINDOW_NS / 1e9)  # unchanged files are then trusted
    assert cps.snapshot('first') is not None
    cache = _cache(repo_dir)
    assert len(cache.racy) == 0
    vanishing = [name for name in cache.names if name in paths][4]
    for path in paths:
        if path == vanishing or others == 'changed':
            write(desk, path, f'{path}, second version\n')
    write(desk, 'skills/agent/added.md', 'added\n')  # last in walk order
    done: list[str] = []
    is_it = partial(opened_for_reading, vanishing.rpartition('/')[2])

    def remove(event: str, args: tuple) -> None:
        if not done and is_it(event, args):
            done.append(vanishing)
            os.unlink(desk / vanishing)

    with armed(remove):
        result = cps.snapshot_with_result('a file vanishes while the desk is read')
    assert done and result.checkpoint_id is not None
    expected = {path: ('-', (desk / path).read_bytes()) for path in paths if path != vanishing}
    expected['skills/agent/added.md'] = ('-', b'added\n')
    assert version_of(repo_dir, result.checkpoint_id) == expected
    assert cps.snapshot('nothing more') is None
