"""The world the crash sweeps run their operations in, and the checks after a crash.

``tests/product/test_kill_points.py`` (a process killed at each file-system call) and
``tests/product/test_power_loss.py`` (each state a power cut can leave) copy one world per
run: a desk with history (a restore chain in it), unsaved edits and untracked files, a backup
remote, and a folder outside of everything. After the crash, :func:`check` runs the checks
both share: the next operation succeeds (a snapshot after a snapshot, a restore completed
after another writer's edit, the same prune, a compaction, the clone again), ``git fsck
--full --strict`` is clean, no checkpoint listed before is lost (a prune drops only what its
limit drops), the desk holds its state before or after the operation, and no byte outside
the desk and the repository changed.
"""

from __future__ import annotations

import random
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from helpers.builders import checkpoints_in, desk_in, new_workspace, put, repository_in, write
from helpers.gitcli import fsck
from helpers.reading import ALLOW, State, files_of, tracked, untracked, version_of
from trading_checkpoints import Checkpoints
from trading_checkpoints.errors import RepositoryExistsError
from trading_checkpoints.ops import journal
from trading_checkpoints.ops.listing import list_checkpoints
from trading_checkpoints.store.pack.folder import wait_for_removals

KEEP = 3  # the prune's limit (the driver's ``prune(keep=3)``)
ANOTHER_WRITER = b'written by another agent after the crash\n'


@dataclass
class World:
    """The template every run copies: a desk with history, unsaved edits and untracked files,
    a backup remote, and a folder outside of everything."""

    root: Path
    ids: list[str] = field(default_factory=list)  # all checkpoints, newest first
    desk_before: State = field(default_factory=dict)
    target_state: State = field(default_factory=dict)  # what the restore puts back


def build(root: Path) -> World:
    workspace = new_workspace(root / 'ws')
    desk = desk_in(workspace)
    cps = checkpoints_in(workspace)
    rng = random.Random(23)
    write(desk, 'scratch.txt', 'untracked, never touched\n')
    write(desk, 'memory_extra/keep.md', 'outside the allowlist\n')
    for turn in range(6):
        write(desk, 'Memory.md', f'memory after turn {turn}\n')
        write(desk, f'notes/n{turn % 3}.md', f'note {turn}\n' * 20)
        write(desk, f'memory/m{turn}.md', rng.randbytes(300).hex())
        cps.snapshot(f'turn {turn}')
        if turn == 3:
            cps.restore(cps.list()[2].checkpoint_id)  # a restore chain in the history
    for i in range(3):
        write(desk, f'notes/n{i}.md', 'unsaved work\n')
    (root / 'ws' / 'desks' / 'main' / 'notes' / 'n2.md').unlink()
    write(root / 'outside', 'precious.txt', 'never touched\n')
    cps.add_remote('backup', str(root / 'remote.git'))
    cps.push('backup')
    world = World(root)
    world.ids = [c.checkpoint_id for c in cps.list(None)]
    target = world.ids[-2]
    (root / 'target').write_text(target + '\n')
    world.desk_before = files_of(desk)
    world.target_state = version_of(repository_in(workspace), target)
    return world


def copy(world: World, name: str) -> Path:
    """A fresh copy of the world beside it."""
    copied = world.root.parent / name
    shutil.rmtree(copied, ignore_errors=True)
    shutil.copytree(world.root, copied, symlinks=True)
    return copied


def remove(run: Path) -> None:
    """Removes a copy once checked (after this process's pack remover is done in it)."""
    wait_for_removals()
    shutil.rmtree(run)


def paths(root: Path, desk_name: str = 'main') -> tuple[Path, Path]:
    """The repository and the desk folder of a copy."""
    workspace = root / 'ws'
    return repository_in(workspace, desk_name), desk_in(workspace, desk_name)


def ids_of(repository: Path) -> list[str]:
    return [c.checkpoint_id for c in list_checkpoints(repository, None)]


@dataclass(frozen=True)
class Expected:
    """What an operation leaves: the desk's tracked files after it (a restore's target),
    whether the next operation may find a restore to complete, and the paths another writer
    wrote meanwhile (whatever of their bytes reached the disk is theirs, not compared)."""

    after: State
    restores: bool = False
    others: frozenset[str] = frozenset()

    def mine(self, state: State) -> State:
        return {path: value for path, value in state.items() if path not in self.others}


