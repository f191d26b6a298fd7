"""A write tool's seal (``toolcalls.after_write``) walks only its declared paths' folders and
those an earlier seal on the same checkpoint changed (``ops/declared.py``): a person's edit
elsewhere made while the tool ran stays the person's; the agent's writes, in any new folders,
from one session or two, are sealed as a walk of the whole desk would seal them; an oversize
write is named. Driven in the test's process on a real desk and repository."""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import pytest
from dulwich.objects import Tree
from dulwich.repo import Repo
from helpers.builders import settled_declared_desk, write

from trading_checkpoints import Checkpoints
from trading_checkpoints.core.trees import blob_id
from trading_checkpoints.desk import walk
from trading_checkpoints.ops import declared, engine, external, toolcalls
from trading_checkpoints.ops.toolcalls import ToolCall
from trading_checkpoints.store import metadata
from trading_checkpoints.store.metadata import Writer
from trading_checkpoints.store.repo import ShadowRepo

ONE, TWO = Writer('t-1', 'S1'), Writer('t-2', 'S2')
TOOL = 'claude:Write'


@pytest.fixture
def cps(workspace: Path, desk: Path) -> Checkpoints:
    return settled_declared_desk(workspace, desk)


def before(cps: Checkpoints, call_id: str, writer: Writer, path: str) -> ToolCall:
    call = ToolCall(call_id, TOOL, writer)
    toolcalls.before_write(cps, call, f'before Write {path}', [path])
    return call


def sealed_tree(cps: Checkpoints) -> bytes:
    repo = ShadowRepo.open(cps.repository_directory)
    assert repo is not None
    try:
        seal = repo.read_ref(external.SEAL_REF)
        assert seal is not None
        return repo.commit_info(seal).tree
    finally:
        repo.close()


def test_a_persons_edit_elsewhere_while_a_write_runs_stays_the_persons(
    cps: Checkpoints, desk: Path
) -> None:
    call = before(cps, 'toolu_1', ONE, 'notes/new.md')
    write(desk, 'memory/people.md', 'Ann\nBob, added by a person\n')
    write(desk, 'notes/new.md', 'by the agent\n')
    toolcalls.after_write(cps.desk_config, call, ['notes/new.md'])
    status = cps.status()
    assert (status.basis, status.external) == ('sealed', ('memory/people.md',))
    assert cps.snapshot('after the write') is not None
    repo = ShadowRepo.open(cps.repository_directory)
    assert repo is not None
    try:
        head = repo.head()
        assert head is not None
        trailers = metadata.trailer_values(repo.commit_info(head).message)
    finally:
        repo.close()
    assert trailers[metadata.WROTE] == ['notes/new.md'], 'the checkpoint credits the write alone'


def test_writes_into_new_folders_are_sealed_as_a_whole_walk_seals_them(
    cps: Checkpoints, desk: Path
) -> None:
    """With no one else writing, over 90 random steps of two sessions, each call's hook
    before, its write and its hook after interleaving with the other's: nothing is ever
    external, and a seal made while the other session's write is not under way is the one a
    seal of the whole desk gives (``Checkpoints.seal``), whatever folders the writes made. (A
    write under way is the other call's: it stays out of this seal, and the calls record
    explains it.)"""
    chooser = random.Random(4)
    folders = ['notes', 'notes/deep', 'notes/deep/er', 'memory', 'memory/new', 'skills/agent']
    begun: dict[Writer, tuple[ToolCall, str]] = {}
    written: set[Writer] = set()
    compared = 0
    for step in range(90):
        writer = chooser.choice([ONE, TWO])
        if writer not in begun:
            path = f'{chooser.choice(folders)}/f{chooser.randrange(6)}.md'
            begun[writer] = (before(cps, f'toolu_{step}', writer, path), path)
        elif writer not in written:
            write(desk, begun[writer][1], f'step {step}\n')
            written.add(writer)
        else:
            call, path = begun.pop(writer)
            written.discard(writer)
            toolcalls.after_write(cps.desk_config, call, [path])
            assert cps.status().external == (), f'step {step}: sealing {path}'
            if not written:
                narrow = sealed_tree(cps)
                cps.seal()
                assert narrow == sealed_tree(cps), f'step {step}: sealing {path}'
                compared += 1
    assert compared >= 10


