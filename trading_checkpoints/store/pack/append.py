"""Appending a snapshot's objects to the tail, the smallest pack, as deltas (the write path).

Objects are never left loose: :func:`append_objects` (what ``ShadowRepo.write_objects`` calls)
appends a snapshot's few new objects to the smallest pack (the *tail*, while it is under
``TAIL_MAX``) as deltas against the versions they replace (``plan.py`` chooses the bases,
``write.py`` writes the pack).
"""

from __future__ import annotations

import os

from dulwich.objects import ShaFile

from ...core.durability import fsync_folder
from . import folder as packfolder
from . import plan as packplan
from . import write as packwrite
from .objects import Repository
from .packfile import PackDamaged, PackView

# The tail: new objects are appended to the smallest pack while it is at most this big (each
# append rewrites it, so this bounds what one snapshot writes).
TAIL_MAX = 256 * 1024


def append_objects(repo: Repository, objects: list[ShaFile]) -> None:
    """Writes new objects into a pack: appended to the tail with deltas, or as a pack of their own.

    The tail is the smallest pack that is at most ``TAIL_MAX`` and holds together: a damaged
    pack (a wrong index, or content that fails its checksum while it is copied) is left exactly
    as it is, and the next smallest is tried. The old tail is removed only once the new pack,
    which holds all of it, and its index are on the disk (flushed even when not ``durable``:
    the old objects must never depend on a write that might not have reached the disk). With
    ``durable``, a pack of its own is flushed too, and so is the pack folder.
    """
    if not objects:
        return
    pack_dir = os.path.join(repo.path, 'objects', 'pack')
    os.makedirs(pack_dir, exist_ok=True)
    packfolder.sweep_removals(pack_dir)
    tails = [basename for size, basename in packfolder.packs(pack_dir) if size <= TAIL_MAX]
    tree_of_commit = lambda sha: commit_tree(repo, sha)  # noqa: E731
    written = None
    for basename in [*tails, None]:  # None: a pack of its own
        tail = None
        try:
            if basename is not None:
                tail = PackView(basename)
                if tail.identity in _DAMAGED:
                    continue
            plan = packplan.plan(objects, tail, tree_of_commit)
            if not plan.records:
                return
            durable = repo.durable or tail is not None
            written = packwrite.write(pack_dir, tail, plan.records, durable=durable)
        except (OSError, PackDamaged) as error:
            if basename is None:
                raise
            if isinstance(error, PackDamaged) and tail is not None:
                _DAMAGED.add(tail.identity)
            continue
        finally:
            if tail is not None:
                tail.close()
        if durable:
            fsync_folder(pack_dir)
        if tail is not None and written != tail.basename:
            packfolder.remove(tail.basename)
        packplan.remember_recent(pack_dir, written, plan.records)
        break
    repo.packs_written()


# Packs found damaged by this process (path, size, mtime, inode): not tried again as a tail.
_DAMAGED: set[tuple[str, int, int, int]] = set()


def commit_tree(repo: Repository, sha: bytes) -> bytes | None:
    """The tree of an existing commit, or None when it cannot be read (no delta base, then)."""
    try:
        return repo.commit_info(sha).tree
    except Exception:  # noqa: BLE001 - a base is an optimisation; the commit is checked elsewhere
        return None
