"""The object storage of a shadow repository, as the rest of the package uses it.

Objects go into packs with deltas from the first write on and are never left loose, so the
repository as the snapshots leave it stays close to what ``git gc --aggressive`` makes of it.
This module only gathers the entry points; each job has its own module:

- ``pack/append.py``: :func:`append_objects` (what ``ShadowRepo.write_objects`` calls) appends a
  snapshot's new objects to the smallest pack, as deltas of the versions they replace;
- ``pack/rollup.py``: :func:`maybe_pack`, the cheap hook after each commit, and :func:`roll_up`,
  which folds the small packs and any loose objects into the largest pack;
- ``pack/consolidation.py``: :func:`consolidate` rewrites everything reachable into a single pack
  (what a prune does); ``pack/reachability.py`` walks what the refs reach;
- ``pack/window.py``: :func:`write_pack`, one self-contained pack with git-like deltas (also for
  transfers to a remote);
- ``pack/objects.py``: what the objects take on disk, pack and loose counts, each packed
  object's size;
- underneath: ``pack/packfile.py`` (reading a pack), ``pack/write.py`` (writing one),
  ``pack/plan.py`` (choosing delta bases) and ``pack/folder.py`` (listing and removing packs).

The tunables (``TAIL_MAX``, ``ROLL_FRACTION``, ``LOOSE_LIMIT``, ...) live in the module that
uses them: change them there.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .pack.objects import (
    StorageStats,
    loose_count,
    object_store,
    objects_size,
    pack_count,
    packed_sizes,
)

if TYPE_CHECKING:
    from .pack.append import append_objects
    from .pack.consolidation import consolidate
    from .pack.reachability import reachable, read_shallow, ref_heads
    from .pack.rollup import maybe_pack, roll_up
    from .pack.window import write_pack

# The pack writers and the reachability walk load dulwich: they are imported on first use, so
# that the read verbs (a cold ``list``, ``status`` of an unchanged desk) never load it.
_LAZY = {
    'consolidate': 'pack.consolidation',
    'append_objects': 'pack.append',
    'maybe_pack': 'pack.rollup',
    'roll_up': 'pack.rollup',
    'write_pack': 'pack.window',
    'reachable': 'pack.reachability',
    'read_shallow': 'pack.reachability',
    'ref_heads': 'pack.reachability',
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    return getattr(importlib.import_module(f'.{module}', __package__), name)


__all__ = [
    'StorageStats',
    'append_objects',
    'consolidate',
    'loose_count',
    'maybe_pack',
    'object_store',
    'objects_size',
    'pack_count',
    'packed_sizes',
    'reachable',
    'read_shallow',
    'ref_heads',
    'roll_up',
    'write_pack',
]
