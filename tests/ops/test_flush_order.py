"""The orders the durability argument relies on, checked on the calls a restore and a snapshot
really make (flushes, renames, removals and writes, by path; see ``helpers.flushes``).

A SIGKILL keeps the page cache, so the crash tests cannot see a missing or late flush; a power
cut keeps only what was flushed, in the order it was flushed. The restore and the snapshot
recorded here run the paths that matter: the restore's pre-snapshot appends to the tail pack,
its record goes down, the desk is written, the restored state is committed and sealed, the
record removed; the snapshot then appends a large file to the tail and rolls the tail up into
the largest pack. Each order is a function named after it, asserting it on every occurrence:

- ``record_before_desk``: the restore record is durable (its bytes flushed before its rename,
  its folder flushed after) before the first desk write.
- ``pack_before_removal``: a new pack and its index are durable (each flushed before its
  rename, the pack folder flushed after) before an old pack is removed; also with
  ``durable=False``, as the new pack then holds the only copy of the old one's objects.
- ``pack_before_branch``: every pack written since the branch last moved is durable before the
  branch moves.
- ``desk_before_commit``: every desk file the restore wrote is flushed (a temporary file before
  its rename), and every desk folder that gained or lost a name after it, before the branch
  moves to the restored state.
- ``branch_before_seal``: the branch is durable (its lock file flushed before the rename,
  ``refs/heads`` flushed after) before the seal moves.
- ``branch_before_record_removal``: the branch, moved to the restored state, is durable before
  the restore record is removed.
- ``folders_before_head``: every folder a new repository is made of is durable (its parent
  flushed after it was made) before ``HEAD``, the mark of a finished repository, is put in
  place (a first snapshot, a clone).

The same checks run on events recorded in this process (a wrapper around ``os``) and on an
``strace`` of a second process doing the same, where ``strace`` can trace.
"""

from __future__ import annotations

import os
import random
import re
from pathlib import Path

import pytest
from helpers.builders import put
from helpers.flushes import (
    CREATE,
    FLUSH,
    MKDIR,
    PROC_FD,
    REMOVE,
    RENAME,
    WRITE,
    Event,
    recording,
    strace_works,
    traced,
)
from helpers.reading import files_of, version_of

from trading_checkpoints import Checkpoints
from trading_checkpoints.store.pack import folder as packfolder

pytestmark = pytest.mark.skipif(not PROC_FD.is_dir(), reason='needs /proc/self/fd (Linux)')

_PACK_FILE = re.compile(r'pack-[0-9a-f]{40}\.(pack|idx)')


class Places:
    """The paths the orders speak of, resolved as the kernel reports them."""

    def __init__(self, repository: Path, desk: Path) -> None:
        repository = Path(os.path.realpath(repository))
        self.desk = os.path.realpath(desk)
        self.record = str(repository / 'checkpoints' / 'restore-journal')
        self.pack_dir = str(repository / 'objects' / 'pack')
        self.branch = str(repository / 'refs' / 'heads' / 'main')
        self.seal = str(repository / 'refs' / 'checkpoints' / 'sealed')

    def in_desk(self, path: str) -> bool:
        return path == self.desk or path.startswith(self.desk + os.sep)


def _flushed(events: list[Event], path: str, after: int, before: int) -> bool:
    """Whether ``path`` was flushed strictly between the two positions."""
    return any(e.kind == FLUSH and e.path == path for e in events[after + 1 : before])


def _renames_to(events: list[Event], target: str) -> list[int]:
    return [i for i, e in enumerate(events) if e.kind == RENAME and e.target == target]


def _durable_rename(events: list[Event], at: int, before: int) -> str | None:
    """Why the rename at ``at`` is not durable by ``before`` (its source flushed before it, its
    folder after it), or None."""
    rename = events[at]
    if not _flushed(events, rename.path, -1, at):
        return f'{rename.path} was not flushed before its rename to {rename.target}'
    folder = os.path.dirname(rename.target)
    if not _flushed(events, folder, at, before):
        return f'{folder} was not flushed after the rename to {rename.target}'
    return None


def _changes_desk(event: Event, places: Places) -> bool:
    if event.kind == RENAME:
        return places.in_desk(event.path) or places.in_desk(event.target)
    return event.kind in (CREATE, WRITE, REMOVE) and places.in_desk(event.path)


