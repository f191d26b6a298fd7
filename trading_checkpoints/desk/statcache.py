"""The persistent stat cache: what each tracked file looked like when we last hashed it.

A file whose size, mtime, ctime, inode and mode are unchanged since it was hashed keeps its
blob id without being read again, so a snapshot of an unchanged desk costs one ``lstat`` per
file. The cache also remembers the tree id of every folder and the commit those trees were
written for, so an unchanged desk needs no tree to be built either.

The files are kept as three parallel columns in the order the last scan walked them: the paths,
a flat ``array`` of five stat numbers per file and the concatenated 20-byte blob ids. A scan that
walks the same paths with the same stat numbers (one C-level comparison of two arrays) needs no
per-file work at all. On disk the columns are stored as they are, so loading is a few bulk
operations with no per-entry parsing in Python; the file ends in a CRC-32 and is rebuilt silently
when missing, stale, foreign or corrupt. It lives in the repository and is opened through
:mod:`..core.repofiles` (never through a link, only when it is a regular file of at most
:data:`MAX_BYTES`); a link or a FIFO planted at its name is replaced when the cache is saved.
"""

from __future__ import annotations

import os
import struct
import sys
import zlib
from array import array
from collections.abc import Iterable
from pathlib import Path

from ..core import repofiles
from ..core.repofiles import RepoFile
from ..errors import CheckpointError

_MAGIC = b'TCSTAT2\n'
NAME = 'checkpoints/statcache'  # inside the repository
# The largest cache read (about two million files); a larger file is taken as corrupt.
MAX_BYTES = 256 << 20
_HEADER = struct.Struct('<QQqQ')  # files, folders, written_at_ns, racy entries
_SECTIONS = 8
FIELDS = 5  # size, mtime_ns, ctime_ns, inode, st_mode
SHA_SIZE = 20

# A file modified this close to the moment it was hashed could change again within the same
# timestamp tick without its stat changing; such entries are hashed again next time (git's
# "racy" entries). Coarse timestamps (whole seconds) get a wider window.
RACY_WINDOW_NS = 50_000_000
COARSE_RACY_WINDOW_NS = 2_000_000_000
_RACY_CHUNK = 512  # entries looked at together by racy_indices
_FEW = 8  # paths looked up one by one (a C-level search of the names each)

# The size recorded for a file whose stat moved while it was read: no real stat matches it, so
# the file is read again by the next scan.
UNSTABLE = -1

StatKey = tuple[int, int, int, int, int]


def stat_key(st: os.stat_result) -> StatKey:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_mode)


def is_racy(key: StatKey | array, hashed_at_ns: int) -> bool:
    """Whether a file with this stat, hashed at ``hashed_at_ns``, could have changed unseen."""
    mtime_ns = key[1]
    window = COARSE_RACY_WINDOW_NS if mtime_ns % 1_000_000_000 == 0 else RACY_WINDOW_NS
    return max(mtime_ns, key[2]) >= hashed_at_ns - window


def racy_indices(numbers: array, hashed_at_ns: int) -> array:
    """The positions of the entries of a stat column that are racy at ``hashed_at_ns``."""
    out = array('q')
    if not numbers:
        return out
    recent = hashed_at_ns - COARSE_RACY_WINDOW_NS
    mtimes, ctimes = numbers[1::FIELDS], numbers[2::FIELDS]
    # Looked at in chunks, each skipped at C speed when nothing in it was touched within the
    # widest window: after a write to one file of many, only that file's chunk is gone through.
    for start in range(0, len(mtimes), _RACY_CHUNK):
        end = start + _RACY_CHUNK
        if max(mtimes[start:end]) < recent and max(ctimes[start:end]) < recent:
            continue
        for index in range(start, min(end, len(mtimes))):
            mtime, ctime = mtimes[index], ctimes[index]
            if mtime >= recent or ctime >= recent:
                if is_racy((0, mtime, ctime, 0, 0), hashed_at_ns):
                    out.append(index)
    return out


def file_in(repository: str | os.PathLike[str]) -> RepoFile:
    """Where a repository keeps its desk's stat cache."""
    return RepoFile(Path(repository), NAME)


