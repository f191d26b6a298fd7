"""The persistent stat cache: what each tracked file looked like when we last hashed it.

A file whose size, mtime, ctime, inode and mode are unchanged since it was hashed keeps its
blob id without being read again, so a snapshot of an unchanged desk costs one ``lstat`` per
file. The cache also remembers the tree id of every folder and the commit those trees were
written for, so an unchanged desk needs no tree to be built either.

On disk it is a compact binary file that loads with a few bulk operations (no per-entry parsing
in Python), ends in a checksum, and is rebuilt silently when missing, stale or corrupt.
"""

from __future__ import annotations

import hashlib
import os
import struct
import sys
from array import array
from dataclasses import dataclass, field
from pathlib import Path

_MAGIC = b'TCSTAT1\n'
_HEADER = struct.Struct('<QQq')  # files, folders, written_at_ns
_FIELDS = 5  # size, mtime_ns, ctime_ns, inode, st_mode

# A file modified this close to the moment it was hashed could change again within the same
# timestamp tick without its stat changing; such entries are hashed again next time (git's
# "racy" entries). Coarse timestamps (whole seconds) get a wider window.
RACY_WINDOW_NS = 50_000_000
COARSE_RACY_WINDOW_NS = 2_000_000_000

StatKey = tuple[int, int, int, int, int]


def stat_key(st: os.stat_result) -> StatKey:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_mode)


def is_racy(key: StatKey, hashed_at_ns: int) -> bool:
    """Whether a file with this stat, hashed at ``hashed_at_ns``, could have changed unseen."""
    mtime_ns = key[1]
    window = COARSE_RACY_WINDOW_NS if mtime_ns % 1_000_000_000 == 0 else RACY_WINDOW_NS
    return max(mtime_ns, key[2]) >= hashed_at_ns - window


@dataclass
class StatCache:
    """``path -> (stat key, blob id)`` for files, ``folder -> tree id`` for folders."""

    files: dict[str, tuple[StatKey, bytes]] = field(default_factory=dict)
    trees: dict[str, bytes] = field(default_factory=dict)
    # The context the trees were built in: the desk, the allowlist and the commit they match.
    context: bytes = b''
    commit: bytes = b''
    written_at_ns: int = 0

    def clear_trees(self) -> None:
        self.trees.clear()
        self.commit = b''


def load(path: Path, context: bytes) -> StatCache:
    """Reads the cache, or returns an empty one if it is missing, corrupt or for another desk."""
    try:
        data = path.read_bytes()
        cache = _decode(data)
    except (OSError, ValueError, struct.error, UnicodeDecodeError, IndexError):
        return StatCache(context=context)
    if cache.context != context:
        # Another desk or allowlist: blob ids stay valid but only for unchanged stats.
        cache.clear_trees()
        cache.context = context
    return cache


def save(path: Path, cache: StatCache) -> None:
    """Writes the cache atomically (a crash leaves the old one or the new one, never half)."""
    data = _encode(cache)
    temporary = path.with_name(f'.{path.name}.{os.getpid()}.tmp')
    try:
        with open(temporary, 'wb') as handle:
            handle.write(data)
        os.replace(temporary, path)
    except OSError:
        # The cache is an optimisation: failing to save it must never fail a snapshot.
        try:
            os.unlink(temporary)
        except OSError:
            pass


def _join(names: list[str]) -> bytes:
    return '\0'.join(names).encode('utf-8', 'surrogateescape')


def _split(blob: bytes, count: int) -> list[str]:
    if count == 0:
        return []
    names = blob.decode('utf-8', 'surrogateescape').split('\0')
    if len(names) != count:
        raise ValueError('name count mismatch')
    return names


def _encode(cache: StatCache) -> bytes:
    file_names = list(cache.files)
    numbers = array('q')
    shas = bytearray()
    for name in file_names:
        key, sha = cache.files[name]
        numbers.extend(key)
        shas += bytes.fromhex(sha.decode())
    tree_names = list(cache.trees)
    tree_shas = b''.join(bytes.fromhex(cache.trees[name].decode()) for name in tree_names)
    if sys.byteorder != 'little':  # pragma: no cover - keep the file portable
        numbers.byteswap()
    parts = [
        _HEADER.pack(len(file_names), len(tree_names), cache.written_at_ns),
        _sized(cache.context),
        _sized(cache.commit),
        _sized(_join(file_names)),
        _sized(numbers.tobytes()),
        _sized(bytes(shas)),
        _sized(_join(tree_names)),
        _sized(tree_shas),
    ]
    body = b''.join(parts)
    return _MAGIC + body + hashlib.sha1(body).digest()


def _sized(data: bytes) -> bytes:
    return struct.pack('<Q', len(data)) + data


def _decode(data: bytes) -> StatCache:
    if not data.startswith(_MAGIC) or len(data) < len(_MAGIC) + 20:
        raise ValueError('not a stat cache')
    body, checksum = data[len(_MAGIC) : -20], data[-20:]
    if hashlib.sha1(body).digest() != checksum:
        raise ValueError('checksum mismatch')
    file_count, tree_count, written_at_ns = _HEADER.unpack_from(body, 0)
    offset = _HEADER.size
    sections = []
    for _ in range(7):
        (size,) = struct.unpack_from('<Q', body, offset)
        offset += 8
        sections.append(body[offset : offset + size])
        offset += size
    context, commit, names_blob, numbers_blob, shas, tree_names_blob, tree_shas = sections
    numbers = array('q')
    numbers.frombytes(numbers_blob)
    if sys.byteorder != 'little':  # pragma: no cover
        numbers.byteswap()
    names = _split(names_blob, file_count)
    if len(numbers) != file_count * _FIELDS or len(shas) != file_count * 20:
        raise ValueError('file section size mismatch')
    hex_shas = shas.hex().encode()
    files = {
        name: (
            tuple(numbers[i * _FIELDS : (i + 1) * _FIELDS]),  # type: ignore[misc]
            hex_shas[i * 40 : (i + 1) * 40],
        )
        for i, name in enumerate(names)
    }
    tree_names = _split(tree_names_blob, tree_count)
    if len(tree_shas) != tree_count * 20:
        raise ValueError('tree section size mismatch')
    hex_trees = tree_shas.hex().encode()
    trees = {name: hex_trees[i * 40 : (i + 1) * 40] for i, name in enumerate(tree_names)}
    return StatCache(
        files=files, trees=trees, context=context, commit=commit, written_at_ns=written_at_ns
    )
