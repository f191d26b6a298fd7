"""Pack files as we read them: :class:`PackView` opens one pack and its index, checked.

A pack is a 12-byte header that counts its records, the records (an object whole, or a delta
naming its base by offset, ``OFS_DELTA``, or by id, ``REF_DELTA``), and a trailer that hashes
them all; its version 2 index lists the ids sorted, with each record's CRC and offset. A view
checks the index against its pack when it opens, follows delta chains when it reads (every
length bounded by ``MAX_OBJECT``, every loop caught) and raises :class:`PackDamaged` on anything
that does not hold together. Writing packs: ``write.py``; choosing delta bases:
``plan.py``.
"""

from __future__ import annotations

import hashlib
import os
import struct
import zlib

OFS_DELTA = 6
REF_DELTA = 7
_TYPE_NAMES = {1: b'commit', 2: b'tree', 3: b'blob', 4: b'tag'}
IDX_MAGIC = b'\xfftOc'
_COPY_CHUNK = 1 << 20
# The largest object (or delta) this module inflates: a record claiming more is treated as
# damaged, so a hostile pack cannot make a write allocate without bound.
MAX_OBJECT = 64 << 20
# Resolved objects kept while planning one write (their raw bytes), before the cache is emptied.
CACHE_LIMIT = 64 << 20


class PackDamaged(Exception):
    """A pack or its index does not hold together (wrong format, length or checksum)."""


def object_sha(type_num: int, raw: bytes) -> bytes:
    """The hex id of an object of this type and content."""
    header = _TYPE_NAMES[type_num] + b' %d\0' % len(raw)
    return hashlib.sha1(header + raw).hexdigest().encode('ascii')


