"""The walk of a scan: the name and stat numbers of every tracked file and symlink.

Folders are entered only through :meth:`DeskFolders.folder` (``O_NOFOLLOW | O_DIRECTORY``,
each component relative to its parent's descriptor), and a folder whose descriptor is not the
folder its parent listed (``st_dev``, ``st_ino``) was swapped meanwhile: it is reported as
replaced and not walked. Each file is ``lstat``-ed relative to its folder's descriptor, never
followed. Folders named ``.git`` are never walked; names git cannot store and things that are
neither files nor symlinks are reported in ``skipped``.

The order is the stat cache's: a folder's files in listing order, then each of its subfolders in
listing order, depth first. A folder is listed in bulk (its names at once, then one ``lstat``
each, then the numbers taken out of all the stats at once), so that a folder of ordinary names
and files costs no Python statement per file: at 100,000 files the walk costs about what a
plain ``scandir`` + ``lstat`` loop does, though it does more. The ``lstat`` calls are not spread
over threads: each releases the GIL for about a microsecond, and handing the GIL between
threads costs more than that (``benchmarks/README.md``: 4 threads made the walk of 100,000
files 1.7x slower on 2 cores).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Collection
from itertools import chain
from operator import attrgetter

from ..core.paths import Allowlist, path_problem
from ..errors import FileAccessError
from .folders import DeskFolders

_FORMAT_MASK = 0o170000
_S_IFDIR, _S_IFREG, _S_IFLNK = stat.S_IFDIR, stat.S_IFREG, stat.S_IFLNK
_FILE_KINDS = frozenset({_S_IFREG, _S_IFLNK})
_KEY = attrgetter('st_size', 'st_mtime_ns', 'st_ctime_ns', 'st_ino', 'st_mode')
_MODE = attrgetter('st_mode')
_KIND = _FORMAT_MASK.__and__

NOT_A_FILE = 'it is not a regular file or a symlink'
REPLACED = 'it was replaced or changed while it was being read'
BAD_NAME = 'its name is not valid UTF-8'

Identity = tuple[int, int]


class Listing:
    """One folder's files (names with the folder's prefix, five stat numbers each), its
    subfolders with their identity, and what it leaves out; ``replaced`` when the descriptor
    was not the folder its parent listed."""

    __slots__ = ('names', 'numbers', 'subfolders', 'skipped', 'replaced')

    def __init__(self) -> None:
        self.names: list[str] = []
        self.numbers: list[int] = []
        self.subfolders: list[tuple[str, Identity]] = []
        self.skipped: list[tuple[str, str]] = []
        self.replaced = False


def walk(
    folders: DeskFolders, allowlist: Allowlist, skipped: list[tuple[str, str]]
) -> tuple[list[str], list[int]]:
    """Names and stat numbers (five per file) of every regular file and symlink under the
    tracked paths."""
    names: list[str] = []
    numbers: list[int] = []
    for entry in allowlist.entries:
        st = folders.lstat(entry)
        if st is None:
            continue  # absent, or a folder above it is not a real folder
        kind = st.st_mode & _FORMAT_MASK
        if kind == _S_IFREG or kind == _S_IFLNK:
            names.append(entry)
            numbers.extend(_KEY(st))
        elif kind == _S_IFDIR:
            _walk_folder(folders, (entry, (st.st_dev, st.st_ino)), names, numbers, skipped)
        else:
            skipped.append((entry, NOT_A_FILE))
    return names, numbers


class Narrowed:
    """What :func:`walk_since` found: the files of the folders it walked (``names``,
    ``numbers`` as :func:`walk` gives them) and which of the previous walk's paths those
    replace: the tracked entries themselves (``entries``), the files directly in a folder it
    listed (``listed``), and everything below a folder it walked whole or found gone
    (``below``)."""

    __slots__ = ('names', 'numbers', 'entries', 'listed', 'below')

    def __init__(self, entries: tuple[str, ...]) -> None:
        self.names: list[str] = []
        self.numbers: list[int] = []
        self.entries = frozenset(entries)
        self.listed: set[str] = set()
        self.below: list[str] = []

    def replaces(self, path: str) -> bool:
        """Whether ``path``, as the previous walk found it, is looked at again here."""
        return bool(self.replaced([path]))

    def replaced(self, paths: list[str]) -> list[int]:
        """The positions of the ``paths`` that :meth:`replaces` (one pass over a stat cache's
        names: each test is a lookup or a prefix test of all the folders at once)."""
        entries, listed = self.entries, self.listed
        below = tuple(folder + '/' for folder in self.below)
        return [
            row
            for row, path in enumerate(paths)
            if path in entries or path.rpartition('/')[0] in listed or path.startswith(below)
        ]


def walk_since(
    folders: DeskFolders,
    allowlist: Allowlist,
    known: Collection[str],
    touched: Collection[str],
    skipped: list[tuple[str, str]],
) -> Narrowed:
    """The walk of the folders that changed since a previous walk, the rest being as it found.

    ``known``: the folders that held tracked files then; ``touched``: the folders in which an
    entry was made, changed, removed or moved since. Every tracked entry is looked at again; a
    folder not known is walked whole, as :func:`walk` walks it; a touched folder is listed,
    and its subfolders that are not known are walked whole; a known subfolder that is gone
    from its listing is gone. Each folder is entered and listed by the same code as
    :func:`walk`'s, with the same checks.
    """
    found = Narrowed(allowlist.entries)

    def walk_whole(path: str, identity: Identity) -> None:
        found.below.append(path)
        _walk_folder(folders, (path, identity), found.names, found.numbers, skipped)

    for entry in allowlist.entries:
        st = folders.lstat(entry)
        kind = -1 if st is None else st.st_mode & _FORMAT_MASK
        if st is not None and kind == _S_IFDIR:
            if entry not in known:
                walk_whole(entry, (st.st_dev, st.st_ino))
            continue
        found.below.append(entry)  # not a folder: nothing is below it
        if st is None:
            continue
        if kind == _S_IFREG or kind == _S_IFLNK:
            found.names.append(entry)
            found.numbers.extend(_KEY(st))
        else:
            skipped.append((entry, NOT_A_FILE))
    below_known: dict[str, list[str]] = {}
    for folder in known:
        below_known.setdefault(folder.rpartition('/')[0], []).append(folder)
    for folder in sorted(touched, key=lambda path: path.count('/')):
        if not folder or not allowlist.covers(folder):
            continue  # above the tracked paths: the entries were looked at again
        if any(folder.startswith(done + '/') or folder == done for done in found.below):
            continue  # walked whole, or gone, already
        st = folders.lstat(folder)
        if st is None or st.st_mode & _FORMAT_MASK != _S_IFDIR:
            found.below.append(folder)  # its parent is touched and lists what it is now
            continue
        identity = (st.st_dev, st.st_ino)
        if folder not in known:
            walk_whole(folder, identity)
            continue
        listing = _listed(folders, folder, identity)
        found.listed.add(folder)
        subfolders = _gather(listing, folder, found.names, found.numbers, skipped)
        if listing is None or listing.replaced:
            found.below.append(folder)
            continue
        present = set()
        for path, seen in subfolders:
            present.add(path)
            if path not in known:
                walk_whole(path, seen)
        found.below.extend(path for path in below_known.get(folder, ()) if path not in present)
    return found


def _gather(
    listing: Listing | None,
    folder: str,
    names: list[str],
    numbers: list[int],
    skipped: list[tuple[str, str]],
) -> list[tuple[str, Identity]]:
    """Adds a folder's listing to the walk; its subfolders, to be walked next."""
    if listing is None:
        return []  # vanished, or became a symlink: never walked into
    if listing.replaced:
        skipped.append((folder, REPLACED))  # swapped since its parent was listed
        return []
    names.extend(listing.names)
    numbers.extend(listing.numbers)
    skipped.extend(listing.skipped)
    return listing.subfolders


