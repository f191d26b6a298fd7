"""git's own files in a shadow repository, which dulwich reads too: refs, ``packed-refs``,
``shallow``, ``info/grafts``, ``objects/info/alternates``, the packs' names and the reflog.

dulwich opens these by name: it follows a link and waits on a FIFO. Every file here is read
or written through :mod:`..core.repofiles` (never through a link, only a regular file of at
most the cap below), and where the store can do without dulwich it does:

- the branch file and the other loose refs are read here first (``refs.py``); ``shallow`` is
  read and written here; the reflog of ``main`` is appended here after each move of the branch
  (dulwich is given no reflog message, so it writes none) and rewritten here by a prune;
- where dulwich reads a file itself, the file is checked (:func:`check_before_opening`, before
  dulwich's repository object is made: ``shallow``, ``info/grafts``,
  ``objects/info/alternates`` and every ``.pack``/``.idx`` name; :func:`check_refs`, before
  dulwich reads or moves a ref: ``packed-refs`` and the loose ref).

What remains: between such a check and dulwich's own ``open`` another process that can write in
the repository may still put a link or a FIFO there (microseconds; every writer of the
repository holds its lock, but a hostile process need not), and a loose object planted as a
FIFO or a link is opened by dulwich by name (our repositories keep no loose objects; another
tool's do).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TypedDict

from ..core import repofiles
from ..core.repofiles import RepoFile
from ..errors import CheckpointError, RepositoryFileError

REF_LIMIT = 4096  # a loose ref: an id, or ``ref: <name>``
PACKED_REFS_LIMIT = 64 << 20
SHALLOW_LIMIT = 1 << 20  # 25,000 boundaries; ours holds one or two
GRAFTS_LIMIT = 1 << 20
ALTERNATES_LIMIT = 64 << 10
REFLOG_LIMIT = 256 << 20  # about two million entries
LOOSE_OBJECT_LIMIT = 1 << 30

SHALLOW = 'shallow'
PACKED_REFS = 'packed-refs'
ZERO = b'0' * 40
_HEX = re.compile(rb'[0-9a-f]{40}')
_PACK_NAME = re.compile(r'pack-[0-9a-f]+\.(pack|idx)')


class Reflog(TypedDict):
    """A reflog entry's fields, as dulwich's ref updates take them."""

    committer: bytes
    timestamp: int
    timezone: int
    message: bytes


def file_of(repository: str | os.PathLike[str], name: str) -> RepoFile:
    return RepoFile(Path(repository), name)


def remove(repository: str | os.PathLike[str], name: str) -> None:
    """Removes one of these files (a link itself, never what it points at)."""
    repofiles.remove(file_of(repository, name))


# -- refs ----------------------------------------------------------------------------------


def read_ref_file(repository: str | os.PathLike[str], name: str) -> bytes | None:
    """A loose ref file's bytes (``refs/heads/main``), None when it is missing."""
    return repofiles.read(file_of(repository, name), REF_LIMIT)


def check_refs(repository: str | os.PathLike[str], *names: str) -> None:
    """Refuses ``packed-refs`` and the loose refs ``names`` when they are links, not regular
    files or too large: called before dulwich reads or writes a ref."""
    repofiles.check(file_of(repository, PACKED_REFS), PACKED_REFS_LIMIT)
    for name in names:
        repofiles.check(file_of(repository, name), REF_LIMIT)


# -- shallow -------------------------------------------------------------------------------


def read_shallow(repository: str | os.PathLike[str]) -> set[bytes]:
    """The shallow boundary: the commits whose parents are not followed (empty when none)."""
    data = repofiles.read(file_of(repository, SHALLOW), SHALLOW_LIMIT)
    return set(data.split()) if data else set()


def write_shallow(repository: str | os.PathLike[str], shas: set[bytes]) -> None:
    """Replaces the shallow boundary (removing the file when there is none)."""
    file = file_of(repository, SHALLOW)
    if shas:
        repofiles.replace(file, b''.join(sha + b'\n' for sha in sorted(shas)))
    else:
        repofiles.remove(file)


# -- before dulwich opens the repository ---------------------------------------------------


