"""A small on-disk memo of packed commits, so a new process need not open the packs to read them.

A snapshot reads the newest commit (and the seal) on every call. After a snapshot that wrote a
pack, that commit lives in the pack, and reading it means opening dulwich's repository and
loading the pack index (~1.3 ms). This file (``<repo>/checkpoints/commits``) keeps what the
library needs of a few packed commits, together with the signature of the pack files (names,
sizes, mtimes, inodes) it was read under. It is trusted only while the packs are exactly those
files: any repack, new pack or damaged (resized) pack makes it void, and the commit is read
from the pack again. A torn or foreign file fails its CRC and is ignored. It is only a cache:
losing it costs one read of the packs.
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path

from .commitinfo import CommitInfo
from .fs import read_file

NAME = 'commits'
_MAGIC = b'TCCM1\n'
_MAX_ENTRIES = 8

Signature = tuple[tuple[str, int, int, int], ...]


def _encode_signature(packs: Signature) -> bytes:
    return ';'.join(f'{name}:{size}:{mtime}:{ino}' for name, size, mtime, ino in packs).encode(
        'utf-8', 'surrogateescape'
    )


def _load(path: Path) -> tuple[bytes, dict[bytes, CommitInfo]] | None:
    try:
        data = read_file(os.path.join(path, NAME))
    except OSError:
        return None
    if len(data) < len(_MAGIC) + 4 or not data.startswith(_MAGIC):
        return None
    body, crc = data[:-4], data[-4:]
    if zlib.crc32(body).to_bytes(4, 'big') != crc:
        return None
    try:
        position = len(_MAGIC)
        end = body.index(b'\n', position)
        signature = body[position:end]
        position = end + 1
        entries: dict[bytes, CommitInfo] = {}
        while position < len(body):
            end = body.index(b'\n', position)
            sha, tree, parents, created_at, length = body[position:end].split(b' ')
            position = end + 1
            size = int(length)
            message = body[position : position + size]
            if len(message) != size or len(sha) != 40 or len(tree) != 40:
                return None
            position += size
            entries[sha] = CommitInfo(
                sha=sha.decode(),
                tree=tree,
                parents=tuple(parents.split(b',')) if parents != b'-' else (),
                created_at=created_at.decode(),
                message=message.decode('utf-8', 'replace'),
            )
    except ValueError:
        return None
    return signature, entries


def find(path: Path, sha: bytes, packs: Signature) -> CommitInfo | None:
    """The remembered commit ``sha`` if it was read under exactly these pack files."""
    loaded = _load(path)
    if loaded is None or loaded[0] != _encode_signature(packs):
        return None
    return loaded[1].get(sha)


def remember(path: Path, infos: list[CommitInfo], packs: Signature) -> None:
    """Adds commits read from the packs (with the packs' signature) to the memo; best effort."""
    signature = _encode_signature(packs)
    loaded = _load(path)
    entries: dict[bytes, CommitInfo] = {}
    if loaded is not None and loaded[0] == signature:
        entries = loaded[1]
    for info in infos:
        entries.pop(info.sha.encode(), None)
        entries[info.sha.encode()] = info
    kept = list(entries.values())[-_MAX_ENTRIES:]
    chunks = [_MAGIC, signature, b'\n']
    for info in kept:
        message = info.message.encode('utf-8', 'surrogateescape')
        parents = b','.join(info.parents) or b'-'
        chunks.append(
            b' '.join(
                (
                    info.sha.encode(),
                    info.tree,
                    parents,
                    info.created_at.encode(),
                    str(len(message)).encode(),
                )
            )
            + b'\n'
        )
        chunks.append(message)
    body = b''.join(chunks)
    data = body + zlib.crc32(body).to_bytes(4, 'big')
    target = os.path.join(path, NAME)
    temporary = os.path.join(path, f'.{NAME}.{os.getpid()}.tmp')
    try:
        with open(temporary, 'wb') as handle:
            handle.write(data)
        os.replace(temporary, target)
    except OSError:
        try:
            os.unlink(temporary)
        except OSError:
            pass