def check(operation: str, world: World, run: Path, where: str, expected: Expected) -> None:
    """The checks after one crash (see the module notes); raises AssertionError naming it."""
    repository, desk = paths(run)
    if operation != 'clone':
        fsck(repository, strict_clean=False)
    if operation in ('prune', 'compaction'):
        _after_prune(world, run, where, operation == 'prune')
    elif operation == 'clone':
        _after_clone(world, run, where)
    elif expected.restores:
        _after_restore(world, run, where, expected.after)
    else:
        _after_snapshot(world, run, where, expected)
    assert not journal.pending(repository), f'{where}: the restore record is still there'
    fsck(repository)
    now = files_of(desk)
    assert untracked(now) == untracked(world.desk_before), f'{where}: an untracked file changed'
    assert files_of(run / 'outside') == files_of(world.root / 'outside'), f'{where}: outside'
    assert files_of(run / 'remote.git') == files_of(world.root / 'remote.git'), f'{where}: remote'


def _kept_history(world: World, repository: Path, where: str) -> list[str]:
    ids = ids_of(repository)
    assert ids[len(ids) - len(world.ids) :] == world.ids, f'{where}: a checkpoint was lost'
    return ids


def _after_snapshot(world: World, run: Path, where: str, expected: Expected) -> None:
    repository, desk = paths(run)
    Checkpoints(repository, desk).snapshot_with_result('the next operation')
    now = expected.mine(tracked(files_of(desk)))
    states = (expected.mine(tracked(world.desk_before)), expected.mine(expected.after))
    assert now in states, f'{where}: the desk changed'
    _kept_history(world, repository, where)


def _after_restore(world: World, run: Path, where: str, after: State) -> None:
    """The next operation completes an interrupted restore. Before it, another writer edits a
    file the restore planned, so the completion first saves the desk as found; after it, a
    prune to one checkpoint must keep the restore's chain down to its pre-snapshot."""
    repository, desk = paths(run)
    record = journal.read(repository, ALLOW) if journal.pending(repository) else None
    edited = record.changes[0].path if record is not None and record.changes else None
    if edited is not None:
        put(desk, edited, '-', ANOTHER_WRITER)
    Checkpoints(repository, desk).snapshot_with_result('the next operation')
    now = tracked(files_of(desk))
    assert now in (tracked(world.desk_before), after), f'{where}: a half state'
    ids = _kept_history(world, repository, where)
    if record is None:
        return
    assert now == after, f'{where}: the restore was not completed'
    if edited is not None:
        new = ids[: len(ids) - len(world.ids)]
        saved = [version_of(repository, sha).get(edited) for sha in new]
        assert ('-', ANOTHER_WRITER) in saved, f"{where}: the other writer's bytes were lost"
    Checkpoints(repository, desk).prune(keep=1)
    kept = ids_of(repository)
    assert any(record.before.startswith(sha) for sha in kept), f'{where}: undo point pruned'
    undo_point = version_of(repository, record.before)
    assert undo_point == tracked(world.desk_before), f'{where}: the undo point lost bytes'


def _after_prune(world: World, run: Path, where: str, again: bool) -> None:
    """The same prune, then a compaction (which drops what the cut left unreachable); after a
    compaction, a compaction."""
    repository, desk = paths(run)
    if again:
        Checkpoints(repository, desk).prune(keep=KEEP)
        fsck(repository)
    Checkpoints(repository, desk).prune()
    ids = ids_of(repository)
    if not again:
        assert ids == world.ids, f'{where}: a compaction changed the history'
    assert ids == world.ids[: len(ids)], f'{where}: the history changed'
    assert len(ids) >= KEEP, f'{where}: more was pruned than the limit drops'
    for sha in ids:
        Checkpoints(repository, desk).show(sha, 'Memory.md')  # every kept one reads back


def _after_clone(world: World, run: Path, where: str) -> None:
    """The clone again: it resumes an unfinished one; a finished one it refuses, and then the
    repository must hold every checkpoint already."""
    copy_repository, copy_desk = paths(run, 'copy')
    try:
        Checkpoints.clone(str(run / 'remote.git'), copy_repository, copy_desk)
    except RepositoryExistsError:
        pass
    fsck(copy_repository)
    assert ids_of(copy_repository) == world.ids, f'{where}: the clone lacks checkpoints'
    newest = version_of(paths(run)[0], world.ids[0])
    assert tracked(files_of(copy_desk)) == newest, f'{where}: the clone is not the newest'
