"""The refs of one shadow repository: the branch ``main`` and the others (the seal).

Each is read once per repository object (one verb, which holds the lock to write) and kept
current by the writes made through it; a reader without the lock reads one again to check that
it held. The common case is read without dulwich (a loose ref file holding one id, read through
``gitfiles``); anything else, and every write, goes through dulwich's refs container, after
``gitfiles.check_refs`` made sure the files it opens are regular files. The reflog of ``main``
is appended here, not by dulwich (see ``gitfiles``). Errors never quote a ref file's content.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.durability import fsync_folder
from ..errors import (
    CheckpointError,
    ConcurrentChangeError,
    CorruptRepositoryError,
    FileAccessError,
    RepositoryFileError,
)
from . import gitfiles
from .damage import object_damage, ref_damage
from .dulwichadapter import object_id, ref_name
from .gitfiles import Reflog
from .repofolder import BRANCH

if TYPE_CHECKING:
    from dulwich.refs import DiskRefsContainer
    from dulwich.repo import Repo

__all__ = ['RefStore', 'Reflog']

log = logging.getLogger('trading_checkpoints')

_HEX_SHA = re.compile(rb'[0-9a-f]{40}')
_PLAIN_NAME = re.compile(rb'refs/[a-z0-9/_-]+')
_UNREAD = object()  # the branch not read yet
_BRANCH_FILE = BRANCH.decode()


def _damage(error: BaseException) -> str:
    """What went wrong, without dulwich's text (it quotes the file's lines)."""
    return type(error).__name__


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

    def _refs(self, *names: str) -> DiskRefsContainer:
        """dulwich's refs, once the files it will open (``packed-refs``, the loose refs
        ``names``) are known to be regular files."""
        gitfiles.check_refs(self.path, *names)
        refs = self._dulwich().refs
        return refs  # type: ignore[return-value]

    def _unlogged_refs(self, *names: str) -> DiskRefsContainer:
        """dulwich's refs for writing a ref without a reflog: a container of its own while
        dulwich's repository is not open (opening it reads and checks more than a ref needs),
        else the repository's (whose reads another module may rely on)."""
        if self._opened():
            return self._refs(*names)
        from dulwich.refs import DiskRefsContainer

        gitfiles.check_refs(self.path, *names)
        return DiskRefsContainer(self.path)

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
        # The common case, read directly: a loose branch file holding one commit id.
        try:
            data = gitfiles.read_ref_file(self.path, _BRANCH_FILE)
        except FileAccessError:
            data = None  # unreadable: dulwich says why
        if data is not None and len(data) == 41 and data[40:] == b'\n':
            if _HEX_SHA.fullmatch(data[:40]):
                return data[:40]
        refs = self._refs(_BRANCH_FILE)
        branch = ref_name(BRANCH)
        try:
            sha = refs.read_ref(branch)
        except ref_damage() as error:
            raise CorruptRepositoryError(
                f'cannot read {BRANCH.decode()} of {self.path}: {_damage(error)}',
                path=self.path,
            ) from error
        if sha is None:
            # A repository whose refs were packed by the git CLI.
            try:
                sha = refs.get_packed_refs().get(branch)
            except object_damage() + ref_damage() as error:
                raise CorruptRepositoryError(
                    f'cannot read {self.path / "packed-refs"}: it is damaged ({_damage(error)})',
                    path=self.path / 'packed-refs',
                ) from error
            if sha is None and data is not None:
                raise CorruptRepositoryError(
                    f'the branch main of {self.path} (refs/heads/main) is empty or damaged',
                    path=self.path,
                )
        if sha is not None and not _HEX_SHA.fullmatch(sha):
            raise CorruptRepositoryError(
                f'the branch main of {self.path} holds something that is not a commit id',
                path=self.path,
            )
        return sha

    def move_branch(self, old: bytes | None, new: bytes, reflog: Reflog, *, durable: bool) -> None:
        """Moves ``main`` from ``old`` to ``new`` with a reflog entry (``reflog``: dulwich's
        committer, timestamp, timezone and message), failing if someone else moved it
        meanwhile; with ``durable``, its folder is flushed after. The reflog entry is
        appended after the branch moved (a kill in between loses the entry, never names a
        commit the branch never held)."""
        refs = self._refs(_BRANCH_FILE)
        try:
            if old is None:
                done = refs.add_if_new(ref_name(BRANCH), object_id(new))
            else:
                done = refs.set_if_equals(ref_name(BRANCH), object_id(old), object_id(new))
        except ref_damage() as error:
            raise FileAccessError(
                f'cannot update the branch in {self.path}: {_damage(error)}',
                path=self.path,
                action='update',
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
        self._log(old, new, reflog)

    def _log(self, old: bytes | None, new: bytes, reflog: Reflog) -> None:
        """Appends the branch's reflog entry; a reflog that is a link or a FIFO is replaced by
        a file of its own. A reflog only helps git's users: failing to write it fails nothing."""
        for attempt in range(2):
            try:
                gitfiles.append_reflog(self.path, BRANCH, old, new, reflog)
                return
            except CheckpointError as error:
                odd = isinstance(error, RepositoryFileError) and error.problem != 'too-large'
                if attempt == 0 and odd:
                    try:
                        gitfiles.remove(self.path, f'logs/{_BRANCH_FILE}')
                        continue
                    except CheckpointError:
                        pass
                log.warning('the reflog of %s was not written: %s', self.path, error)
                return

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
        plain = _PLAIN_NAME.fullmatch(name) is not None
        if not self._opened() and plain:
            # Read directly when the answer is certain: a loose ref holding one id, or no ref
            # at all and no packed refs; anything else goes through dulwich.
            try:
                data = gitfiles.read_ref_file(self.path, name.decode())
            except FileAccessError:
                data = b''  # unreadable: dulwich says why
            if data is None:
                if not os.path.lexists(os.path.join(self.path, gitfiles.PACKED_REFS)):
                    return None
            elif len(data) == 41 and data[40:] == b'\n' and _HEX_SHA.fullmatch(data[:40]):
                return data[:40]
        try:
            refs = self._refs(name.decode()) if plain else self._refs()
            sha = refs.read_ref(ref_name(name))
        except ref_damage() as error:
            raise CorruptRepositoryError(
                f'cannot read {name.decode()} of {self.path}: {_damage(error)}', path=self.path
            ) from error
        if sha is None or not _HEX_SHA.fullmatch(sha):
            return None
        return sha

    def check_settable(self, name: bytes) -> None:
        """Refuses, before anything is changed, a ref other than ``main`` that :meth:`set`
        could not write: one whose folder (``refs/checkpoints`` for the seal) is itself a ref,
        packed or loose, which is what a torn ``packed-refs`` leaves behind."""
        try:
            packed = self._refs().get_packed_refs()
        except ref_damage() as error:
            raise FileAccessError(
                f'cannot read packed-refs in {self.path}: {_damage(error)}',
                path=self.path,
                action='read',
            ) from error
        folder = os.path.dirname(name)
        while folder:
            loose = os.path.join(self.path, os.fsdecode(folder))
            if folder in packed or (os.path.lexists(loose) and not os.path.isdir(loose)):
                raise CorruptRepositoryError(
                    f'cannot update {name.decode()} in {self.path}: {folder.decode()} is a '
                    'ref, where a folder of that name is needed (a damaged packed-refs leaves '
                    'one); nothing was changed',
                    path=self.path,
                )
            folder = os.path.dirname(folder)

    def set(self, name: bytes, sha: bytes) -> None:
        """Points a ref other than ``main`` (such as the seal) at ``sha``.

        No reflog is kept: the seal moves on every restore and seal, and nothing needs its past.
        Like :meth:`read`, it never follows a symbolic ref (only another tool writes one): such
        a ref is replaced.
        """
        self._read.pop(name, None)
        file_name = name.decode()
        try:
            current = self._read_ref(name)
        except RepositoryFileError as problem:
            if problem.path != str(gitfiles.file_of(self.path, file_name).path):
                raise
            gitfiles.remove(self.path, file_name)  # ours: a link or a FIFO there is replaced
            current = None
        plain = _PLAIN_NAME.fullmatch(name)
        refs = self._unlogged_refs(file_name) if plain else self._unlogged_refs()
        try:
            ref = ref_name(name)
            if current is None and refs.read_loose_ref(ref) is not None:
                refs.remove_if_equals(ref, None)
            refs.set_if_equals(ref, None, object_id(sha))
        except ref_damage() as error:
            raise FileAccessError(
                f'cannot update {file_name} in {self.path}: {_damage(error)}',
                path=self.path,
                action='update',
            ) from error
