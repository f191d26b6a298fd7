"""Putting objects the desk side built into the store: raw blobs and trees, and large blobs
streamed from an open file without ever holding them whole.

A streamed blob is written as a loose object the way git writes one: ``blob <size>\\0`` and
the bytes, zlib-compressed chunk by chunk into a temporary file in ``objects/``, hashed while
read, flushed when durable, then renamed to its id. A file whose length changes while it is
read is refused (its header would lie) and the temporary file removed.
"""

from __future__ import annotations

import hashlib
import os
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.durability import fsync_folders
from ..errors import FileAccessError
from .dulwichadapter import object_id

if TYPE_CHECKING:
    from dulwich.objects import ShaFile

    from .repo import ShadowRepo

_TYPES = {b'blob': 3, b'tree': 2}  # git's type numbers
_CHUNK = 1 << 20


def as_objects(raw: Iterable[tuple[bytes, bytes, bytes]]) -> list[ShaFile]:
    """dulwich objects for ``(hex id, type name, body)`` triples (the id is trusted)."""
    from dulwich.objects import ShaFile

    return [
        ShaFile.from_raw_string(_TYPES[kind], body, sha=object_id(sha)) for sha, kind, body in raw
    ]


class StoreSink:
    """The store side of a scan that records a snapshot (see ``scan.BlobSink``)."""

    def __init__(self, repo: ShadowRepo) -> None:
        self.repo = repo

    def add_blobs(self, blobs: dict[bytes, bytes]) -> None:
        missing = [
            (sha, b'blob', data) for sha, data in blobs.items() if not self.repo.contains(sha)
        ]
        if missing:
            self.repo.write_objects(as_objects(missing))

    def stream_blob(self, fd: int, limit: int) -> bytes | None:
        return stream_loose_blob(self.repo.path, fd, limit, durable=self.repo.durable)


def stream_loose_blob(repository: Path, fd: int, limit: int, *, durable: bool) -> bytes | None:
    """Writes an open file as a loose blob; its hex id, or None when it is over ``limit``
    (0: no limit) or changed length while read."""
    size = os.fstat(fd).st_size
    if limit and size > limit:
        return None
    objects = Path(repository) / 'objects'
    temporary = objects / f'tmp_stream_{os.getpid()}_{id(fd)}_{size}'
    header = b'blob %d\0' % size
    digest = hashlib.sha1(header)
    compressor = zlib.compressobj()
    try:
        out = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o444)
    except OSError as error:
        raise FileAccessError(
            f'cannot write into {objects}: {error.strerror}', path=objects, action='write'
        ) from error
    complete = False
    try:
        _write_all(out, compressor.compress(header))
        left = size
        while left > 0:
            chunk = os.read(fd, min(_CHUNK, left))
            if not chunk:
                return None  # shrank while read
            digest.update(chunk)
            _write_all(out, compressor.compress(chunk))
            left -= len(chunk)
        if os.read(fd, 1):
            return None  # grew while read
        _write_all(out, compressor.flush())
        if durable:
            os.fsync(out)
        complete = True
    except OSError as error:
        raise FileAccessError(
            f'cannot write into {objects}: {error.strerror}', path=objects, action='write'
        ) from error
    finally:
        os.close(out)
        if not complete:
            _unlink_quietly(temporary)
    sha = digest.hexdigest().encode()
    fanout = objects / sha[:2].decode()
    target = fanout / sha[2:].decode()
    new_fanout = not fanout.is_dir()
    try:
        fanout.mkdir(exist_ok=True)
        if target.exists():
            _unlink_quietly(temporary)
        else:
            os.replace(temporary, target)
    except OSError as error:
        _unlink_quietly(temporary)
        raise FileAccessError(
            f'cannot write into {objects}: {error.strerror}', path=objects, action='write'
        ) from error
    if durable:
        fsync_folders([fanout, objects] if new_fanout else [fanout])
    return sha


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _unlink_quietly(path: Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
