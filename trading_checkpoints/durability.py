"""Getting bytes onto the disk in the right order: fsync of files and of the folders they live in.

The policy (see the README's "Crash safety and durability" section): with ``durable=True``, the
default, every object file is flushed before the branch names it, every folder that received a
new name is flushed before anything that depends on it, and every file a restore writes is
flushed before it is renamed into place. A SIGKILL never needs any of this (the kernel keeps
the page cache); a power cut or kernel crash does.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

__all__ = ['fsync_folder', 'fsync_folders', 'fsync_path']


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
