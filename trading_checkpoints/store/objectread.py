"""Reading one repository's objects: blobs, trees and typed objects, each missing or damaged one
a clear error naming it.

A loose object is read without opening dulwich's repository (a snapshot of an unchanged desk
reads the newest commit this way); packed objects go through dulwich's object store, read once
more when another process replaced a pack meanwhile. Tree entries are kept for the process,
since a tree never changes under its id. ``ShadowRepo`` holds one :class:`ObjectReader`.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from ..errors import ConcurrentChangeError, CorruptRepositoryError
from . import gitfiles
from .damage import blame, object_damage, pack_replaced
from .dulwichadapter import object_id, refresh_packs
from .pack.packfile import listed_in_packs

if TYPE_CHECKING:
    from dulwich.objects import ShaFile, Tree
    from dulwich.repo import Repo

_Object = TypeVar('_Object', bound='ShaFile')
_T = TypeVar('_T')

HEX_SHA = re.compile(rb'[0-9a-f]{40}')
# git's object type numbers (dulwich is imported only when an object is read through it)
COMMIT, TREE, BLOB = 1, 2, 3


class _TreeMemo(dict):
    """Tree entries by (repository, id), forgotten all at once past ``limit`` entries in all."""

    limit = 100_000  # a few MB
    held = 0

    def remember(self, key: tuple[str, bytes], entries: list[tuple[bytes, int, bytes]]) -> None:
        if self.held + len(entries) > self.limit:
            self.clear()
        self[key] = entries
        self.held += len(entries)

    def clear(self) -> None:
        super().clear()
        self.held = 0


# (repository, sha) -> a tree's entries, see tree_entries; a process that restores or
# compares the same checkpoints again reads each tree once
_TREES = _TreeMemo()


class ObjectReader:
    """The objects of the repository at ``path``; ``dulwich()`` opens dulwich's repository
    when first needed, ``opened()`` says whether it is open already."""

    def __init__(self, path: Path, dulwich: Callable[[], Repo], opened: Callable[[], bool]):
        self.path = path
        self._dulwich = dulwich
        self._opened = opened

    def from_store(self, read: Callable[[], _T]) -> _T:
        """Runs a read of dulwich's object store, once more when a pack it had listed was
        replaced meanwhile (see ``damage.pack_replaced``; another process writes packs without
        waiting for readers): the list of packs is read again first. Replaced again during the
        second read: a ``ConcurrentChangeError``. An object still not found raises KeyError."""
        try:
            return read()
        except pack_replaced():
            refresh_packs(self._dulwich().object_store)
        try:
            return read()
        except KeyError:
            raise
        except pack_replaced() as error:
            raise ConcurrentChangeError(
                f'the packs of {self.path} were replaced twice while being read (another '
                'process is writing checkpoints); run it again',
                path=self.path,
            ) from error

    @contextmanager
    def _object_errors(self, sha: bytes) -> Iterator[None]:
        """Turns a missing or damaged object into a CorruptRepositoryError naming it."""
        try:
            yield
        except KeyError as error:
            raise CorruptRepositoryError(
                f'the object {sha.decode()} is missing from {self.path}', path=self.path
            ) from error
        except object_damage() as error:
            path, problem = blame(self.path, error)
            where = f'{path} is damaged ({problem})' if path is not None else problem
            raise CorruptRepositoryError(
                f'the object {sha.decode()} in {self.path} is unreadable: {where}',
                path=path or self.path,
            ) from error

    def read(self, sha: bytes, kind: type[_Object]) -> _Object:
        """The object ``sha``, which must be a ``kind``."""
        with self._object_errors(sha):
            obj = None if self._opened() else self._read_loose(sha)
            if obj is None:
                obj = self.from_store(lambda: self._dulwich().object_store[object_id(sha)])
        if not isinstance(obj, kind):
            raise CorruptRepositoryError(
                f'the object {sha.decode()} in {self.path} is a {obj.type_name.decode()}, '
                f'not a {kind.type_name.decode()}',
                path=self.path,
            )
        return obj

    def _read_loose(self, sha: bytes) -> ShaFile | None:
        """A loose object read without opening the dulwich repository (None if not loose)."""
        if not HEX_SHA.fullmatch(sha):
            return None
        data = gitfiles.read_loose_object(self.path, sha.decode())
        if data is None:
            return None
        from dulwich.objects import ShaFile

        return ShaFile.from_file(io.BytesIO(data))

    def type_of(self, sha: bytes) -> int:
        type_num, _ = self._dulwich().object_store.get_raw(object_id(sha))
        return type_num

    def contains(self, sha: bytes) -> bool:
        if not self._opened() and HEX_SHA.fullmatch(sha) and self._found_without_dulwich(sha):
            return True
        try:
            return self.from_store(lambda: self._has(sha))
        except KeyError:
            return False
        except object_damage():
            return True  # there, but damaged: reading it says so

    def _has(self, sha: bytes) -> bool:
        if object_id(sha) in self._dulwich().object_store:
            return True
        raise KeyError(sha)  # perhaps in a pack that replaced one listed: looked for again

    def _found_without_dulwich(self, sha: bytes) -> bool:
        """A loose file or a pack index entry for the object (the seal check of a snapshot of an
        unchanged desk, and ``status``, then never open dulwich); not found means ask dulwich,
        which also knows alternates and packs whose index is damaged."""
        hex_id = sha.decode()
        objects = os.path.join(self.path, 'objects')
        if os.path.isfile(os.path.join(objects, hex_id[:2], hex_id[2:])):
            return True
        return listed_in_packs(os.path.join(objects, 'pack'), bytes.fromhex(hex_id))

    def read_blob(self, sha: bytes) -> bytes:
        # The raw bytes straight from the store: no Blob object is built for a restore's reads.
        with self._object_errors(sha):
            type_num, raw = self.from_store(
                lambda: self._dulwich().object_store.get_raw(object_id(sha))
            )
        if type_num != BLOB:
            from dulwich.objects import Blob

            return self.read(sha, Blob).as_raw_string()  # raises, naming what it is instead
        return raw

    def read_tree(self, sha: bytes) -> Tree:
        from dulwich.objects import Tree

        return self.read(sha, Tree)

    def tree_entries(self, sha: bytes) -> list[tuple[bytes, int, bytes]]:
        """A tree's entries exactly as stored, duplicates included (dulwich's Tree drops them).

        Kept for the rest of the process (the caller must not change the list)."""
        key = (os.fspath(self.path), sha)
        entries = _TREES.get(key)
        if entries is None:
            entries = self._read_tree_entries(sha)
            _TREES.remember(key, entries)
        return entries

    def _read_tree_entries(self, sha: bytes) -> list[tuple[bytes, int, bytes]]:
        with self._object_errors(sha):
            type_num, raw = self.from_store(
                lambda: self._dulwich().object_store.get_raw(object_id(sha))
            )
        if type_num != TREE:
            raise CorruptRepositoryError(
                f'the object {sha.decode()} in {self.path} is not a tree', path=self.path
            )
        from dulwich.errors import ObjectFormatException
        from dulwich.objects import parse_tree

        try:
            # A list: the entries are kept (see tree_entries), and dulwich's pure-Python
            # parse_tree returns a generator.
            return list(parse_tree(bytes(raw), 20))
        except (ObjectFormatException, ValueError) as error:
            raise CorruptRepositoryError(
                f'the tree {sha.decode()} in {self.path} is malformed: {error}', path=self.path
            ) from error
