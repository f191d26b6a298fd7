"""Consolidation: everything reachable rewritten into a single pack, all the rest removed.

What a prune does after cutting the history: the old packs and loose objects go, and with them
whatever nothing references any more. The reflogs are reconciled first with what is kept (an
entry naming a commit that goes is dropped, as a prune's cut does), so no kill, here or in an
earlier prune, leaves a reflog naming a missing commit. A pack marked with a ``.keep`` file
is never removed and its objects are not copied (as git's ``repack`` honours it): someone asked
for it to stay.
"""

from __future__ import annotations

import os

from .. import gitfiles
from ..damage import naming_damage
from ..dulwichadapter import (
    delete_loose_object,
    loose_object_ids,
    object_id,
    pack_basename,
    refresh_packs,
    remove_pack,
)
from .objects import (
    Repository,
    StorageStats,
    drop_empty_fanout,
    object_store,
    objects_size,
    pack_count,
)
from .reachability import reachable, read_shallow, ref_heads
from .window import write_pack


def consolidate(repo: Repository) -> StorageStats:
    """Rewrites everything reachable from the refs into one pack and removes all the rest.

    Unreachable objects (the history a prune cut off, objects a crash orphaned) are dropped.
    Must run under the repository's lock.
    """
    with naming_damage(repo.path, 'compact the storage', 'update'):
        return _consolidate(repo)


def _consolidate(repo: Repository) -> StorageStats:
    store = object_store(repo)
    before = objects_size(repo.path)
    packs_before = pack_count(repo.path)
    loose_before = loose_object_ids(store)
    keep = reachable(store, ref_heads(repo), read_shallow(repo.path))
    old_packs = list(store.packs)
    marked = [pack for pack in old_packs if os.path.lexists(pack_basename(pack) + '.keep')]
    objects = [
        (store[object_id(sha)], path)
        for sha, path in keep.items()
        if not any(object_id(sha) in pack for pack in marked)
    ]
    new_pack, deltas = write_pack(store, objects)
    new_name = new_pack.name() if new_pack is not None else None
    gitfiles.rewrite_reflogs(repo.path, set(keep))  # before anything they name is removed
    if new_pack is not None:
        for suffix in ('.bitmap', '.rev', '.mtimes'):  # another tool's, of a pack of this name
            try:
                os.remove(pack_basename(new_pack) + suffix)
            except OSError:
                pass
    for pack in old_packs:
        if pack.name() == new_name or pack in marked:
            continue
        remove_pack(store, pack)
    for sha in loose_before:
        try:
            delete_loose_object(store, sha)
        except OSError:
            pass
    drop_empty_fanout(repo.path)
    refresh_packs(store)
    return StorageStats(
        len(objects),
        deltas,
        packs_before,
        pack_count(repo.path),
        len(loose_before),
        before,
        objects_size(repo.path),
    )
