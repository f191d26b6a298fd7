"""Pack files as we write them: new objects appended to an existing pack, as deltas.

A loose object takes a whole 4 KiB block and holds its content whole, so a snapshot that
rewrites a 40 KB tree or a growing ``Memory.md`` would cost tens of KB until the next packing.
Instead, every write goes into a pack at once, appended to an existing one (the *target*) as
deltas against the versions it replaces, which the target holds.

A pack cannot grow in place: its header counts the records and its trailer hashes them all. So
the new pack is the target's records copied byte for byte, then the new records, then a new
trailer. The records keep their offsets (the header does not change size), so the target's
index entries carry over unchanged and the new ones are spliced in by name; a new record may
name its base by offset (``OFS_DELTA``) anywhere in the copied part. The target's checksum is
verified on the way (a damaged pack is never extended: the new objects go into a pack of their
own instead), and every delta base is read back and checked against its name before it is used.

Each base is the previous version of the same path: the trees of each new commit are walked
next to those of its parent, and a new tree or blob whose previous version is in the target (or
among the records placed before it) is stored as a delta of it when that is at most half its
size. Chains stay at most ``MAX_DEPTH`` long by being built in
runs with heads (see :func:`plan`), so a version is almost never stored whole again.

Writing is crash safe: the pack goes to a temporary file (``tmp_pack_*.pack``), flushed when
``durable``, then is renamed to ``pack-<name>.pack``; its index goes through a ``.idx.lock``
file renamed to ``pack-<name>.idx``, and only then is the pack visible to git and dulwich (both
need the index). The caller removes the target only after all this (see :func:`remove`), and
the new pack holds everything the target held. A crash leaves either the old pack, or both
(duplicates across packs are legal), and at worst a temporary file or an index-less pack, which
readers ignore and the next writer sweeps away (``_remove_crash_leftovers``).
"""

from __future__ import annotations

import hashlib
import os
import struct
import zlib
from collections.abc import Callable, Iterable, Iterator

from dulwich.objects import Commit, ShaFile, Tree, parse_tree
from dulwich.pack import apply_delta, create_delta

from .durability import fsync_fds

# Delta chains: at most MAX_DEPTH long, in runs of RUN versions (see plan()).
MAX_DEPTH = 50
RUN = 25
# Objects smaller than this are stored whole (a delta cannot save anything worth its header).
MIN_DELTA_SIZE = 48

OFS_DELTA = 6
REF_DELTA = 7
_TYPE_NAMES = {1: b'commit', 2: b'tree', 3: b'blob', 4: b'tag'}
_IDX_MAGIC = b'\xfftOc'
_COPY_CHUNK = 1 << 20
# The largest object (or delta) this module inflates: a record claiming more is treated as
# damaged, so a hostile pack cannot make a write allocate without bound.
MAX_OBJECT = 64 << 20
# Resolved objects kept while planning one write (their raw bytes), before the cache is emptied.
CACHE_LIMIT = 64 << 20
# What the previous write of this process left as likely bases for the next one (per pack
# folder): the new pack's name and its new objects' (type, raw). Bounded in total size.
_RECENT: dict[str, tuple[str, dict[bytes, tuple[int, bytes]]]] = {}
_RECENT_LIMIT = 8 << 20


class PackDamaged(Exception):
    """A pack or its index does not hold together (wrong format, length or checksum)."""


def object_sha(type_num: int, raw: bytes) -> bytes:
    """The hex id of an object of this type and content."""
    header = _TYPE_NAMES[type_num] + b' %d\0' % len(raw)
    return hashlib.sha1(header + raw).hexdigest().encode('ascii')


def alike(base: bytes, target: bytes, samples: int = 8, width: int = 24) -> bool:
    """Whether a delta could pay: some pieces of ``target`` occur in ``base``.

    A cheap guard (a few substring searches) in front of ``create_delta``, which is slow on
    unrelated content such as two versions of a compressed or random binary file.
    """
    if len(target) < samples * width * 2 or len(base) < width:
        return True
    step = (len(target) - width) // (samples - 1)
    found = sum(1 for i in range(samples) if target[i * step : i * step + width] in base)
    return found >= 2


