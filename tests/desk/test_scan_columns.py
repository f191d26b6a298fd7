"""The column code that spares a large desk a Python statement per file: the racy entries of a
stat column found chunk by chunk, and a scan's ``files`` built from its columns, both equal to
the entry-by-entry definition, across chunk boundaries and for every kind of mode."""

from __future__ import annotations

import random
import stat
from array import array

from trading_checkpoints.desk import statcache
from trading_checkpoints.desk.scan import Scan, git_mode

SECOND = 1_000_000_000


def test_racy_entries_are_found_in_every_chunk() -> None:
    now = 1_700_000_000 * SECOND
    chooser = random.Random(7)
    for count in (1, 511, 512, 513, 3000):
        numbers = array('q')
        for _ in range(count):
            age = chooser.choice([100 * SECOND, 3 * SECOND, SECOND, 10_000_000, 0])
            mtime = now - age - chooser.randrange(2) * chooser.randrange(SECOND)
            ctime = max(mtime, now - chooser.choice([100 * SECOND, 0]))
            numbers.extend((1, mtime, ctime, 1, stat.S_IFREG | 0o644))
        expected = [
            i
            for i in range(count)
            if statcache.is_racy(tuple(numbers[i * 5 : i * 5 + 5]), now)  # type: ignore[arg-type]
        ]
        assert list(statcache.racy_indices(numbers, now)) == expected
    assert list(statcache.racy_indices(array('q'), now)) == []

    # One file chmod-ed just now (its ctime only) and one written (its mtime) among old ones.
    old = now - 100 * SECOND
    numbers = array('q', [1, old, old, 1, stat.S_IFREG | 0o644] * 2000)
    numbers[1500 * 5 + 2] = now
    numbers[700 * 5 + 1] = numbers[700 * 5 + 2] = now - 1000
    assert list(statcache.racy_indices(numbers, now)) == [700, 1500]


def test_a_scans_files_are_built_from_its_columns() -> None:
    result = Scan(started_ns=0)
    modes = [
        stat.S_IFREG | 0o644,
        stat.S_IFREG | 0o755,
        stat.S_IFLNK | 0o777,
        stat.S_IFREG | 0o600,
        stat.S_IFREG | 0o744,
    ]
    for i in range(1200):
        result.names.append(f'memory/d{i // 100}/f{i}.md')
        size = statcache.UNSTABLE if i % 17 == 0 else i
        result.numbers.extend((size, i, i, i, modes[i % len(modes)]))
        result.shas += i.to_bytes(20, 'big')
    expected = {
        name: (git_mode(modes[i % len(modes)]), i.to_bytes(20, 'big').hex().encode())
        for i, name in enumerate(result.names)
    }
    assert result.files == expected
