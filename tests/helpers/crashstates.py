"""The states a power cut can leave, under a stated persistence model, from a replayed trace.

The model (meant to allow every state ext4's default ``data=ordered`` can leave, and more):

- **File data** reaches the disk a page (4 KiB of the file) at a time, each page of each
  write or truncation on its own, in no order: any subset of a file's unflushed pages may be
  lost (a lost page keeps what the disk held before; past the end a lost page is a hole of
  zeros when a later page made it, else the file ends sooner). ``fsync``/``fdatasync`` of a
  file makes every write, truncation and permission change made to it before the call
  durable, not its name.
- **Folder entries** (a name made, removed, or renamed; a rename is atomic, as ext4
  journals it) reach the disk in the order they were made within each folder, but folders
  are independent of one another: the entries that survive are, for every folder, a prefix
  of the changes made in it. A rename belongs to both of its folders, a ``mkdir`` to the
  folder it makes (nothing inside it survives without it) and an ``rmdir`` to the folder it
  removes. ``fsync`` of a folder makes every change made in it before the call durable (a
  rename: by a flush of either of its folders), with what those changes depend on. Data and
  names are independent: a name may survive without the bytes written to its file, and the
  bytes without the name.
- ``sync``/``syncfs`` makes everything before it durable.

A crash point is a moment between two calls; at each, the changes made before it that no
flush covered are the ones a power cut may lose. The states a point allows are the subsets
of those changes closed under the folder order above: :func:`enumerate_states` builds all of
them where there are at most :data:`EXHAUSTIVE`, and otherwise (ALICE's way, Pillai et al.,
OSDI 2014, widened) every state that loses one change (with what depends on it), keeps only
one, loses one file's unflushed data, loses everything unflushed or nothing, plus
:data:`SAMPLES` random ones. States are told apart by what the disk holds: the same bytes
reached from several points are built and checked once, held to the strictest promise of
those points (once the program reported its operation done, what it reported must survive).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator
from dataclasses import dataclass, field

from helpers.crashfs import (
    CHMOD,
    FLUSH,
    FLUSH_ALL,
    FOLDER,
    NAME,
    RENAME,
    REPORT,
    TRUNCATE,
    UNNAME,
    WRITE,
    Disk,
    Image,
    Op,
)

PAGE = 4096
EXHAUSTIVE = 256  # a crash point allowing at most this many states has every one built
SAMPLES = 24  # random states at a crash point allowing more
COUNT_CAP = 100_000  # folder-order choices counted at most, per point


@dataclass(frozen=True)
class Unit:
    """What reaches the disk in one piece: a page of a write, a truncation, a permission
    change, or one folder entry change."""

    number: int
    op: Op
    at: int  # the op's position in the trace's ops


@dataclass
class State:
    """A distinct crash state: its image, the first point and losses that made it, and
    whether any point that made it came after the program's report."""

    image: Image
    point: int
    lost: tuple[str, ...]
    reported: bool
    points: int = 1
    killed: bool = False  # also what a SIGKILL at some point leaves (every change kept)


@dataclass
class Figures:
    points: int = 0  # crash points (one before the first change, one after each)
    allowed: int = 0  # states the model allows, summed over points
    built: int = 0  # states built (before merging the same bytes)
    distinct: int = 0
    exhaustive_points: int = 0


