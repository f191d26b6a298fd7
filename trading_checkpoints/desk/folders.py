"""The only code that touches desk files: every access goes through folder descriptors.

A desk folder is opened once (its path may hold symlinks the user chose); every folder below it
is opened one component at a time relative to its parent's descriptor, with ``O_NOFOLLOW |
O_DIRECTORY``. Files are opened, read, written, renamed and deleted relative to the descriptor
of their folder (``dir_fd=``). A component another process swaps for a symlink at any moment is
therefore refused, never followed, for reads and writes alike, and a temporary file can only
ever be created inside a folder that was opened as a real folder of the desk.

A mount point inside the desk (a bind-mounted file or folder, another file system) holds what
lies outside it: :meth:`DeskFolders.mount_above` finds one at or above a path, from the mount
table, so that nothing is written or deleted through it (see ``checkout.check_plan``).

Descriptors are kept in a small cache while one operation runs. Callers use a descriptor right
after :meth:`DeskFolders.folder` returns it, before asking for another folder: the cache may
close old entries when it grows.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Sequence

from ..errors import FileAccessError, MissingDeskError, NotAFolderError

_CLOEXEC = getattr(os, 'O_CLOEXEC', 0)
FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, 'O_NONBLOCK', 0) | _CLOEXEC
CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _CLOEXEC
REWRITE_FLAGS = os.O_WRONLY | os.O_NOFOLLOW | getattr(os, 'O_NONBLOCK', 0) | _CLOEXEC


# A symlink (or a file) where a folder was expected: O_NOFOLLOW | O_DIRECTORY refuses it.
_NOT_A_FOLDER = frozenset({errno.ENOTDIR, errno.ELOOP})
_MAX_OPEN = 128  # folder descriptors kept open at once
MOUNT_TABLE = '/proc/self/mountinfo'
_ESCAPED = re.compile(rb'\\([0-7]{3})')  # the mount table writes space, tab, \n, \\ in octal


class DeskFolders:
    """Open descriptors of one desk's folders; a context manager that closes them all.

    Attributes:
        root: The desk folder's path, as given.
        identity: The desk folder's ``(st_dev, st_ino)``.
        created: Folders (desk-relative) this object created.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = os.fspath(root)
        try:
            fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
        except FileNotFoundError as error:
            raise MissingDeskError(
                f'the desk folder {self.root} does not exist', desk=self.root
            ) from error
        except OSError as error:
            if error.errno in _NOT_A_FOLDER:
                raise MissingDeskError(
                    f'the desk {self.root} is not a folder', desk=self.root
                ) from error
            raise FileAccessError(
                f'cannot open the desk {self.root}: {error.strerror}', path=self.root, action='open'
            ) from error
        st = os.fstat(fd)
        self.identity = (st.st_dev, st.st_ino)
        self._fds: dict[str, int] = {'': fd}
        self.created: list[str] = []
        # Folders this object removed, and the identities of folders it stopped holding: a
        # folder moved out of the desk is found out even after its parent was emptied and removed.
        self._removed: set[str] = set()
        self._released: dict[str, tuple[int, int]] = {}
        self._mounts: frozenset[str] | None = None
        self._mounts_read = False

    def __enter__(self) -> DeskFolders:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        fds, self._fds = self._fds, {}
        for fd in fds.values():
            try:
                os.close(fd)
            except OSError:
                pass

    def full(self, path: str) -> str:
        """A desk-relative path as a path for messages."""
        return os.path.join(self.root, path) if path else self.root

    # -- folders -------------------------------------------------------------------------

    @property
    def root_fd(self) -> int:
        return self._fds['']

    def folder(self, path: str, *, create: bool = False) -> int | None:
        """The descriptor of desk folder ``path`` (``''`` is the desk itself).

        Returns None when a component is missing (``create`` makes it) or is not a real folder;
        with ``create`` a component that is not a real folder raises :class:`NotAFolderError`.
        """
        fd = self._fds.get(path)
        if fd is not None:
            return fd
        if len(self._fds) > _MAX_OPEN:
            self._trim()
        parts = path.split('/')
        depth = len(parts) - 1
        while depth > 0 and '/'.join(parts[:depth]) not in self._fds:
            depth -= 1
        current = self._fds['/'.join(parts[:depth])]
        for index in range(depth, len(parts)):
            name = parts[index]
            here = '/'.join(parts[: index + 1])
            try:
                child = os.open(name, FOLDER_FLAGS, dir_fd=current)
            except FileNotFoundError:
                if not create:
                    return None
                child = self._make(current, name, here)
            except OSError as error:
                if error.errno in _NOT_A_FOLDER:
                    if create:
                        raise NotAFolderError(self.full(here)) from error
                    return None
                raise FileAccessError(
                    f'cannot list {self.full(here)}: {error.strerror}',
                    path=self.full(here),
                    action='list',
                ) from error
            self._fds[here] = child
            current = child
        return current

    def opened_identity(self, path: str) -> tuple[int, int] | None:
        """``(st_dev, st_ino)`` of the folder descriptor held for ``path``, if one is open."""
        fd = self._fds.get(path)
        if fd is None:
            return None
        st = os.fstat(fd)
        return (st.st_dev, st.st_ino)

    def still_in_place(self, path: str) -> bool:
        """Whether the folder held open (or once held) for ``path`` is still the one found at
        that path; a folder this object removed counts as in place.

        A folder moved elsewhere after it was opened (renamed out of the desk) no longer is.
        Walks again from the desk, one component at a time, without the cache.
        """
        if not path or path in self._removed:
            return True
        held = self.opened_identity(path) or self._released.get(path)
        if held is None:
            return True
        current = os.dup(self.root_fd)
        try:
            for name in path.split('/'):
                try:
                    child = os.open(name, FOLDER_FLAGS, dir_fd=current)
                except OSError:
                    return False
                os.close(current)
                current = child
            st = os.fstat(current)
            return (st.st_dev, st.st_ino) == held
        finally:
            os.close(current)

    def forget(self, path: str) -> None:
        """Closes the descriptors of ``path`` and of every folder below it (it was removed)."""
        for key in [k for k in self._fds if k and (k == path or k.startswith(path + '/'))]:
            fd = self._fds.pop(key)
            try:
                st = os.fstat(fd)
                self._released[key] = (st.st_dev, st.st_ino)
            finally:
                os.close(fd)

    def _make(self, parent_fd: int, name: str, here: str) -> int:
        try:
            os.mkdir(name, 0o777, dir_fd=parent_fd)
        except FileExistsError:
            pass  # made meanwhile by someone else: opened (and vetted) below like any folder
        except OSError as error:
            raise FileAccessError(
                f'cannot create {self.full(here)}: {error.strerror}',
                path=self.full(here),
                action='create',
            ) from error
        else:
            self.created.append(here)
        try:
            return os.open(name, FOLDER_FLAGS, dir_fd=parent_fd)
        except OSError as error:
            if error.errno in _NOT_A_FOLDER:
                raise NotAFolderError(self.full(here)) from error
            raise FileAccessError(
                f'cannot list {self.full(here)}: {error.strerror}',
                path=self.full(here),
                action='list',
            ) from error

    def _trim(self) -> None:
        for key in list(self._fds)[1 : len(self._fds) - _MAX_OPEN // 2]:
            os.close(self._fds.pop(key))

    def mount_above(self, path: str) -> str | None:
        """The mount point inside the desk at ``path`` or at a folder above it, or None.

        The mount table (read once) is the authority: a file or folder bind-mounted from the
        same file system has the same device number as its folder, so only the table shows it.
        Where the table cannot be read (no ``/proc``), a folder or file on another device than
        the desk is taken for one.
        """
        if not self._mounts_read:
            self._mounts = mounts_inside(self.root_fd)
            self._mounts_read = True
        parts = path.split('/')
        if self._mounts is not None:
            if not self._mounts:
                return None
            for depth in range(1, len(parts) + 1):
                prefix = '/'.join(parts[:depth])
                if prefix in self._mounts:
                    return prefix
            return None
        device = os.fstat(self.root_fd).st_dev
        for depth in range(1, len(parts)):
            fd = self.folder('/'.join(parts[:depth]))
            if fd is None:
                return None
            if os.fstat(fd).st_dev != device:
                return '/'.join(parts[:depth])
        st = self.lstat(path)
        return path if st is not None and st.st_dev != device else None

    # -- entries -----------------------------------------------------------------------

    def lstat(self, path: str) -> os.stat_result | None:
        """The entry at ``path`` (never followed), or None when it or a folder above is absent."""
        parent, _, name = path.rpartition('/')
        fd = self.folder(parent)
        if fd is None:
            return None
        try:
            return os.stat(name, dir_fd=fd, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as error:
            raise FileAccessError(
                f'cannot read {self.full(path)}: {error.strerror}',
                path=self.full(path),
                action='read',
            ) from error

    def open_file(self, path: str) -> int | None:
        """A regular file opened for reading without following a symlink; None when absent."""
        parent, _, name = path.rpartition('/')
        fd = self.folder(parent)
        if fd is None:
            return None
        try:
            return os.open(name, READ_FLAGS, dir_fd=fd)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as error:
            if error.errno == errno.ELOOP:
                return None  # became a symlink: not the file the walk saw
            raise FileAccessError(
                f'cannot read {self.full(path)}: {error.strerror}',
                path=self.full(path),
                action='read',
            ) from error

    def read_link(self, path: str) -> bytes | None:
        """A symlink's target, or None when ``path`` is absent or no longer a symlink."""
        parent, _, name = path.rpartition('/')
        fd = self.folder(parent)
        if fd is None:
            return None
        try:
            return os.fsencode(os.readlink(name, dir_fd=fd))
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as error:
            if error.errno == errno.EINVAL:
                return None
            raise FileAccessError(
                f'cannot read {self.full(path)}: {error.strerror}',
                path=self.full(path),
                action='read',
            ) from error

    def read_bytes(self, path: str) -> bytes | None:
        """A file's bytes or a symlink's target, never through a symlinked folder."""
        st = self.lstat(path)
        if st is None:
            return None
        if stat.S_ISLNK(st.st_mode):
            return self.read_link(path)
        fd = self.open_file(path)
        if fd is None:
            return None
        try:
            chunks = []
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
            return b''.join(chunks)
        finally:
            os.close(fd)

    def unlink(self, path: str) -> bool:
        """Removes a file or symlink; False when it was not there."""
        parent, _, name = path.rpartition('/')
        fd = self.folder(parent)
        if fd is None:
            return False
        try:
            os.unlink(name, dir_fd=fd)
        except (FileNotFoundError, NotADirectoryError):
            return False
        except OSError as error:
            raise FileAccessError(
                f'cannot delete {self.full(path)}: {error.strerror}',
                path=self.full(path),
                action='delete',
            ) from error
        return True

    def rmdir(self, path: str) -> bool:
        """Removes an empty folder; False when it is absent or not empty."""
        parent, _, name = path.rpartition('/')
        fd = self.folder(parent)
        if fd is None:
            return False
        try:
            os.rmdir(name, dir_fd=fd)
        except OSError:
            return False
        self._removed.add(path)
        self.forget(path)
        return True

    def listing(self, path: str) -> list[tuple[str, os.stat_result]] | None:
        """A folder's entries with their ``lstat``, or None when it is not a real folder."""
        fd = self.folder(path)
        if fd is None:
            return None
        out = []
        with os.scandir(fd) as entries:
            for entry in entries:
                try:
                    out.append((entry.name, entry.stat(follow_symlinks=False)))
                except FileNotFoundError:
                    continue
        return out


def mounts_inside(folder_fd: int) -> frozenset[str] | None:
    """The mount points below an open folder, relative to it, from the mount table; None when
    the table or the folder's path cannot be read (no ``/proc``)."""
    try:
        root = os.readlink(f'/proc/self/fd/{folder_fd}')
    except OSError:
        return None
    table = mount_table()
    if table is None:
        return None
    prefix = root.rstrip('/') + '/'
    inside = (point for point, _ in table if point.startswith(prefix) and point != prefix)
    return frozenset(point[len(prefix) :] for point in inside)


def mount_table() -> list[tuple[str, bytes]] | None:
    """Every entry of this process's mount table: its mount point and its whole line; None
    when the table cannot be read (no ``/proc``)."""
    try:
        with open(MOUNT_TABLE, 'rb') as table:
            lines = table.read().split(b'\n')
    except OSError:
        return None
    found = []
    for line in lines:
        fields = line.split(b' ')
        if len(fields) < 5:
            continue
        point = os.fsdecode(_ESCAPED.sub(lambda m: bytes([int(m.group(1), 8)]), fields[4]))
        found.append((point, line))
    return found


def same_file(st: os.stat_result, key: Sequence[int]) -> bool:
    """Whether an open file's ``fstat`` is the file a walk saw (inode and file type)."""
    return st.st_ino == key[3] and stat.S_IFMT(st.st_mode) == stat.S_IFMT(key[4])
