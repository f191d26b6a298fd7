"""Packs: how objects are written, rolled up, consolidated and read back.

``append`` adds a snapshot's objects to the tail pack as deltas, ``rollup`` folds the small
packs into the largest, ``consolidation`` rewrites everything reachable into one pack (a
prune), ``window`` writes one self-contained pack, ``reachability`` walks what the refs reach;
underneath, ``packfile`` reads a pack, ``write`` writes one, ``plan`` chooses delta bases,
``folder`` lists and removes packs and ``objects`` measures the objects folder. The rest of the
package reaches these through ``store.storage``.

May import: ``core``, ``errors`` and the store's own modules.
"""