class PackView:
    """One pack and its index, checked for consistency and opened for reading only.

    Opening checks the index's format and checksum and that the pack's header and trailer agree
    with it; the pack's own checksum is verified while it is copied (:meth:`copy_records`).
    """

    def __init__(self, basename: str) -> None:
        self.basename = basename
        self.name = os.path.basename(basename)
        self._fd = os.open(basename + '.pack', os.O_RDONLY)
        try:
            self._load()
        except BaseException:
            os.close(self._fd)
            raise

    def _load(self) -> None:
        st = os.fstat(self._fd)
        self.size = st.st_size
        self.identity = (self.basename, st.st_size, st.st_mtime_ns, st.st_ino)
        with open(self.basename + '.idx', 'rb') as handle:
            idx = handle.read()
        if len(idx) < 8 + 1024 + 40 or idx[:4] != IDX_MAGIC or idx[4:8] != b'\0\0\0\2':
            raise PackDamaged(f'{self.name}.idx is not a version 2 pack index')
        if hashlib.sha1(idx[:-20]).digest() != idx[-20:]:
            raise PackDamaged(f'{self.name}.idx fails its checksum')
        fanout = struct.unpack_from('>256I', idx, 8)
        count = fanout[255]
        if any(fanout[i] > fanout[i + 1] for i in range(255)):
            raise PackDamaged(f'{self.name}.idx has a bad fan-out table')
        start = 8 + 1024
        large_bytes = len(idx) - start - 28 * count - 40
        if large_bytes < 0 or large_bytes % 8:
            raise PackDamaged(f'{self.name}.idx has the wrong length')
        self.fanout = fanout
        self.count = count
        self.names = idx[start : start + 20 * count]
        self.crcs = idx[start + 20 * count : start + 24 * count]
        self.offsets = idx[start + 24 * count : start + 28 * count]
        self.large = idx[start + 28 * count : start + 28 * count + large_bytes]
        self.checksum = idx[-40:-20]
        if self.size < 32:
            raise PackDamaged(f'{self.name}.pack is truncated')
        head = os.pread(self._fd, 12, 0)
        if head[:4] != b'PACK' or head[4:8] not in (b'\0\0\0\2', b'\0\0\0\3'):
            raise PackDamaged(f'{self.name}.pack is not a pack')
        if struct.unpack('>I', head[8:12])[0] != count:
            raise PackDamaged(f'{self.name}.pack and its index disagree on the object count')
        if os.pread(self._fd, 20, self.size - 20) != self.checksum:
            raise PackDamaged(f'{self.name}.pack and its index disagree on the checksum')

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def copy_records(self, out, digest) -> int:
        """Copies the records (not the header or trailer) to ``out`` and into ``digest``,
        verifying the pack's checksum on the way; returns the offset where they end."""
        check = hashlib.sha1()
        check.update(os.pread(self._fd, 12, 0))
        position = 12
        end = self.size - 20
        while position < end:
            chunk = os.pread(self._fd, min(_COPY_CHUNK, end - position), position)
            if not chunk:
                raise PackDamaged(f'{self.name}.pack is truncated')
            check.update(chunk)
            digest.update(chunk)
            out.write(chunk)
            position += len(chunk)
        if check.digest() != self.checksum:
            raise PackDamaged(f'{self.name}.pack fails its checksum')
        return end

    def __enter__(self) -> PackView:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # lookups

    def position(self, name: bytes) -> int:
        """Where a binary object id sits in the sorted index: its index, or where it would go."""
        first = name[0]
        lo = self.fanout[first - 1] if first else 0
        hi = self.fanout[first]
        names = self.names
        while lo < hi:
            mid = (lo + hi) // 2
            if names[mid * 20 : mid * 20 + 20] < name:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def offset_of(self, name: bytes) -> int | None:
        """The offset of the record of a binary object id, or None when the pack lacks it."""
        i = self.position(name)
        if i < self.count and self.names[i * 20 : i * 20 + 20] == name:
            return self._offset(i)
        return None

    def __contains__(self, hex_sha: bytes) -> bool:
        return self.offset_of(bytes.fromhex(hex_sha.decode('ascii'))) is not None

    def _offset(self, i: int) -> int:
        value: int
        (value,) = struct.unpack_from('>I', self.offsets, i * 4)
        if value & 0x80000000:
            index = value & 0x7FFFFFFF
            if (index + 1) * 8 > len(self.large):
                raise PackDamaged(f'{self.name}.idx names a large offset it does not hold')
            (value,) = struct.unpack_from('>Q', self.large, index * 8)
        if not 12 <= value < self.size - 20:
            raise PackDamaged(f'{self.name}.idx points outside its pack')
        return value

    def entries(self) -> list[tuple[int, bytes]]:
        """Every object as ``(offset, hex id)``, in the pack's order."""
        found = []
        for i in range(self.count):
            found.append((self._offset(i), self.names[i * 20 : i * 20 + 20].hex().encode()))
        found.sort()
        return found

    # records

    def _header(self, offset: int) -> tuple[int, int, int, int | None]:
        """A record's (type, size, where its zlib data starts, base offset for a delta)."""
        head = os.pread(self._fd, 64, offset)
        if not head:
            raise PackDamaged(f'{self.name}.pack is truncated')
        byte = head[0]
        type_num = (byte >> 4) & 7
        size = byte & 15
        shift = 4
        pos = 1
        while byte & 0x80:
            if pos >= len(head) or shift > 60:
                raise PackDamaged(f'{self.name}.pack has a bad record header at {offset}')
            byte = head[pos]
            pos += 1
            size |= (byte & 0x7F) << shift
            shift += 7
        base: int | None = None
        if type_num == OFS_DELTA:
            if pos >= len(head):
                raise PackDamaged(f'{self.name}.pack has a bad delta header at {offset}')
            byte = head[pos]
            pos += 1
            distance = byte & 0x7F
            while byte & 0x80:
                if pos >= len(head) or distance > 1 << 56:
                    raise PackDamaged(f'{self.name}.pack has a bad delta offset at {offset}')
                byte = head[pos]
                pos += 1
                distance = ((distance + 1) << 7) | (byte & 0x7F)
            base = offset - distance
            if base < 12:
                raise PackDamaged(f'{self.name}.pack has a delta before its start at {offset}')
        elif type_num == REF_DELTA:
            if pos + 20 > len(head):
                raise PackDamaged(f'{self.name}.pack has a bad delta header at {offset}')
            base = self.offset_of(head[pos : pos + 20])
            pos += 20
            if base is None:
                raise PackDamaged(f'{self.name}.pack has a delta on an object it lacks')
        elif type_num not in _TYPE_NAMES:
            raise PackDamaged(f'{self.name}.pack has a record of unknown type at {offset}')
        return type_num, size, offset + pos, base

    def _inflate(self, start: int, size: int) -> bytes:
        if size > MAX_OBJECT:
            raise PackDamaged(f'{self.name}.pack has a record of {size} bytes (too big to read)')
        decompressor = zlib.decompressobj()
        parts: list[bytes] = []
        position = start
        while not decompressor.eof:
            chunk = os.pread(self._fd, min(max(size + 64, 4096), _COPY_CHUNK), position)
            if not chunk:
                raise PackDamaged(f'{self.name}.pack is truncated')
            position += len(chunk)
            try:
                parts.append(decompressor.decompress(chunk, size + 1 - sum(map(len, parts))))
            except zlib.error as error:
                raise PackDamaged(f'{self.name}.pack has bad compressed data: {error}') from error
            if sum(map(len, parts)) > size:
                raise PackDamaged(f'{self.name}.pack has a record longer than it says')
            if decompressor.unconsumed_tail and not decompressor.eof:
                raise PackDamaged(f'{self.name}.pack has a record longer than it says')
        data = b''.join(parts)
        if len(data) != size:
            raise PackDamaged(f'{self.name}.pack has a record shorter than it says')
        return data

    def chain(self, offset: int) -> list[tuple[int, int]]:
        """``(offset, kind)`` from a record down to the whole object its deltas start from;
        kind is ``OFS_DELTA``, ``REF_DELTA`` or 0 for the whole object."""
        links: list[tuple[int, int]] = []
        seen: set[int] = set()
        current = offset
        while True:
            type_num, _, _, base = self._header(current)
            if base is None:
                links.append((current, 0))
                return links
            links.append((current, type_num))
            seen.add(current)
            if base in seen or len(links) > 10_000:
                raise PackDamaged(f'{self.name}.pack has a delta loop at {offset}')
            current = base

    def read(self, offset: int, cache: Cache) -> tuple[int, bytes, int]:
        """The object at ``offset`` as ``(type, raw bytes, depth of its delta chain)``.

        ``cache`` keeps what was resolved on the way, by offset, for the next reads.
        """
        known = cache.get(offset)
        if known is not None:
            return known
        pending = []
        current = offset
        while True:
            known = cache.get(current)
            if known is not None:
                type_num, raw, depth = known
                break
            kind, size, start, base = self._header(current)
            if base is None:
                type_num, raw, depth = kind, self._inflate(start, size), 0
                cache.put(current, (type_num, raw, depth))
                break
            pending.append((current, start, size))
            if base in (p[0] for p in pending) or len(pending) > 10_000:
                raise PackDamaged(f'{self.name}.pack has a delta loop at {offset}')
            current = base
        from dulwich.pack import apply_delta  # only a delta needs it: opening a view does not

        for at, start, size in reversed(pending):
            delta = self._inflate(start, size)
            base_size, result_size = _delta_sizes(delta)
            if base_size != len(raw) or not 0 <= result_size <= MAX_OBJECT:
                raise PackDamaged(f'{self.name}.pack has a bad delta at {at}')
            try:
                raw = b''.join(apply_delta(raw, delta))
            except (ValueError, AssertionError, IndexError, TypeError) as error:
                raise PackDamaged(f'{self.name}.pack has a bad delta at {at}: {error}') from error
            depth += 1
            cache.put(at, (type_num, raw, depth))
        return type_num, raw, depth


