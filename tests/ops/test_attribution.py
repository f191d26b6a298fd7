"""Telling the agent's changes from others': the basis in the edge cases, declared paths spelled
in other ways, seals and announcements as git shows them, and the state a keeping restore
leaves for undo.

Each test pins a check found by ``benchmarks/mutation.py`` (external), and runs in this
process, where mutation testing sees the calls.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from helpers.builders import write
from helpers.gitcli import fsck, git, needs_git
from helpers.reading import files_of, seal_id_of, seal_of, tree_reads, version_of

from trading_checkpoints import Checkpoints

SEAL = 'refs/checkpoints/sealed'


def test_the_first_snapshot_has_nothing_to_attribute(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'a')
    result = cps.snapshot_with_result('first')
    assert (result.basis, result.external) == ('none', ())


def test_a_sealed_desk_left_as_it_was_is_measured_against_the_seal(
    cps: Checkpoints, desk: Path
) -> None:
    write(desk, 'Memory.md', 'a')
    cps.snapshot('first')
    write(desk, 'notes/agent.md', 'written by the agent')
    cps.seal()
    status = cps.status()
    assert (status.basis, status.external) == ('sealed', ())
    # A restore seals the state it wrote and records the desk's stat: the desk's tree is
    # known at once, and is the seal's.
    first = cps.list()[0].checkpoint_id
    cps.restore(first)
    status = cps.status()
    assert (status.basis, status.external, status.changes) == ('sealed', (), ())


def test_a_pull_that_moved_the_branch_under_an_unchanged_desk(tmp_path: Path) -> None:
    """The desk is what the stat cache says, but the branch moved (a pull): the desk's tree
    is known and is not the newest checkpoint's, so the differences are measured."""
    source_desk = tmp_path / 'source'
    write(source_desk, 'Memory.md', 'first\n')
    write(source_desk, 'notes/a.md', 'first\n')
    source = Checkpoints(tmp_path / 'source.git', source_desk)
    source.snapshot('first')
    desk = tmp_path / 'desks' / 'main'
    cps, _, _ = Checkpoints.clone(str(tmp_path / 'source.git'), tmp_path / 'main.git', desk)
    assert cps.status().changes == ()  # the stat cache now knows the desk
    write(source_desk, 'Memory.md', 'changed by the other side\n')
    write(source_desk, 'notes/a.md', 'changed by the other side\n')
    source.snapshot('declares notes', paths=['notes'])
    assert cps.pull().new is not None
    status = cps.status()
    assert status.basis == 'declared'
    assert status.external == ('Memory.md',)  # notes/a.md differs too, but was declared


@pytest.mark.parametrize(
    'declared',
    ['notes\\INDEX', 'notes/INDEX', './notes/INDEX/', 'notes/./INDEX', 'x/../notes/INDEX'],
)
def test_a_declared_path_in_other_spellings(cps: Checkpoints, desk: Path, declared: str) -> None:
    write(desk, 'Memory.md', 'a')
    cps.snapshot('before write_file', paths=[declared])
    write(desk, 'notes/INDEX', 'the agent')
    status = cps.status()
    assert (status.basis, status.external) == ('declared', ())
    write(desk, 'notes/INDEX.old', 'a person')
    assert cps.status().external == ('notes/INDEX.old',)


@pytest.mark.parametrize('declared', ['../elsewhere.md', '.', './', 'notes/../..', '..'])
def test_paths_declared_outside_the_desk_say_nothing(
    cps: Checkpoints, desk: Path, declared: str
) -> None:
    write(desk, 'Memory.md', 'a')
    cps.snapshot('before', paths=[declared])
    write(desk, 'Memory.md', 'b')
    status = cps.status()
    assert (status.basis, status.external) == ('unknown', ())


