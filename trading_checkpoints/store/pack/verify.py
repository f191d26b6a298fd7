"""Which pack or index of a repository is damaged: each file checked against its own checksum.

git ends a pack with the SHA-1 of everything before it, and an index with the pack's checksum
and then its own. When reading objects fails (dulwich raises a checksum mismatch, an assertion
on a header, a zlib error, a short ``struct`` read), :func:`find_damaged` names the file at
fault, so the error can say which file it is instead of repeating dulwich's words. It reads
every pack from start to end: it runs only once something already went wrong.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from ...core import repofiles
from ...core.repofiles import RepoFile
from ...errors import CheckpointError

_CHUNK = 1 << 20
_IDX_MAGIC = b'\xfftOc'


def find_damaged(repository: Path) -> tuple[Path, str] | None:
    """The first damaged pack or index as ``(path, what is wrong)``, or None when every pack
    and index holds together (the damage is elsewhere: a loose object, or a race)."""
    folder = Path(repository) / 'objects' / 'pack'
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return None
    for name in names:
        if not (name.startswith('pack-') and name.endswith('.idx')):
            continue
        stem = name[: -len('.idx')]
        index = RepoFile(Path(repository), f'objects/pack/{name}')
        pack = RepoFile(Path(repository), f'objects/pack/{stem}.pack')
        try:
            problem, pack_checksum = _check_index(index)
        except CheckpointError as error:
            return index.path, repofiles.reason(error)
        if problem is not None:
            return index.path, problem
        try:
            problem = _check_pack(pack, pack_checksum)
        except CheckpointError as error:
            return pack.path, repofiles.reason(error)
        if problem is not None:
            return pack.path, problem
    return None


def _digest(fd: int, size: int) -> tuple[bytes, bytes, bytes]:
    """The SHA-1 of all but the last 20 bytes, the first 12 bytes and the last 20."""
    digest = hashlib.sha1()
    head = os.pread(fd, 12, 0)
    position = 0
    end = max(size - 20, 0)
    while position < end:
        chunk = os.pread(fd, min(_CHUNK, end - position), position)
        if not chunk:
            break
        digest.update(chunk)
        position += len(chunk)
    return digest.digest(), head, os.pread(fd, 20, end)


def _check_index(file: RepoFile) -> tuple[str | None, bytes]:
    fd = repofiles.open_to_read(file)
    if fd is None:
        return 'it vanished', b''
    try:
        size = os.fstat(fd).st_size
        if size < 8 + 1024 + 40:
            return 'it is truncated', b''
        digest, head, trailer = _digest(fd, size)
        if digest != trailer:
            return 'its checksum does not match its contents', b''
        if head[:4] == _IDX_MAGIC and head[4:8] not in (b'\0\0\0\2', b'\0\0\0\3'):
            return 'it is not a pack index git can read', b''
        return None, os.pread(fd, 20, size - 40)
    finally:
        os.close(fd)


def _check_pack(file: RepoFile, expected: bytes) -> str | None:
    fd = repofiles.open_to_read(file)
    if fd is None:
        return 'it is missing beside its index'
    try:
        size = os.fstat(fd).st_size
        if size < 32:
            return 'it is truncated'
        digest, head, trailer = _digest(fd, size)
        if head[:4] != b'PACK' or head[4:8] not in (b'\0\0\0\2', b'\0\0\0\3'):
            return 'it does not start as a pack'
        if digest != trailer:
            return 'its checksum does not match its contents'
        if trailer != expected:
            return 'its checksum is not the one its index names'
        return None
    finally:
        os.close(fd)
