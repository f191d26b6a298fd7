"""git trees of a desk's files: the one tree builder every snapshot, seal and restore uses.

Objects are built and hashed here with ``hashlib`` exactly as git does (``<type> <size>\\0``
then the body), so the desk side never needs dulwich; the store writes the raw objects.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

FILE_MODE = 0o100644
EXECUTABLE_MODE = 0o100755
SYMLINK_MODE = 0o120000
TREE_MODE = 0o040000
BLOB_MODES = frozenset({FILE_MODE, EXECUTABLE_MODE, SYMLINK_MODE})

FileEntry = tuple[int, bytes]  # (git mode, hex blob id)
RawObject = tuple[bytes, bytes, bytes]  # (hex id, type name, body)


def object_id(kind: bytes, body: bytes) -> bytes:
    """The hex id git gives an object of this type and body."""
    digest = hashlib.sha1(b'%s %d\0' % (kind, len(body)))
    digest.update(body)
    return digest.hexdigest().encode()


def blob_id(data: bytes) -> bytes:
    return object_id(b'blob', data)


def tree_body(entries: list[tuple[bytes, int, bytes]]) -> bytes:
    """A tree's body from ``(name, mode, hex id)`` entries, in git's order (folders sort as
    if their name ended in ``/``)."""
    entries = sorted(entries, key=lambda e: e[0] + b'/' if e[1] == TREE_MODE else e[0])
    return b''.join(
        b'%o %s\0%s' % (mode, name, bytes.fromhex(sha.decode())) for name, mode, sha in entries
    )


def folders_of(path: str) -> list[str]:
    """The folders above a path, nearest first, ending with the root ``''``."""
    out = []
    while '/' in path:
        path = path.rsplit('/', 1)[0]
        out.append(path)
    out.append('')
    return out


def dirty_folders(changed: set[str], removed: set[str]) -> set[str]:
    """Every folder whose tree changes when these paths change."""
    out: set[str] = set()
    for path in changed | removed:
        out.update(folders_of(path))
    return out


def build_trees(
    files: dict[str, FileEntry], dirty: set[str], cached: dict[str, bytes]
) -> tuple[dict[str, bytes], list[RawObject]]:
    """Tree ids for every folder holding tracked files, building only the ``dirty`` ones.

    A folder absent from ``cached`` counts as dirty. Returns the ids by folder (``''`` is the
    root) and the raw tree objects that were built.
    """
    names = list(files)
    return build_trees_of(names, list(files.values()).__getitem__, dirty, cached)


def build_trees_of(
    names: list[str],
    entry: Callable[[int], FileEntry],
    dirty: set[str],
    cached: dict[str, bytes],
) -> tuple[dict[str, bytes], list[RawObject]]:
    """:func:`build_trees` for files given as a column of paths, ``entry(row)`` giving the
    entry of the file in row ``row``; entries are asked for only in the folders built (a
    snapshot of one change among 100,000 files asks for a few)."""
    parents = [name.rpartition('/')[0] for name in names]
    all_folders = set(parents)
    all_folders.add('')  # an empty desk still has an (empty) root tree
    for folder in list(all_folders):
        while folder:
            folder = folder.rpartition('/')[0]
            if folder in all_folders:
                break
            all_folders.add(folder)
    built_folders = {folder for folder in all_folders if folder in dirty or folder not in cached}
    by_parent: dict[str, list[tuple[str, FileEntry]]] = {}
    if built_folders:
        for row, parent in enumerate(parents):
            if parent in built_folders:
                name = names[row][len(parent) + 1 if parent else 0 :]
                by_parent.setdefault(parent, []).append((name, entry(row)))
    subfolders: dict[str, list[str]] = {}
    for folder in all_folders:
        if folder:
            parent, _, name = folder.rpartition('/')
            subfolders.setdefault(parent, []).append(name)
    ids: dict[str, bytes] = {}
    built: list[RawObject] = []
    # Deepest folders first, so subtrees are known before their parents.
    for folder in sorted(all_folders, key=lambda f: f.count('/') + (1 if f else 0), reverse=True):
        if folder not in built_folders:
            ids[folder] = cached[folder]
            continue
        entries = [
            (name.encode('utf-8', 'surrogateescape'), mode, sha)
            for name, (mode, sha) in by_parent.get(folder, ())
        ]
        for name in subfolders.get(folder, ()):
            child = f'{folder}/{name}' if folder else name
            entries.append((name.encode('utf-8', 'surrogateescape'), TREE_MODE, ids[child]))
        body = tree_body(entries)
        sha = object_id(b'tree', body)
        ids[folder] = sha
        built.append((sha, b'tree', body))
    return ids, built
