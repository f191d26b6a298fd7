"""Compact storage for a shadow repository: loose objects into packs, with deltas.

dulwich writes packs without deltas unless asked (``add_objects`` and ``repack`` store every
object whole), so a ``Memory.md`` that grows by a line per turn would cost a full copy per
checkpoint. This module chooses delta bases itself, the way ``git pack-objects`` does: objects
are grouped by type and by the path they appear at, ordered largest first, and each is stored
as a delta against the best of the previous ``window`` objects, with chains at most
``max_depth`` long (and a git-like bias towards shallow bases so chains stay short). The deltas
are computed by dulwich's ``create_delta`` (its Rust extension when installed).

Two operations, both run under the repository's lock:

- :func:`pack_loose` packs the loose objects into one new pack;
- :func:`consolidate` rewrites everything reachable into a single pack, drops the old packs
  and loose objects, and so also removes what nothing references any more.

:func:`maybe_pack` is the cheap hook called after each commit: it counts the loose objects only
on every eighth commit of a process, or when the commit's id starts with 0 or 8 (so a process
that takes one snapshot and exits still looks about one time in eight), never otherwise.
"""

from __future__ import annotations

import itertools
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from dulwich.objects import Commit, ShaFile, Tag, Tree, parse_tree, sha_to_hex
from dulwich.pack import UnpackedObject, create_delta

from .errors import CheckpointError, CorruptRepositoryError

# Pack the loose objects once there are this many (a snapshot usually writes 3 to 6).
LOOSE_LIMIT = 64
# Loose objects (each zlib'd whole) shrink about this much once packed with deltas.
LOOSE_TO_PACKED = 4
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
    return repo._repo.object_store


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
    try:
        names = os.listdir(Path(repository) / 'objects' / 'pack')
    except OSError:
        return 0
    return sum(1 for name in names if name.endswith('.pack'))


def maybe_pack(repo, new_commit: bytes) -> StorageStats | None:
    """The hook after a commit: cheap except on the 1 commit in 8 that looks at the loose objects.

    Packing only saves space, so a failure here never fails the snapshot that triggered it
    (the objects stay loose and the next check tries again).
    """
    key = str(repo.path)
    count = _commits_since_check.get(key, 0) + 1
    if count < CHECK_EVERY and not new_commit.startswith(CHECK_PREFIXES):
        _commits_since_check[key] = count
        return None
    _commits_since_check[key] = 0
    try:
        if loose_count(repo.path) < LOOSE_LIMIT:
            return None
        return pack_loose(repo)
    except Exception:  # noqa: BLE001 - e.g. a damaged loose object dulwich cannot parse
        if os.environ.get('CHECKPOINTS_DEBUG'):
            raise
        return None


# -- walking the history -------------------------------------------------------------------


def read_shallow(repository: Path) -> set[bytes]:
    try:
        return set((Path(repository) / 'shallow').read_bytes().split())
    except FileNotFoundError:
        return set()


def ref_heads(repo) -> list[bytes]:
    """Every commit a ref points at (all refs; symbolic ones resolved)."""
    from .repo import REF_DAMAGE

    refs = repo._repo.refs
    heads = []
    try:
        for name in refs.allkeys():
            if name == b'HEAD':
                continue
            try:
                sha = refs[name]
            except KeyError:
                continue
            heads.append(sha)
    except REF_DAMAGE as error:
        raise CorruptRepositoryError(f'cannot read the refs of {repo.path}: {error}') from error
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
    try:
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
    except KeyError as error:  # a commit (written by another tool) names a missing object
        missing = error.args[0] if error.args else b'?'
        name = missing.decode(errors='replace') if isinstance(missing, bytes) else str(missing)
        raise CorruptRepositoryError(
            f'the object {name[:40]} is missing from the repository, though a checkpoint names it'
        ) from error
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
            if scaled <= 0 or size - len(base_raw) >= scaled or not _alike(base_raw, raw):
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


def _alike(base: bytes, target: bytes, samples: int = 8, width: int = 24) -> bool:
    """Whether a delta could pay: some pieces of ``target`` occur in ``base``.

    A cheap guard (a few substring searches) in front of ``create_delta``, which is slow on
    unrelated content such as two versions of a compressed or random binary file.
    """
    if len(target) < samples * width * 2 or len(base) < width:
        return True
    step = (len(target) - width) // (samples - 1)
    found = sum(1 for i in range(samples) if target[i * step : i * step + width] in base)
    return found >= 2


def _reusable_deltas(packs: list, candidates: set[bytes]) -> dict[bytes, UnpackedObject]:
    """Deltas already stored in ``packs`` whose base is also being packed: copied, not redone."""
    reused: dict[bytes, UnpackedObject] = {}
    for pack in packs:
        shas = [sha_to_hex(sha) for sha, _, _ in pack.index.iterentries()]
        for unpacked in pack.iter_unpacked_subset(shas, convert_ofs_delta=True):
            base = unpacked.delta_base
            if isinstance(base, bytes) and sha_to_hex(base) in candidates:
                reused[sha_to_hex(unpacked.sha())] = unpacked
    _break_cycles(reused)
    return reused


