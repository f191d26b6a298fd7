"""Git objects written byte by byte, bypassing every check a writer would make.

A hostile repository is built from these: loose objects stored exactly as given (names with
slashes or ``..``, bad modes, missing objects, truncated trees), and packs of raw records under
any names (a record whose content is not what its name says, a record claiming any size), for
the readers to refuse.
"""

from __future__ import annotations

import hashlib
import random
import struct
import zlib
from pathlib import Path

BLOB = b'100644'
EXEC = b'100755'
LINK = b'120000'
TREE = b'40000'


def write_object(repo: Path, kind: bytes, body: bytes) -> str:
    """Stores a loose object exactly as given, with no validation at all."""
    raw = kind + b' ' + str(len(body)).encode() + b'\0' + body
    sha = hashlib.sha1(raw).hexdigest()
    folder = repo / 'objects' / sha[:2]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / sha[2:]).write_bytes(zlib.compress(raw))
    return sha


def blob(repo: Path, data: bytes) -> str:
    return write_object(repo, b'blob', data)


def tree(repo: Path, *entries: tuple[bytes, bytes, str]) -> str:
    body = b''.join(mode + b' ' + name + b'\0' + bytes.fromhex(sha) for mode, name, sha in entries)
    return write_object(repo, b'tree', body)


def commit(repo: Path, tree_sha: str, message: bytes = b'hostile\n') -> str:
    head = (repo / 'refs' / 'heads' / 'main').read_text().strip()
    body = (
        b'tree ' + tree_sha.encode() + b'\nparent ' + head.encode() + b'\n'
        b'author x <x@x> 1700000000 +0000\ncommitter x <x@x> 1700000000 +0000\n\n' + message
    )
    return write_object(repo, b'commit', body)


def in_notes(repo: Path, *entries: tuple[bytes, bytes, str]) -> str:
    """A root tree whose notes/ folder holds the given entries."""
    return tree(repo, (TREE, b'notes', tree(repo, *entries)))


def object_id(kind: bytes, body: bytes) -> bytes:
    """The binary id git gives an object of this kind and content."""
    return hashlib.sha1(kind + b' ' + str(len(body)).encode() + b'\0' + body).digest()


def whole_record(type_num: int, body: bytes) -> bytes:
    """A pack record holding an object whole: its type and size header, then its zlib data."""
    size = len(body)
    byte = (type_num << 4) | (size & 15)
    size >>= 4
    header = bytearray()
    while size:
        header.append(byte | 0x80)
        byte = size & 0x7F
        size >>= 7
    header.append(byte)
    return bytes(header) + zlib.compress(body)


def pack(folder: Path, records: list[bytes], names: list[bytes]) -> str:
    """A version 2 pack of raw records under the given binary names, with its index; returns
    its basename (``<folder>/pack-<name>``). Nothing checks that a record is what its name says."""
    body = b'PACK' + struct.pack('>II', 2, len(records))
    entries = []
    for record, name in zip(records, names, strict=True):
        entries.append((name, zlib.crc32(record), len(body)))
        body += record
    checksum = hashlib.sha1(body).digest()
    entries.sort()
    fanout = [sum(1 for name, _, _ in entries if name[0] <= first) for first in range(256)]
    index = b''.join(
        (
            b'\xfftOc\0\0\0\2',
            struct.pack('>256I', *fanout),
            b''.join(name for name, _, _ in entries),
            b''.join(struct.pack('>I', crc) for _, crc, _ in entries),
            b''.join(struct.pack('>I', offset) for _, _, offset in entries),
            checksum,
        )
    )
    index += hashlib.sha1(index).digest()
    name = hashlib.sha1(b''.join(name for name, _, _ in entries)).hexdigest()
    basename = str(folder / f'pack-{name}')
    Path(basename + '.pack').write_bytes(body + checksum)
    Path(basename + '.idx').write_bytes(index)
    return basename


def pack_of_size(folder: Path, size: int, seed: int) -> tuple[str, bytes]:
    """A pack of exactly ``size`` bytes holding one blob of random bytes; returns its basename
    and the blob's hex id."""
    data = random.Random(seed).randbytes(size)
    length = size - 64
    for _ in range(10):  # zlib stores random bytes as they are: the size follows the length
        record = whole_record(3, data[:length])
        total = 12 + len(record) + 20  # the header, the record, the trailer
        if total == size:
            name = object_id(b'blob', data[:length])
            return pack(folder, [record], [name]), name.hex().encode()
        length += size - total
    raise AssertionError(f'no pack of exactly {size} bytes')
