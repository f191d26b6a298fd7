"""A scan narrowed to the folders that changed since a walk found the desk clean.

A running ``checkpoints watch`` knows, besides its record of the last clean walk, in which
folders a tracked entry was made, changed, removed or moved since (:class:`Since`). The stat
cache then still describes every other folder exactly as that walk found it, so a scan need
not walk them: :func:`scan_since` walks the rest (``walk.walk_since``: every tracked entry,
each touched folder's listing, each folder the cache does not know whole, with the walk's own
checks), takes everything else from the cache, and compares the files it found with the
cache's rows they replace, as a full scan would.

Why the cache's other folders can be trusted: a folder the cache knows (it held tracked files)
that was changed, removed or replaced since had an event in it (its files' removal at
least) or in its parent, so it is touched; a folder made since is not known, and is walked
whole, whatever was made in it before the watcher watched it.

The result is the :class:`~.scan.Scan` a full scan would give (the same files, ids, changes
and files left out; the order of the rows may differ, which nothing depends on), or None when
narrowing cannot give it: the previous walk left out a file it could not read still
(``REPLACED``), or the cache holds a row never to be trusted outside the folders walked.
"""

from __future__ import annotations

import time
from array import array
from bisect import bisect_left
from dataclasses import dataclass

from ..core.paths import Allowlist
from .folders import DeskFolders
from .scan import (
    BlobSink,
    Scan,
    compare_by_name,
    compare_in_place,
    git_mode,
    too_large,
    without_large,
)
from .statcache import FIELDS, SHA_SIZE, UNSTABLE, StatCache
from .walk import REPLACED, walk_since


@dataclass(frozen=True)
class Since:
    """What changed since a walk found the desk clean (paths relative to the desk).

    Attributes:
        touched: The folders in which an entry was made, changed, removed or moved since.
        skipped: What that walk left out, and why.
        reread_beside: Whether the files outside ``touched`` that the cache holds as racy
            (changed too close to its writing for their stat to show a later write) are read
            again, as a full scan reads them. A scan that saves the cache must; a seal, which
            records only what a write tool changed, must not (a person's edit there would be
            sealed as the agent's), and saves no cache, so they stay racy for the next scan.
    """

    touched: frozenset[str]
    skipped: tuple[tuple[str, str], ...]
    reread_beside: bool = True


def scan_since(
    folders: DeskFolders,
    allowlist: Allowlist,
    cache: StatCache,
    since: Since,
    *,
    max_file_size: int = 0,
    sink: BlobSink | None = None,
) -> Scan | None:
    """The scan of the desk walking only what changed since (see the module notes); None when
    a full scan is needed. ``cache`` must be the one the clean walk found the desk equal to."""
    if any(why == REPLACED for _, why in since.skipped):
        return None
    result = Scan(started_ns=time.time_ns())
    result.max_file_size = max_file_size
    walked: list[tuple[str, str]] = []
    found = walk_since(folders, allowlist, cache.trees, since.touched, walked)
    drop = found.replaced(cache.names)  # the rows the narrowed walk looked at again, in order
    if not _trusted_beside(cache, drop):
        return None
    if not since.reread_beside:
        dropped = set(drop)
        cache = cache.with_racy(array('q', (row for row in cache.racy if row in dropped)))
    limit_reason = too_large(max_file_size)
    for path, why in since.skipped:
        if not found.replaces(path):
            result.skipped.append((path, why))
            if max_file_size and why == limit_reason:
                result.oversize.add(path)  # never committed (a committed one is carried)
    result.skipped.extend(walked)
    names, numbers = found.names, array('q', found.numbers)
    if max_file_size and names and max(numbers[0::FIELDS]) > max_file_size:
        names, numbers = without_large(names, numbers, max_file_size, result, frozenset())
    replaced = {cache.names[row]: row for row in drop}
    if len(names) == len(drop) and replaced.keys() == set(names):
        # The same files where they were: the cache's order, compared in bulk.
        every = array('q', cache.numbers)
        for index, name in enumerate(names):
            at = replaced[name] * FIELDS
            every[at : at + FIELDS] = numbers[index * FIELDS : (index + 1) * FIELDS]
        compare_in_place(folders, cache.names, every, cache, result, sink)
    else:
        _compare_spliced(folders, cache, drop, names, numbers, result, sink)
    for path in sorted(result.oversize | {p for p, why in result.skipped if why == REPLACED}):
        held = replaced.get(path)
        if held is not None and not result.entries([path]):
            mode = git_mode(cache.numbers[held * FIELDS + 4])
            result.carry(path, (mode, cache.sha(held)))
    return result


def _trusted_beside(cache: StatCache, drop: list[int]) -> bool:
    """Whether every row outside ``drop`` may be trusted by its stat (none was read while it
    changed, none carries a file left out)."""
    sizes = cache.numbers[0::FIELDS]
    if UNSTABLE not in sizes:
        return True
    dropped = set(drop)
    return all(row in dropped for row, size in enumerate(sizes) if size == UNSTABLE)


def _compare_spliced(
    folders: DeskFolders,
    cache: StatCache,
    drop: list[int],
    names: list[str],
    numbers: array,
    result: Scan,
    sink: BlobSink | None,
) -> None:
    """Files were added or removed where the walk looked: the cache's other rows are kept as
    they are (their racy ones read again, as a full scan does), and the files found are
    compared by name with the rows they replace; the rows found come after the kept ones."""
    dropped = set(drop)
    kept_names: list[str] = []
    kept_numbers = array('q')
    kept_shas = bytearray()
    start = 0
    for row in [*drop, len(cache.names)]:
        kept_names += cache.names[start:row]
        kept_numbers += cache.numbers[start * FIELDS : row * FIELDS]
        kept_shas += cache.shas[start * SHA_SIZE : row * SHA_SIZE]
        start = row + 1
    racy = [row for row in cache.racy if row not in dropped]
    kept = StatCache(
        kept_names,
        array('q', kept_numbers),
        bytes(kept_shas),
        racy=array('q', (row - bisect_left(drop, row) for row in racy)),
    )
    compare_in_place(folders, kept_names, kept_numbers, kept, result, sink)
    kept_result = (result.names, result.numbers, result.shas, result.removed)
    result.removed = set()
    old_numbers = array('q')
    old_shas = bytearray()
    for row in drop:
        old_numbers += cache.numbers[row * FIELDS : (row + 1) * FIELDS]
        old_shas += cache.shas[row * SHA_SIZE : (row + 1) * SHA_SIZE]
    position = {row: index for index, row in enumerate(drop)}
    old = StatCache(
        [cache.names[row] for row in drop],
        old_numbers,
        bytes(old_shas),
        racy=array('q', (position[row] for row in cache.racy if row in dropped)),
    )
    compare_by_name(folders, names, numbers, old, result, sink)
    result.names = kept_result[0] + result.names
    result.numbers = kept_result[1] + result.numbers
    result.shas = kept_result[2] + result.shas
    result.removed |= kept_result[3]
    result.changed -= result.removed
    result.unchanged = result.refreshed = False