def check_before_opening(repository: str | os.PathLike[str]) -> None:
    """Refuses the files dulwich reads by name when it opens a repository or its packs:
    ``shallow``, ``info/grafts``, ``objects/info/alternates``, and each pack and index."""
    repofiles.check(file_of(repository, SHALLOW), SHALLOW_LIMIT)
    repofiles.check(file_of(repository, 'info/grafts'), GRAFTS_LIMIT)
    repofiles.check(file_of(repository, 'objects/info/alternates'), ALTERNATES_LIMIT)
    pack_folder = os.path.join(repository, 'objects', 'pack')
    try:
        entries = list(os.scandir(pack_folder))
    except OSError:
        return  # missing, or not a folder: dulwich says what is wrong
    for entry in entries:
        if _PACK_NAME.fullmatch(entry.name) and not entry.is_file(follow_symlinks=False):
            path = Path(entry.path)
            raise RepositoryFileError(
                f'{path} is not a regular file (a link, a FIFO, a device or a folder); '
                'refusing to open it (remove it)',
                path=path,
                problem='link' if entry.is_symlink() else 'not-regular',
            )


def read_loose_object(repository: str | os.PathLike[str], hex_id: str) -> bytes | None:
    """A loose object's compressed bytes, None when it is not loose."""
    file = file_of(repository, f'objects/{hex_id[:2]}/{hex_id[2:]}')
    return repofiles.read(file, LOOSE_OBJECT_LIMIT)


# -- the reflog ----------------------------------------------------------------------------


def reflog_line(old: bytes | None, new: bytes, entry: Reflog) -> bytes:
    """One reflog line, as git writes it: ``old new committer time zone<TAB>message``."""
    offset = entry['timezone']
    sign = '-' if offset < 0 else '+'
    minutes = abs(offset) // 60
    zone = f'{sign}{minutes // 60:02d}{minutes % 60:02d}'.encode()
    message = b' '.join(entry['message'].split())
    head = b' '.join((old or ZERO, new, entry['committer'], b'%d' % entry['timestamp'], zone))
    return head + b'\t' + message + b'\n'


def append_reflog(
    repository: str | os.PathLike[str], ref: bytes, old: bytes | None, new: bytes, entry: Reflog
) -> None:
    """Appends one entry to a ref's reflog (``logs/<ref>``), after the ref moved."""
    repofiles.append(file_of(repository, f'logs/{ref.decode()}'), reflog_line(old, new, entry))


def reflog_files(repository: str | os.PathLike[str]) -> list[str]:
    """The names of the reflogs (``logs/...``), links and other odd entries left out."""
    found = []
    pending = ['logs']
    while pending:
        folder = pending.pop()
        try:
            entries = list(os.scandir(os.path.join(repository, folder)))
        except OSError:
            continue
        for entry in entries:
            name = f'{folder}/{entry.name}'
            if entry.is_dir(follow_symlinks=False):
                pending.append(name)
            elif entry.is_file(follow_symlinks=False):
                found.append(name)
    return sorted(found)


def rewrite_reflogs(repository: str | os.PathLike[str], kept: set[bytes]) -> None:
    """Keeps the reflog entries that moved a ref to a kept commit (or deleted it); an entry
    whose previous commit is gone starts from zero. A reflog that cannot be read (a link, a
    FIFO, a damaged file) is removed: only the library writes reflogs here, and ``git fsck``
    reads each entry."""
    for name in reflog_files(repository):
        file = file_of(repository, name)
        try:
            data = repofiles.read(file, REFLOG_LIMIT)
        except CheckpointError:
            repofiles.remove(file)
            continue
        if data is None:
            continue
        lines = data.splitlines(keepends=True)
        out = []
        for line in lines:
            parts = line.split(b' ', 2)
            if len(parts) < 3 or not _HEX.fullmatch(parts[0]) or not _HEX.fullmatch(parts[1]):
                continue
            old, new, rest = parts
            if new not in kept and new != ZERO:
                continue
            if old not in kept:
                old = ZERO
            out.append(b' '.join((old, new, rest)))
        if out != lines:
            repofiles.replace(file, b''.join(out))
