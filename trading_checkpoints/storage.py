"""Compact storage for a shadow repository: packs with deltas, from the first write on.

dulwich writes packs without deltas unless asked (``add_objects`` and ``repack`` store every
object whole), so a ``Memory.md`` that grows by a line per turn would cost a full copy per
checkpoint. This module chooses delta bases itself, the way ``git pack-objects`` does: objects
are grouped by type and by the path they appear at, ordered largest first, and each is stored
as a delta against the best of the previous ``window`` objects, with chains at most
``max_depth`` long (and a git-like bias towards shallow bases so chains stay short). The deltas
are computed by dulwich's ``create_delta`` (its Rust extension when installed).

Objects are never left loose. :func:`append_objects` (what ``ShadowRepo.write_objects`` calls)
appends a snapshot's few new objects to the smallest pack (the *tail*, while it is under
``TAIL_MAX``) as deltas against the versions they replace; see ``packfile.py`` for how a pack
is extended. So the repository as the snapshots leave it stays close to what ``git gc
--aggressive`` makes of it, instead of swinging with loose copies waiting for the next packing.

The operations below run under the repository's lock:

- :func:`roll_up` folds the small packs (the tail) and any loose objects (of repositories
  written before, or by other tools) into the largest pack, the same way: the largest copied as
  it is, the others' objects re-encoded as deltas against it (a tail's first versions are
  whole: here they become deltas of the versions before them);
- :func:`consolidate` rewrites everything reachable into a single pack, drops the old packs
  and loose objects, and so also removes what nothing references any more.

:func:`maybe_pack` is the cheap hook called after each commit: it looks at the pack sizes (one
folder listing) and rolls up when the small packs together pass ``ROLL_FRACTION`` of the
largest; it counts the loose objects only on every eighth commit of a process, or when the
commit's id starts with 0 or 8 (so a process that takes one snapshot and exits still looks
about one time in eight).
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from dulwich.objects import Commit, ShaFile, Tag, Tree, parse_tree
from dulwich.pack import UnpackedObject, create_delta

from .durability import fsync_folder
from .errors import CheckpointError

# The tail: new objects are appended to the smallest pack while it is at most this big (each
# append rewrites it, so this bounds what one snapshot writes).
TAIL_MAX = 256 * 1024
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
# Delta search: how many previous objects to try, and the longest delta chain.
WINDOW = 24
MAX_DEPTH = 50
GOOD_ENOUGH = 48
SMALL_TRIES = 3  # objects under 1 KiB (commits, small trees) try only the nearest bases

ProgressFn = Callable[[str], None]


@dataclass(frozen=True)
class StorageStats:
    """What a packing run did."""

    objects: int
    deltas: int
    packs_before: int
    packs_after: int
    loose_before: int
    bytes_before: int
    bytes_after: int


def object_store(repo):  # -> dulwich DiskObjectStore; ShadowRepo keeps the dulwich Repo private
    return repo.dulwich_repo.object_store


def objects_size(repository: Path) -> int:
    """Disk space the repository's objects (loose and packed) take, as ``du`` counts it.

    Allocated blocks rather than file lengths: a loose object of 150 bytes still takes a
    whole block, which is exactly the bloat packing removes.
    """
    total = 0
    for folder, _, names in os.walk(Path(repository) / 'objects'):
        for name in names:
            try:
                st = os.lstat(os.path.join(folder, name))
            except OSError:
                continue
            blocks = getattr(st, 'st_blocks', None)
            total += blocks * 512 if blocks is not None else st.st_size
    return total


def loose_count(repository: Path) -> int:
    objects = Path(repository) / 'objects'
    count = 0
    try:
        folders = os.listdir(objects)
    except OSError:
        return 0
    for name in folders:
        if len(name) == 2:
            try:
                count += len(os.listdir(objects / name))
            except OSError:
                pass
    return count


def pack_count(repository: Path) -> int:
    """The packs readers see: a ``.pack`` with its ``.idx`` (not one being written or deleted)."""
    try:
        names = set(os.listdir(Path(repository) / 'objects' / 'pack'))
    except OSError:
        return 0
    return sum(1 for name in names if name.endswith('.pack') and name[:-5] + '.idx' in names)


def maybe_pack(repo, new_commit: bytes) -> StorageStats | None:
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
    from . import packfile

    sizes = [size for size, _ in packfile.packs(os.path.join(repository, 'objects', 'pack'))]
    if len(sizes) < 2:
        return False
    small = [size for size in sizes[:-1] if size <= ROLL_INPUT_MAX]
    if not small:
        return False
    limit = max(ROLL_MIN, int(sizes[-1] * ROLL_FRACTION))
    return sum(small) >= limit or len(small) > MAX_SMALL_PACKS


# -- appending (the write path) ------------------------------------------------------------


def append_objects(repo, objects: list[ShaFile]) -> None:
    """Writes new objects into a pack: appended to the tail with deltas, or as a pack of their own.

    The tail is the smallest pack that is at most ``TAIL_MAX`` and holds together: a damaged
    pack (a wrong index, or content that fails its checksum while it is copied) is left exactly
    as it is, and the next smallest is tried. The old tail is removed only once the new pack,
    which holds all of it, and its index are on the disk (flushed even when not ``durable``:
    the old objects must never depend on a write that might not have reached the disk). With
    ``durable``, a pack of its own is flushed too, and so is the pack folder.
    """
    from . import packfile

    if not objects:
        return
    pack_dir = os.path.join(repo.path, 'objects', 'pack')
    os.makedirs(pack_dir, exist_ok=True)
    packfile.sweep_removals(pack_dir)
    tails = [basename for size, basename in packfile.packs(pack_dir) if size <= TAIL_MAX]
    commit_tree = lambda sha: _commit_tree(repo, sha)  # noqa: E731
    written = None
    for basename in [*tails, None]:  # None: a pack of its own
        tail = None
        try:
            if basename is not None:
                tail = packfile.PackView(basename)
                if tail.identity in _DAMAGED:
                    continue
            plan = packfile.plan(objects, tail, commit_tree)
            if not plan.records:
                return
            durable = repo.durable or tail is not None
            written = packfile.write(pack_dir, tail, plan.records, durable=durable)
        except (OSError, packfile.PackDamaged) as error:
            if basename is None:
                raise
            if isinstance(error, packfile.PackDamaged) and tail is not None:
                _DAMAGED.add(tail.identity)
            continue
        finally:
            if tail is not None:
                tail.close()
        if durable:
            fsync_folder(pack_dir)
        if tail is not None and written != tail.basename:
            packfile.remove(tail.basename)
        packfile.remember_recent(pack_dir, written, plan.records)
        break
    object_store(repo)._update_pack_cache()


# Packs found damaged by this process (path, size, mtime, inode): not tried again as a tail.
_DAMAGED: set[tuple[str, int, int, int]] = set()


def _commit_tree(repo, sha: bytes) -> bytes | None:
    """The tree of an existing commit, or None when it cannot be read (no delta base, then)."""
    try:
        return repo.commit_info(sha).tree
    except Exception:  # noqa: BLE001 - a base is an optimisation; the commit is checked elsewhere
        return None


def roll_up(repo) -> StorageStats:
    """Folds the small packs and the loose objects into the largest pack.

    The largest pack is copied as it is and the others' objects appended to it, re-encoded as
    deltas against the versions before them (which is where a tail's whole first versions
    shrink). Packs above ``ROLL_INPUT_MAX`` other than the largest, packs with a ``.keep``
    file and damaged packs are left as they are. Must run under the repository's lock.
    """
    from . import packfile

    store = object_store(repo)
    pack_dir = os.path.join(repo.path, 'objects', 'pack')
    before = objects_size(repo.path)
    packs_before = pack_count(repo.path)
    loose = set(store._iter_loose_objects())
    candidates = packfile.packs(pack_dir)
    target = None
    if candidates:
        try:
            target = packfile.PackView(candidates[-1][1])
        except (OSError, packfile.PackDamaged):
            target = None
    sources = []
    objects: list[ShaFile] = []
    try:
        for size, basename in candidates[:-1] if target is not None else candidates:
            if size > ROLL_INPUT_MAX:
                continue
            try:
                objects += _objects_of(basename)
            except (OSError, packfile.PackDamaged):
                continue  # left as it is
            sources.append(basename)
        for sha in loose:
            try:
                obj = store._get_loose_object(sha)
            except Exception:  # noqa: BLE001 - a damaged loose object stays where it is
                obj = None
            if obj is not None:
                objects.append(obj)
        if not objects:
            return StorageStats(0, 0, packs_before, packs_before, len(loose), before, before)
        plan = packfile.plan(objects, target, lambda sha: _commit_tree(repo, sha))
        written = target.basename if target is not None else None
        if plan.records:
            written = packfile.write(pack_dir, target, plan.records, durable=True)
            fsync_folder(pack_dir)
            packfile.remember_recent(pack_dir, written, plan.records)
        for basename in sources if written is not None else []:
            if basename != written:
                packfile.remove(basename)
        if target is not None and written != target.basename:
            target.close()
            packfile.remove(target.basename)
    finally:
        if target is not None:
            target.close()
    _delete_loose(store, [sha for sha in loose if sha in plan.placed], written, loose)
    _drop_empty_fanout(repo.path)
    store._update_pack_cache()
    packfile.wait_for_removals()  # so that the sizes below are what stays
    return StorageStats(
        len(plan.records),
        plan.deltas,
        packs_before,
        pack_count(repo.path),
        len(loose),
        before,
        objects_size(repo.path),
    )


def _delete_loose(store, placed: list[bytes], written: str | None, loose: set[bytes]) -> None:
    """Deletes the loose objects now in the pack ``written`` (an unreadable one stays)."""
    from . import packfile

    gone = set(placed)
    if written is not None and len(gone) < len(loose):
        try:
            with packfile.PackView(written) as view:
                gone.update(sha for sha in loose if sha in view)
        except (OSError, packfile.PackDamaged):
            pass
    for sha in gone:
        try:
            store.delete_loose_object(sha)
        except OSError:
            pass


def _objects_of(basename: str) -> list[ShaFile]:
    """Every object of a pack, each checked against its name."""
    from . import packfile

    found = []
    with packfile.PackView(basename) as view:
        cache = packfile.Cache()
        for offset, sha in view.entries():
            type_num, raw, _ = view.read(offset, cache)
            if packfile.object_sha(type_num, raw) != sha:
                raise packfile.PackDamaged(f'{view.name}.pack holds a damaged object {sha!r}')
            found.append(ShaFile.from_raw_string(type_num, raw, sha))
    return found


# -- walking the history -------------------------------------------------------------------


def read_shallow(repository: Path) -> set[bytes]:
    try:
        return set((Path(repository) / 'shallow').read_bytes().split())
    except FileNotFoundError:
        return set()


def ref_heads(repo) -> list[bytes]:
    """Every commit a ref points at (all refs; symbolic ones resolved)."""
    refs = repo.dulwich_repo.refs
    heads = []
    for name in refs.allkeys():
        if name == b'HEAD':
            continue
        try:
            sha = refs[name]
        except KeyError:
            continue
        heads.append(sha)
    return heads


def reachable(
    store,
    heads: Iterable[bytes],
    shallow: set[bytes],
    enter_commit: Callable[[bytes], bool] | None = None,
) -> dict[bytes, bytes | None]:
    """Every object reachable from ``heads`` as ``sha -> path it first appears at``.

    The walk stops at shallow commits (their parents are not followed) and, when
    ``enter_commit`` is given, at commits it declines.
    """
    found: dict[bytes, bytes | None] = {}
    commits = [sha for sha in heads]
    while commits:
        sha = commits.pop()
        if sha in found or (enter_commit is not None and not enter_commit(sha)):
            continue
        obj = store[sha]
        if isinstance(obj, Tag):
            found[sha] = None
            commits.append(obj.object[1])
            continue
        if not isinstance(obj, Commit):
            raise CheckpointError(f'the ref target {sha.decode()} is not a commit')
        found[sha] = None
        _walk_tree(store, obj.tree, b'', found)
        if sha not in shallow:
            commits.extend(p for p in obj.parents if p not in found)
    return found


def _walk_tree(store, tree_sha: bytes, path: bytes, found: dict[bytes, bytes | None]) -> None:
    pending = [(tree_sha, path)]
    while pending:
        sha, prefix = pending.pop()
        if sha in found:
            continue
        found[sha] = prefix
        type_num, raw = store.get_raw(sha)
        if type_num != Tree.type_num:
            raise CheckpointError(f'the object {sha.decode()} is not a tree')
        # parse_tree on the raw bytes: no Tree object, no sorting (much faster on big folders).
        for name, mode, child_sha in parse_tree(raw, 20):
            child = prefix + b'/' + name if prefix else name
            if mode == 0o040000:
                pending.append((child_sha, child))
            elif mode & 0o170000 == 0o160000:
                continue  # a gitlink names a commit elsewhere; nothing to store
            elif child_sha not in found:
                found[child_sha] = child


# -- writing packs -------------------------------------------------------------------------


def _deltified(
    objects: list[tuple[ShaFile, bytes | None]],
    window: int,
    max_depth: int,
    progress: ProgressFn | None,
    counter: list[int],
) -> Iterator[UnpackedObject]:
    """Objects as pack records, deltas chosen like git's: same type, close path, big first."""
    from . import packfile

    # Same type, same path, biggest first, then in the order given (newest history first), so
    # neighbouring versions meet in the window.
    ordered = [
        (obj, path)
        for _, _, _, _, obj, path in sorted(
            (obj.type_num, path or b'', -obj.raw_length(), index, obj, path)
            for index, (obj, path) in enumerate(objects)
        )
    ]
    # (sha, type, path, raw, depth); only versions of the same path are tried as bases: a
    # delta between unrelated contents is slow to compute and rarely pays.
    recent: deque[tuple[bytes, int, bytes | None, bytes, int]] = deque()
    depth_of: dict[bytes, int] = {}
    total = len(ordered)
    for index, (obj, path) in enumerate(ordered):
        if progress is not None and index % 500 == 0:
            progress(f'compressing objects: {index}/{total}')
        raw = obj.as_raw_string()
        size = len(raw)
        best: bytes | None = None
        best_base: tuple[bytes, int] | None = None
        limit = size // 2 - 20
        tries = window if size >= 1024 else SMALL_TRIES
        for base_sha, base_type, base_path, base_raw, base_depth in recent:
            if tries <= 0:
                break
            if base_type != obj.type_num or base_path != path:
                break  # sorted by type and path: nothing further back can match
            if base_depth >= max_depth or limit <= 0:
                continue
            own_depth = best_base[1] + 1 if best_base else 1
            scaled = limit * (max_depth - base_depth) // (max_depth - own_depth + 1)
            if scaled <= 0 or size - len(base_raw) >= scaled or not packfile.alike(base_raw, raw):
                continue
            tries -= 1
            delta = b''.join(create_delta(base_raw, raw))
            if len(delta) < scaled:
                best, best_base, limit = delta, (base_sha, base_depth), len(delta)
                if len(delta) <= GOOD_ENOUGH + size // 256:
                    break  # a few bytes: searching further costs more than it can save
        sha = obj.sha().digest()
        if best is None or best_base is None:
            depth_of[sha] = 0
            yield UnpackedObject(obj.type_num, sha=sha, decomp_chunks=[raw])
        else:
            depth_of[sha] = best_base[1] + 1
            counter[0] += 1
            yield UnpackedObject(
                obj.type_num,
                sha=sha,
                delta_base=best_base[0],
                decomp_len=len(best),
                decomp_chunks=[best],
            )
        recent.appendleft((sha, obj.type_num, path, raw, depth_of[sha]))
        if len(recent) > window:
            recent.pop()