@dataclass
class Model:
    base: Disk
    ops: list[Op]
    units: list[Unit] = field(default_factory=list)
    preds: list[set[int]] = field(default_factory=list)  # folder order: must survive first
    succs: list[set[int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        # Every inode the trace made exists from the start, unnamed: its data may reach the
        # disk without the name that would reach it.
        self.base = self.base.copy()
        for op in self.ops:
            if op.kind == NAME and op.new is not None:
                self.base.nodes.setdefault(op.ino, op.new)
        new_folders = {op.ino for op in self.ops if op.kind == NAME and op.new is not None}
        new_folders = {ino for ino in new_folders if self._kind(ino) == FOLDER}
        last: dict[int, int] = {}
        for at, op in enumerate(self.ops):
            for piece in _pieces(op):
                unit = Unit(len(self.units), piece, at)
                self.units.append(unit)
                self.preds.append(set())
                self.succs.append(set())
                for folder in self.chains(piece, new_folders):
                    if folder in last:
                        self.preds[unit.number].add(last[folder])
                        self.succs[last[folder]].add(unit.number)
                    last[folder] = unit.number

    def _kind(self, ino: int) -> str:
        for op in self.ops:
            if op.kind == NAME and op.ino == ino and op.new is not None:
                return op.new.kind
        return self.base.nodes[ino].kind if ino in self.base.nodes else ''

    def chains(self, op: Op, new_folders: set[int]) -> set[int]:
        """The folders whose order an entry change takes part in (none for data)."""
        if op.kind not in (NAME, UNNAME, RENAME):
            return set()
        assert op.place is not None
        folders = {op.place[0]}
        if op.kind == RENAME:
            assert op.target is not None
            folders.add(op.target[0])
        if op.kind == NAME and op.ino in new_folders:
            folders.add(op.ino)
        if op.kind == UNNAME and self._kind(op.ino) == FOLDER:
            folders.add(op.ino)
        return folders

    # -- what a flush covers ------------------------------------------------------------------

    def forced(self, point: int) -> set[int]:
        """The units durable at a crash point: covered by a flush that completed before it,
        with everything they depend on."""
        out: set[int] = set()
        for op in self.ops[:point]:
            if op.kind not in (FLUSH, FLUSH_ALL):
                continue
            for unit in self.units:
                if unit.at >= point or unit.op.done >= op.began:
                    continue
                if op.kind == FLUSH_ALL or _covers(op, unit.op):
                    out.add(unit.number)
        return self.closed_down(out)

    def closed_down(self, units: set[int]) -> set[int]:
        out, stack = set(units), list(units)
        while stack:
            for pred in self.preds[stack.pop()]:
                if pred not in out:
                    out.add(pred)
                    stack.append(pred)
        return out

    def closed_up(self, units: set[int], within: set[int]) -> set[int]:
        out, stack = set(units), list(units)
        while stack:
            for succ in self.succs[stack.pop()]:
                if succ in within and succ not in out:
                    out.add(succ)
                    stack.append(succ)
        return out

    # -- the states ---------------------------------------------------------------------------

    def image(self, kept: set[int], point: int) -> Image:
        disk = self.base.copy()
        for unit in self.units:
            if unit.at < point and unit.number in kept:
                disk.apply(unit.op)
        return disk.image()

    def choices(self, point: int, rng: random.Random) -> Iterator[set[int]]:
        """The sets of units that survive a power cut at ``point`` (see the module notes)."""
        issued = {unit.number for unit in self.units if unit.at < point}
        forced = self.forced(point)
        free = sorted(issued - forced)
        if self.allowed(point) <= EXHAUSTIVE:
            for subset in self._down_sets(free):
                yield forced | subset
            return
        free_set = set(free)
        picks: list[set[int]] = [free_set, set()]
        for unit in free:
            picks.append(free_set - self.closed_up({unit}, free_set))
            picks.append(self.closed_down({unit}) & free_set)
        for ino in sorted({self.units[u].op.ino for u in free if self._is_data(u)}):
            mine = {u for u in free if self._is_data(u) and self.units[u].op.ino == ino}
            picks.append(free_set - mine)
        for _ in range(SAMPLES):
            lost = {u for u in free if rng.random() < 0.5}
            picks.append(free_set - self.closed_up(lost, free_set))
        for pick in picks:
            yield forced | pick

    def allowed(self, point: int) -> int:
        """How many states the model allows at ``point``: every subset of the unflushed pages
        times the choices the folder orders leave (counted up to COUNT_CAP)."""
        issued = {unit.number for unit in self.units if unit.at < point}
        free = sorted(issued - self.forced(point))
        data = [u for u in free if self._is_data(u)]
        names = [u for u in free if not self._is_data(u)]
        count = 0
        for _ in self._down_sets(names):
            count += 1
            if count >= COUNT_CAP:
                break
        return count << len(data)

    def _is_data(self, unit: int) -> bool:
        return self.units[unit].op.kind in (WRITE, TRUNCATE, CHMOD)

    def _down_sets(self, free: list[int]) -> Iterator[set[int]]:
        """Every subset of ``free`` closed under the folder order (units in trace order)."""
        free_set = set(free)

        def walk(index: int, chosen: set[int]) -> Iterator[set[int]]:
            if index == len(free):
                yield set(chosen)
                return
            unit = free[index]
            yield from walk(index + 1, chosen)
            if all(pred in chosen or pred not in free_set for pred in self.preds[unit]):
                chosen.add(unit)
                yield from walk(index + 1, chosen)
                chosen.discard(unit)

        yield from walk(0, set())

    def describe(self, kept: set[int], point: int) -> tuple[str, ...]:
        issued = [unit for unit in self.units if unit.at < point]
        return tuple(_name(unit) for unit in issued if unit.number not in kept)


def _pieces(op: Op) -> list[Op]:
    """A write split at page boundaries; any other op whole (flushes and reports: none)."""
    if op.kind in (FLUSH, FLUSH_ALL, REPORT):
        return []
    if op.kind != WRITE:
        return [op]
    out, start = [], op.offset
    end = op.offset + len(op.data)
    while start < end:
        stop = min(end, (start // PAGE + 1) * PAGE)
        data = op.data[start - op.offset : stop - op.offset]
        out.append(Op(WRITE, op.began, op.done, op.what, ino=op.ino, offset=start, data=data))
        start = stop
    return out


def _covers(flush: Op, op: Op) -> bool:
    if op.kind in (WRITE, TRUNCATE, CHMOD):
        return op.ino == flush.ino
    assert op.place is not None
    return op.place[0] == flush.ino or (op.target is not None and op.target[0] == flush.ino)


def _name(unit: Unit) -> str:
    op = unit.op
    if op.kind == WRITE:
        return f'{op.what.split(" [")[0]} page at {op.offset}'
    return op.what


def digest(image: Image) -> str:
    hasher = hashlib.sha256()
    for path in sorted(image):
        kind, mode, data = image[path]
        hasher.update(f'{path}\0{kind}\0{mode}\0{len(data)}\0'.encode('utf-8', 'surrogateescape'))
        hasher.update(data)
    return hasher.hexdigest()


def enumerate_states(base: Disk, ops: list[Op], seed: int = 0) -> tuple[list[State], Figures]:
    """Every distinct crash state the model allows (sampled where a point allows too many),
    in the order first built, with the figures."""
    model = Model(base, ops)
    rng = random.Random(seed)
    figures = Figures()
    seen: dict[str, State] = {}
    killed: set[str] = set()
    reported = False
    for point in range(len(ops) + 1):
        if point and ops[point - 1].kind == REPORT:
            reported = True
        figures.points += 1
        allowed = model.allowed(point)
        figures.allowed += allowed
        figures.exhaustive_points += allowed <= EXHAUSTIVE
        killed.add(digest(model.image({u.number for u in model.units}, point)))
        for kept in model.choices(point, rng):
            figures.built += 1
            image = model.image(kept, point)
            key = digest(image)
            state = seen.get(key)
            if state is None:
                seen[key] = State(image, point, model.describe(kept, point), reported)
            else:
                state.points += 1
                state.reported = state.reported or reported
    figures.distinct = len(seen)
    for key, state in seen.items():
        state.killed = key in killed
    return list(seen.values()), figures