class StatCache:
    """``path -> (stat key, blob id)`` for files, ``folder -> tree id`` for folders.

    The file entries live in the columns ``names``, ``numbers`` and ``shas``; :attr:`files`
    offers them as a dict (built on first use) for code that wants one.
    """

    def __init__(
        self,
        names: list[str] | None = None,
        numbers: array | None = None,
        shas: bytes = b'',
        trees: dict[str, bytes] | None = None,
        context: bytes = b'',
        commit: bytes = b'',
        written_at_ns: int = 0,
        racy: array | None = None,
    ) -> None:
        self.names: list[str] = names if names is not None else []
        self.numbers: array = numbers if numbers is not None else array('q')
        self.shas: bytes = shas
        self.trees: dict[str, bytes] = trees if trees is not None else {}
        # The context the trees were built in: the desk and the allowlist.
        self.context = context
        # The commit the trees (and files) match.
        self.commit = commit
        self.written_at_ns = written_at_ns
        # Entries that were racy when the cache was written (see ``racy_indices``).
        self.racy: array = racy if racy is not None else array('q')
        self._index: dict[str, int] | None = None

    def __len__(self) -> int:
        return len(self.names)

    def with_racy(self, racy: array) -> StatCache:
        """The same cache, with only the rows ``racy`` held as racy."""
        return StatCache(
            self.names,
            self.numbers,
            self.shas,
            self.trees,
            self.context,
            self.commit,
            self.written_at_ns,
            racy,
        )

    def clear_trees(self) -> None:
        self.trees.clear()
        self.commit = b''

    @property
    def index(self) -> dict[str, int]:
        """``path -> position`` in the columns."""
        if self._index is None:
            self._index = dict(zip(self.names, range(len(self.names)), strict=True))
        return self._index

    def key(self, position: int) -> StatKey:
        start = position * FIELDS
        return tuple(self.numbers[start : start + FIELDS])

    def sha(self, position: int) -> bytes:
        """The hex blob id of the entry at ``position``."""
        return self.shas[position * SHA_SIZE : (position + 1) * SHA_SIZE].hex().encode()

    def rows(self, paths: Iterable[str]) -> dict[str, int]:
        """The positions of those of ``paths`` the cache holds; a few are looked up without
        making the index of every file."""
        wanted = list(paths)
        if self._index is not None or len(wanted) > _FEW:
            index = self.index
            return {path: index[path] for path in wanted if path in index}
        found = {}
        for path in wanted:
            try:
                found[path] = self.names.index(path)
            except ValueError:
                continue
        return found

    @property
    def files(self) -> dict[str, tuple[StatKey, bytes]]:
        return {name: (self.key(i), self.sha(i)) for i, name in enumerate(self.names)}

    @files.setter
    def files(self, files: dict[str, tuple[StatKey, bytes]]) -> None:
        self.names = list(files)
        numbers = array('q')
        shas = bytearray()
        for key, sha in files.values():
            numbers.extend(key)
            shas += bytes.fromhex(sha.decode())
        self.set_columns(self.names, numbers, bytes(shas))

    def set_columns(self, names: list[str], numbers: array, shas: bytes) -> None:
        if len(numbers) != len(names) * FIELDS or len(shas) != len(names) * SHA_SIZE:
            raise ValueError('stat cache columns of different lengths')
        self.names, self.numbers, self.shas = names, numbers, shas
        self._index = None


def load(file: RepoFile | Path, context: bytes) -> StatCache:
    """Reads the cache, or returns an empty one if it is missing, corrupt, not a regular file
    or for another desk."""
    try:
        data = repofiles.read(RepoFile.of(file), MAX_BYTES)
        if data is None:
            return StatCache(context=context)
        cache = _decode(data)
    except (
        CheckpointError,
        ValueError,
        struct.error,
        UnicodeDecodeError,
        IndexError,
        OverflowError,
    ):
        return StatCache(context=context)
    if cache.context != context:
        # Another desk or allowlist: blob ids stay valid but only for unchanged stats.
        cache.clear_trees()
        cache.context = context
    return cache


def save(file: RepoFile | Path, cache: StatCache) -> None:
    """Writes the cache over the old one, in place.

    Callers hold the repository's lock, so no other writer changes it meanwhile; readers
    without the lock (``status``, ``diff``, a snapshot's look) may read it half written, and
    so may the next operation after a crash: its checksum or section sizes do not add up,
    ``load`` rejects it, and the reader scans as with no cache (the look then takes the
    lock). In place rather than through a temporary file
    and a rename: on ext4 a rename over an existing file flushes the new file to disk at once
    (``auto_da_alloc``), which costs more than everything else a small snapshot does.
    """
    cache.racy = racy_indices(cache.numbers, cache.written_at_ns)
    data = _encode(cache)
    try:
        fd = repofiles.open_in_place(RepoFile.of(file), repair=True)  # callers hold the lock
    except CheckpointError:
        return  # the cache is an optimisation: failing to save it must never fail a snapshot
    try:
        view = memoryview(data)
        written = 0
        while written < len(data):
            if hasattr(os, 'pwrite'):
                written += os.pwrite(fd, view[written:], written)
            else:  # pragma: no cover - Windows
                os.lseek(fd, written, os.SEEK_SET)
                written += os.write(fd, view[written:])
        os.ftruncate(fd, len(data))
    except OSError:
        pass
    finally:
        os.close(fd)


