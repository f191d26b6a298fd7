"""Getting bytes onto the disk in the right order: fsync of files and of the folders they live in.

The policy (see the README's "Crash safety and durability" section): with ``durable=True``, the
default, every object file is flushed before the branch names it, every folder that received a
new name is flushed before anything that depends on it, and every file a restore writes is
flushed before it is renamed into place. A SIGKILL never needs any of this (the kernel keeps
the page cache); a power cut or kernel crash does.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from collections.abc import Iterable
from pathlib import Path

from ..errors import FileAccessError

__all__ = [
    'fsync_fds',
    'fsync_folder',
    'fsync_folders',
    'fsync_folders_at_once',
    'fsync_path',
    'replace_at',
    'write_atomically',
]

_NOFOLLOW = getattr(os, 'O_NOFOLLOW', 0)
_CLOEXEC = getattr(os, 'O_CLOEXEC', 0)
_FOLDER_FLAGS = os.O_RDONLY | getattr(os, 'O_DIRECTORY', 0) | _NOFOLLOW | _CLOEXEC


def fsync_folder(path: str | os.PathLike[str]) -> None:
    """Flushes a folder's entries (names created, renamed or removed in it) to the disk."""
    try:
        fd = os.open(os.fspath(path), os.O_RDONLY | getattr(os, 'O_DIRECTORY', 0))
    except OSError:
        return  # vanished, or a platform that cannot open folders (Windows): nothing to flush
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems refuse fsync on folders; their metadata is synchronous
    finally:
        os.close(fd)


def fsync_folders(paths: Iterable[str | os.PathLike[str]]) -> None:
    """Flushes each distinct folder once, deepest first."""
    seen = {os.fspath(path) for path in paths}
    for path in sorted(seen, key=len, reverse=True):
        fsync_folder(path)


def fsync_path(path: str | os.PathLike[str]) -> None:
    """Flushes one regular file's contents."""
    fd = os.open(os.fspath(path), os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# Flushes issued together: ext4's journal (jbd2) commits concurrent fsync requests in one
# transaction, so flushing a batch of files from a few threads costs a fraction of flushing
# them one after another (measured: 100 new files + 100 folders, 94 -> 62 ms).
_POOL_SIZE = 16
_POOL = None
_POOL_PID = 0


def _pool():
    global _POOL, _POOL_PID
    if _POOL is None or _POOL_PID != os.getpid():
        # A forked child inherits the pool object but not its threads: it makes its own.
        from concurrent.futures import ThreadPoolExecutor

        _POOL = ThreadPoolExecutor(_POOL_SIZE, thread_name_prefix='checkpoints-fsync')
        _POOL_PID = os.getpid()
    return _POOL


def fsync_fds(fds: list[int]) -> None:
    """Flushes open files' contents, concurrently when there are several; raises OSError."""
    if len(fds) < 2:
        for fd in fds:
            os.fsync(fd)
        return
    for _ in _pool().map(os.fsync, fds):
        pass


def fsync_folders_at_once(paths: Iterable[str | os.PathLike[str]]) -> None:
    """Like :func:`fsync_folders`, the distinct folders flushed concurrently; all done on return."""
    seen = sorted({os.fspath(path) for path in paths}, key=len, reverse=True)
    if len(seen) < 2:
        for path in seen:
            fsync_folder(path)
        return
    for _ in _pool().map(fsync_folder, seen):
        pass


def write_atomically(
    path: str | os.PathLike[str], data: bytes, *, durable: bool = True, mode: int | None = None
) -> None:
    """Replaces the regular file at ``path`` with ``data``, all or nothing: the one way a file
    outside a desk (a settings file, hook state, a marker, credentials) is written.

    Nothing is followed at the two steps the caller does not vouch for: ``path``'s folder is
    opened with ``O_NOFOLLOW`` (a link there is refused) and everything else happens relative
    to it; a link at ``path`` is replaced, never written through. The temporary file beside
    it is created anew (``O_EXCL | O_NOFOLLOW``; a leftover or planted name is removed
    first), written whole, flushed when ``durable``, renamed over ``path``, and the folder
    flushed when ``durable``. A FIFO, device or folder at ``path`` is refused at once (never
    opened, so never waited on). The file gets ``mode``; by default the mode of the file it
    replaces, else 0o644 less the umask.

    Raises:
        FileAccessError: ``path`` is not a regular file, its folder is a link or missing, or
            the system refused (the system's reason ends the message).
    """
    where = Path(path)
    try:
        folder = os.open(where.parent, _FOLDER_FLAGS)
    except OSError as error:
        raise _write_error(where, error, folder=True) from error
    try:
        try:
            found = os.stat(where.name, dir_fd=folder, follow_symlinks=False)
        except FileNotFoundError:
            found = None
        if found is not None and not (stat.S_ISREG(found.st_mode) or stat.S_ISLNK(found.st_mode)):
            raise FileAccessError(
                f'cannot write {where}: it is not a regular file (a FIFO, a device or a '
                'folder); nothing was written',
                path=where,
                action='write',
            )
        if mode is None and found is not None and stat.S_ISREG(found.st_mode):
            mode = stat.S_IMODE(found.st_mode)
        replace_at(folder, where.name, data, durable=durable, mode=mode)
    except OSError as error:
        raise _write_error(where, error) from error
    finally:
        os.close(folder)


def replace_at(
    folder: int, name: str, data: bytes, *, durable: bool = True, mode: int | None = None
) -> None:
    """Replaces ``name`` in the open ``folder`` with ``data`` (see :func:`write_atomically`,
    which checks what is at the name first; this replaces whatever is there). ``mode``: the
    new file's mode, else 0o644 less the umask. Raises OSError."""
    temporary = _temporary_name(name)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
    create = 0o600 if mode is not None else 0o644  # nobody else reads it while it is written
    try:
        fd = os.open(temporary, flags, create, dir_fd=folder)
    except FileExistsError:  # a killed writer's, or planted: ours to replace
        os.unlink(temporary, dir_fd=folder)
        fd = os.open(temporary, flags, create, dir_fd=folder)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if mode is not None:
                os.fchmod(fd, mode)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        try:
            os.unlink(temporary, dir_fd=folder)
        except OSError:
            pass
        raise
    if durable:
        try:
            os.fsync(folder)
        except OSError:
            pass  # some file systems refuse fsync on folders; their metadata is synchronous


def _temporary_name(name: str) -> str:
    """``.<name>.<pid>.tmp`` (``<pid>-<thread>`` off the main thread: two threads of one
    process never share one)."""
    owner = str(os.getpid())
    if threading.current_thread() is not threading.main_thread():
        owner += f'-{threading.get_ident()}'
    return f'.{name}.{owner}.tmp'


def _write_error(path: Path, error: OSError, folder: bool = False) -> FileAccessError:
    reason = error.strerror or str(error)
    if folder and error.errno in (errno.ELOOP, errno.ENOTDIR):
        reason = f'its folder {path.parent} is a symbolic link or not a folder'
    return FileAccessError(f'cannot write {path}: {reason}', path=path, action='write')