def test_a_seal_replacing_another_sessions_keeps_its_write(cps: Checkpoints, desk: Path) -> None:
    """Both writes start on the same checkpoint; the first sealed is the other session's, in
    another folder: the second seal walks that folder again, so neither write is external."""
    first = before(cps, 'toolu_1', ONE, 'notes/a.md')
    second = before(cps, 'toolu_2', TWO, 'memory/b.md')
    write(desk, 'notes/a.md', 'by session one\n')
    write(desk, 'memory/b.md', 'by session two\n')
    toolcalls.after_write(cps.desk_config, second, ['memory/b.md'])
    toolcalls.after_write(cps.desk_config, first, ['notes/a.md'])
    status = cps.status()
    assert (status.basis, status.external) == ('sealed', ())
    narrow = sealed_tree(cps)
    cps.seal()
    assert narrow == sealed_tree(cps), 'the state both left, as a walk of the desk finds it'


def test_the_seal_lists_only_the_declared_paths_folders(
    cps: Checkpoints, desk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for number in range(20):
        write(desk, f'memory/day{number}/log.md', f'{number}\n')
    call = before(cps, 'toolu_1', ONE, 'notes/deep/new.md')
    write(desk, 'notes/deep/new.md', 'by the agent\n')
    listed: list[str] = []
    list_folder = walk.list_folder

    def counted(fd: int, folder: str, seen: tuple[int, int]) -> walk.Listing:
        listed.append(folder)
        return list_folder(fd, folder, seen)

    monkeypatch.setattr(walk, 'list_folder', counted)
    toolcalls.after_write(cps.desk_config, call, ['notes/deep/new.md'])
    assert sorted(listed) == ['notes', 'notes/deep'], 'the new folder found in its parent'
    assert cps.status().external == ()


def test_an_oversize_write_is_named_in_its_seal(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    config = repo_dir / 'config'
    config.write_text(config.read_text() + '[checkpoints]\n\tmaxFileSize = 1000\n')
    bloated = b'agent output\n' * 400
    call = before(cps, 'toolu_1', ONE, 'notes/old.md')
    (desk / 'notes' / 'old.md').write_bytes(bloated)
    toolcalls.after_write(cps.desk_config, call, ['notes/old.md'])
    with Repo(str(repo_dir)) as repo:
        message = repo[repo.refs[external.SEAL_REF]].message.decode()
    [value] = metadata.trailer_values(message)[external.OVERSIZE]
    assert value.startswith(f'100644 {blob_id(bloated).decode()} ')
    assert value.endswith(' notes/old.md')


def test_only_folders_a_desk_path_can_name_are_compared(cps: Checkpoints) -> None:
    """Trees read from the repository are untrusted: a folder named ``..``, or with a name
    that is not UTF-8, that differs on both sides is not descended into (no desk folder can
    lie there), and the folders after it are compared all the same."""

    def tree(*entries: tuple[bytes, int, bytes]) -> Tree:
        made = Tree()
        for name, mode, sha in entries:
            made.add(name, mode, sha)
        return made

    inner_a = tree((b'x', 0o100644, blob_id(b'a')))
    inner_b = tree((b'x', 0o100644, blob_id(b'b')))
    deeper_a = tree((b'deeper', 0o040000, inner_a.id))
    deeper_b = tree((b'deeper', 0o040000, inner_b.id))
    hostile = (b'..', b'a\xff')  # both sort before 'notes'
    left = tree(*((name, 0o040000, deeper_a.id) for name in (*hostile, b'notes')))
    right = tree(*((name, 0o040000, deeper_b.id) for name in (*hostile, b'notes')))
    repo = ShadowRepo.open(cps.repository_directory)
    assert repo is not None
    try:
        repo.write_objects([inner_a, inner_b, deeper_a, deeper_b, left, right])
        found = declared.differing_folders(repo, left.id, right.id)
        assert found == {'', 'notes', 'notes/deeper'}
        assert declared.differing_folders(repo, left.id, left.id) == set()
    finally:
        repo.close()


def test_trees_nested_deeper_than_python_recurses_are_compared(cps: Checkpoints) -> None:
    """A seal and a checkpoint that differ at the bottom of 1,100 nested folders (a desk may
    hold them: the walks and snapshots do): every folder on the way differs, and the
    comparison says so instead of failing with RecursionError."""
    depth = 1100
    sides = []
    for leaf in (b'a', b'b'):
        made = Tree()
        made.add(b'leaf.md', 0o100644, blob_id(leaf))
        objects = [made]
        for _ in range(depth):
            outer = Tree()
            outer.add(b'd', 0o040000, objects[-1].id)
            objects.append(outer)
        top = Tree()
        top.add(b'notes', 0o040000, objects[-1].id)
        sides.append([*objects, top])
    repo = ShadowRepo.open(cps.repository_directory)
    assert repo is not None
    try:
        repo.write_objects([tree for side in sides for tree in side])
        found = declared.differing_folders(repo, sides[0][-1].id, sides[1][-1].id)
    finally:
        repo.close()
    deepest = 'notes/' + '/'.join(['d'] * depth)
    assert len(found) == depth + 2 and {'', 'notes', deepest} <= found


def test_a_write_through_a_hard_link_or_a_linked_folder_is_sealed_whole(
    cps: Checkpoints, desk: Path
) -> None:
    """A write tool's seal walks only the folders of its paths unless a write there can reach
    elsewhere, as the hook before judged it: the agent's write through a second name of a
    file in another folder (a hard link, a linked folder) is the agent's under both names,
    and undo takes it back."""
    one = Writer('t-1', 'S1')
    first = ToolCall('toolu_1', 'claude:Edit', one)
    toolcalls.before_write(cps, first, 'before Edit notes/x.md', ['notes/x.md'])
    write(desk, 'notes/x.md', 'x\n')
    toolcalls.after_write(cps.desk_config, first, ['notes/x.md'])
    os.link(desk / 'memory/people.md', desk / 'notes/people-link.md')
    os.symlink('../memory', desk / 'notes/mem')
    assert cps.snapshot('second names made') is not None
    time.sleep(1.05 - time.time() % 1)
    assert cps.snapshot('the stat cache written again') is None  # no racy row left
    before = (desk / 'memory/people.md').read_text()
    for number, path in enumerate(('notes/people-link.md', 'notes/mem/people.md'), 2):
        call = ToolCall(f'toolu_{number}', 'claude:Edit', one)
        toolcalls.before_write(cps, call, f'before Edit {path}', [path])
        with open(desk / path, 'a') as handle:  # in place, as an edit keeps the file
            handle.write(f'added by the agent through {path}\n')
        toolcalls.after_write(cps.desk_config, call, [path])
        status = cps.status()
        assert (status.basis, status.external) == ('sealed', ()), path
    cps.undo()
    cps.undo()
    assert (desk / 'memory/people.md').read_text() == before


@pytest.mark.parametrize('coarse', [True, False], ids=['whole-second-mtime', 'saved-just-before'])
def test_a_persons_edit_of_a_racy_file_elsewhere_while_the_tool_runs_stays_theirs(
    cps: Checkpoints, desk: Path, coarse: bool
) -> None:
    """A person saves memory/people.md just before a turn's first write (its row in the stat
    cache the hook before writes is racy: changed too close to the cache's writing), then
    edits it in place while the tool writes notes/a.md. The seal walks notes/ only and does not
    read the racy file elsewhere again: the edit stays the person's, and undo keeps it."""
    people = desk / 'memory/people.md'
    write(desk, 'memory/people.md', 'Ann\nv1 by a person\n')
    if coarse:  # as `touch -d` or a coarse file system leaves it: racy for two seconds
        whole = int(time.time())
        os.utime(people, (whole, whole))
    call = ToolCall('toolu_1', 'claude:Write', Writer('t-1', 'S1'))
    toolcalls.before_write(cps, call, 'before Write notes/a.md', ['notes/a.md'])
    if not coarse:
        time.sleep(0.5)  # the tool runs, long past the racy window of a fine mtime
    write(desk, 'notes/a.md', 'by the agent\n')
    with open(people, 'r+') as handle:
        handle.write('Ann\nv2 by a person\n')
    toolcalls.after_write(cps.desk_config, call, ['notes/a.md'])
    status = cps.status()
    assert (status.basis, status.external) == ('sealed', ('memory/people.md',))
    cps.undo()
    assert not (desk / 'notes/a.md').exists()
    assert people.read_text() == 'Ann\nv2 by a person\n'


def test_a_declared_path_that_cannot_be_a_tracked_desk_path_adds_no_folder(
    cps: Checkpoints,
) -> None:
    """Only the folders of tracked desk paths are walked: one climbing out (``..``), or
    outside the tracked paths, adds nothing."""
    with engine.locked(cps.desk_config, light=True, verb='seal') as session:
        found = declared.since(session, ['notes/../../x.md', 'scratch/a.md', 'notes/a/b.md'])
    assert (found.touched, found.skipped) == (frozenset({'notes', 'notes/a'}), ())


def test_an_edit_beside_the_write_or_of_a_tracked_file_is_sealed_with_it(
    cps: Checkpoints, desk: Path
) -> None:
    """What the seal cannot tell apart (docs/history.md says so): a person's edit in a folder
    the write's path lies in, or of a tracked path that is a file itself (looked at by every
    scan), is sealed as the agent's."""
    call = before(cps, 'toolu_1', ONE, 'notes/new.md')
    write(desk, 'notes/old.md', 'old, edited by a person\n')
    write(desk, 'Memory.md', 'v1 by a person\n')
    write(desk, 'notes/new.md', 'by the agent\n')
    toolcalls.after_write(cps.desk_config, call, ['notes/new.md'])
    assert cps.status().external == ()
