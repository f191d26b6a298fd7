"""Checkpoint-before-write guards: the decorator and the context manager."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from helpers.builders import write

from trading_checkpoints import CheckpointError, Checkpoints, CheckpointWarning


def make_write_file(cps: Checkpoints, **options):
    @cps.before_write('write_file', **options)
    def write_file(path: str, content: str) -> str:
        target = Path(path) if Path(path).is_absolute() else cps.desk_directory / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
        return 'ok'

    return write_file


def test_decorator_snapshots_the_pre_image_with_metadata(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'v1')
    write_file = make_write_file(cps)
    assert write_file('Memory.md', 'v2') == 'ok'
    assert (desk / 'Memory.md').read_text() == 'v2'
    [item] = cps.list()
    assert item.reason == 'before write_file Memory.md'
    assert (item.tool, item.paths, item.turn) == ('write_file', ('Memory.md',), None)
    cps.restore(item.checkpoint_id)
    assert (desk / 'Memory.md').read_text() == 'v1', 'the checkpoint holds the state before'


def test_decorator_reads_keyword_and_absolute_paths(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'v1')
    write_file = make_write_file(cps)
    write_file(content='v2', path=str(desk / 'notes' / '..' / 'Memory.md'))
    write_file(path='notes/plan.md', content='p')
    newest, oldest = cps.list()
    assert oldest.paths == ('Memory.md',), 'absolute paths inside the desk are made relative'
    assert newest.reason == 'before write_file notes/plan.md'
    assert newest.paths == ('notes/plan.md',)


def test_several_path_arguments_and_lists(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'notes/a.md', 'a')

    @cps.before_write('move_file', path_arg=('source', 'targets'))
    def move_file(source: str, targets: list[str]) -> None:
        for target in targets:
            write(desk, target, (desk / source).read_text())
        (desk / source).unlink()

    move_file('notes/a.md', ['notes/b.md', 'memory/c.md'])
    [item] = cps.list()
    assert item.tool == 'move_file'
    assert item.paths == ('notes/a.md', 'notes/b.md', 'memory/c.md')
    assert item.reason == 'before move_file notes/a.md notes/b.md memory/c.md'


def test_tool_name_defaults_to_the_function_name(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'v1')

    @cps.before_write()
    def append_memory(path: str) -> None:
        with open(desk / path, 'a') as handle:
            handle.write('more')

    append_memory('Memory.md')
    assert cps.list()[0].tool == 'append_memory'


def test_untracked_write_is_allowed_but_noted(
    cps: Checkpoints, desk: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write(desk, 'Memory.md', 'v1')
    write_file = make_write_file(cps)
    with caplog.at_level(logging.WARNING, logger='trading_checkpoints.ops.guard'):
        write_file('scratch.txt', 'untracked')
    assert (desk / 'scratch.txt').read_text() == 'untracked'
    assert cps.list() == [], 'nothing tracked to protect: no snapshot'
    assert 'scratch.txt' in caplog.text and 'outside the tracked paths' in caplog.text


def test_mixed_targets_note_the_untracked_ones_in_the_reason(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'v1')
    with cps.guard('sync', tool='sync', paths=['Memory.md', 'scratch.txt', '../outside.md']):
        write(desk, 'Memory.md', 'v2')
    [item] = cps.list()
    assert item.reason == ('before sync (untracked, not checkpointed: scratch.txt, ../outside.md)')
    assert item.paths == ('Memory.md', 'scratch.txt', '../outside.md')


def test_path_outside_the_desk_counts_as_untracked(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'v1')
    guard = cps.guard('write_file ../desks/main/../../x.md').__enter__()
    assert guard.untracked == ('../desks/main/../../x.md',)
    assert guard.checkpoint_id is None and cps.list() == []


def test_context_manager_infers_tool_and_path(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'v1')
    with cps.guard('write_file Memory.md') as guard:
        write(desk, 'Memory.md', 'v2')
    assert guard.tool == 'write_file' and guard.paths == ('Memory.md',)
    [item] = cps.list()
    assert guard.checkpoint_id == item.checkpoint_id
    assert (item.reason, item.tool, item.paths) == (
        'before write_file Memory.md',
        'write_file',
        ('Memory.md',),
    )


def test_unchanged_desk_takes_no_new_checkpoint(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'v1')
    with cps.guard('write_file Memory.md') as first:
        pass
    with cps.guard('write_file Memory.md') as second:
        pass
    assert first.checkpoint_id is not None and second.checkpoint_id is None
    assert len(cps.list()) == 1


def test_failed_snapshot_never_blocks_the_write(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    desk = tmp_path / 'desk'
    write(desk, 'Memory.md', 'v1')
    (tmp_path / 'repo.git').write_text('not a repository')  # the snapshot must fail
    cps = Checkpoints(tmp_path / 'repo.git', desk)
    write_file = make_write_file(cps)
    # Seen by default (a warning, without any logging set up), and logged.
    with caplog.at_level(logging.WARNING, logger='trading_checkpoints.ops.guard'):
        with pytest.warns(CheckpointWarning, match='could not checkpoint') as warned:
            assert write_file('Memory.md', 'v2') == 'ok'
    assert len(warned) == 1, 'one warning per failed write'
    assert (desk / 'Memory.md').read_text() == 'v2'
    assert 'could not checkpoint' in caplog.text and 'the write goes ahead' in caplog.text
    with pytest.warns(CheckpointWarning, match='the write goes ahead'):
        with cps.guard('write_file Memory.md') as guard:
            pass
    assert isinstance(guard.error, CheckpointError) and guard.checkpoint_id is None


def test_strict_mode_refuses_the_write_when_the_snapshot_fails(tmp_path: Path) -> None:
    desk = tmp_path / 'desk'
    write(desk, 'Memory.md', 'v1')
    (tmp_path / 'repo.git').write_text('not a repository')
    cps = Checkpoints(tmp_path / 'repo.git', desk)
    write_file = make_write_file(cps, strict=True)
    with pytest.raises(CheckpointError, match='not a folder'):
        write_file('Memory.md', 'v2')
    assert (desk / 'Memory.md').read_text() == 'v1', 'strict: the tool never ran'
    with pytest.raises(CheckpointError):
        with cps.guard('write_file Memory.md', strict=True):
            write(desk, 'Memory.md', 'v3')
    assert (desk / 'Memory.md').read_text() == 'v1'


def test_async_tools_are_guarded(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'v1')

    @cps.before_write('write_file')
    async def write_file(path: str, content: str) -> str:
        await asyncio.sleep(0)
        (desk / path).write_text(content)
        return 'done'

    assert asyncio.run(write_file('Memory.md', 'v2')) == 'done'
    [item] = cps.list()
    cps.restore(item.checkpoint_id)
    assert (desk / 'Memory.md').read_text() == 'v1'


def test_missing_path_argument_is_refused_at_decoration(cps: Checkpoints) -> None:
    with pytest.raises(CheckpointError, match="no argument 'path'"):

        @cps.before_write('write_file')
        def write_file(filename: str) -> None: ...


def test_guard_needs_a_description(cps: Checkpoints) -> None:
    with pytest.raises(CheckpointError, match='description'):
        cps.guard('  ')


def test_guard_respects_a_custom_allowlist(tmp_path: Path) -> None:
    desk = tmp_path / 'desk'
    write(desk, 'plan.txt', 'v1')
    cps = Checkpoints(tmp_path / 'repo.git', desk, tracked_paths=('plan.txt',))
    with cps.guard('write_file plan.txt') as tracked:
        write(desk, 'plan.txt', 'v2')
    with cps.guard('write_file Memory.md') as untracked:
        write(desk, 'Memory.md', 'x')
    assert tracked.checkpoint_id is not None and tracked.untracked == ()
    assert untracked.untracked == ('Memory.md',) and untracked.checkpoint_id is None


def test_guard_uses_the_allowlist_the_repository_remembers(tmp_path: Path) -> None:
    desk = tmp_path / 'desk'
    write(desk, 'plan.txt', 'v1')
    Checkpoints(tmp_path / 'repo.git', desk, tracked_paths=('plan.txt',)).snapshot('create')
    default = Checkpoints(tmp_path / 'repo.git', desk)  # left at the default: uses plan.txt
    with default.guard('write_file Memory.md') as guard:
        write(desk, 'Memory.md', 'x')
    assert guard.untracked == ('Memory.md',)
    Checkpoints(tmp_path / 'repo.git', desk, tracked_paths=('plan.txt', 'Memory.md')).snapshot(
        'now tracks Memory.md'
    )
    write(desk, 'Memory.md', 'x2')
    with default.guard('write_file Memory.md') as again:
        write(desk, 'Memory.md', 'y')
    assert again.untracked == () and again.checkpoint_id is not None


def test_absolute_paths_through_a_symlinked_desk_are_recognised(tmp_path: Path) -> None:
    real = tmp_path / 'real-desk'
    write(real, 'Memory.md', 'v1')
    link = tmp_path / 'desk-link'
    link.symlink_to(real, target_is_directory=True)
    cps = Checkpoints(tmp_path / 'repo.git', link)
    with cps.guard('write_file', paths=[str(real / 'Memory.md')]) as guard:
        write(real, 'Memory.md', 'v2')
    assert guard.untracked == () and cps.list()[0].paths == ('Memory.md',)
    assert guard.tool == 'write_file', 'the tool defaults to the first word of the action'
