"""Choosing delta bases for an append: each new object's previous version, in bounded chains.

Each base is the previous version of the same path: the trees of each new commit are walked
next to those of its parent, and a new tree or blob whose previous version is in the *target*
(the pack being extended) or among the records placed before it is stored as a delta of it when
that is at most half its size. A base read from the target is checked against its name before
it is used. Chains stay at most ``MAX_DEPTH`` long by being built in runs with heads (see
:func:`plan`), so a version is almost never stored whole again.

The previous write of this process leaves its new objects as likely bases for the next one
(:func:`remember_recent`), so they need not be read back from the pack. :func:`alike` is the
cheap guard in front of every delta, here and in ``window.py``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

from dulwich.objects import Commit, ShaFile, Tree, parse_tree
from dulwich.pack import create_delta

from .packfile import OFS_DELTA, REF_DELTA, Cache, PackDamaged, PackView, object_sha
from .write import Record

# Delta chains: at most MAX_DEPTH long, in runs of RUN versions (see plan()).
MAX_DEPTH = 50
RUN = 25
# Objects smaller than this are stored whole (a delta cannot save anything worth its header).
MIN_DELTA_SIZE = 48
# What the previous write of this process left as likely bases for the next one (per pack
# folder): the new pack's name and its new objects' (type, raw). Bounded in total size.
_RECENT: dict[str, tuple[str, dict[bytes, tuple[int, bytes]]]] = {}
_RECENT_LIMIT = 8 << 20


def alike(base: bytes, target: bytes, samples: int = 8, width: int = 24) -> bool:
    """Whether a delta could pay: some pieces of ``target`` occur in ``base``.

    A cheap guard (a few substring searches) in front of ``create_delta``, which is slow on
    unrelated content such as two versions of a compressed or random binary file.
    """
    # Small targets get narrower pieces: create_delta costs milliseconds on unrelated content
    # of a few hundred bytes too (a 1 KiB base), and a snapshot may hold hundreds of them.
    width = max(8, min(width, len(target) // (samples * 2)))
    if len(target) < samples * width or len(base) < width:
        return True
    step = (len(target) - width) // (samples - 1)
    found = sum(1 for i in range(samples) if target[i * step : i * step + width] in base)
    return found >= 2


class Plan:
    """The new records in writing order, where each object went, how many are deltas."""

    __slots__ = ('deltas', 'placed', 'records')

    def __init__(self) -> None:
        self.records: list[Record] = []
        self.placed: dict[bytes, int] = {}  # hex id -> index in records
        self.deltas = 0


class _Base:
    __slots__ = ('by_name', 'depth', 'raw', 'reference', 'sha')

    def __init__(
        self, raw: bytes, depth: int, reference: int, by_name: bool = False, sha: bytes = b''
    ) -> None:
        self.raw = raw
        self.depth = depth
        self.reference = reference  # as Record.base
        self.by_name = by_name
        self.sha = sha


def plan(
    objects: Iterable[ShaFile],
    target: PackView | None,
    tree_of_commit: Callable[[bytes], bytes | None],
) -> Plan:
    """Orders new objects and picks each one's delta base.

    The base of a tree or blob is its previous version, at the same path in the parent commit;
    it must be in ``target`` or placed earlier (commits are stored whole). Chains
    are built in runs: a version is a delta of the one before it (an ``OFS_DELTA``) for up to
    ``RUN`` versions, then the next is a *head*, a delta of the previous head (an ``REF_DELTA``,
    which is how a head is recognised later, in this pack or once copied), so a chain holds at
    most ``MAX_DEPTH - RUN`` heads then ``RUN`` versions. When even the heads are used up, the
    next version is whole. Forward deltas can only grow a chain (an appended pack cannot make
    its newest version whole, as git's repacking does), and this keeps both the depth and the
    size in check: about one whole copy per 650 versions, and a head delta (``RUN`` changes)
    per ``RUN`` versions.

    ``objects`` already in ``target`` are skipped; ``tree_of_commit`` names the tree of a commit
    outside the batch (None when unknown), for the first new commit's parent.
    """
    batch: dict[bytes, ShaFile] = {}
    for obj in objects:
        sha = obj.id
        if sha not in batch and (target is None or sha not in target):
            batch[sha] = obj
    result = Plan()
    cache = Cache()
    recent: dict[bytes, tuple[int, bytes]] = {}
    if target is not None:
        remembered = _RECENT.get(os.path.dirname(target.basename))
        if remembered is not None and remembered[0] == target.name:
            recent = remembered[1]

    def locate(sha: bytes) -> int | None:
        index = result.placed.get(sha)
        if index is not None:
            return -1 - index
        if target is None:
            return None
        return target.offset_of(bytes.fromhex(sha.decode('ascii')))

    def chain(reference: int) -> list[tuple[int, int]]:
        """``(reference, kind)`` from a version down to its whole root; kind 0 for whole."""
        links = []
        while reference < 0:
            record = result.records[-1 - reference]
            if record.base is None:
                links.append((reference, 0))
                return links
            links.append((reference, REF_DELTA if record.by_name else OFS_DELTA))
            reference = record.base
        assert target is not None
        for offset, kind in target.chain(reference):
            links.append((offset, kind))
        return links

    def content(reference: int, sha: bytes | None, type_num: int) -> tuple[bytes, bytes] | None:
        """A version's (raw, hex id), read back and checked: its id when known, and its type
        (a delta takes its base's type). None when it cannot serve as a base."""
        if reference < 0:
            record = result.records[-1 - reference]
            return (record.raw, record.sha) if record.type_num == type_num else None
        assert target is not None
        known = recent.get(sha) if sha is not None else None
        if known is not None:
            kind, raw = known
        else:
            try:
                kind, raw, _ = target.read(reference, cache)
            except PackDamaged:
                return None
        if kind != type_num:
            return None
        found = sha if known is not None else object_sha(kind, raw)
        if sha is not None and found != sha:
            return None
        return raw, found  # type: ignore[return-value]

    def base_for(old: bytes, type_num: int) -> _Base | None:
        reference = locate(old)
        if reference is None:
            return None
        try:
            links = chain(reference)
        except PackDamaged:
            return None
        depth = len(links) - 1
        run = 0
        while run < len(links) and links[run][1] == OFS_DELTA:
            run += 1
        if run < RUN and depth < MAX_DEPTH:
            found = content(reference, old, type_num)
            return _Base(found[0], depth, reference) if found is not None else None
        head_depth = depth - run
        if head_depth + 1 + RUN > MAX_DEPTH:
            return None  # the heads are used up too: this version starts a new chain, whole
        found = content(links[run][0], None, type_num)
        if found is None:
            return None
        return _Base(found[0], head_depth, links[run][0], by_name=True, sha=found[1])

    def place(obj: ShaFile, old: bytes | None) -> None:
        sha = obj.id
        if sha in result.placed:
            return
        raw = obj.as_raw_string()
        record = Record(sha, obj.type_num, raw)
        base = None
        if old is not None and len(raw) >= MIN_DELTA_SIZE:
            base = base_for(old, obj.type_num)
        if base is not None and alike(base.raw, raw):
            delta = b''.join(create_delta(base.raw, raw))
            if len(delta) <= len(raw) // 2:
                record.base, record.delta, record.depth = base.reference, delta, base.depth + 1
                record.by_name, record.base_sha = base.by_name, base.sha
                result.deltas += 1
        result.placed[sha] = len(result.records)
        result.records.append(record)

    def tree_entries(sha: bytes) -> dict[bytes, tuple[int, bytes]] | None:
        obj = batch.get(sha)
        if obj is not None:
            raw = obj.as_raw_string()
        else:
            reference = locate(sha)
            found = content(reference, sha, Tree.type_num) if reference is not None else None
            if found is None:
                return None
            raw = found[0]
        try:
            return {name: (mode, child) for name, mode, child in parse_tree(raw, 20)}
        except Exception:  # noqa: BLE001 - a malformed old tree just offers no bases
            return None

    def walk(new_root: bytes, old_root: bytes | None) -> None:
        pending = [(new_root, old_root)]
        while pending:
            new, old = pending.pop()
            obj = batch.get(new)
            if obj is None or new in result.placed or not isinstance(obj, Tree):
                continue
            place(obj, old)
            entries = tree_entries(new)
            old_entries = tree_entries(old) if old is not None else None
            for name, (mode, child) in (entries or {}).items():
                if child not in batch or child in result.placed:
                    continue
                before = old_entries.get(name) if old_entries else None
                if mode == 0o040000:
                    is_tree = before is not None and before[0] == 0o040000
                    pending.append((child, before[1] if before and is_tree else None))
                elif mode & 0o170000 in (0o100000, 0o120000):
                    is_blob = before is not None and before[0] & 0o170000 in (0o100000, 0o120000)
                    place(batch[child], before[1] if before and is_blob else None)

    for commit in _oldest_first([obj for obj in batch.values() if isinstance(obj, Commit)]):
        parent = commit.parents[0] if commit.parents else None
        old_tree = None
        if parent is not None:
            parent_commit = batch.get(parent)
            if isinstance(parent_commit, Commit):
                old_tree = parent_commit.tree
            else:
                old_tree = _target_commit_tree(target, parent, cache) or tree_of_commit(parent)
        walk(commit.tree, old_tree)
        # A commit whole: against its parent, dulwich's delta saves a few bytes at best (its
        # tree and parent ids, the times and the message all change).
        place(commit, None)
    for obj in batch.values():  # what no new commit reaches: whole
        place(obj, None)
    return result


def _oldest_first(commits: list[Commit]) -> list[Commit]:
    """Commits ordered so that a first parent comes before its child."""
    by_id = {commit.id: commit for commit in commits}
    done: set[bytes] = set()
    ordered: list[Commit] = []
    for commit in commits:
        line = []
        current: Commit | None = commit
        while current is not None and current.id not in done:
            line.append(current)
            done.add(current.id)
            parent = current.parents[0] if current.parents else None
            current = by_id.get(parent) if parent is not None else None
        ordered.extend(reversed(line))
    # A commit placed before its parent (the parent was reached from a later start) is fine:
    # only the walk's base choices depend on the order, never correctness.
    return ordered


def _target_commit_tree(target: PackView | None, sha: bytes, cache: Cache) -> bytes | None:
    if target is None:
        return None
    offset = target.offset_of(bytes.fromhex(sha.decode('ascii')))
    if offset is None:
        return None
    try:
        kind, raw, _ = target.read(offset, cache)
    except PackDamaged:
        return None
    if kind != Commit.type_num or not raw.startswith(b'tree ') or len(raw) < 45:
        return None
    return raw[5:45]


def remember_recent(pack_dir: str, basename: str, records: list[Record]) -> None:
    """Keeps the new trees and blobs as likely bases for this process's next write."""
    kept: dict[bytes, tuple[int, bytes]] = {}
    total = 0
    for record in reversed(records):  # the newest versions: the next write's bases
        total += len(record.raw)
        if total > _RECENT_LIMIT:
            break
        kept[record.sha] = (record.type_num, record.raw)
    if len(_RECENT) >= 8 and pack_dir not in _RECENT:
        _RECENT.clear()  # a process writing to many repositories keeps only the latest few
    _RECENT[pack_dir] = (os.path.basename(basename), kept)