def write_pack(
    store,
    objects: list[tuple[ShaFile, bytes | None]],
    *,
    window: int = WINDOW,
    max_depth: int = MAX_DEPTH,
    progress: ProgressFn | None = None,
):  # -> (Pack | None, number of new deltas)
    """Writes one self-contained pack of ``objects`` with deltas; returns it and its delta count."""
    counter = [0]
    if not objects:
        return None, 0
    records = _deltified(objects, window, max_depth, progress, counter)
    try:
        pack = store.add_pack_data(len(objects), records)
    except OSError as error:
        raise CheckpointError(f'cannot write a pack into {store.path}: {error}') from error
    if pack is not None:
        _fsync_pack(Path(pack._basename))
    return pack, counter[0]


def _fsync_pack(basename: Path) -> None:
    for suffix in ('.pack', '.idx'):
        try:
            fd = os.open(str(basename) + suffix, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def consolidate(
    repo,
    *,
    window: int = WINDOW,
    max_depth: int = MAX_DEPTH,
    progress: ProgressFn | None = None,
) -> StorageStats:
    """Rewrites everything reachable from the refs into one pack and removes all the rest.

    Unreachable objects (the history a prune cut off, objects a crash orphaned) are dropped.
    Must run under the repository's lock.
    """
    store = object_store(repo)
    before = objects_size(repo.path)
    packs_before = pack_count(repo.path)
    loose_before = set(store._iter_loose_objects())
    keep = reachable(store, ref_heads(repo), read_shallow(repo.path))
    objects = [(store[sha], path) for sha, path in keep.items()]
    old_packs = list(store.packs)
    new_pack, deltas = write_pack(
        store, objects, window=window, max_depth=max_depth, progress=progress
    )
    new_name = new_pack.name() if new_pack is not None else None
    if new_pack is not None:
        for suffix in ('.bitmap', '.rev'):  # another tool's indexes of a pack of the same name
            try:
                os.remove(new_pack._basename + suffix)
            except OSError:
                pass
    for pack in old_packs:
        if pack.name() == new_name:
            continue
        _remove_pack(store, pack)
    for sha in loose_before:
        try:
            store.delete_loose_object(sha)
        except OSError:
            pass
    _drop_empty_fanout(repo.path)
    store._update_pack_cache()
    return StorageStats(
        len(objects),
        deltas,
        packs_before,
        pack_count(repo.path),
        len(loose_before),
        before,
        objects_size(repo.path),
    )


def _remove_pack(store, pack) -> None:
    try:
        store._remove_pack(pack)
    except (OSError, AttributeError, NotImplementedError):
        pack.close()
        base = pack._basename
        for suffix in ('.pack', '.idx', '.bitmap', '.rev', '.keep'):
            try:
                os.remove(base + suffix)
            except OSError:
                pass


def _drop_empty_fanout(repository: Path) -> None:
    objects = Path(repository) / 'objects'
    try:
        names = os.listdir(objects)
    except OSError:
        return
    for name in names:
        if len(name) == 2:
            try:
                os.rmdir(objects / name)
            except OSError:
                pass
