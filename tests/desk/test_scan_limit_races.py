"""A file that changes between the walk and its reading, at the size limit: it is left out and
keeps the newest checkpoint's version, reported with why, whether it is read whole (small) or
streamed (large), into the store (a snapshot) or not (status).

- under the limit when walked, past it when read: reported as too large;
- growing while streamed but not past the limit (there is none, or it is reached exactly):
  reported as replaced (changed while read);
- exactly at the limit: read and recorded.

Files change at an exact moment, in this process where mutation testing sees the calls: at the
scan's opening of the file (an audit hook, ``helpers.faults.armed``) or at its first read (a
profile hook). Each test pins a check found by ``benchmarks/mutation.py`` (scan).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers.builders import write
from helpers.faults import armed, at_first_read, opened_for_reading
from helpers.reading import version_of

from trading_checkpoints import Checkpoints
from trading_checkpoints.desk.scan import REPLACED, STREAM_THRESHOLD, too_large

MIB = 1 << 20


@contextlib.contextmanager
def _at_open(name: str, action: Callable[[], None], skip: int = 0) -> Iterator[list[str]]:
    """Runs ``action`` once, just before desk file ``name`` is opened for reading (after the
    first ``skip`` such opens)."""
    done: list[str] = []
    seen = [0]

    def act(event: str, args: tuple) -> None:
        if not done and opened_for_reading(name, event, args):
            seen[0] += 1
            if seen[0] > skip:
                done.append(name)
                action()

    with armed(act):
        yield done


def _append(path: Path, count: int) -> Callable[[], None]:
    def grow() -> None:
        with open(path, 'ab') as handle:
            handle.write(b'g' * count)

    return grow


# (size when walked, limit): read whole in chunks of 1 MiB, each under the limit, or streamed
SIZES = {
    'small': (MIB, MIB + MIB // 2),
    'large': (STREAM_THRESHOLD + MIB, STREAM_THRESHOLD + 2 * MIB),
}


@pytest.mark.parametrize('verb', ['snapshot', 'status'])
@pytest.mark.parametrize('size', ['small', 'large'])
def test_a_file_growing_past_the_limit_before_it_is_read_is_left_out(
    repo_dir: Path, desk: Path, size: str, verb: str
) -> None:
    walked, limit = SIZES[size]
    cps = Checkpoints(repo_dir, desk, max_file_size=limit)
    first = b'a' * walked
    write(desk, 'notes/grows.md', first)
    write(desk, 'notes/other.md', 'first\n')
    assert cps.snapshot('first') is not None
    write(desk, 'notes/grows.md', b'b' * walked)  # changed, still under the limit
    write(desk, 'notes/other.md', 'second\n')
    grow = _append(desk / 'notes' / 'grows.md', 2 * MIB)
    # A snapshot first looks without the lock, without the store; a large file it did not
    # keep is read again under the lock, into the store: that reading is the one raced.
    skip = 1 if (size, verb) == ('large', 'snapshot') else 0
    with _at_open('grows.md', grow, skip) as done:
        if verb == 'snapshot':
            result = cps.snapshot_with_result('grows past the limit while the desk is read')
        else:
            status = cps.status()
    assert done
    why = (('notes/grows.md', too_large(limit)),)
    if verb == 'status':
        assert status.skipped == why
        assert [change.path for change in status.changes] == ['notes/other.md']
        return
    assert result.skipped == why and result.checkpoint_id is not None
    recorded = version_of(repo_dir, result.checkpoint_id)
    assert recorded['notes/grows.md'] == ('-', first)
    assert recorded['notes/other.md'] == ('-', b'second\n')


@pytest.mark.parametrize('verb', ['snapshot', 'status'])
@pytest.mark.parametrize('limit', ['none', 'reached exactly'])
def test_a_large_file_growing_while_read_within_the_limit_is_left_out_as_replaced(
    repo_dir: Path, desk: Path, verb: str, limit: str
) -> None:
    """Grown while streamed, but not past the limit (none, or exactly up to it): changed
    while read, not too large."""
    growth = 10
    size = STREAM_THRESHOLD + 1
    cps = Checkpoints(repo_dir, desk, max_file_size=0 if limit == 'none' else size + growth)
    first = b'a' * size
    write(desk, 'notes/large.bin', first)
    write(desk, 'notes/other.md', 'first\n')
    assert cps.snapshot('first') is not None
    write(desk, 'notes/large.bin', b'b' * size)
    write(desk, 'notes/other.md', 'second\n')
    grow = _append(desk / 'notes' / 'large.bin', growth)
    with at_first_read('large.bin', grow) as done:
        if verb == 'snapshot':
            result = cps.snapshot_with_result('grows while it is read')
        else:
            status = cps.status()
    assert done
    why = (('notes/large.bin', REPLACED),)
    if verb == 'status':
        assert status.skipped == why
        assert [change.path for change in status.changes] == ['notes/other.md']
        return
    assert result.skipped == why and result.checkpoint_id is not None
    recorded = version_of(repo_dir, result.checkpoint_id)
    assert recorded['notes/large.bin'] == ('-', first)
    assert recorded['notes/other.md'] == ('-', b'second\n')


def test_a_small_file_exactly_at_the_limit_is_recorded(repo_dir: Path, desk: Path) -> None:
    cps = Checkpoints(repo_dir, desk, max_file_size=1000)
    write(desk, 'notes/at.md', b'a' * 1000)
    write(desk, 'notes/over.md', b'o' * 1001)
    result = cps.snapshot_with_result('at and over the limit')
    assert result.checkpoint_id is not None
    assert result.skipped == (('notes/over.md', too_large(1000)),)
    assert version_of(repo_dir, result.checkpoint_id) == {'notes/at.md': ('-', b'a' * 1000)}