def _join(names: list[str]) -> bytes:
    return '\0'.join(names).encode('utf-8', 'surrogateescape')


def _split(blob: bytes, count: int) -> list[str]:
    if count == 0:
        if blob:
            raise ValueError('name count mismatch')
        return []
    names = blob.decode('utf-8', 'surrogateescape').split('\0')
    if len(names) != count:
        raise ValueError('name count mismatch')
    return names


def _little_endian(numbers: array) -> bytes:
    if sys.byteorder != 'little':  # pragma: no cover - keep the file portable
        numbers = array('q', numbers)
        numbers.byteswap()
    return numbers.tobytes()


def _from_little_endian(blob: bytes) -> array:
    numbers = array('q')
    numbers.frombytes(blob)
    if sys.byteorder != 'little':  # pragma: no cover
        numbers.byteswap()
    return numbers


def _encode(cache: StatCache) -> bytes:
    count = len(cache.names)
    if len(cache.numbers) != count * FIELDS or len(cache.shas) != count * SHA_SIZE:
        raise ValueError('stat cache columns of different lengths')
    tree_names = list(cache.trees)
    tree_shas = bytes.fromhex(b''.join(cache.trees[name] for name in tree_names).decode())
    parts = [
        _HEADER.pack(len(cache.names), len(tree_names), cache.written_at_ns, len(cache.racy)),
        _sized(cache.context),
        _sized(cache.commit),
        _sized(_join(cache.names)),
        _sized(_little_endian(cache.numbers)),
        _sized(cache.shas),
        _sized(_little_endian(cache.racy)),
        _sized(_join(tree_names)),
        _sized(tree_shas),
    ]
    body = b''.join(parts)
    return _MAGIC + body + struct.pack('<I', zlib.crc32(body))


def _sized(data: bytes) -> bytes:
    return struct.pack('<Q', len(data)) + data


def _decode(data: bytes) -> StatCache:
    if not data.startswith(_MAGIC) or len(data) < len(_MAGIC) + _HEADER.size + 4:
        raise ValueError('not a stat cache')
    body = memoryview(data)[len(_MAGIC) : -4]
    if struct.pack('<I', zlib.crc32(body)) != data[-4:]:
        raise ValueError('checksum mismatch')
    file_count, tree_count, written_at_ns, racy_count = _HEADER.unpack_from(body, 0)
    offset = _HEADER.size
    sections = []
    for _ in range(_SECTIONS):
        (size,) = struct.unpack_from('<Q', body, offset)
        offset += 8
        if offset + size > len(body):
            raise ValueError('truncated section')
        sections.append(bytes(body[offset : offset + size]))
        offset += size
    if offset != len(body):
        raise ValueError('trailing bytes')
    context, commit, names_blob, numbers_blob, shas, racy_blob, tree_names_blob = sections[:7]
    tree_shas = sections[7]
    numbers = _from_little_endian(numbers_blob)
    racy = _from_little_endian(racy_blob)
    names = _split(names_blob, file_count)
    if len(numbers) != file_count * FIELDS or len(shas) != file_count * SHA_SIZE:
        raise ValueError('file section size mismatch')
    if len(racy) != racy_count or any(not 0 <= i < file_count for i in racy):
        raise ValueError('racy section mismatch')
    tree_names = _split(tree_names_blob, tree_count)
    if len(tree_shas) != tree_count * SHA_SIZE:
        raise ValueError('tree section size mismatch')
    hex_trees = tree_shas.hex().encode()
    trees = {name: hex_trees[i * 40 : (i + 1) * 40] for i, name in enumerate(tree_names)}
    return StatCache(
        names=names,
        numbers=numbers,
        shas=shas,
        trees=trees,
        context=context,
        commit=commit,
        written_at_ns=written_at_ns,
        racy=racy,
    )