@needs_git
def test_a_seal_holds_every_file_the_agent_wrote(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    """A file too large to keep in memory is written to the store while it is read."""
    write(desk, 'Memory.md', 'a')
    cps.snapshot('first')
    large = os.urandom(9 << 20)
    write(desk, 'notes/large.bin', large)
    seal = cps.seal()
    assert git(repo_dir, 'rev-parse', '--short=7', SEAL).strip() == seal
    fsck(repo_dir)
    assert git(repo_dir, 'cat-file', '-s', f'{SEAL}:notes/large.bin').strip() == str(len(large))
    assert git(repo_dir, 'log', '-1', '--format=%B', SEAL) == 'sealed: the state the agent left\n\n'


def test_sealing_a_desk_equal_to_the_newest_checkpoint_names_it(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    write(desk, 'Memory.md', 'a')
    newest = cps.snapshot('first')
    assert cps.seal() == newest
    assert (repo_dir / SEAL).read_text().strip()[:7] == newest


@needs_git
def test_a_keeping_restore_seals_without_moving_the_branch_and_undo_reverses_it(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    write(desk, 'Memory.md', 'start')
    write(desk, 'notes/a.md', 'start')
    first = cps.snapshot('first')
    write(desk, 'notes/a.md', 'the agent')
    cps.seal()
    write(desk, 'Memory.md', 'a person')
    before_restore = files_of(desk)
    result = cps.restore_with_result(first, force=False)
    assert [path for path, _ in result.kept] == ['Memory.md']
    assert (desk / 'notes' / 'a.md').read_text() == 'start'
    # The seal records the restored state with the kept file as the agent left it.
    message = git(repo_dir, 'log', '-1', '--format=%B', SEAL)
    assert message.startswith('sealed: the restored state as the agent left it\n\n')
    newest = cps.list()[0]
    assert newest.reason == f'restored {first}' and newest.checkpoint_id == result.restored_id
    assert version_of(repo_dir, newest.checkpoint_id)['Memory.md'] == ('-', b'a person')
    # Undo reverses the restore (the agent's step), the person's edit still kept.
    undone = cps.undo()
    assert undone.action == 'undo'
    assert files_of(desk) == before_restore


def test_a_seal_naming_a_missing_commit_is_no_seal(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    write(desk, 'Memory.md', 'a')
    newest = cps.snapshot('first')
    (repo_dir / SEAL).parent.mkdir(parents=True, exist_ok=True)
    (repo_dir / SEAL).write_text('1' * 40 + '\n')  # pruned by another tool, say
    write(desk, 'Memory.md', 'b')
    status = cps.status()
    assert (status.newest_id, status.basis) == (newest, 'unknown')


@needs_git
def test_a_seal_whose_tree_is_gone_is_no_seal(cps: Checkpoints, desk: Path, repo_dir: Path) -> None:
    """A seal commit on the newest checkpoint whose tree another tool pruned counts as no seal
    (its files cannot be read): status answers, and the next seal replaces it."""
    write(desk, 'Memory.md', 'a')
    first = cps.snapshot('first')
    head = git(repo_dir, 'rev-parse', 'HEAD').strip()
    body = (
        f'tree {"1" * 40}\nparent {head}\n'
        'author A <a@example.com> 0 +0000\ncommitter A <a@example.com> 0 +0000\n\nsealed\n'
    )
    made = subprocess.run(
        [
            'git',
            '--git-dir',
            str(repo_dir),
            'hash-object',
            '-t',
            'commit',
            '-w',
            '--literally',
            '--stdin',
        ],
        input=body,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (repo_dir / SEAL).parent.mkdir(parents=True, exist_ok=True)
    (repo_dir / SEAL).write_text(made + '\n')
    write(desk, 'Memory.md', 'b')
    status = cps.status()
    assert (status.newest_id, status.basis) == (first, 'unknown')
    cps.seal()
    assert git(repo_dir, 'rev-parse', SEAL).strip() != made


@needs_git
@pytest.mark.parametrize('kind', ['blob', 'tree'])
def test_a_seal_naming_an_object_that_is_no_commit_is_no_seal(
    cps: Checkpoints, desk: Path, repo_dir: Path, kind: str
) -> None:
    """A seal ref another tool (or a hostile repository) points at a blob or a tree counts as
    no seal, as a missing one does: every verb goes on, the seal is replaced by the next."""
    write(desk, 'Memory.md', 'a')
    first = cps.snapshot('first')
    blob = git(repo_dir, 'rev-parse', 'HEAD:Memory.md').strip()
    target = blob if kind == 'blob' else git(repo_dir, 'rev-parse', 'HEAD^{tree}').strip()
    (repo_dir / SEAL).parent.mkdir(parents=True, exist_ok=True)
    (repo_dir / SEAL).write_text(target + '\n')
    write(desk, 'Memory.md', 'b')
    status = cps.status()
    assert (status.newest_id, status.basis) == (first, 'unknown')
    second = cps.snapshot('second')
    assert second is not None and cps.list()[0].checkpoint_id == second
    cps.seal()
    assert git(repo_dir, 'cat-file', '-t', SEAL).strip() == 'commit'
    assert cps.restore_with_result(first).restored_id is not None
    assert (desk / 'Memory.md').read_text() == 'a'


@needs_git
def test_announcements_follow_the_declarations_of_no_op_snapshots(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    write(desk, 'Memory.md', 'a')
    cps.snapshot('first', paths=['notes'])
    # Nothing changed: the declaration is announced on the newest checkpoint.
    assert cps.snapshot('before write_file Memory.md: TAX', paths=['Memory.md']) is None
    assert _seal_message(repo_dir) == (
        'before write_file Memory.md: TAX\n\n'
        'Checkpoint-Path: Memory.md\n'
        'Checkpoint-Action: announce\n'
    )
    write(desk, 'Memory.md', 'the agent')
    assert cps.status().external == ()
    assert cps.snapshot('after the write', paths=['Memory.md']) is not None
    # Two no-ops with other declarations: each replaces the announcement.
    for declared in (['notes/x.md'], ['notes/y.md']):
        assert cps.snapshot(f'before write_file {declared[0]}', paths=declared) is None
        assert _seal_message(repo_dir).startswith(
            f'before write_file {declared[0]}\n\nCheckpoint-Path: {declared[0]}\n'
        )
    # A no-op without trailers gets its own trailer block.
    before = seal_id_of(repo_dir)
    assert cps.snapshot('TAX') is None
    assert _seal_message(repo_dir) == 'TAX\n\nCheckpoint-Action: announce\n'
    assert seal_id_of(repo_dir) != before


def _seal_message(repo_dir: Path) -> str:
    """The newest seal's message as the product reads it (an announcement is kept beside the
    seal ref, not as a git object)."""
    seal = seal_of(repo_dir)
    assert seal is not None
    return seal.message


def test_a_snapshot_of_the_state_the_agent_sealed_reads_no_tree(
    cps: Checkpoints, desk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tool call after an agent's write finds the desk as the seal holds it: the desk's
    tree, built from the scan, is the seal's, so neither the seal's tree nor the newest
    checkpoint's is read (at 10,000 files, most of that event). An edit made after the seal
    is still told apart: then the seal's tree is read."""
    for index in range(20):
        write(desk, f'notes/n{index}.md', f'note {index}\n')
    cps.snapshot('first')
    reads = tree_reads(monkeypatch)
    for round_ in range(2):
        write(desk, f'notes/agent{round_}.md', 'written by the agent\n')
        cps.seal()
        if round_:
            write(desk, 'notes/n3.md', 'a person edited it after the seal\n')
        reads.clear()
        result = cps.snapshot_with_result(f'before the next tool {round_}', tool='Bash')
        assert result.checkpoint_id is not None
        assert (result.basis, result.external) == ('sealed', ('notes/n3.md',) if round_ else ())
        assert bool(reads) == bool(round_)
