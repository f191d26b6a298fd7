"""Scanning a desk: the tracked files as they are now, hashed only where the stat cache is stale.

The walk goes through :class:`~trading_checkpoints.desk.folders.DeskFolders`, so no folder is
entered and no file is read through a symlink. Symlinks are recorded as links; folders named
``.git`` (nested repositories) are never walked; sockets, fifos and devices are left out.

One rule for files a scan leaves out (reported in ``Scan.skipped`` with why):

- names that are not valid UTF-8 or that git cannot store (NUL, newline, backslash, ``.git``),
  and things that are neither files nor symlinks, are absent from the scan;
- a file over the size limit, or one replaced by another file while it was read, keeps the entry
  the newest checkpoint holds for it (``Scan.carried``): a snapshot neither records it as deleted
  nor as added, and status and diff show no change for it.

Memory stays bounded: files above :data:`STREAM_THRESHOLD` are hashed (and, when a store is
given, written) in chunks and never held whole, and fresh small blobs are handed to the store
once they exceed :data:`MEMORY_BUDGET`.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from array import array
from collections.abc import Iterable, Iterator, Mapping
from typing import Protocol

from ..core.paths import Allowlist
from ..core.trees import EXECUTABLE_MODE, FILE_MODE, SYMLINK_MODE, FileEntry, blob_id
from .folders import DeskFolders, same_file
from .statcache import FIELDS, SHA_SIZE, UNSTABLE, StatCache, StatKey
from .walk import REPLACED, walk

UNSTABLE_KEY: StatKey = (-1, -1, -1, -1, -1)
STREAM_THRESHOLD = 8 * 1024 * 1024
MEMORY_BUDGET = 64 * 1024 * 1024
_CHUNK = 1 << 20
_FEW = 8  # paths looked up one by one (a C-level search of the names each)

_FORMAT_MASK = 0o170000
_S_IFREG, _S_IFLNK = stat.S_IFREG, stat.S_IFLNK


class BlobSink(Protocol):
    """Where a scan that records a snapshot puts blob contents (the repository's store)."""

    def add_blobs(self, blobs: dict[bytes, bytes]) -> None: ...

    def stream_blob(self, fd: int, limit: int) -> bytes | None: ...


def too_large(limit: int) -> str:
    return f'it is larger than the maximum file size ({limit} bytes)'


def git_mode(st_mode: int) -> int:
    # Bit tests, not stat.S_ISLNK: a mode read from a damaged stat cache may not fit a C int.
    if st_mode & _FORMAT_MASK == _S_IFLNK:
        return SYMLINK_MODE
    return EXECUTABLE_MODE if st_mode & stat.S_IXUSR else FILE_MODE


class Scan:
    """The tracked files of a desk as they are now.

    The files are columns in walk order, like the stat cache's: ``names``, ``numbers`` (five
    stat numbers per file; an unstable read is marked ``UNSTABLE`` so it is never trusted) and
    ``shas`` (20-byte blob ids). :attr:`files` and :attr:`keys` offer them as dicts.
    """

    def __init__(self, started_ns: int) -> None:
        self.names: list[str] = []
        self.numbers = array('q')
        self.shas = b''
        self.new_blobs: dict[bytes, bytes] = {}  # hex id -> bytes of blobs hashed in this scan
        self.stored: set[bytes] = set()  # hex ids of blobs this scan already gave the store
        self.changed: set[str] = set()  # added, or content or mode differs from the cache
        self.hashed: set[str] = set()  # read and hashed by this scan, holding still meanwhile
        self.removed: set[str] = set()  # in the cache, gone now
        self.skipped: list[tuple[str, str]] = []  # (path, why)
        self.carried: set[str] = set()  # left out, keeping the newest checkpoint's entry
        self.oversize: set[str] = set()  # left out for their size
        self.started_ns = started_ns
        self.max_file_size = 0
        self.exempt: frozenset[str] = frozenset()  # read whatever their size
        # Every name, stat and id equals the cache's (nothing needs to be saved or built).
        self.unchanged = False
        # Racy cache entries were read again and found unchanged: worth saving the cache.
        self.refreshed = False
        self._memory = 0
        self._files: dict[str, FileEntry] | None = None
        self._positions: dict[str, int] | None = None

    @property
    def files(self) -> dict[str, FileEntry]:
        """``path -> (git mode, hex blob id)``."""
        if self._files is None:
            # Built from the columns without a Python statement per file: a desk has a few
            # distinct modes, each turned into a git mode once.
            modes = self.numbers[4::FIELDS]
            git_modes = {mode: git_mode(mode) for mode in set(modes)}
            hexes = self.shas.hex().encode()
            ids = [hexes[start : start + 40] for start in range(0, len(hexes), 40)]
            entries = zip(map(git_modes.__getitem__, modes), ids, strict=True)
            self._files = dict(zip(self.names, entries, strict=True))
        return self._files

    @property
    def positions(self) -> dict[str, int]:
        """``path -> its row`` in ``names``, ``numbers`` and ``shas``."""
        if self._positions is None:
            self._positions = dict(zip(self.names, range(len(self.names)), strict=True))
        return self._positions

    def entry(self, row: int) -> FileEntry:
        """The entry of the file in row ``row``."""
        mode = git_mode(self.numbers[row * FIELDS + 4])
        return (mode, self.shas[row * SHA_SIZE : (row + 1) * SHA_SIZE].hex().encode())

    def entries(self, paths: Iterable[str]) -> dict[str, FileEntry]:
        """The entries of those of ``paths`` the scan found; a few are looked up without
        making the dict of every file."""
        wanted = list(paths)
        if self._files is not None or len(wanted) > _FEW:
            files = self.files
            return {path: files[path] for path in wanted if path in files}
        found = {}
        names = self.names
        for path in wanted:
            try:
                found[path] = self.entry(names.index(path))
            except ValueError:
                continue
        return found

    def key(self, path: str) -> StatKey | None:
        """The stat of a file when hashed (``UNSTABLE_KEY`` for one never to be trusted), or
        None for a path the scan did not find."""
        row = self.positions.get(path)
        if row is None:
            return None
        numbers = self.numbers
        if numbers[row * FIELDS] == UNSTABLE:
            return UNSTABLE_KEY
        return tuple(numbers[row * FIELDS : row * FIELDS + FIELDS])  # type: ignore[return-value]

    def carry(self, path: str, entry: FileEntry) -> None:
        """Keeps a left-out file's entry from the newest checkpoint (never trusted by stat)."""
        if path in self.carried:
            return
        self.carried.add(path)
        self.removed.discard(path)
        self.changed.add(path)
        self.names = [*self.names, path]
        numbers = array('q', self.numbers)
        numbers.extend((UNSTABLE, 0, 0, 0, _mode_bits(entry[0])))
        self.numbers = numbers
        self.shas += bytes.fromhex(entry[1].decode())
        self.unchanged = False
        self._files = self._positions = None

    def keep_blob(self, sha: bytes, data: bytes, sink: BlobSink | None) -> None:
        """Remembers a fresh blob, handing the batch to the store when over the budget."""
        if sha in self.new_blobs or sha in self.stored:
            return
        self.new_blobs[sha] = data
        self._memory += len(data)
        if self._memory > MEMORY_BUDGET:
            if sink is not None:
                sink.add_blobs(self.new_blobs)
                self.stored.update(self.new_blobs)
            self.new_blobs = {}  # without a store: read again from the desk when needed
            self._memory = 0


class LazyFiles(Mapping):
    """A scan's files, built only if asked for (an unchanged desk's attribution never does)."""

    def __init__(self, result: Scan) -> None:
        self._result = result

    def __getitem__(self, path: str) -> FileEntry:
        return self._result.files[path]

    def __iter__(self) -> Iterator[str]:
        return iter(self._result.files)

    def __len__(self) -> int:
        return len(self._result.files)


def _mode_bits(git_mode_value: int) -> int:
    """An ``st_mode`` whose git mode is ``git_mode_value`` (for carried entries)."""
    if git_mode_value == SYMLINK_MODE:
        return _S_IFLNK | 0o777
    return _S_IFREG | (0o755 if git_mode_value == EXECUTABLE_MODE else 0o644)


def scan(
    folders: DeskFolders,
    allowlist: Allowlist,
    cache: StatCache,
    *,
    max_file_size: int = 0,
    sink: BlobSink | None = None,
    exempt: Iterable[str] = (),
) -> Scan:
    """Walks the tracked paths, hashing only files whose stat differs from the cache.

    When the walk finds exactly the cache's names, the stat columns are compared in bulk and
    only the entries that differ (or were racy when cached) are read; otherwise each file is
    looked up in the cache by name. Regular files larger than ``max_file_size`` (when not 0)
    are left out, except the ``exempt`` paths. With a ``sink``, fresh blobs are written there.
    """
    result = Scan(started_ns=time.time_ns())
    result.max_file_size = max_file_size
    result.exempt = frozenset(exempt)
    listed, walked = walk(folders, allowlist, result.skipped)
    names, numbers = listed, array('q', walked)
    if max_file_size and names and max(numbers[0::FIELDS]) > max_file_size:
        names, numbers = without_large(names, numbers, max_file_size, result, result.exempt)
    if names == cache.names:
        compare_in_place(folders, names, numbers, cache, result, sink)
    else:
        compare_by_name(folders, names, numbers, cache, result, sink)
    for path in sorted(result.oversize | {p for p, why in result.skipped if why == REPLACED}):
        position = cache.index.get(path)
        if position is not None and path not in result.files:
            mode = _git_mode_of_cached(cache, position)
            result.carry(path, (mode, cache.sha(position)))
    return result


def _git_mode_of_cached(cache: StatCache, position: int) -> int:
    return git_mode(cache.numbers[position * FIELDS + 4])


def without_large(
    names: list[str], numbers: array, limit: int, result: Scan, exempt: frozenset[str]
) -> tuple[list[str], array]:
    """The walk without the regular files larger than ``limit`` (reported as skipped)."""
    kept_names: list[str] = []
    kept = array('q')
    for i, name in enumerate(names):
        record = numbers[i * FIELDS : (i + 1) * FIELDS]
        if record[0] > limit and stat.S_ISREG(record[4]) and name not in exempt:
            result.skipped.append((name, too_large(limit)))
            result.oversize.add(name)
            continue
        kept_names.append(name)
        kept.extend(record)
    return kept_names, kept


def compare_in_place(
    folders: DeskFolders,
    names: list[str],
    numbers: array,
    cache: StatCache,
    result: Scan,
    sink: BlobSink | None,
) -> None:
    """The walk found the cache's names in the cache's order: compare the columns in bulk."""
    suspects = set(cache.racy)
    if numbers != cache.numbers:
        suspects.update(_differing_records(numbers, cache.numbers))
    result.names = names
    result.numbers = numbers
    if not suspects:
        result.shas = cache.shas
        result.unchanged = True
        return
    shas = bytearray(cache.shas)
    any_difference = False
    for i in sorted(suspects):
        path = names[i]
        start = i * FIELDS
        old_mode = cache.numbers[start + 4]
        sha, stable = _hash(folders, path, numbers[start : start + FIELDS], result, sink)
        if sha is None:  # vanished, replaced or over the limit mid-scan
            result.removed.add(path)
            any_difference = True
            continue
        if not stable:
            numbers[start] = UNSTABLE
        raw = bytes.fromhex(sha.decode())
        old_sha = cache.shas[i * SHA_SIZE : (i + 1) * SHA_SIZE]
        if raw != old_sha or not _same_kind(old_mode, numbers[start + 4]):
            result.changed.add(path)
            shas[i * SHA_SIZE : (i + 1) * SHA_SIZE] = raw
            any_difference = True
        elif numbers[start : start + FIELDS] != cache.numbers[start : start + FIELDS]:
            any_difference = True  # same content, new stat: worth caching
    if result.removed:
        _drop(result, shas)
    else:
        result.shas = bytes(shas)
    result.unchanged = not any_difference
    result.refreshed = not any_difference


def compare_by_name(
    folders: DeskFolders,
    names: list[str],
    numbers: array,
    cache: StatCache,
    result: Scan,
    sink: BlobSink | None,
) -> None:
    """Files were added, removed or reordered: look each one up in the cache by name."""
    index = cache.index
    cached_numbers, cached_shas = cache.numbers, cache.shas
    racy = set(cache.racy)
    shas = bytearray(len(names) * SHA_SIZE)
    gone: list[int] = []
    for i, path in enumerate(names):
        start = i * FIELDS
        position = index.get(path)
        if position is not None:
            cached_start = position * FIELDS
            same = (
                numbers[start : start + FIELDS]
                == cached_numbers[cached_start : cached_start + FIELDS]
            )
            if same and position not in racy:
                cached_sha = cached_shas[position * SHA_SIZE : (position + 1) * SHA_SIZE]
                shas[i * SHA_SIZE : (i + 1) * SHA_SIZE] = cached_sha
                continue
        sha, stable = _hash(folders, path, numbers[start : start + FIELDS], result, sink)
        if sha is None:
            gone.append(i)
            continue
        if not stable:
            numbers[start] = UNSTABLE
        raw = bytes.fromhex(sha.decode())
        shas[i * SHA_SIZE : (i + 1) * SHA_SIZE] = raw
        if (
            position is None
            or raw != cached_shas[position * SHA_SIZE : (position + 1) * SHA_SIZE]
            or not _same_kind(cached_numbers[position * FIELDS + 4], numbers[start + 4])
        ):
            result.changed.add(path)
    result.names, result.numbers = names, numbers
    present = set(names)
    result.removed = {name for name in cache.names if name not in present}
    if gone:
        result.removed.update(names[i] for i in gone)
        _drop(result, shas)
    else:
        result.shas = bytes(shas)


def _drop(result: Scan, shas: bytearray) -> None:
    """Removes the files that vanished mid-scan (listed in ``result.removed``) from the columns."""
    keep = [i for i, name in enumerate(result.names) if name not in result.removed]
    result.names = [result.names[i] for i in keep]
    numbers = array('q')
    new_shas = bytearray()
    for i in keep:
        numbers.extend(result.numbers[i * FIELDS : (i + 1) * FIELDS])
        new_shas += shas[i * SHA_SIZE : (i + 1) * SHA_SIZE]
    result.numbers, result.shas = numbers, bytes(new_shas)
    result.changed -= result.removed


def _same_kind(old_mode: int, new_mode: int) -> bool:
    """Whether two ``st_mode`` values give the same git mode (file type and executable bits)."""
    return old_mode & 0o170111 == new_mode & 0o170111


def _differing_records(new: array, old: array, chunk: int = 64) -> list[int]:
    """Positions of the file records that differ between two stat columns of equal length."""
    out = []
    width = chunk * FIELDS
    for start in range(0, len(new), width):
        if new[start : start + width] != old[start : start + width]:
            for i in range(start, min(start + width, len(new)), FIELDS):
                if new[i : i + FIELDS] != old[i : i + FIELDS]:
                    out.append(i // FIELDS)
    return out


def _hash(
    folders: DeskFolders, path: str, key: array[int], result: Scan, sink: BlobSink | None
) -> tuple[bytes | None, bool]:
    """Reads and hashes one file: its hex blob id and whether its stat held still.

    None when it vanished, was replaced by another file (reported), or grew past the limit
    (reported) since the walk saw it.
    """
    if stat.S_ISLNK(key[4]):
        target = folders.read_link(path)
        if target is None:
            return None, False
        link_sha = blob_id(target)
        result.keep_blob(link_sha, target, sink)
        result.hashed.add(path)
        return link_sha, True
    fd = folders.open_file(path)
    if fd is None:
        return None, False
    limit = 0 if path in result.exempt else result.max_file_size
    try:
        before = os.fstat(fd)
        if not stat.S_ISREG(before.st_mode) or not same_file(before, key):
            result.skipped.append((path, REPLACED))
            return None, False
        if before.st_size > STREAM_THRESHOLD:
            sha = sink.stream_blob(fd, limit) if sink is not None else hash_stream(fd, limit)
            data = None
        else:
            data = _read_all(fd, limit)
            sha = None if data is None else blob_id(data)
        after = os.fstat(fd)
    finally:
        os.close(fd)
    if sha is None:  # grew past the limit, or changed length, while we read it: left out
        if limit and after.st_size > limit:
            result.skipped.append((path, too_large(limit)))
            result.oversize.add(path)
        else:
            result.skipped.append((path, REPLACED))
        return None, False
    if data is not None:
        result.keep_blob(sha, data, sink)
    elif sink is not None:
        result.stored.add(sha)
    stable = _key(before) == _key(after) == tuple(key)
    if stable:
        result.hashed.add(path)
    return sha, stable


def _key(st: os.stat_result) -> StatKey:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_mode)


def _read_all(fd: int, limit: int) -> bytes | None:
    """An open file's bytes; None when there are more than ``limit`` (0: no limit)."""
    chunks = []
    total = 0
    while chunk := os.read(fd, _CHUNK):
        chunks.append(chunk)
        total += len(chunk)
        if limit and total > limit:
            return None
    return b''.join(chunks)


def hash_stream(fd: int, limit: int) -> bytes | None:
    """The blob id of a large open file, read in chunks and never held whole.

    None when it is over ``limit`` (0: no limit) or its length changed while it was read (the
    id is computed with the length read first, as git's object header needs it).
    """
    size = os.fstat(fd).st_size
    if limit and size > limit:
        return None
    digest = hashlib.sha1(b'blob %d\0' % size)
    left = size
    while left > 0:
        chunk = os.read(fd, min(_CHUNK, left))
        if not chunk:
            return None  # shrank while read
        digest.update(chunk)
        left -= len(chunk)
    if os.read(fd, 1):
        return None  # grew while read
    return digest.hexdigest().encode()


def entry_now(folders: DeskFolders, path: str) -> FileEntry | None:
    """A desk file's entry as it is now, read in chunks whatever its size (see
    :func:`read_entry`), or None when it is neither a regular file nor a symlink."""
    found = read_entry(folders, path)
    return None if found is None else found[0]


def read_entry(folders: DeskFolders, path: str) -> tuple[FileEntry, StatKey | None] | None:
    """A desk file's entry as it is now, and its stat when it held still while read (None when
    it did not); None when it is neither a regular file nor a symlink.

    A file that changed length while read gets an id no blob has (it matches nothing).
    """
    st = folders.lstat(path)
    if st is None:
        return None
    if stat.S_ISLNK(st.st_mode):
        target = folders.read_link(path)
        return None if target is None else ((SYMLINK_MODE, blob_id(target)), _key(st))
    if not stat.S_ISREG(st.st_mode):
        return None
    fd = folders.open_file(path)
    if fd is None:
        return None
    try:
        before = os.fstat(fd)
        sha = hash_stream(fd, 0)
        after = os.fstat(fd)
    finally:
        os.close(fd)
    held = sha is not None and _key(before) == _key(after) and same_file(before, _key(st))
    return (git_mode(st.st_mode), sha or b'changed while read'), _key(after) if held else None