def _walk_folder(
    folders: DeskFolders,
    top: tuple[str, Identity],
    names: list[str],
    numbers: list[int],
    skipped: list[tuple[str, str]],
) -> None:
    pending = [top]
    while pending:
        folder, seen = pending.pop()
        listing = _listed(folders, folder, seen)
        # Walked last-in first-out: reversed keeps the listing order.
        pending.extend(reversed(_gather(listing, folder, names, numbers, skipped)))


def _listed(folders: DeskFolders, folder: str, seen: Identity) -> Listing | None:
    """The listing of desk folder ``folder`` (None: gone, or no longer a real folder). A
    listing the system refuses (descriptors run out: listing one opens another) is a
    :class:`FileAccessError` naming the folder, as entering it is."""
    fd = folders.folder(folder)
    if fd is None:
        return None
    try:
        return list_folder(fd, folder, seen)
    except OSError as error:
        full = folders.full(folder)
        raise FileAccessError(
            f'cannot list {full}: {error.strerror}', path=full, action='list'
        ) from error


def list_folder(fd: int, folder: str, seen: Identity) -> Listing:
    """The listing of the folder open as ``fd`` (see :class:`Listing`)."""
    listing = Listing()
    held = os.fstat(fd)
    if (held.st_dev, held.st_ino) != seen:
        listing.replaced = True
        return listing
    prefix = folder + '/'
    found = os.listdir(fd)
    joined = '/'.join(found)  # no name holds '/': one test of all the names at once
    if (
        not joined.isascii()
        or joined[:1] == '.'
        or '/.' in joined
        or '\\' in joined
        or '\n' in joined
        or '\r' in joined
    ):
        found = [name for name in found if _storable(prefix, name, listing.skipped)]
    try:
        stats = [os.lstat(name, dir_fd=fd) for name in found]
    except FileNotFoundError:  # something vanished meanwhile: the rest, one at a time
        found, stats = _still_there(fd, found)
    modes = list(map(_MODE, stats))
    if _FILE_KINDS.issuperset(map(_KIND, modes)):
        listing.names = list(map(prefix.__add__, found))
        listing.numbers = list(chain.from_iterable(map(_KEY, stats)))
        return listing
    for name, st, mode in zip(found, stats, modes, strict=True):
        kind = mode & _FORMAT_MASK
        if kind == _S_IFREG or kind == _S_IFLNK:
            listing.names.append(prefix + name)
            listing.numbers.extend(_KEY(st))
        elif kind == _S_IFDIR:
            listing.subfolders.append((prefix + name, (st.st_dev, st.st_ino)))
        else:
            listing.skipped.append((prefix + name, NOT_A_FILE))
    return listing


def _still_there(fd: int, found: list[str]) -> tuple[list[str], list[os.stat_result]]:
    names, stats = [], []
    for name in found:
        try:
            stats.append(os.lstat(name, dir_fd=fd))
        except FileNotFoundError:
            continue
        names.append(name)
    return names, stats


def _storable(prefix: str, name: str, skipped: list[tuple[str, str]]) -> bool:
    """Whether a listed name can be walked; reports the ones git cannot store (a nested
    repository's ``.git`` is left out silently)."""
    if name.isascii() and name[0] != '.' and not any(c in name for c in '\\\n\r'):
        return True
    problem = name_problem(prefix + name, name)
    if problem is None:
        return True
    if problem != '.git':
        skipped.append((prefix + name, problem))
    return False


def name_problem(path: str, name: str) -> str | None:
    """Why a listed name cannot be snapshotted ('.git' for a nested repository), or None."""
    if name.rstrip('. ').lower() == '.git':
        return '.git'
    try:
        name.encode('utf-8')
    except UnicodeEncodeError:
        return BAD_NAME
    problem = path_problem(path)
    return f'its name has {problem}' if problem else None
