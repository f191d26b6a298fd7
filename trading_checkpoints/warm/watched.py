"""The server's code watched: a change to any module file or folder it imported, seen by the
kernel as it is made, so that its clients need not look at the files themselves.

A client must never be served by code other than its own. The plain way (``address.py``'s
*listed* manifest) has every client fingerprint every file the server imported: one ``stat``
per file, ~0.8 ms of every command. Where every folder of those files is on a local file system
(ext4, xfs, btrfs, tmpfs, f2fs, zfs: ``agent/inotify.py``'s list; on a network or FUSE file
system another machine or daemon may write unseen), the server instead watches each folder
(inotify: a file written, its attributes changed, an entry made, removed or renamed; the
folder itself removed or moved) before it checks that no file was written too recently, and
the manifest names its socket (*watched*):

- the kernel queues an event before the write that causes it returns, so a change made before
  a client starts is queued before the client connects;
- the server never reads the queue: once anything is queued, it stays readable. The server
  stops at once, and a child that takes a client first looks at the queue (:func:`changed`)
  and refuses when it holds anything: the client runs the command itself, and the next one
  starts a server of the new code.

Anything that keeps a folder from being watched (another file system, no inotify, no watch
left) makes the manifest a listed one.
"""

from __future__ import annotations

import os
import select

from ..agent import inotify

WATCHED = inotify.CHANGES | inotify.DELETE_SELF | inotify.MOVE_SELF | inotify.ONLYDIR
_OPEN = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


def watch(paths: list[str]) -> int | None:
    """An inotify descriptor watching the folder of each path and each folder among them (the
    folder holding a missing import path entry, which may appear), None where one cannot be
    watched soundly."""
    folders = set()
    for path in paths:
        for each in {path, os.path.realpath(path)}:
            folders.add(each if os.path.isdir(each) else os.path.dirname(each))
    try:
        queue = inotify.Queue()
    except inotify.Unwatchable:
        return None
    try:
        for folder in sorted(folders):
            fd = os.open(folder, _OPEN)
            try:
                if inotify.filesystem_type(fd) not in inotify.LOCAL_FILESYSTEMS:
                    raise inotify.Unwatchable(f'{folder} is not on a local file system')
                queue.add(f'/proc/self/fd/{fd}', WATCHED)
            finally:
                os.close(fd)
    except (OSError, inotify.Unwatchable):
        queue.close()
        return None
    return queue.fd


def changed(fd: int) -> bool:
    """Whether anything watched changed since the watch began."""
    readable, _, _ = select.select([fd], [], [], 0)
    return bool(readable)
