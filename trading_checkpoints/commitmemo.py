"""A small on-disk memo of packed commits, so a new process need not open the packs to read them.

A snapshot reads the newest commit (and the seal) on every call. After a snapshot that wrote a
pack, that commit lives in the pack, and reading it means opening dulwich's repository and
loading the pack index (~1.3 ms). This file (``<repo>/checkpoints/commits``) keeps the bytes of
a few packed commits, together with the signature of the pack files (names, sizes, mtimes,
inodes) it was read under. It is trusted only while the packs are exactly those files: any
repack, new pack or damaged (resized) pack makes it void, and the commit is read from the pack
again. A torn or foreign file fails its CRC and is ignored. It is only a cache: losing it costs
one read of the packs.

The file lives in the repository, so anyone may have written it: each entry is the commit
object itself and is used only when its bytes hash to the id it is filed under, so a memo can
never make a commit say anything (a tree, parents, a date, a message) the commit does not.
"""

from __future__ import annotations

import hashlib
import os
import zlib
from pathlib import Path

from dulwich.objects import Commit, ShaFile

from .commitinfo import CommitInfo, from_commit
from .fs import read_file

NAME = 'commits'
_MAGIC = b'TCCM2\n'
_MAX_ENTRIES = 8
_MAX_COMMIT = 16 * 1024
_MAX_SIZE = (_MAX_COMMIT + 64) * _MAX_ENTRIES + 64 * 1024  # signature: a line per pack

Signature = tuple[tuple[str, int, int, int], ...]


def _encode_signature(packs: Signature) -> bytes:
    return ';'.join(f'{name}:{size}:{mtime}:{ino}' for name, size, mtime, ino in packs).encode(
        'utf-8', 'surrogateescape'
    )


def _commit_id(raw: bytes) -> bytes:
    return hashlib.sha1(b'commit %d\0' % len(raw) + raw).hexdigest().encode()


def _load(path: Path) -> tuple[bytes, dict[bytes, bytes]] | None:
    """The signature and ``commit id -> raw commit`` of every entry whose bytes match its id."""
    try:
        data = read_file(os.path.join(path, NAME), _MAX_SIZE)
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
        entries: dict[bytes, bytes] = {}
        while position < len(body):
            end = body.index(b'\n', position)
            sha, length = body[position:end].split(b' ')
            position = end + 1
            raw = body[position : position + int(length)]
            position += len(raw)
            if _commit_id(raw) == sha:
                entries[sha] = raw
    except ValueError:
        return None
    return signature, entries


def find(path: Path, sha: bytes, packs: Signature) -> CommitInfo | None:
    """The remembered commit ``sha`` if it was read under exactly these pack files."""
    loaded = _load(path)
    if loaded is None or loaded[0] != _encode_signature(packs):
        return None
    raw = loaded[1].get(sha)
    if raw is None:
        return None
    try:
        commit = ShaFile.from_raw_string(Commit.type_num, raw, sha=sha)
        return from_commit(sha, commit)
    except Exception:  # noqa: BLE001 - whatever dulwich finds wrong: read it from the pack
        return None


def remember(path: Path, commits: list[tuple[bytes, bytes]], packs: Signature) -> None:
    """Adds ``(id, raw commit)`` pairs read from the packs (with the packs' signature) to the
    memo; best effort."""
    signature = _encode_signature(packs)
    loaded = _load(path)
    entries: dict[bytes, bytes] = {}
    if loaded is not None and loaded[0] == signature:
        entries = loaded[1]
    for sha, raw in commits:
        entries.pop(sha, None)
        if len(raw) <= _MAX_COMMIT:  # a long message: read from the pack, keep the memo small
            entries[sha] = raw
    kept = list(entries.items())[-_MAX_ENTRIES:]
    chunks = [_MAGIC, signature, b'\n']
    for sha, raw in kept:
        chunks.append(sha + b' ' + str(len(raw)).encode() + b'\n')
        chunks.append(raw)
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
