"""The refs of one shadow repository: the branch ``main`` and the others (the seal).

Each is read once per repository object (one verb, which holds the lock to write) and kept
current by the writes made through it; a reader without the lock reads one again to check that
it held. The common case is read without dulwich (a loose ref file holding one id); anything
else, and every write, goes through dulwich's refs container.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from ..core.durability import fsync_folder
from ..core.fs import read_file
from ..errors import ConcurrentChangeError, CorruptRepositoryError, FileAccessError
from .damage import object_damage, ref_damage
from .dulwichadapter import object_id, ref_name
from .repofolder import BRANCH

if TYPE_CHECKING:
    from dulwich.repo import Repo

_HEX_SHA = re.compile(rb'[0-9a-f]{40}')
_PLAIN_NAME = re.compile(rb'refs/[a-z0-9/_-]+')
_UNREAD = object()  # the branch not read yet


class Reflog(TypedDict):
    """A reflog entry's fields, as dulwich's ref updates take them."""

    committer: bytes
    timestamp: int
    timezone: int
    message: bytes


class RefStore:
    """The branch and the other refs of the repository at ``path``.

    ``dulwich`` returns dulwich's repository (opening it when needed); ``opened`` says whether
    it is open already: then the refs other than ``main`` are read through it, as another module
    may have written them through it (``main`` is always read from its file first).
    """

    def __init__(self, path: Path, dulwich: Callable[[], Repo], opened: Callable[[], bool]):
        self.path = path
        self._dulwich = dulwich
        self._opened = opened
        self._head: bytes | None | object = _UNREAD
        self._read: dict[bytes, bytes | None] = {}

    def forget(self) -> None:
        """Forgets the refs other than ``main`` read so far (someone may write them now)."""
        self._read.clear()

    # -- the branch ------------------------------------------------------------------------

    def head(self) -> bytes | None:
        """The newest checkpoint's sha, or None when the branch has no commit yet."""
        if self._head is _UNREAD:
            self._head = self._read_head()
        return self._head  # type: ignore[return-value]

    def read_head_again(self) -> bytes | None:
        """The branch as it is on disk now."""
        self._head = _UNREAD
        return self.head()

    def _read_head(self) -> bytes | None:
        try:
            # The common case, read directly: a loose branch file holding one commit id.
            data = read_file(os.path.join(self.path, 'refs', 'heads', 'main'), 100)
            if len(data) == 41 and data[40:] == b'\n' and _HEX_SHA.fullmatch(data[:40]):
                return data[:40]
        except OSError:
            pass
        refs = self._dulwich().refs
        branch = ref_name(BRANCH)
        try:
            sha = refs.read_ref(branch)
        except ref_damage() as error:
            raise CorruptRepositoryError(
                f'cannot read {BRANCH.decode()}: {error}', path=self.path
            ) from error
        if sha is None:
            # A repository whose refs were packed by the git CLI.
            try:
                sha = refs.get_packed_refs().get(branch)
            except object_damage() + ref_damage() as error:
                raise CorruptRepositoryError(
                    f'cannot read {self.path / "packed-refs"}: {error}',
                    path=self.path / 'packed-refs',
                ) from error
            if sha is None and (self.path / 'refs' / 'heads' / 'main').exists():
                raise CorruptRepositoryError(
                    f'the branch main of {self.path} (refs/heads/main) is empty or damaged',
                    path=self.path,
                )
        if sha is not None and not _HEX_SHA.fullmatch(sha):
            raise CorruptRepositoryError(
                f'the branch main of {self.path} holds {sha[:60]!r}, not a commit id',
                path=self.path,
            )
        return sha

    def move_branch(self, old: bytes | None, new: bytes, reflog: Reflog, *, durable: bool) -> None:
        """Moves ``main`` from ``old`` to ``new`` with a reflog entry (``reflog``: dulwich's
        committer, timestamp, timezone and message), failing if someone else moved it
        meanwhile; with ``durable``, its folder is flushed after."""
        refs = self._dulwich().refs
        try:
            if old is None:
                done = refs.add_if_new(ref_name(BRANCH), object_id(new), **reflog)
            else:
                done = refs.set_if_equals(
                    ref_name(BRANCH), object_id(old), object_id(new), **reflog
                )
        except ref_damage() as error:
            raise FileAccessError(
                f'cannot update the branch in {self.path}: {error}', path=self.path, action='update'
            ) from error
        if not done:
            self._head = _UNREAD
            raise ConcurrentChangeError(
                f'the branch main of {self.path} moved while a checkpoint was being written',
                path=self.path,
            )
        self._head = new
        if durable:
            fsync_folder(self.path / 'refs' / 'heads')

    # -- the other refs --------------------------------------------------------------------

    def read(self, name: bytes) -> bytes | None:
        """The sha a ref other than ``main`` points at (such as the seal), or None."""
        if name not in self._read:
            self._read[name] = self._read_ref(name)
        return self._read[name]

    def read_again(self, name: bytes) -> bytes | None:
        """Like :meth:`read`, as it is on disk now."""
        self._read.pop(name, None)
        return self.read(name)

    def _read_ref(self, name: bytes) -> bytes | None:
        if not self._opened() and _PLAIN_NAME.fullmatch(name):
            # Read directly when the answer is certain: a loose ref holding one id, or no ref
            # at all and no packed refs; anything else goes through dulwich.
            try:
                data = read_file(os.path.join(self.path, *name.decode().split('/')), 100)
            except FileNotFoundError:
                if not os.path.exists(os.path.join(self.path, 'packed-refs')):
                    return None
            except OSError:
                pass
            else:
                if len(data) == 41 and data[40:] == b'\n' and _HEX_SHA.fullmatch(data[:40]):
                    return data[:40]
        try:
            sha = self._dulwich().refs.read_ref(ref_name(name))
        except ref_damage() as error:
            raise CorruptRepositoryError(
                f'cannot read {name.decode()}: {error}', path=self.path
            ) from error
        if sha is None or not _HEX_SHA.fullmatch(sha):
            return None
        return sha

    def set(self, name: bytes, sha: bytes) -> None:
        """Points a ref other than ``main`` (such as the seal) at ``sha``.

        No reflog is kept: the seal moves on every restore and seal, and nothing needs its past.
        Like :meth:`read`, it never follows a symbolic ref (only another tool writes one): such
        a ref is replaced.
        """
        self._read.pop(name, None)
        refs = self._dulwich().refs
        try:
            ref = ref_name(name)
            if self._read_ref(name) is None and refs.read_loose_ref(ref) is not None:
                refs.remove_if_equals(ref, None)
            refs.set_if_equals(ref, None, object_id(sha))
        except ref_damage() as error:
            raise FileAccessError(
                f'cannot update {name.decode()} in {self.path}: {error}',
                path=self.path,
                action='update',
            ) from error
