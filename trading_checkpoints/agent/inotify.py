"""Linux's inotify, through ``ctypes``: one kernel event queue over the desk's tracked folders.

``watchfiles`` (the notifier ``checkpoints watch`` captures with) cannot serve a vouch: its
handler keeps only events that name a path, so the notifier's queue-overflow signal (a
path-less rescan event) is dropped, and the moment its queue was read up to cannot be known.
This module reads the queue itself, so that every event, the overflow included, is seen in the
order the kernel queued it.

:class:`Folders` keeps one watch per folder that is tracked or lies above a tracked path, each
added through ``/proc/self/fd`` on a descriptor opened one component at a time without following
symlinks (the folder watched is the one the walk would enter), before that folder is listed (so
a subfolder made after the listing began has its own event). Folders named ``.git`` are not
entered, as the walk does not enter them.
"""

from __future__ import annotations

import ctypes
import os
import stat
import struct
from collections.abc import Callable, Iterator

MODIFY, ATTRIB, CLOSE_WRITE = 0x2, 0x4, 0x8
MOVED_FROM, MOVED_TO, CREATE, DELETE = 0x40, 0x80, 0x100, 0x200
DELETE_SELF, MOVE_SELF = 0x400, 0x800
UNMOUNT, Q_OVERFLOW, IGNORED = 0x2000, 0x4000, 0x8000
ONLYDIR, ISDIR = 0x01000000, 0x40000000
CHANGES = MODIFY | ATTRIB | CLOSE_WRITE | MOVED_FROM | MOVED_TO | CREATE | DELETE
FOLDER_MASK = CHANGES | DELETE_SELF | MOVE_SELF | ONLYDIR
NONBLOCK, CLOEXEC = os.O_NONBLOCK, os.O_CLOEXEC  # IN_NONBLOCK, IN_CLOEXEC by definition
_HEADER = struct.Struct('iIII')
_OPEN_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

# Filesystems whose every change reaches inotify (no other machine or daemon writes them):
# ext2/3/4, xfs, btrfs, tmpfs, f2fs, zfs.
LOCAL_FILESYSTEMS = frozenset({0xEF53, 0x58465342, 0x9123683E, 0x01021994, 0xF2F52010, 0x2FC12FC1})

Event = tuple[int, int, str]  # watch descriptor, mask, name ('' for the folder itself)


class Unwatchable(Exception):
    """The desk cannot be watched soundly (no inotify, no ``/proc``, too many folders, a
    filesystem other processes may write unseen, a folder on another device). It carries no
    message: the watch then simply vouches for nothing, and nobody is told why."""


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None)


class Queue:
    """One inotify instance."""

    def __init__(self) -> None:
        libc = _libc()
        self._add = libc.inotify_add_watch
        self._add.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32)
        fd = libc.inotify_init1(NONBLOCK | CLOEXEC)
        if fd < 0:
            raise Unwatchable  # no inotify here (or no instance left)
        self.fd: int = fd

    def add(self, path: str | bytes, mask: int) -> int:
        wd = self._add(self.fd, os.fsencode(path), mask)
        if wd < 0:
            raise Unwatchable  # gone, or the user's limit of watches reached
        return int(wd)

    def read(self) -> list[Event]:
        """The events queued now (none when the queue is empty)."""
        try:
            data = os.read(self.fd, 1 << 16)
        except BlockingIOError:
            return []
        events = []
        offset = 0
        while offset < len(data):
            wd, mask, _, size = _HEADER.unpack_from(data, offset)
            offset += _HEADER.size
            name = data[offset : offset + size].rstrip(b'\0')
            offset += size
            events.append((wd, mask, os.fsdecode(name)))
        return events

    def close(self) -> None:
        os.close(self.fd)


def filesystem_type(fd: int) -> int:
    """The ``f_type`` of the filesystem an open descriptor is on (Linux ``fstatfs``)."""
    libc = _libc()
    buffer = ctypes.create_string_buffer(256)
    if libc.fstatfs(fd, buffer) != 0:
        raise Unwatchable
    return int(struct.unpack_from('l', buffer.raw)[0])


def is_git(name: str) -> bool:
    return name.rstrip('. ').lower() == '.git'


class Folders:
    """The desk's watched folders on a queue: ``paths`` maps each watch to its folder
    ('' for the desk, else '/'-separated and desk-relative); ``linked``: the tracked files
    with more than one name found in them when they were listed.

    ``wanted(path)`` says whether a folder is tracked or above a tracked path, ``tracked(path)``
    whether a file is tracked.
    """

    def __init__(
        self,
        queue: Queue,
        desk: str,
        wanted: Callable[[str], bool],
        tracked: Callable[[str], bool],
    ) -> None:
        self.queue = queue
        self.desk = desk
        self.wanted = wanted
        self.tracked = tracked
        self.paths: dict[int, str] = {}
        self.linked: set[str] = set()
        root = os.open(desk, _OPEN_FOLDER)
        try:
            info = os.fstat(root)
            if filesystem_type(root) not in LOCAL_FILESYSTEMS:
                raise Unwatchable  # other machines or daemons may write it unseen
            self.device = info.st_dev
            self._add_tree(root, '')
        finally:
            os.close(root)

    def add(self, folder: str) -> None:
        """Watches a folder that appeared (and everything wanted under it)."""
        fd = self._open(folder)
        if fd is None:
            return  # gone again, or not a real folder: its parent's event said so
        try:
            self._add_tree(fd, folder)
        finally:
            os.close(fd)

    def _open(self, folder: str) -> int | None:
        fd = os.open(self.desk, _OPEN_FOLDER)
        try:
            for part in folder.split('/'):
                inner = os.open(part, _OPEN_FOLDER, dir_fd=fd)
                os.close(fd)
                fd = inner
        except OSError:
            os.close(fd)
            return None
        return fd

    def _add_tree(self, fd: int, folder: str) -> None:
        """Watches the folder open as ``fd``, then lists it, noting its tracked files with more
        than one name, and does the same for each wanted subfolder (one descriptor open per
        level)."""
        if os.fstat(fd).st_dev != self.device:
            raise Unwatchable  # another filesystem mounted in the desk
        wd = self.queue.add(f'/proc/self/fd/{fd}', FOLDER_MASK)
        self.paths[wd] = folder
        for entry in _listing(fd):
            name = entry.name
            path = f'{folder}/{name}' if folder else name
            if not _is_folder(entry):
                if self.tracked(path) and names(entry) > 1:
                    self.linked.add(path)
                continue
            if is_git(name) or not self.wanted(path):
                continue
            try:
                inner = os.open(name, _OPEN_FOLDER, dir_fd=fd)
            except OSError:
                continue  # gone or replaced since the listing: its event says so
            try:
                self._add_tree(inner, path)
            finally:
                os.close(inner)


def _listing(fd: int) -> Iterator[os.DirEntry[str]]:
    with os.scandir(fd) as entries:
        yield from entries


def _is_folder(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def names(path: str | os.DirEntry[str]) -> int:
    """How many names a regular file has (1 for anything else, or for what cannot be read)."""
    try:
        info = path.stat(follow_symlinks=False) if isinstance(path, os.DirEntry) else os.lstat(path)
    except OSError:
        return 1
    return info.st_nlink if stat.S_ISREG(info.st_mode) else 1
