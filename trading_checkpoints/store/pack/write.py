"""Writing packs: new objects appended to an existing pack, as deltas.

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
own instead). Which new record is a delta of what is decided before, by :func:`packplan.plan`,
which reads every delta base back and checks it against its name.

Writing is crash safe: the pack goes to a temporary file (``tmp_pack_*.pack``), flushed when
``durable``, then is renamed to ``pack-<name>.pack``; its index goes through a ``.idx.lock``
file renamed to ``pack-<name>.idx``, and only then is the pack visible to git and dulwich (both
need the index). The caller removes the target only after all this (see
:func:`packfolder.remove`), and the new pack holds everything the target held. A crash leaves
either the old pack, or both (duplicates across packs are legal), and at worst a temporary file
or an index-less pack, which readers ignore and the next writer sweeps away
(``leftovers.remove_crash_leftovers``).
"""

from __future__ import annotations

import hashlib
import os
import struct
import zlib
from collections.abc import Iterator

from ...core.durability import fsync_fds
from .packfile import IDX_MAGIC, OFS_DELTA, REF_DELTA, PackView


class Record:
    """One new record: the object (``sha`` in hex), and the base it is a delta of.

    ``base`` (None: stored whole) is an offset in the target, or ``-1 - i`` for the i-th new
    record; ``by_name`` writes the delta with its base's id ``base_sha`` (``REF_DELTA``), which
    marks a chain's *head* (see :func:`packplan.plan`), else with the base's offset
    (``OFS_DELTA``).
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
                start = target.copy_records(out, digest)
            for chunk, binary_sha, crc, offset in _encode(records, start):
                out.write(chunk)
                digest.update(chunk)
                new_entries.append((binary_sha, crc, offset))
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
            IDX_MAGIC,
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
