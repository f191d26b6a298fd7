"""The objects folder as a whole: what it takes on disk, the packs and loose objects it holds,
and :class:`StorageStats`, what a packing run did to it."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..dulwichadapter import pack_basename
from .folder import REMOVED_PREFIX

if TYPE_CHECKING:
    from dulwich.object_store import DiskObjectStore
    from dulwich.repo import Repo

    from ..commitinfo import CommitInfo


class Repository(Protocol):
    """What the pack modules use of the shadow repository (``repo.ShadowRepo``)."""

    path: Path
    durable: bool

    @property
    def dulwich_repo(self) -> Repo: ...

    def commit_info(self, sha: bytes) -> CommitInfo: ...

    def packs_written(self) -> None: ...


@dataclass(frozen=True)
class StorageStats:
    """What a packing run did."""

    objects: int
    deltas: int
    packs_before: int
    packs_after: int
    loose_before: int
    bytes_before: int
    bytes_after: int


def object_store(repo: Repository) -> DiskObjectStore:
    """dulwich's object store of the repository (``ShadowRepo`` keeps dulwich's repository
    private)."""
    return repo.dulwich_repo.object_store


def packed_sizes(store: DiskObjectStore) -> dict[bytes, int]:
    """What each packed object takes in its pack (its record, a delta's included), by hex id."""
    sizes: dict[bytes, int] = {}
    for pack in store.packs:
        entries = sorted((offset, sha) for sha, offset, _ in pack.index.iterentries())
        end = os.path.getsize(pack_basename(pack) + '.pack') - 20
        for (offset, sha), following in zip(entries, entries[1:] + [(end, b'')], strict=True):
            sizes[sha.hex().encode()] = following[0] - offset
    return sizes


def objects_size(repository: Path) -> int:
    """Disk space the repository's objects (loose and packed) take, as ``du`` counts it.

    Allocated blocks rather than file lengths: a loose object of 150 bytes still takes a
    whole block, which is exactly the bloat packing removes. Packs already replaced and only
    waiting for the background thread to delete them are not counted: the figure must not
    depend on how far that thread has got.
    """
    total = 0
    for folder, _, names in os.walk(Path(repository) / 'objects'):
        for name in names:
            if name.startswith(REMOVED_PREFIX):
                continue
            try:
                st = os.lstat(os.path.join(folder, name))
            except OSError:
                continue
            blocks = getattr(st, 'st_blocks', None)
            total += blocks * 512 if blocks is not None else st.st_size
    return total


def loose_count(repository: Path) -> int:
    objects = Path(repository) / 'objects'
    count = 0
    try:
        folders = os.listdir(objects)
    except OSError:
        return 0
    for name in folders:
        if len(name) == 2:
            try:
                count += len(os.listdir(objects / name))
            except OSError:
                pass
    return count


def pack_count(repository: Path) -> int:
    """The packs readers see: a ``.pack`` with its ``.idx`` (not one being written or deleted)."""
    try:
        names = set(os.listdir(Path(repository) / 'objects' / 'pack'))
    except OSError:
        return 0
    return sum(1 for name in names if name.endswith('.pack') and name[:-5] + '.idx' in names)


def drop_empty_fanout(repository: Path) -> None:
    """Removes the empty two-hex-digit folders of loose objects."""
    objects = Path(repository) / 'objects'
    try:
        names = os.listdir(objects)
    except OSError:
        return
    for name in names:
        if len(name) == 2:
            try:
                os.rmdir(objects / name)
            except OSError:
                pass