# -- the orders ----------------------------------------------------------------------------


def record_before_desk(events: list[Event], places: Places) -> None:
    written = _renames_to(events, places.record)
    assert written, (
        'ORDER record_before_desk: the restore record was not put in place by the rename of a '
        'flushed file'
    )
    first_desk = next(i for i, e in enumerate(events) if _changes_desk(e, places))
    at = written[0]
    assert at < first_desk, 'ORDER record_before_desk: the desk was written before the record'
    problem = _durable_rename(events, at, first_desk)
    assert problem is None, f'ORDER record_before_desk: {problem} before the first desk write'


def _pack_creations(events: list[Event], places: Places) -> list[int]:
    """Renames that give a pack file its name (from a temporary pack or an index lock)."""
    return [
        i
        for i, e in enumerate(events)
        if e.kind == RENAME
        and os.path.dirname(e.target) == places.pack_dir
        and _PACK_FILE.fullmatch(os.path.basename(e.target))
        and not _PACK_FILE.fullmatch(os.path.basename(e.path))
    ]


def _pack_removals(events: list[Event], places: Places) -> list[int]:
    """Renames away from a pack file's name, or its removal."""
    return [
        i
        for i, e in enumerate(events)
        if e.kind in (RENAME, REMOVE)
        and os.path.dirname(e.path) == places.pack_dir
        and _PACK_FILE.fullmatch(os.path.basename(e.path))
        and not (e.kind == RENAME and _PACK_FILE.fullmatch(os.path.basename(e.target)))
    ]


def _stem(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0]


def pack_before_removal(events: list[Event], places: Places) -> int:
    """Returns how many pack files were removed (each after a durable new pack)."""
    creations = _pack_creations(events, places)
    removals = _pack_removals(events, places)
    for removal in removals:
        old = _stem(events[removal].path)
        made = [i for i in creations if i < removal and _stem(events[i].target) != old]
        assert made, f'ORDER pack_before_removal: {old} removed before any new pack was named'
        newest = _stem(events[made[-1]].target)
        files = [i for i in made if _stem(events[i].target) == newest]
        assert len(files) == 2, f'ORDER pack_before_removal: {newest} lacks its pack or index'
        for at in files:
            problem = _durable_rename(events, at, removal)
            assert problem is None, f'ORDER pack_before_removal: {problem} before {old} went'
    return len(removals)


def pack_before_branch(events: list[Event], places: Places) -> int:
    """Returns how many branch moves followed new packs."""
    moves = _renames_to(events, places.branch)
    creations = _pack_creations(events, places)
    checked, previous = 0, -1
    for move in moves:
        for at in (i for i in creations if previous < i < move):
            problem = _durable_rename(events, at, move)
            assert problem is None, f'ORDER pack_before_branch: {problem} before the branch moved'
            checked += 1
        previous = move
    return checked


def desk_before_commit(events: list[Event], places: Places) -> None:
    start = _renames_to(events, places.record)[0]
    move = next(i for i in _renames_to(events, places.branch) if i > start)
    changed_folders: dict[str, int] = {}
    last_write: dict[str, int] = {}
    for i in range(start + 1, move):
        event = events[i]
        if not _changes_desk(event, places):
            continue
        if event.kind == RENAME:
            wrote = last_write.pop(event.path, None)
            assert wrote is None or _flushed(events, event.path, wrote, i), (
                f'ORDER desk_before_commit: {event.path} was not flushed before its rename'
            )
            for path in (event.path, event.target):
                changed_folders[os.path.dirname(path)] = i
        elif event.kind == REMOVE:
            changed_folders.pop(event.path, None)  # a folder emptied, then removed itself
            changed_folders[os.path.dirname(event.path)] = i
        else:
            last_write[event.path] = i
            if event.kind == CREATE:
                changed_folders[os.path.dirname(event.path)] = i
    for path, wrote in last_write.items():
        assert _flushed(events, path, wrote, move), (
            f'ORDER desk_before_commit: {path} was not flushed before the restored state was '
            'committed'
        )
    for folder, changed in changed_folders.items():
        assert _flushed(events, folder, changed, move), (
            f'ORDER desk_before_commit: the desk folder {folder} was not flushed before the '
            'restored state was committed'
        )
    assert last_write, 'the restore wrote no desk file'


