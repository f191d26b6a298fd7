"""git trees of a desk's files: the one tree builder every snapshot, seal and restore uses.

Objects are built and hashed here with ``hashlib`` exactly as git does (``<type> <size>\\0``
then the body), so the desk side never needs dulwich; the store writes the raw objects.
"""

from __future__ import annotations

import hashlib

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
    by_parent: dict[str, list[tuple[str, FileEntry]]] = {}
    for path, entry in files.items():
        parent, _, name = path.rpartition('/')
        group = by_parent.get(parent)
        if group is None:
            by_parent[parent] = group = []
        group.append((name, entry))
    all_folders = set(by_parent)
    all_folders.add('')  # an empty desk still has an (empty) root tree
    for folder in by_parent:
        while folder:
            folder = folder.rpartition('/')[0]
            if folder in all_folders:
                break
            all_folders.add(folder)
    subfolders: dict[str, list[str]] = {}
    for folder in all_folders:
        if folder:
            parent, _, name = folder.rpartition('/')
            subfolders.setdefault(parent, []).append(name)
    ids: dict[str, bytes] = {}
    built: list[RawObject] = []
    # Deepest folders first, so subtrees are known before their parents.
    for folder in sorted(all_folders, key=lambda f: f.count('/') + (1 if f else 0), reverse=True):
        if folder not in dirty and folder in cached:
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
