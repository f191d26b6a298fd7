"""One self-contained pack with deltas chosen the way ``git pack-objects`` does.

dulwich writes packs without deltas unless asked (``add_objects`` and ``repack`` store every
object whole). :func:`write_pack` chooses delta bases itself: objects are grouped by type and by
the path they appear at, ordered largest first, and each is stored as a delta against the best
of the previous ``window`` objects, with chains at most ``max_depth`` long (and a git-like bias
towards shallow bases so chains stay short). The deltas are computed by dulwich's
``create_delta`` (its Rust extension when installed). Consolidation and transfers to a remote
write their packs this way.
"""

from __future__ import annotations

import hashlib
import os
from collections import deque
from collections.abc import Callable, Iterator

from dulwich.objects import ShaFile
from dulwich.pack import UnpackedObject, create_delta

from ...core.durability import fsync_folder
from ...errors import FileAccessError
from ..dulwichadapter import pack_basename
from .plan import alike

# Delta search: how many previous objects to try, and the longest delta chain.
WINDOW = 24
MAX_DEPTH = 50
GOOD_ENOUGH = 48
SMALL_TRIES = 3  # objects under 1 KiB (commits, small trees) try only the nearest bases

ProgressFn = Callable[[str], None]


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
            if scaled <= 0 or size - len(base_raw) >= scaled or not alike(base_raw, raw):
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
    """Writes one self-contained pack of ``objects`` with deltas; returns it and its delta count.

    The pack and its index are flushed before each is renamed into place, and the folder after:
    the pack may replace others (a consolidation) or a branch may name its objects next (a
    fetch), and a power cut must find under its name either nothing or the whole pack. Must run
    under the repository's lock: a lock file left at the index's name is stale, and removed.
    """
    counter = [0]
    if not objects:
        return None, 0
    records = _deltified(objects, window, max_depth, progress, counter)
    store.fsync_object_files = True  # dulwich flushes only when told
    try:
        _remove_stale_index_lock(store.pack_dir, objects)
        pack = store.add_pack_data(len(objects), records)
    except OSError as error:
        raise FileAccessError(
            f'cannot write a pack into {store.path}: {error}', path=store.path, action='write'
        ) from error
    if pack is not None:
        fsync_folder(os.path.dirname(pack_basename(pack)))
    return pack, counter[0]


def _remove_stale_index_lock(pack_dir: str, objects: list[tuple[ShaFile, bytes | None]]) -> None:
    """Removes the ``.idx.lock`` a writer cut off by a power loss may have left at the name the
    pack will have (dulwich would refuse to write the index). The name is dulwich's: the SHA-1
    of the objects' sorted binary ids."""
    ids = sorted(obj.sha().digest() for obj, _ in objects)
    name = hashlib.sha1(b''.join(ids)).hexdigest()
    try:
        os.remove(os.path.join(pack_dir, f'pack-{name}.idx.lock'))
    except FileNotFoundError:
        pass