# -- reading -------------------------------------------------------------------------------


class PackView:
    """One pack and its index, checked for consistency and opened for reading only.

    Opening checks the index's format and checksum and that the pack's header and trailer agree
    with it; the pack's own checksum is verified while it is copied (:func:`write`).
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
        if len(idx) < 8 + 1024 + 40 or idx[:4] != _IDX_MAGIC or idx[4:8] != b'\0\0\0\2':
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
        parts = []
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


# -- planning ------------------------------------------------------------------------------


class Record:
    """One new record: the object (``sha`` in hex), and the base it is a delta of.

    ``base`` (None: stored whole) is an offset in the target, or ``-1 - i`` for the i-th new
    record; ``by_name`` writes the delta with its base's id ``base_sha`` (``REF_DELTA``), which
    marks a chain's *head* (see :func:`plan`), else with the base's offset (``OFS_DELTA``).
    (Plain classes rather than dataclasses here: they cost nothing to import.)
    """

    __slots__ = ('base', 'base_sha', 'by_name', 'delta', 'depth', 'raw', 'sha', 'type_num')

    def __init__(self, sha: bytes, type_num: int, raw: bytes) -> None:
        self.sha = sha
        self.type_num = type_num
        self.raw = raw
        self.depth = 0
        self.base: int | None = None
        self.by_name = False
        self.base_sha = b''
        self.delta: bytes | None = None


class Plan:
    """The new records in writing order, where each object went, how many are deltas."""

    __slots__ = ('deltas', 'placed', 'records')

    def __init__(self) -> None:
        self.records: list[Record] = []
        self.placed: dict[bytes, int] = {}  # hex id -> index in records
        self.deltas = 0


class _Base:
    __slots__ = ('by_name', 'depth', 'raw', 'reference', 'sha')

    def __init__(
        self, raw: bytes, depth: int, reference: int, by_name: bool = False, sha: bytes = b''
    ) -> None:
        self.raw = raw
        self.depth = depth
        self.reference = reference  # as Record.base
        self.by_name = by_name
        self.sha = sha


def plan(
    objects: Iterable[ShaFile],
    target: PackView | None,
    tree_of_commit: Callable[[bytes], bytes | None],
) -> Plan:
    """Orders new objects and picks each one's delta base.

    The base of a tree or blob is its previous version, at the same path in the parent commit;
    it must be in ``target`` or placed earlier (commits are stored whole). Chains
    are built in runs: a version is a delta of the one before it (an ``OFS_DELTA``) for up to
    ``RUN`` versions, then the next is a *head*, a delta of the previous head (an ``REF_DELTA``,
    which is how a head is recognised later, in this pack or once copied), so a chain holds at
    most ``MAX_DEPTH - RUN`` heads then ``RUN`` versions. When even the heads are used up, the
    next version is whole. Forward deltas can only grow a chain (an appended pack cannot make
    its newest version whole, as git's repacking does), and this keeps both the depth and the
    size in check: about one whole copy per 650 versions, and a head delta (``RUN`` changes)
    per ``RUN`` versions.

    ``objects`` already in ``target`` are skipped; ``tree_of_commit`` names the tree of a commit
    outside the batch (None when unknown), for the first new commit's parent.
    """
    batch: dict[bytes, ShaFile] = {}
    for obj in objects:
        sha = obj.id
        if sha not in batch and (target is None or sha not in target):
            batch[sha] = obj
    result = Plan()
    cache = Cache()
    recent: dict[bytes, tuple[int, bytes]] = {}
    if target is not None:
        remembered = _RECENT.get(os.path.dirname(target.basename))
        if remembered is not None and remembered[0] == target.name:
            recent = remembered[1]

    def locate(sha: bytes) -> int | None:
        index = result.placed.get(sha)
        if index is not None:
            return -1 - index
        if target is None:
            return None
        return target.offset_of(bytes.fromhex(sha.decode('ascii')))

    def chain(reference: int) -> list[tuple[int, int]]:
        """``(reference, kind)`` from a version down to its whole root; kind 0 for whole."""
        links = []
        while reference < 0:
            record = result.records[-1 - reference]
            if record.base is None:
                links.append((reference, 0))
                return links
            links.append((reference, REF_DELTA if record.by_name else OFS_DELTA))
            reference = record.base
        assert target is not None
        for offset, kind in target.chain(reference):
            links.append((offset, kind))
        return links

    def content(reference: int, sha: bytes | None, type_num: int) -> tuple[bytes, bytes] | None:
        """A version's (raw, hex id), read back and checked: its id when known, and its type
        (a delta takes its base's type). None when it cannot serve as a base."""
        if reference < 0:
            record = result.records[-1 - reference]
            return (record.raw, record.sha) if record.type_num == type_num else None
        assert target is not None
        known = recent.get(sha) if sha is not None else None
        if known is not None:
            kind, raw = known
        else:
            try:
                kind, raw, _ = target.read(reference, cache)
            except PackDamaged:
                return None
        if kind != type_num:
            return None
        found = sha if known is not None else object_sha(kind, raw)
        if sha is not None and found != sha:
            return None
        return raw, found  # type: ignore[return-value]

    def base_for(old: bytes, type_num: int) -> _Base | None:
        reference = locate(old)
        if reference is None:
            return None
        try:
            links = chain(reference)
        except PackDamaged:
            return None
        depth = len(links) - 1
        run = 0
        while run < len(links) and links[run][1] == OFS_DELTA:
            run += 1
        if run < RUN and depth < MAX_DEPTH:
            found = content(reference, old, type_num)
            return _Base(found[0], depth, reference) if found is not None else None
        head_depth = depth - run
        if head_depth + 1 + RUN > MAX_DEPTH:
            return None  # the heads are used up too: this version starts a new chain, whole
        found = content(links[run][0], None, type_num)
        if found is None:
            return None
        return _Base(found[0], head_depth, links[run][0], by_name=True, sha=found[1])

    def place(obj: ShaFile, old: bytes | None) -> None:
        sha = obj.id
        if sha in result.placed:
            return
        raw = obj.as_raw_string()
        record = Record(sha, obj.type_num, raw)
        base = None
        if old is not None and len(raw) >= MIN_DELTA_SIZE:
            base = base_for(old, obj.type_num)
        if base is not None and alike(base.raw, raw):
            delta = b''.join(create_delta(base.raw, raw))
            if len(delta) <= len(raw) // 2:
                record.base, record.delta, record.depth = base.reference, delta, base.depth + 1
                record.by_name, record.base_sha = base.by_name, base.sha
                result.deltas += 1
        result.placed[sha] = len(result.records)
        result.records.append(record)

    def tree_entries(sha: bytes) -> dict[bytes, tuple[int, bytes]] | None:
        obj = batch.get(sha)
        if obj is not None:
            raw = obj.as_raw_string()
        else:
            reference = locate(sha)
            found = content(reference, sha, Tree.type_num) if reference is not None else None
            if found is None:
                return None
            raw = found[0]
        try:
            return {name: (mode, child) for name, mode, child in parse_tree(raw, 20)}
        except Exception:  # noqa: BLE001 - a malformed old tree just offers no bases
            return None

    def walk(new_root: bytes, old_root: bytes | None) -> None:
        pending = [(new_root, old_root)]
        while pending:
            new, old = pending.pop()
            obj = batch.get(new)
            if obj is None or new in result.placed or not isinstance(obj, Tree):
                continue
            place(obj, old)
            entries = tree_entries(new)
            old_entries = tree_entries(old) if old is not None else None
            for name, (mode, child) in (entries or {}).items():
                if child not in batch or child in result.placed:
                    continue
                before = old_entries.get(name) if old_entries else None
                if mode == 0o040000:
                    is_tree = before is not None and before[0] == 0o040000
                    pending.append((child, before[1] if is_tree else None))
                elif mode & 0o170000 in (0o100000, 0o120000):
                    is_blob = before is not None and before[0] & 0o170000 in (0o100000, 0o120000)
                    place(batch[child], before[1] if is_blob else None)

    for commit in _oldest_first([obj for obj in batch.values() if isinstance(obj, Commit)]):
        parent = commit.parents[0] if commit.parents else None
        old_tree = None
        if parent is not None:
            if parent in batch and isinstance(batch[parent], Commit):
                old_tree = batch[parent].tree
            else:
                old_tree = _target_commit_tree(target, parent, cache) or tree_of_commit(parent)
        walk(commit.tree, old_tree)
        # A commit whole: against its parent, dulwich's delta saves a few bytes at best (its
        # tree and parent ids, the times and the message all change).
        place(commit, None)
    for obj in batch.values():  # what no new commit reaches: whole
        place(obj, None)
    return result


def _oldest_first(commits: list[Commit]) -> list[Commit]:
    """Commits ordered so that a first parent comes before its child."""
    by_id = {commit.id: commit for commit in commits}
    done: set[bytes] = set()
    ordered: list[Commit] = []
    for commit in commits:
        line = []
        current: Commit | None = commit
        while current is not None and current.id not in done:
            line.append(current)
            done.add(current.id)
            parent = current.parents[0] if current.parents else None
            current = by_id.get(parent) if parent is not None else None
        ordered.extend(reversed(line))
    # A commit placed before its parent (the parent was reached from a later start) is fine:
    # only the walk's base choices depend on the order, never correctness.
    return ordered


def _target_commit_tree(target: PackView | None, sha: bytes, cache: Cache) -> bytes | None:
    if target is None:
        return None
    offset = target.offset_of(bytes.fromhex(sha.decode('ascii')))
    if offset is None:
        return None
    try:
        kind, raw, _ = target.read(offset, cache)
    except PackDamaged:
        return None
    if kind != Commit.type_num or not raw.startswith(b'tree ') or len(raw) < 45:
        return None
    return raw[5:45]


# -- writing -------------------------------------------------------------------------------


def _object_header(type_num: int, size: int) -> bytearray:
    header = bytearray()
    byte = (type_num << 4) | (size & 15)
    size >>= 4
    while size:
        header.append(byte | 0x80)
        byte = size & 0x7F
        size >>= 7
    header.append(byte)
    return header


def _ofs_header(distance: int) -> bytes:
    encoded = [distance & 0x7F]
    distance >>= 7
    while distance:
        distance -= 1
        encoded.append(0x80 | (distance & 0x7F))
        distance >>= 7
    return bytes(reversed(encoded))


def _encode(records: list[Record], start: int) -> Iterator[tuple[bytes, bytes, int, int]]:
    """Each record as ``(chunk, binary id, crc32, offset)``, laid out from offset ``start``."""
    offsets: list[int] = []
    offset = start
    for record in records:
        if record.base is None or record.delta is None:
            payload = record.raw
            header = _object_header(record.type_num, len(payload))
        elif record.by_name:
            payload = record.delta
            header = _object_header(REF_DELTA, len(payload)) + bytes.fromhex(
                record.base_sha.decode('ascii')
            )
        else:
            payload = record.delta
            base = record.base if record.base >= 0 else offsets[-1 - record.base]
            header = _object_header(OFS_DELTA, len(payload)) + _ofs_header(offset - base)
        chunk = bytes(header) + zlib.compress(payload)
        offsets.append(offset)
        yield chunk, bytes.fromhex(record.sha.decode('ascii')), zlib.crc32(chunk), offset
        offset += len(chunk)


def write(pack_dir: str, target: PackView | None, records: list[Record], *, durable: bool) -> str:
    """Writes the target's records and then ``records`` as a new pack; returns its basename.

    The pack and its index are written to temporary names, flushed together when ``durable``,
    then renamed into place, the pack first (the caller flushes the folder). Raises
    :class:`PackDamaged`, leaving nothing behind, when the target's content does not match its
    checksum.
    """
    count = (target.count if target is not None else 0) + len(records)
    temporary = os.path.join(pack_dir, f'tmp_pack_{os.getpid()}_{os.urandom(6).hex()}.pack')
    new_entries: list[tuple[bytes, int, int]] = []
    leftovers = [temporary]
    try:
        with open(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444), 'wb') as out:
            digest = hashlib.sha1()
            header = b'PACK' + struct.pack('>II', 2, count)
            out.write(header)
            digest.update(header)
            start = 12
            if target is not None:
                start = _copy_records(target, out, digest)
            for chunk, name, crc, offset in _encode(records, start):
                out.write(chunk)
                digest.update(chunk)
                new_entries.append((name, crc, offset))
            checksum = digest.digest()
            out.write(checksum)
            out.flush()
            index, name = _index(target, new_entries, checksum)
            basename = os.path.join(pack_dir, f'pack-{name}')
            if os.path.exists(basename + '.idx'):
                return basename  # the very same objects are already packed under this name
            locked = basename + '.idx.lock'
            try:
                os.remove(locked)  # a stale one (we hold the repository's lock)
            except FileNotFoundError:
                pass
            leftovers.append(locked)
            with open(os.open(locked, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444), 'wb') as idx:
                idx.write(index)
                idx.flush()
                if durable:  # both at once: the journal commits them together
                    fsync_fds([out.fileno(), idx.fileno()])
        os.rename(temporary, basename + '.pack')
        leftovers[0] = basename + '.pack'
        os.rename(locked, basename + '.idx')
        leftovers = []
    finally:
        for leftover in leftovers:
            try:
                os.remove(leftover)
            except OSError:
                pass
    return basename


def _copy_records(target: PackView, out, digest) -> int:
    """Copies the target's records (not its header or trailer), verifying its checksum."""
    check = hashlib.sha1()
    check.update(os.pread(target._fd, 12, 0))
    position = 12
    end = target.size - 20
    while position < end:
        chunk = os.pread(target._fd, min(_COPY_CHUNK, end - position), position)
        if not chunk:
            raise PackDamaged(f'{target.name}.pack is truncated')
        check.update(chunk)
        digest.update(chunk)
        out.write(chunk)
        position += len(chunk)
    if check.digest() != target.checksum:
        raise PackDamaged(f'{target.name}.pack fails its checksum')
    return end


def _index(
    target: PackView | None, new_entries: list[tuple[bytes, int, int]], checksum: bytes
) -> tuple[bytes, str]:
    """The version 2 index of target + new entries, and the pack's name (as dulwich names it:
    the SHA-1 of the sorted binary ids)."""
    new_entries.sort()
    names: list[bytes] = []
    crcs: list[bytes] = []
    offsets: list[bytes] = []
    large = bytearray(target.large if target is not None else b'')
    previous = 0
    for name, crc, offset in new_entries:
        if target is not None:
            at = target.position(name)
            names.append(target.names[previous * 20 : at * 20])
            crcs.append(target.crcs[previous * 4 : at * 4])
            offsets.append(target.offsets[previous * 4 : at * 4])
            previous = at
        names.append(name)
        crcs.append(struct.pack('>I', crc))
        if offset < 0x80000000:
            offsets.append(struct.pack('>I', offset))
        else:
            offsets.append(struct.pack('>I', 0x80000000 | (len(large) // 8)))
            large += struct.pack('>Q', offset)
    if target is not None:
        names.append(target.names[previous * 20 :])
        crcs.append(target.crcs[previous * 4 :])
        offsets.append(target.offsets[previous * 4 :])
    all_names = b''.join(names)
    counts = [0] * 256
    for name, _, _ in new_entries:
        counts[name[0]] += 1
    fanout = []
    running = 0
    for first in range(256):
        running += counts[first]
        fanout.append(running + (target.fanout[first] if target is not None else 0))
    body = b''.join(
        (
            _IDX_MAGIC,
            b'\0\0\0\2',
            struct.pack('>256I', *fanout),
            all_names,
            b''.join(crcs),
            b''.join(offsets),
            bytes(large),
            checksum,
        )
    )
    return body + hashlib.sha1(body).digest(), hashlib.sha1(all_names).hexdigest()


def remember_recent(pack_dir: str, basename: str, records: list[Record]) -> None:
    """Keeps the new trees and blobs as likely bases for this process's next write."""
    kept: dict[bytes, tuple[int, bytes]] = {}
    total = 0
    for record in reversed(records):  # the newest versions: the next write's bases
        total += len(record.raw)
        if total > _RECENT_LIMIT:
            break
        kept[record.sha] = (record.type_num, record.raw)
    if len(_RECENT) >= 8 and pack_dir not in _RECENT:
        _RECENT.clear()  # a process writing to many repositories keeps only the latest few
    _RECENT[pack_dir] = (os.path.basename(basename), kept)


def remove(basename: str) -> None:
    """Removes a pack that another pack now holds entirely.

    Its index goes first, so no reader finds an index without its pack, and with it the pack
    stops being one (git and dulwich need both). Freeing a file's blocks can take milliseconds
    (on a file system mounted with ``discard`` it was the slowest step of a snapshot), so the
    two files are renamed to temporary names and deleted by a background thread, which the
    interpreter waits for at exit; if the process ends first, the next writer sweeps them away
    (:func:`sweep_removals`).
    """
    for suffix in ('.rev', '.bitmap', '.mtimes'):  # another tool's, beside the index
        try:
            os.remove(basename + suffix)
        except OSError:
            pass
    folder = os.path.dirname(basename)
    doomed = os.path.join(folder, f'tmp_old_{os.getpid()}_{os.urandom(6).hex()}')
    for suffix in ('.idx', '.pack'):
        # Renamed out of the ``*.pack`` / ``*.idx`` names: no reader (nor the pack signature of
        # the commit memo) counts them any more.
        try:
            os.rename(basename + suffix, f'{doomed}-{suffix[1:]}.old')
        except FileNotFoundError:
            continue
        except OSError:
            try:
                os.remove(basename + suffix)
            except OSError:
                pass
            continue
        _unlink_later(f'{doomed}-{suffix[1:]}.old')


_REMOVER = None
_REMOVER_PID = 0


def _unlink_later(path: str) -> None:
    global _REMOVER, _REMOVER_PID
    if _REMOVER is None or _REMOVER_PID != os.getpid():
        # A forked child inherits the executor object but not its thread: it makes its own.
        from concurrent.futures import ThreadPoolExecutor

        _REMOVER = ThreadPoolExecutor(1, thread_name_prefix='checkpoints-remove')
        _REMOVER_PID = os.getpid()
    try:
        _REMOVER.submit(_unlink, path)
    except RuntimeError:  # the interpreter is shutting down: no new threads
        _unlink(path)


def _unlink(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


def sweep_removals(pack_dir: str) -> None:
    """Hands to the background thread the packs a process left renamed for removal when it
    ended before its thread deleted them (call under the repository's lock)."""
    try:
        names = os.listdir(pack_dir)
    except OSError:
        return
    mine = f'tmp_old_{os.getpid()}_'
    for name in names:
        if name.startswith('tmp_old_') and not name.startswith(mine):
            _unlink_later(os.path.join(pack_dir, name))


def wait_for_removals() -> None:
    """Waits until the packs handed to the background thread are deleted (for tests)."""
    if _REMOVER is not None and _REMOVER_PID == os.getpid():
        _REMOVER.submit(lambda: None).result()


# -- choosing where to write -----------------------------------------------------------------


def packs(pack_dir: str) -> list[tuple[int, str]]:
    """The packs git and dulwich see (a ``.pack`` with its ``.idx``), as ``(size, basename)``,
    smallest first; packs with a ``.keep`` file are left out (never rewritten)."""
    try:
        names = set(os.listdir(pack_dir))
    except OSError:
        return []
    found = []
    for name in names:
        if name.startswith('pack-') and name.endswith('.pack'):
            stem = name[: -len('.pack')]
            if stem + '.idx' in names and stem + '.keep' not in names:
                try:
                    size = os.stat(os.path.join(pack_dir, name)).st_size
                except OSError:
                    continue
                found.append((size, os.path.join(pack_dir, stem)))
    found.sort()
    return found