def _branch_durable_before(
    events: list[Event], places: Places, at: int, order: str, since: int = -1
) -> None:
    """The branch moved after ``since`` and before ``at``, and that move is durable by ``at``."""
    moves = [i for i in _renames_to(events, places.branch) if since < i < at]
    assert moves, f'ORDER {order}: the branch did not move before'
    problem = _durable_rename(events, moves[-1], at)
    assert problem is None, f'ORDER {order}: {problem}'


def branch_before_seal(events: list[Event], places: Places) -> None:
    seals = _renames_to(events, places.seal)
    assert seals, 'nothing was sealed'
    for seal in seals:
        _branch_durable_before(events, places, seal, 'branch_before_seal')


def branch_before_record_removal(events: list[Event], places: Places) -> None:
    """The restored state's commit (the first branch move after the record was written) is
    durable before the record goes."""
    removed = [i for i, e in enumerate(events) if e.kind == REMOVE and e.path == places.record]
    assert removed, 'the restore record was never removed'
    for at in removed:
        written = max(i for i in _renames_to(events, places.record) if i < at)
        _branch_durable_before(events, places, at, 'branch_before_record_removal', written)


def folders_before_head(events: list[Event], repository: Path) -> int:
    """Returns how many folders of the repository were made (each durable before HEAD)."""
    root = os.path.realpath(repository)
    head = _renames_to(events, os.path.join(root, 'HEAD'))
    assert head, 'HEAD was not put in place by a rename'
    made = [
        i
        for i, e in enumerate(events[: head[0]])
        if e.kind == MKDIR and (e.path == root or e.path.startswith(root + os.sep))
    ]
    for at in made:
        parent = os.path.dirname(events[at].path)
        assert _flushed(events, parent, at, head[0]), (
            f'ORDER folders_before_head: {parent} was not flushed after {events[at].path} was '
            'made and before HEAD was put in place'
        )
    return len(made)


def check_orders(events: list[Event], places: Places, durable: bool) -> None:
    removed = pack_before_removal(events, places)
    # The pre-snapshot's append, the restored commit's, the snapshot's, and the roll-up's
    # (its small pack and the largest): each replaced pack goes with its index.
    assert removed >= 8, f'only {removed} pack files were replaced'
    if durable:
        record_before_desk(events, places)
        assert pack_before_branch(events, places) >= 4
        desk_before_commit(events, places)
        branch_before_seal(events, places)
        branch_before_record_removal(events, places)


# -- the scenario --------------------------------------------------------------------------


def _prepared(tmp_path: Path) -> tuple[Path, Path, str]:
    """A repository with one large pack and a small tail, and a desk with an unsaved edit;
    returns the repository, the desk and the checkpoint to restore."""
    rng = random.Random(6)
    desk, repository = tmp_path / 'desk', tmp_path / 'repo.git'
    cps = Checkpoints(repository, desk)
    put(desk, 'notes/large.bin', '-', rng.randbytes(400_000))  # a pack no append rewrites
    for i in range(6):
        put(desk, f'notes/n{i}.md', '-', b'note %d, first version\n' % i)
    put(desk, 'Memory.md', '-', b'# memory\n')
    cps.snapshot('large')
    put(desk, 'memory/old/only-before.md', '-', b'deleted by the restore\n')
    target = cps.snapshot('the checkpoint to restore')  # a small pack of its own: the tail
    assert target is not None
    for i in range(4):
        put(desk, f'notes/n{i}.md', '-', b'note %d, second version\n' % i)
    (desk / 'memory' / 'old' / 'only-before.md').unlink()
    put(desk, 'memory/new/only-after.md', '-', b'made after the checkpoint\n')
    assert cps.snapshot('appended to the tail') is not None
    put(desk, 'Memory.md', '-', b'# memory\nan edit no checkpoint holds yet\n')
    packfolder.wait_for_removals()
    return repository, desk, target


def _steps(repository: Path, desk: Path, target: str, durable: bool) -> None:
    """What is recorded: a restore, then a snapshot of a large new file (append, roll-up)."""
    cps = Checkpoints(repository, desk, durable=durable)
    cps.restore(target)
    put(desk, 'notes/added.bin', '-', random.Random(7).randbytes(150_000))
    assert cps.snapshot('a large new file') is not None
    packfolder.wait_for_removals()


