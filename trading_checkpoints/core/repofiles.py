"""The repository's own files: every one the library opens itself is opened here, one way.

A shadow repository is untrusted (``docs/safety.md``): any file in it may be a symbolic link
to a file elsewhere, a FIFO, a device or huge, and any folder in it a link to a folder
elsewhere. A file is named by the repository and its ``/``-separated name inside it
(:class:`RepoFile`); the repository's own path is the caller's and is followed as given. Then:

- every folder below the repository is opened relative to its parent with ``O_NOFOLLOW |
  O_DIRECTORY``, and the file relative to its folder with ``O_NOFOLLOW``: a link at any step is
  refused, never followed (``RepositoryFileError``);
- a file is opened with ``O_NONBLOCK`` (opening a FIFO returns at once instead of waiting for
  a writer; the flag is cleared again once the file is known to be regular), then checked
  with ``fstat`` to be a regular file before a byte is read or written, and to hold at most
  the caller's cap before it is read; it is read no further than the cap should it grow;
- a whole file is replaced through a temporary file created (``O_EXCL``) in its folder and
  renamed over the name: a link at the name is replaced, never written through; a file kept
  in place (the lock, the stat cache) or appended to (the commit memo, the pruned record,
  the reflog) is opened as above, ``O_CREAT`` creating it when missing;
- errors carry the file's path and what is wrong with the file (a link, not a regular file,
  too large), never a byte of it: a repository file may be a link to a credentials file.

The files and who opens them: ``checkpoints/lock`` (``core/lock.py``), ``checkpoints/statcache``
(``desk/statcache.py``), ``checkpoints/restore-journal`` (``ops/journal.py``),
``checkpoints/commits`` (``store/commitmemo.py``), ``checkpoints/pruned``
(``store/prunedlog.py``), ``checkpoints/remote-heads`` (``remote/heads.py``), ``config``
(``store/config/``), ``HEAD`` and ``description`` (``store/repofolder.py``, ``store/repo.py``);
git's files that dulwich reads too, the loose refs, ``packed-refs``, ``shallow``,
``info/grafts``, ``objects/info/alternates``, loose objects and the reflog, go through
``store/gitfiles.py``, which says what dulwich still opens by name.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from ..errors import FileAccessError, RepositoryFileError
from .durability import replace_at, write_atomically

__all__ = [
    'RepoFile',
    'append',
    'check',
    'open_in_place',
    'open_to_read',
    'read',
    'reason',
    'remove',
    'replace',
]

_CLOEXEC = getattr(os, 'O_CLOEXEC', 0)
_NOFOLLOW = getattr(os, 'O_NOFOLLOW', 0)
_NONBLOCK = getattr(os, 'O_NONBLOCK', 0)
_NOCTTY = getattr(os, 'O_NOCTTY', 0)
_DIRECTORY = getattr(os, 'O_DIRECTORY', 0)
_FILE_FLAGS = _NOFOLLOW | _NONBLOCK | _NOCTTY | _CLOEXEC
_FOLDER_FLAGS = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC
# Opening relative to a folder's descriptor (every POSIX system this runs on); elsewhere the
# whole path is opened, the last step still without following a link where the flag exists.
_AT = all(call in os.supports_dir_fd for call in (os.open, os.rename, os.unlink, os.mkdir))


@dataclass(frozen=True)
class RepoFile:
    """A file of a repository: the repository's folder and the file's name inside it."""

    repository: Path
    name: str  # '/'-separated, relative to the repository

    @property
    def path(self) -> Path:
        return Path(self.repository, *self.name.split('/'))

    @property
    def parts(self) -> list[str]:
        parts = self.name.split('/')
        if any(part in ('', '.', '..') for part in parts):
            raise RepositoryFileError(
                f'{self.name!r} names no file inside the repository {self.repository}',
                path=self.repository,
                problem='link',
            )
        return parts

    def __str__(self) -> str:
        return str(self.path)

    @classmethod
    def of(cls, file: RepoFile | str | os.PathLike[str]) -> RepoFile:
        """``file`` itself, or a path taken as a file in a folder trusted as it is."""
        if isinstance(file, RepoFile):
            return file
        path = Path(file)
        return cls(path.parent, path.name)


# -- opening -------------------------------------------------------------------------------


def _link_error(file: RepoFile, where: str | None = None) -> RepositoryFileError:
    if where is None:
        return RepositoryFileError(
            f'{file.path} is a symbolic link; a repository file is never followed out of '
            'the repository (remove it)',
            path=file.path,
            problem='link',
        )
    return RepositoryFileError(
        f'{Path(file.repository, where)} is a symbolic link or not a folder; a repository '
        f'file ({file.name}) is never followed out of the repository',
        path=Path(file.repository, where),
        problem='link',
    )


def _not_regular(file: RepoFile) -> RepositoryFileError:
    return RepositoryFileError(
        f'{file.path} is not a regular file (a FIFO, a device or a folder); refusing to open '
        'it (remove it)',
        path=file.path,
        problem='not-regular',
    )


def _too_large(file: RepoFile, limit: int) -> RepositoryFileError:
    return RepositoryFileError(
        f'{file.path} is larger than {_size(limit)}, more than the file ever holds; '
        'refusing to read it',
        path=file.path,
        problem='too-large',
    )


def _size(limit: int) -> str:
    if limit >= 1 << 20 and limit % (1 << 20) == 0:
        return f'{limit >> 20} MiB'
    if limit >= 1 << 10 and limit % (1 << 10) == 0:
        return f'{limit >> 10} KiB'
    return f'{limit} bytes'


def _access_error(file: RepoFile, error: OSError, action: str) -> FileAccessError:
    return FileAccessError(
        f'cannot {action} {file.path}: {error.strerror or type(error).__name__}',
        path=file.path,
        action=action,
    )


def _folder(file: RepoFile, *, create: bool) -> int | None:
    """A descriptor of the folder holding ``file`` (each step below the repository opened
    without following a link); None when a folder (or the repository) is missing and
    ``create`` is off."""
    try:
        fd = os.open(file.repository, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        if create:
            raise
        return None  # no repository there: the file is missing too
    try:
        walked: list[str] = []
        for part in file.parts[:-1]:
            walked.append(part)
            try:
                child = os.open(part, _FOLDER_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    os.close(fd)
                    return None
                try:
                    os.mkdir(part, 0o755, dir_fd=fd)
                except FileExistsError:
                    pass
                child = os.open(part, _FOLDER_FLAGS, dir_fd=fd)
            except OSError as error:
                if error.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise _link_error(file, '/'.join(walked)) from None
                raise
            os.close(fd)
            fd = child
        return fd
    except BaseException:
        os.close(fd)
        raise


def _open(file: RepoFile, flags: int, *, create_folders: bool = False) -> int | None:
    """An open descriptor of the regular file, O_NONBLOCK cleared; None when it is missing.

    Raises RepositoryFileError (a link on the way, not a regular file) or OSError.
    """
    if not _AT:  # pragma: no cover - no dir_fd support (Windows)
        if create_folders:
            file.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(file.path, flags | _FILE_FLAGS, 0o644)
        except FileNotFoundError:
            return None
        return _checked(file, fd)
    folder = _folder(file, create=create_folders)
    if folder is None:
        return None
    try:
        try:
            fd = os.open(file.parts[-1], flags | _FILE_FLAGS, 0o644, dir_fd=folder)
        except FileNotFoundError:
            return None
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise _link_error(file) from None
            if error.errno in (errno.ENXIO, errno.EISDIR, errno.ENODEV, errno.ETXTBSY):
                raise _not_regular(file) from None  # a FIFO without a reader, a folder, ...
            raise
    finally:
        os.close(folder)
    return _checked(file, fd)


def _checked(file: RepoFile, fd: int) -> int:
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _not_regular(file)
        if _NONBLOCK:
            import fcntl

            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    return fd


def reason(error: BaseException) -> str:
    """What went wrong with a repository file, in a few words (for a message naming it)."""
    if isinstance(error, RepositoryFileError):
        return _PROBLEMS.get(error.problem, error.problem)
    cause = error.__cause__
    if isinstance(cause, OSError) and cause.strerror:
        return cause.strerror
    return str(error)


_PROBLEMS = {
    'link': 'it is a symbolic link, or a folder on its way is',
    'not-regular': 'it is not a regular file',
    'too-large': 'it is larger than the file ever is',
}


# -- reading -------------------------------------------------------------------------------


def read(file: RepoFile, limit: int) -> bytes | None:
    """The bytes of a regular file of at most ``limit`` bytes, or None when it is missing.

    Raises:
        RepositoryFileError: The file, or a folder on its way, is a link; the file is not a regular
            file, or holds more than ``limit`` bytes.
        FileAccessError: The system refused to open or read it.
    """
    try:
        fd = _open(file, os.O_RDONLY)
    except OSError as error:
        raise _access_error(file, error, 'read') from error
    if fd is None:
        return None
    try:
        if os.fstat(fd).st_size > limit:
            raise _too_large(file, limit)
        chunks = []
        size = 0
        while True:
            chunk = os.read(fd, min(limit + 1 - size, 1 << 20))
            if not chunk:
                break
            size += len(chunk)
            if size > limit:  # grew while being read
                raise _too_large(file, limit)
            chunks.append(chunk)
        return b''.join(chunks)
    except OSError as error:
        raise _access_error(file, error, 'read') from error
    finally:
        os.close(fd)


def open_to_read(file: RepoFile) -> int | None:
    """A read-only descriptor of the regular file (for reading it in pieces), or None when it
    is missing; the caller closes it.

    Raises:
        RepositoryFileError: A link, or not a regular file.
        FileAccessError: The system refused.
    """
    try:
        return _open(file, os.O_RDONLY)
    except OSError as error:
        raise _access_error(file, error, 'read') from error


def check(file: RepoFile, limit: int) -> None:
    """Refuses a file another library is about to open by name: a link (on the way or at
    the name), anything but a regular file, or more than ``limit`` bytes. Missing is fine.

    The other library opens the file afterwards; whoever swaps the file in between still
    wins (the residual window the store's wrapper names).
    """
    try:
        fd = _open(file, os.O_RDONLY)
    except OSError as error:
        raise _access_error(file, error, 'read') from error
    if fd is None:
        return
    try:
        if os.fstat(fd).st_size > limit:
            raise _too_large(file, limit)
    finally:
        os.close(fd)


# -- writing -------------------------------------------------------------------------------


def open_in_place(file: RepoFile, *, repair: bool = False) -> int:
    """A read-write descriptor of the file, created when missing (with its folders), for a
    file kept in place (the lock, the stat cache). The caller closes it.

    With ``repair``, a link or other non-regular file at the name is removed (the name, never
    what it points at) and a regular file made in its place: only for a file the caller alone
    writes (it holds the repository's lock).

    Raises:
        RepositoryFileError: A link or non-regular file is in the way (and ``repair`` is off).
        FileAccessError: The system refused.
    """
    flags = os.O_RDWR | os.O_CREAT
    try:
        try:
            fd = _open(file, flags, create_folders=True)
        except RepositoryFileError as problem:
            if not repair or problem.path != str(file.path):
                raise
            remove(file)
            fd = _open(file, flags | os.O_EXCL, create_folders=True)
    except OSError as error:
        raise _access_error(file, error, 'write') from error
    assert fd is not None  # O_CREAT
    return fd


def append(file: RepoFile, data: bytes) -> int:
    """Appends ``data`` in one write, creating the file (and its folders) when missing;
    returns the file's size after.

    Raises:
        RepositoryFileError: A link or non-regular file is in the way.
        FileAccessError: The system refused.
    """
    try:
        fd = _open(file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, create_folders=True)
        assert fd is not None  # O_CREAT
        try:
            written = os.write(fd, data)
            if written != len(data):
                raise OSError(errno.ENOSPC, 'short write')
            return os.fstat(fd).st_size
        finally:
            os.close(fd)
    except OSError as error:
        raise _access_error(file, error, 'write') from error


def replace(file: RepoFile, data: bytes, *, durable: bool = True) -> None:
    """Replaces the file with ``data``: a temporary file created in its folder (which is
    made when missing), flushed when ``durable``, renamed over the name (a link there is
    replaced, never written through), and the folder flushed.

    Raises:
        RepositoryFileError: A folder on the way is a link.
        FileAccessError: The system refused.
    """
    if not _AT:  # pragma: no cover - no dir_fd support (Windows)
        write_atomically(file.path, data, durable=durable)
        return
    name = file.parts[-1]
    try:
        folder = _folder(file, create=True)
        assert folder is not None
        try:
            replace_at(folder, name, data, durable=durable)
        finally:
            os.close(folder)
    except OSError as error:
        raise _access_error(file, error, 'write') from error


def remove(file: RepoFile) -> bool:
    """Removes the name (a link itself, never what it points at); False when it was missing.

    Raises:
        RepositoryFileError: A folder on the way is a link.
        FileAccessError: The system refused (a folder at the name, say).
    """
    try:
        if not _AT:  # pragma: no cover - no dir_fd support (Windows)
            os.unlink(file.path)
            return True
        folder = _folder(file, create=False)
        if folder is None:
            return False
        try:
            os.unlink(file.parts[-1], dir_fd=folder)
        finally:
            os.close(folder)
    except FileNotFoundError:
        return False
    except OSError as error:
        raise _access_error(file, error, 'delete') from error
    return True
