"""diff, show and log: what each checkpoint holds, against another or against the desk."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers.builders import write
from helpers.gitcli import git, needs_git
from hypothesis import given, settings
from hypothesis import strategies as st

from trading_checkpoints import CheckpointError, Checkpoints, Diff, UnknownCheckpointError
from trading_checkpoints.store import changestats

PNG = b'\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR' + bytes(range(256))


def kinds(diff: Diff) -> dict[str, str]:
    return {change.path: change.kind for change in diff.changes}


def test_diff_between_two_checkpoints_names_every_kind(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'one\ntwo\nthree\n')
    write(desk, 'notes/gone.md', 'bye\n')
    write(desk, 'notes/run.sh', 'echo hi\n')
    write(desk, 'notes/link-or-file', 'plain\n')
    first = cps.snapshot('first')
    write(desk, 'Memory.md', 'one\nTWO\nthree\n')
    (desk / 'notes/gone.md').unlink()
    write(desk, 'memory/new.md', 'fresh\n')
    os.chmod(desk / 'notes/run.sh', 0o755)
    (desk / 'notes/link-or-file').unlink()
    os.symlink('run.sh', desk / 'notes/link-or-file')
    second = cps.snapshot('second')
    assert first and second
    diff = cps.diff(first, second)
    assert (diff.from_id, diff.to_id) == (first, second)
    assert kinds(diff) == {
        'Memory.md': 'modified',
        'memory/new.md': 'added',
        'notes/gone.md': 'deleted',
        'notes/link-or-file': 'type-changed',
        'notes/run.sh': 'mode-changed',
    }
    by_path = {change.path: change for change in diff.changes}
    memory = by_path['Memory.md']
    assert memory.patch is not None
    assert '-two' in memory.patch and '+TWO' in memory.patch
    assert memory.patch.startswith('--- a/Memory.md\n+++ b/Memory.md\n')
    assert (memory.added_lines, memory.removed_lines) == (1, 1)
    assert by_path['memory/new.md'].patch.startswith('--- /dev/null\n+++ b/memory/new.md')
    assert by_path['notes/gone.md'].patch.startswith('--- a/notes/gone.md\n+++ /dev/null')
    mode = by_path['notes/run.sh']
    assert (mode.old_mode, mode.new_mode, mode.patch) == (0o100644, 0o100755, None)
    assert by_path['notes/link-or-file'].new_mode == 0o120000
    # The reverse diff mirrors it.
    back = kinds(cps.diff(second, first))
    assert back['memory/new.md'] == 'deleted' and back['notes/gone.md'] == 'added'


def test_diff_against_the_desk_includes_unsnapshotted_changes(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'a\n')
    first = cps.snapshot('first')
    assert first
    assert cps.diff(first).changes == ()
    write(desk, 'Memory.md', 'b\n')
    write(desk, 'notes/x.md', 'x\n')
    write(desk, 'scratch.txt', 'untracked, never reported\n')
    diff = cps.diff(first)
    assert diff.to_id is None
    assert kinds(diff) == {'Memory.md': 'modified', 'notes/x.md': 'added'}
    assert '+b' in diff.changes[0].patch
    # Nothing was written: the desk diff takes no snapshot.
    assert len(cps.list()) == 1


def test_binary_files_are_reported_as_binary(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'memory/chart.png', PNG)
    first = cps.snapshot('first')
    write(desk, 'memory/chart.png', PNG + b'\x00more')
    write(desk, 'memory/latin1.txt', 'caf\xe9'.encode('latin-1'))
    second = cps.snapshot('second')
    assert first and second
    diff = cps.diff(first, second)
    by_path = {change.path: change for change in diff.changes}
    assert by_path['memory/chart.png'].kind == 'modified'
    assert by_path['memory/chart.png'].binary and by_path['memory/chart.png'].patch is None
    assert by_path['memory/latin1.txt'].binary
    assert cps.show(first, 'memory/chart.png') == PNG


def test_final_newline_only_change_still_gets_a_patch(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'same')
    first = cps.snapshot('first')
    write(desk, 'Memory.md', 'same\n')
    assert first
    [change] = cps.diff(first).changes
    assert change.kind == 'modified' and change.patch and 'final newline' in change.patch


def test_diff_with_unknown_ids(cps: Checkpoints, desk: Path) -> None:
    with pytest.raises(CheckpointError, match='no checkpoints yet'):
        cps.diff('abcdef0')
    write(desk, 'Memory.md', 'a')
    first = cps.snapshot('first')
    assert first
    with pytest.raises(UnknownCheckpointError, match="no checkpoint 'abcdef0'"):
        cps.diff('abcdef0')
    with pytest.raises(UnknownCheckpointError, match='not a checkpoint id'):
        cps.diff(first, 'HEAD~1')


def test_show_returns_bytes_as_they_were(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'notes/plan.md', 'v1\n')
    first = cps.snapshot('first')
    write(desk, 'notes/plan.md', 'v2\n')
    os.symlink('plan.md', desk / 'notes/alias')
    second = cps.snapshot('second')
    assert first and second
    assert cps.show(first, 'notes/plan.md') == b'v1\n'
    assert cps.show(second, './notes/plan.md') == b'v2\n'
    assert cps.show(second, 'notes/alias') == b'plan.md'  # a symlink shows its target


def test_show_refuses_missing_folders_untracked_and_unsafe_paths(
    cps: Checkpoints, desk: Path
) -> None:
    write(desk, 'notes/plan.md', 'v1\n')
    first = cps.snapshot('first')
    assert first
    with pytest.raises(CheckpointError, match="holds no file 'notes/never.md'"):
        cps.show(first, 'notes/never.md')
    with pytest.raises(CheckpointError, match='is a folder'):
        cps.show(first, 'notes')
    with pytest.raises(CheckpointError, match='not tracked'):
        cps.show(first, 'scratch.txt')
    with pytest.raises(CheckpointError, match='not a usable desk path'):
        cps.show(first, '../outside')
    with pytest.raises(UnknownCheckpointError):
        cps.show('1234567', 'notes/plan.md')


def test_log_lists_changed_paths_and_filters_by_path(cps: Checkpoints, desk: Path) -> None:
    assert cps.log() == []
    write(desk, 'Memory.md', 'a')
    one = cps.snapshot('one', tool='write_file', paths=['notes/a.md'], turn='t1')
    write(desk, 'notes/a.md', 'a')
    two = cps.snapshot('two')
    write(desk, 'Memory.md', 'b')
    write(desk, 'notes/deep/b.md', 'b')
    three = cps.snapshot('three')
    (desk / 'notes/a.md').unlink()
    four = cps.snapshot('four')
    entries = cps.log()
    assert [e.checkpoint.checkpoint_id for e in entries] == [four, three, two, one]
    assert [e.changed for e in entries] == [
        ('notes/a.md',),
        ('Memory.md', 'notes/deep/b.md'),
        ('notes/a.md',),
        ('Memory.md',),
    ]
    oldest = entries[-1].checkpoint
    assert (oldest.tool, oldest.paths, oldest.turn) == ('write_file', ('notes/a.md',), 't1')
    assert [e.checkpoint.checkpoint_id for e in cps.log('notes/a.md')] == [four, two]
    assert [e.checkpoint.checkpoint_id for e in cps.log('notes')] == [four, three, two]
    assert [e.changed for e in cps.log('notes/deep')] == [('notes/deep/b.md',)]
    assert [e.checkpoint.checkpoint_id for e in cps.log('Memory.md', limit=1)] == [three]
    assert cps.log('notes/never-existed.md') == []
    assert cps.log(limit=0) == []
    with pytest.raises(CheckpointError, match='not tracked'):
        cps.log('scratch.txt')
    with pytest.raises(CheckpointError, match='limit'):
        cps.log(limit=-1)


def test_log_marks_restore_commits(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'a')
    one = cps.snapshot('one')
    write(desk, 'Memory.md', 'b')
    assert one
    cps.restore(one)
    actions = [e.action for e in cps.log()]
    assert actions == ['restore', 'before-restore', None]


@needs_git
def test_git_reads_the_trailers_of_restore_commits(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'a')
    one = cps.snapshot('one')
    write(desk, 'Memory.md', 'b')
    assert one
    cps.restore(one)
    parsed = git(cps.repository_directory, 'log', '-1', '--format=%(trailers)')
    assert 'Checkpoint-Action: restore' in parsed
    assert 'Checkpoint-Target: ' in parsed


def test_diff_limited_to_paths(cps, desk) -> None:
    write(desk, 'notes/a.md', 'a\n')
    write(desk, 'memory/b.md', 'b\n')
    first = cps.snapshot('first')
    write(desk, 'notes/a.md', 'a2\n')
    write(desk, 'memory/b.md', 'b2\n')
    assert cps.diff(first).paths == ('memory/b.md', 'notes/a.md')
    assert cps.diff(first, paths=['notes']).paths == ('notes/a.md',)
    assert cps.diff(first, paths='memory/b.md').paths == ('memory/b.md',)
    with pytest.raises(CheckpointError, match='not tracked'):
        cps.diff(first, paths=['elsewhere'])


def test_list_shows_the_action_of_restore_bookkeeping(cps, desk) -> None:
    write(desk, 'notes/a.md', 'a\n')
    first = cps.snapshot('first')
    write(desk, 'notes/a.md', 'b\n')
    cps.restore(first)
    actions = [item.action for item in cps.list()]
    assert actions == ['restore', 'before-restore', None]


def test_log_says_how_each_path_changed_and_list_or_log_can_take_all(cps, desk) -> None:
    write(desk, 'notes/a.md', 'a\n')
    write(desk, 'notes/b.md', 'b\n')
    cps.snapshot('first')
    write(desk, 'notes/a.md', 'a2\n')
    (desk / 'notes/b.md').unlink()
    write(desk, 'memory/c.md', 'c\n')
    cps.snapshot('second')
    newest, oldest = cps.log(limit=None)
    assert {c.path: c.kind for c in newest.changes} == {
        'memory/c.md': 'added',
        'notes/a.md': 'modified',
        'notes/b.md': 'deleted',
    }
    assert {c.kind for c in oldest.changes} == {'added'}
    assert newest.to_dict()['changes'][0] == {'path': 'memory/c.md', 'kind': 'added'}
    assert len(cps.list(None)) == 2
    with pytest.raises(CheckpointError, match='limit'):
        cps.list(-1)


LINES = st.lists(st.sampled_from([b'', b'a', b'b', b'c', b'# x', b'd e']), max_size=8)


@settings(max_examples=300, deadline=None)
@given(LINES, LINES)
def test_line_counts_are_the_multiset_difference(old: list[bytes], new: list[bytes]) -> None:
    """Each line of the new version beyond its count in the old one is added, and the reverse
    removed, whether lines repeat (blank lines, say) or not."""
    added = sum(max(0, new.count(line) - old.count(line)) for line in set(new))
    removed = sum(max(0, old.count(line) - new.count(line)) for line in set(old))
    blobs = {b'1': b''.join(x + b'\n' for x in old), b'2': b''.join(x + b'\n' for x in new)}
    stats = changestats.count([((0o100644, b'1'), (0o100644, b'2'))], blobs.get)
    assert (stats.files, stats.added, stats.removed) == (1, added, removed)