def _outcome(repository: Path, desk: Path, target: str) -> None:
    """What the steps leave: the desk as the target plus the new file, in one pack."""
    packs = list((repository / 'objects' / 'pack').glob('pack-*.pack'))
    assert len(packs) == 1, 'the roll-up did not run'
    state = version_of(repository, target)
    assert {p: v for p, v in files_of(desk).items() if p != 'notes/added.bin'} == state


@pytest.mark.parametrize('durable', [True, False], ids=['durable', 'not-durable'])
def test_the_flush_order_in_this_process(tmp_path: Path, durable: bool) -> None:
    repository, desk, target = _prepared(tmp_path)
    with recording() as events:
        _steps(repository, desk, target, durable)
    _outcome(repository, desk, target)
    check_orders(events, Places(repository, desk), durable)


_TRACED = """
import sys
from pathlib import Path
sys.path.insert(0, {tests!r})
from ops.test_flush_order import _steps
_steps(Path({repository!r}), Path({desk!r}), {target!r}, {durable!r})
"""


@pytest.mark.parametrize('durable', [True, False], ids=['durable', 'not-durable'])
def test_the_flush_order_under_strace(tmp_path: Path, durable: bool) -> None:
    why = strace_works()
    if why is not None:
        pytest.skip(why)
    repository, desk, target = _prepared(tmp_path)
    code = _TRACED.format(
        tests=str(Path(__file__).resolve().parents[1]),
        repository=str(repository),
        desk=str(desk),
        target=target,
        durable=durable,
    )
    events = traced(code, output=tmp_path / 'strace.out')
    _outcome(repository, desk, target)
    check_orders(events, Places(repository, desk), durable)


@pytest.mark.parametrize('durable', [True, False], ids=['durable', 'not-durable'])
def test_a_compaction_makes_its_pack_durable_before_removing_the_old_ones(
    tmp_path: Path, durable: bool
) -> None:
    repository, desk, _ = _prepared(tmp_path)
    before = files_of(repository / 'objects' / 'pack')
    with recording() as events:
        Checkpoints(repository, desk, durable=durable).prune()
        packfolder.wait_for_removals()
    assert files_of(repository / 'objects' / 'pack') != before
    assert pack_before_removal(events, Places(repository, desk)) >= 4


def test_a_clone_makes_its_pack_durable_before_the_branch_names_it(tmp_path: Path) -> None:
    repository, desk, _ = _prepared(tmp_path)
    copy, copy_desk = tmp_path / 'copy.git', tmp_path / 'copy'
    with recording() as events:
        Checkpoints.clone(str(repository), copy, copy_desk)
    assert pack_before_branch(events, Places(copy, copy_desk)) >= 2


def test_a_new_repository_is_durable_before_its_head(tmp_path: Path) -> None:
    desk, repository = tmp_path / 'desk', tmp_path / 'repo.git'
    put(desk, 'Memory.md', '-', b'# memory\n')
    with recording() as events:
        assert Checkpoints(repository, desk).snapshot('the first') is not None
    assert folders_before_head(events, repository) >= 5
    copy, copy_desk = tmp_path / 'copy.git', tmp_path / 'copy'
    with recording() as events:
        Checkpoints.clone(str(repository), copy, copy_desk)
    assert folders_before_head(events, copy) >= 5


def test_a_seal_is_one_pack_append_durable_before_the_seal_moves(tmp_path: Path) -> None:
    """The agent's write sealed: its new file's blob, the folders above it and the seal's
    commit go into the store in one append (one pack and its index, each flushed before its
    rename, the folder after), and only then does the seal ref move."""
    repository, desk, _ = _prepared(tmp_path)
    put(desk, 'notes/fresh/by-the-agent.md', '-', b'written by the agent\n')
    cps = Checkpoints(repository, desk)
    with recording() as events:
        sealed = cps.seal()
    places = Places(repository, desk)
    creations = _pack_creations(events, places)
    assert len(creations) == 2, f'{len(creations) // 2} appends for one seal'
    moves = _renames_to(events, places.seal)
    assert len(moves) == 1, 'the seal ref did not move once'
    for at in creations:
        assert at < moves[0], 'the seal ref moved before its objects were stored'
        assert _durable_rename(events, at, moves[0]) is None
    assert version_of(repository, sealed) == files_of(desk)
