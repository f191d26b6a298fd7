"""Roll-ups: the small packs and any loose objects folded into the largest pack.

:func:`maybe_pack` is the cheap hook called after each commit: it looks at the pack sizes (one
folder listing) and rolls up when the small packs together pass ``ROLL_FRACTION`` of the
largest; it counts the loose objects only on every eighth commit of a process, or when the
commit's id starts with 0 or 8 (so a process that takes one snapshot and exits still looks
about one time in eight). :func:`roll_up` runs under the repository's lock.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from dulwich.objects import ShaFile

from ...core.durability import fsync_folder
from ..dulwichadapter import (
    delete_loose_object,
    loose_object,
    loose_object_ids,
    object_id,
    refresh_packs,
)
from . import folder as packfolder
from . import plan as packplan
from . import write as packwrite
from .append import TAIL_MAX, commit_tree
from .objects import (
    Repository,
    StorageStats,
    drop_empty_fanout,
    loose_count,
    object_store,
    objects_size,
    pack_count,
)
from .packfile import Cache, PackDamaged, PackView, object_sha

if TYPE_CHECKING:
    from dulwich.object_store import DiskObjectStore

# Roll the small packs into the largest once together they pass this fraction of it (each
# small pack holds whole copies of what changed since it started), but never before ROLL_MIN;
# or when there are more than MAX_SMALL_PACKS of them (each at most TAIL_MAX when it was
# last extended).
ROLL_FRACTION = 0.2
ROLL_MIN = 32 * 1024
MAX_SMALL_PACKS = 4
# Packs bigger than this are never re-encoded by a roll-up (only copied, as its target).
ROLL_INPUT_MAX = 4 * TAIL_MAX
# Pack the loose objects once there are this many (none are written any more: this is for
# repositories written before, or by other tools).
LOOSE_LIMIT = 64
# How often the hook looks: every CHECK_EVERY commits made by this process, and also when a
# commit id starts with one of these hex digits (1 in 8), which covers short-lived processes
# (one snapshot per command) at no I/O cost.
CHECK_EVERY = 8
CHECK_PREFIXES = (b'0', b'8')
_commits_since_check: dict[str, int] = {}


def maybe_pack(repo: Repository, new_commit: bytes) -> StorageStats | None:
    """The hook after a commit: one listing of the pack folder, and on 1 commit in 8 a count of
    the loose objects; rolls up when :func:`needs_roll_up` says so.

    Packing only saves space, so a failure here never fails the snapshot that triggered it
    (everything stays where it is and the next check tries again).
    """
    key = str(repo.path)
    count = _commits_since_check.get(key, 0) + 1
    look_loose = count >= CHECK_EVERY or new_commit.startswith(CHECK_PREFIXES)
    _commits_since_check[key] = 0 if look_loose else count
    try:
        if look_loose and loose_count(repo.path) >= LOOSE_LIMIT:
            return roll_up(repo)
        if needs_roll_up(repo.path):
            return roll_up(repo)
        return None
    except Exception:  # noqa: BLE001 - e.g. a damaged loose object dulwich cannot parse
        if os.environ.get('CHECKPOINTS_DEBUG'):
            raise
        return None


def needs_roll_up(repository: Path) -> bool:
    """Whether the small packs have grown enough, next to the largest, to fold them into it."""
    sizes = [size for size, _ in packfolder.packs(os.path.join(repository, 'objects', 'pack'))]
    if len(sizes) < 2:
        return False
    small = [size for size in sizes[:-1] if size <= ROLL_INPUT_MAX]
    if not small:
        return False
    limit = max(ROLL_MIN, int(sizes[-1] * ROLL_FRACTION))
    return sum(small) >= limit or len(small) > MAX_SMALL_PACKS


def roll_up(repo: Repository) -> StorageStats:
    """Folds the small packs and the loose objects into the largest pack.

    The largest pack is copied as it is and the others' objects appended to it, re-encoded as
    deltas against the versions before them (which is where a tail's whole first versions
    shrink). Packs above ``ROLL_INPUT_MAX`` other than the largest, packs with a ``.keep``
    file and damaged packs are left as they are. Must run under the repository's lock.
    """
    store = object_store(repo)
    pack_dir = os.path.join(repo.path, 'objects', 'pack')
    before = objects_size(repo.path)
    packs_before = pack_count(repo.path)
    loose = loose_object_ids(store)
    candidates = packfolder.packs(pack_dir)
    target = None
    if candidates:
        try:
            target = PackView(candidates[-1][1])
        except (OSError, PackDamaged):
            target = None
    sources = []
    objects: list[ShaFile] = []
    try:
        for size, basename in candidates[:-1] if target is not None else candidates:
            if size > ROLL_INPUT_MAX:
                continue
            try:
                objects += _objects_of(basename)
            except (OSError, PackDamaged):
                continue  # left as it is
            sources.append(basename)
        for sha in loose:
            try:
                obj = loose_object(store, sha)
            except Exception:  # noqa: BLE001 - a damaged loose object stays where it is
                obj = None
            if obj is not None:
                objects.append(obj)
        if not objects:
            return StorageStats(0, 0, packs_before, packs_before, len(loose), before, before)
        plan = packplan.plan(objects, target, lambda sha: commit_tree(repo, sha))
        if plan.records:
            written = packwrite.write(pack_dir, target, plan.records, durable=True)
            fsync_folder(pack_dir)
            packplan.remember_recent(pack_dir, written, plan.records)
        else:  # every object is in the target already (without one, each is a record)
            assert target is not None
            written = target.basename
        for basename in sources:
            if basename != written:
                packfolder.remove(basename)
        if target is not None and written != target.basename:
            target.close()
            packfolder.remove(target.basename)
    finally:
        if target is not None:
            target.close()
    _delete_loose(store, [sha for sha in loose if sha in plan.placed], written, loose)
    drop_empty_fanout(repo.path)
    refresh_packs(store)
    packfolder.wait_for_removals()  # so that the sizes below are what stays
    return StorageStats(
        len(plan.records),
        plan.deltas,
        packs_before,
        pack_count(repo.path),
        len(loose),
        before,
        objects_size(repo.path),
    )


def _delete_loose(
    store: DiskObjectStore, placed: list[bytes], written: str, loose: set[bytes]
) -> None:
    """Deletes the loose objects now in the pack ``written`` (an unreadable one stays)."""
    gone = set(placed)
    if len(gone) < len(loose):
        try:
            with PackView(written) as view:
                gone.update(sha for sha in loose if sha in view)
        except (OSError, PackDamaged):
            pass
    for sha in gone:
        try:
            delete_loose_object(store, sha)
        except OSError:
            pass


def _objects_of(basename: str) -> list[ShaFile]:
    """Every object of a pack, each checked against its name."""
    found = []
    with PackView(basename) as view:
        cache = Cache()
        for offset, sha in view.entries():
            type_num, raw, _ = view.read(offset, cache)
            if object_sha(type_num, raw) != sha:
                raise PackDamaged(f'{view.name}.pack holds a damaged object {sha!r}')
            found.append(ShaFile.from_raw_string(type_num, raw, object_id(sha)))
    return found
