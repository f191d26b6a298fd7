"""The object storage of a shadow repository, as the rest of the package uses it.

Objects go into packs with deltas from the first write on and are never left loose, so the
repository as the snapshots leave it stays close to what ``git gc --aggressive`` makes of it.
This module only gathers the entry points; each job has its own module:

- ``packappend.py``: :func:`append_objects` (what ``ShadowRepo.write_objects`` calls) appends a
  snapshot's new objects to the smallest pack, as deltas of the versions they replace;
- ``packrollup.py``: :func:`maybe_pack`, the cheap hook after each commit, and :func:`roll_up`,
  which folds the small packs and any loose objects into the largest pack;
- ``consolidation.py``: :func:`consolidate` rewrites everything reachable into a single pack
  (what a prune does); ``reachability.py`` walks what the refs reach;
- ``packwindow.py``: :func:`write_pack`, one self-contained pack with git-like deltas (also for
  transfers to a remote);
- ``objectsfolder.py``: what the objects take on disk, pack and loose counts;
- underneath: ``packfile.py`` (reading a pack), ``packwrite.py`` (writing one), ``packplan.py``
  (choosing delta bases) and ``packfolder.py`` (listing and removing packs).

The tunables (``TAIL_MAX``, ``ROLL_FRACTION``, ``LOOSE_LIMIT``, ...) live in the module that
uses them: change them there.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .objectsfolder import StorageStats, loose_count, object_store, objects_size, pack_count

if TYPE_CHECKING:
    from .consolidation import consolidate
    from .packappend import append_objects
    from .packrollup import maybe_pack, roll_up
    from .packwindow import write_pack
    from .reachability import reachable, read_shallow, ref_heads

# The pack writers and the reachability walk load dulwich: they are imported on first use, so
# that the read verbs (a cold ``list``, ``status`` of an unchanged desk) never load it.
_LAZY = {
    'consolidate': 'consolidation',
    'append_objects': 'packappend',
    'maybe_pack': 'packrollup',
    'roll_up': 'packrollup',
    'write_pack': 'packwindow',
    'reachable': 'reachability',
    'read_shallow': 'reachability',
    'ref_heads': 'reachability',
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
    'reachable',
    'read_shallow',
    'ref_heads',
    'roll_up',
    'write_pack',
]
