"""What a killed writer may leave in a repository, and how we tell a repository from a folder.

Called under the repository's lock only: while we hold it nobody else writes, so any lock file
or temporary file found is a leftover.
"""

from __future__ import annotations

import os
from pathlib import Path

from .repo import PRIVATE_DIR

_REPOSITORY_NAMES = frozenset(
    {'objects', 'refs', 'info', 'config', 'description', 'HEAD', PRIVATE_DIR, 'hooks', 'branches'}
)


def foreign_content(path: Path) -> bool:
    """Whether a folder holds anything but the pieces of an unfinished repository."""
    try:
        names = os.listdir(path)
    except OSError:
        return False
    return any(name not in _REPOSITORY_NAMES and not name.endswith('.tmp') for name in names)


# The lock files of every file and ref the library (or dulwich for it) writes.
_LOCK_FILES = (
    'config.lock',
    'HEAD.lock',
    'packed-refs.lock',
    'shallow.lock',
    os.path.join('refs', 'heads', 'main.lock'),
    os.path.join('refs', 'checkpoints', 'sealed.lock'),
)


def remove_stale_lock_files(path: Path) -> None:
    """Removes ``*.lock`` files a killed writer left behind; we hold the only writer's lock.

    Only the lock files of what we write are looked for (a stat each); a killed holder of our
    own lock gets the full sweep of :func:`remove_crash_leftovers`."""
    root = os.fspath(path)
    for name in _LOCK_FILES:
        candidate = os.path.join(root, name)
        if os.path.lexists(candidate):
            try:
                os.unlink(candidate)
            except OSError:
                pass


def remove_crash_leftovers(path: Path) -> None:
    """Removes what a writer killed while holding the lock may have left in the repository.

    Called under the lock when the previous holder died holding it: dulwich's lock files for
    loose objects and pack indexes, temporary packs, a pack whose index was never written,
    and our own temporary files. Objects, refs and the restore record are never touched.
    """
    objects = path / 'objects'
    leftovers: list[Path] = []
    try:
        fanouts = [entry for entry in os.scandir(objects) if len(entry.name) == 2]
    except OSError:
        fanouts = []
    for fanout in fanouts:
        try:
            leftovers += [Path(e.path) for e in os.scandir(fanout.path) if e.name.endswith('.lock')]
        except OSError:
            pass
    try:
        leftovers += [Path(e.path) for e in os.scandir(objects) if e.name.startswith('tmp_')]
    except OSError:
        pass
    packs = objects / 'pack'
    try:
        names = set(os.listdir(packs))
    except OSError:
        names = set()
    for name in names:
        if name.endswith('.lock') or (name.startswith('tmp') and name.endswith('.pack')):
            leftovers.append(packs / name)
        elif name.startswith('pack-') and name.endswith('.pack'):
            if name[: -len('.pack')] + '.idx' not in names:
                leftovers.append(packs / name)  # renamed into place, index never written
    for folder in (path, path / PRIVATE_DIR):
        if folder != path and os.path.islink(folder):
            continue  # never swept through a link out of the repository
        try:
            leftovers += [
                Path(e.path)
                for e in os.scandir(folder)
                if e.name.startswith('.') and e.name.endswith('.tmp')
            ]
        except OSError:
            pass
    for leftover in leftovers:
        try:
            leftover.unlink()
        except OSError:
            pass
