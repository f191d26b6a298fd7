"""The one place the store touches dulwich's private names, and where its ids get dulwich's types.

dulwich has no public name for a few things the pack modules must do to its object store. Each
is wrapped here, so a dulwich release that renames one breaks this module alone:

- ``DiskObjectStore._update_pack_cache()``: the store lists the pack folder once and caches
  the packs it found. After the store adds or removes a pack itself (``pack/append.py``,
  ``pack/rollup.py``, ``pack/consolidation.py``) the cache is brought up to date, so the same
  repository object sees the new pack and forgets the removed ones.
- ``DiskObjectStore._iter_loose_objects()`` and ``_get_loose_object(sha)``: the loose objects
  alone (iterating the store yields the packed ones too), which a roll-up or a consolidation
  folds into a pack.
- ``DiskObjectStore._remove_pack(pack)``: closes a pack and drops it from that cache before
  its files are deleted. When it fails, the pack is closed and its files deleted here.
- ``Pack._basename``: the path of a pack's files without their suffix (``.pack``, ``.idx``,
  and the ``.bitmap``, ``.rev`` or ``.mtimes`` another tool may add beside them).

dulwich types object ids and ref names as ``NewType``\\ s of ``bytes`` (``ObjectID``, ``Ref``);
the store's are plain ``bytes`` (40 lowercase hex digits, or a ``refs/...`` name), checked where
they are read. :func:`object_id`, :func:`object_ids` and :func:`ref_name` mark them for
dulwich's signatures; they cost nothing and check nothing at run time.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from dulwich.object_store import DiskObjectStore
    from dulwich.objects import ObjectID, ShaFile
    from dulwich.pack import Pack
    from dulwich.refs import Ref


# -- ids -----------------------------------------------------------------------------------


def object_id(sha: bytes) -> ObjectID:
    """A hex object id, as dulwich's signatures name it."""
    return cast('ObjectID', sha)


def object_ids(shas: Iterable[bytes]) -> set[ObjectID]:
    """Hex object ids, as a set of dulwich's id type."""
    return {object_id(sha) for sha in shas}


def ref_name(name: bytes) -> Ref:
    """A ref's full name (``refs/heads/main``), as dulwich's signatures name it."""
    return cast('Ref', name)


# -- the object store's internals ----------------------------------------------------------


def refresh_packs(store: DiskObjectStore) -> None:
    """Brings dulwich's cache of the pack folder up to date after packs were added or removed
    behind its back."""
    store._update_pack_cache()


def loose_object_ids(store: DiskObjectStore) -> set[bytes]:
    """The hex ids of the loose objects (not the packed ones)."""
    return set(store._iter_loose_objects())


def loose_object(store: DiskObjectStore, sha: bytes) -> ShaFile | None:
    """A loose object, or None when it is not loose."""
    return store._get_loose_object(object_id(sha))


def delete_loose_object(store: DiskObjectStore, sha: bytes) -> None:
    """Deletes one loose object's file (``OSError`` when it cannot)."""
    store.delete_loose_object(object_id(sha))


def remove_pack(store: DiskObjectStore, pack: Pack) -> None:
    """Closes ``pack``, drops it from dulwich's cache and deletes its files, with the
    ``.bitmap``, ``.rev`` or ``.mtimes`` another tool may have left beside them (dulwich
    deletes only the pack and its index); a pack marked with a ``.keep`` file is never deleted
    (nothing happens)."""
    base = pack_basename(pack)
    if os.path.lexists(base + '.keep'):
        return
    for suffix in ('.bitmap', '.rev', '.mtimes'):
        try:
            os.remove(base + suffix)
        except OSError:
            pass
    try:
        store._remove_pack(pack)
    except (OSError, AttributeError, NotImplementedError):
        pack.close()
        for suffix in ('.pack', '.idx'):
            try:
                os.remove(base + suffix)
            except OSError:
                pass


def pack_basename(pack: Pack) -> str:
    """The path of a pack's files without their suffix (``objects/pack/pack-<id>``)."""
    return pack._basename