def _delta_sizes(delta: bytes) -> tuple[int, int]:
    """The (base size, result size) a delta declares at its start."""
    sizes = []
    position = 0
    for _ in range(2):
        value = shift = 0
        while True:
            if position >= len(delta) or shift > 63:
                return (-1, -1)
            byte = delta[position]
            position += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        sizes.append(value)
    return sizes[0], sizes[1]


class Cache:
    """Objects of one pack resolved so far, by offset, emptied when it holds CACHE_LIMIT bytes."""

    def __init__(self) -> None:
        self._items: dict[int, tuple[int, bytes, int]] = {}
        self._bytes = 0

    def get(self, offset: int) -> tuple[int, bytes, int] | None:
        return self._items.get(offset)

    def put(self, offset: int, item: tuple[int, bytes, int]) -> None:
        if self._bytes + len(item[1]) > CACHE_LIMIT:
            self._items.clear()
            self._bytes = 0
        self._items[offset] = item
        self._bytes += len(item[1])


def listed_in_packs(pack_dir: str, name: bytes) -> bool:
    """Whether the index of one of the folder's packs lists a binary object id.

    Read without dulwich and without checking the index's checksum (a lookup reads only the
    fan-out table and the names under the id's first byte). False also when an index cannot be
    read: the caller then asks dulwich, which says whether the object is there.
    """
    try:
        names = os.listdir(pack_dir)
    except OSError:
        return False
    present = set(names)
    for entry in names:
        # Only a pack with its index counts, as for git and dulwich.
        if entry.startswith('pack-') and entry.endswith('.idx') and entry[:-4] + '.pack' in present:
            try:
                if _index_lists(os.path.join(pack_dir, entry), name):
                    return True
            except (OSError, struct.error):
                continue
    return False


def _index_lists(path: str, name: bytes) -> bool:
    with open(path, 'rb') as handle:
        header = handle.read(8 + 1024)
        if len(header) < 8 + 1024 or header[:4] != IDX_MAGIC or header[4:8] != b'\0\0\0\2':
            return False
        first = name[0]
        start = struct.unpack_from('>I', header, 8 + 4 * (first - 1))[0] if first else 0
        end = struct.unpack_from('>I', header, 8 + 4 * first)[0]
        if end <= start:
            return False
        handle.seek(8 + 1024 + 20 * start)
        block = handle.read(20 * (end - start))
    low, high = 0, len(block) // 20
    while low < high:
        middle = (low + high) // 2
        found = block[middle * 20 : middle * 20 + 20]
        if found == name:
            return True
        if found < name:
            low = middle + 1
        else:
            high = middle
    return False