def _break_cycles(reused: dict[bytes, UnpackedObject]) -> None:
    """Drops one delta of each loop (A based on B in one pack, B on A in another).

    Two rolled-up packs may store the same pair of objects as deltas of each other; copying both
    would write a pack no reader can resolve. A dropped one is packed whole, or deltified anew.
    """
    done: set[bytes] = set()
    for start in list(reused):
        path: list[bytes] = []
        on_path: set[bytes] = set()
        sha = start
        while sha in reused and sha not in done:
            if sha in on_path:
                del reused[sha]  # closes a loop: written as a plain object instead
                break
            path.append(sha)
            on_path.add(sha)
            sha = sha_to_hex(reused[sha].delta_base)
        done.update(path)


def _in_dependency_order(reused: dict[bytes, UnpackedObject]) -> list[UnpackedObject]:
    """Reused deltas ordered so that one whose base is another reused delta comes after it."""
    depth: dict[bytes, int] = {}

    def depth_of(sha: bytes) -> int:
        chain = []
        while sha in reused and sha not in depth:
            chain.append(sha)
            sha = sha_to_hex(reused[sha].delta_base)
        level = depth.get(sha, 0)
        for item in reversed(chain):
            level += 1
            depth[item] = level
        return depth.get(chain[0], level) if chain else level

    return [reused[sha] for sha in sorted(reused, key=depth_of)]


def write_pack(
    store,
    objects: list[tuple[ShaFile, bytes | None]],
    *,
    window: int = WINDOW,
    max_depth: int = MAX_DEPTH,
    progress: ProgressFn | None = None,
    reused: dict[bytes, UnpackedObject] | None = None,
):  # -> (Pack | None, number of new deltas)
    """Writes one self-contained pack of ``objects`` with deltas; returns it and its delta count.

    ``reused`` deltas (whose bases are among ``objects`` or ``reused``) are written as they are,
    after everything they may depend on.
    """
    counter = [0]
    reused = reused or {}
    if not objects and not reused:
        return None, 0
    records = itertools.chain(
        _deltified(objects, window, max_depth, progress, counter), _in_dependency_order(reused)
    )
    try:
        pack = store.add_pack_data(len(objects) + len(reused), records)
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


def pack_loose(repo, progress: ProgressFn | None = None, *, roll_up: bool = True) -> StorageStats:
    """Packs the loose objects into one new pack (with deltas) and deletes the loose copies.

    With ``roll_up`` the new pack also absorbs the small packs before it, geometric-style: a
    pack is merged while it is smaller than twice everything merged so far. So each pack is
    at least twice the size of all younger ones together, there are O(log n) packs, and an
    object is rewritten O(log n) times over the repository's life.
    """
    store = object_store(repo)
    loose = set(store._iter_loose_objects())
    before = objects_size(repo.path)
    packs_before = pack_count(repo.path)
    if not loose:
        return StorageStats(0, 0, packs_before, packs_before, 0, before, before)
    merged_packs = _packs_to_roll_up(repo.path, store, loose) if roll_up else []
    candidates = set(loose)
    for pack in merged_packs:
        candidates.update(sha_to_hex(sha) for sha, _, _ in pack.index.iterentries())
    # Paths for delta grouping: walk only the commits that are themselves being packed.
    hints = reachable(
        store, ref_heads(repo), read_shallow(repo.path), enter_commit=lambda sha: sha in candidates
    )
    reused = _reusable_deltas(merged_packs, candidates)
    objects = []
    # In walk order (newest history first), so neighbouring versions meet in the delta window.
    for sha in [*(s for s in hints if s in candidates), *(s for s in candidates if s not in hints)]:
        if sha in reused:
            continue
        obj = store._get_loose_object(sha) if sha in loose else store[sha]
        if obj is not None:
            objects.append((obj, hints.get(sha)))
    new_pack, deltas = write_pack(store, objects, progress=progress, reused=reused)
    new_name = new_pack.name() if new_pack is not None else None
    for pack in merged_packs:
        if pack.name() != new_name:
            _remove_pack(store, pack)
    for obj, _ in objects:  # only what is now in the new pack
        if obj.id in loose:
            try:
                store.delete_loose_object(obj.id)
            except OSError:
                pass
    _drop_empty_fanout(repo.path)
    store._update_pack_cache()
    return StorageStats(
        len(objects) + len(reused),
        deltas + len(reused),
        packs_before,
        pack_count(repo.path),
        len(loose),
        before,
        objects_size(repo.path),
    )


def _packs_to_roll_up(repository: Path, store, loose: set[bytes]) -> list:
    objects = Path(repository) / 'objects'
    total = 0
    for sha in loose:
        try:
            total += os.path.getsize(objects / sha[:2].decode() / sha[2:].decode())
        except OSError:
            pass
    total //= LOOSE_TO_PACKED  # what the loose objects will take once delta-compressed
    merged = []
    for size, pack in sorted(
        ((os.path.getsize(pack._data_path), pack) for pack in store.packs), key=lambda e: e[0]
    ):
        if size >= 2 * total:
            break
        merged.append(pack)
        total += size
    return merged


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
