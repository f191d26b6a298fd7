"""Checkpoints holding paths outside the tracked paths: after ``track --remove``, or from another
tool. Every verb keeps working; those entries are left out of restores and comparisons and
reported (``kept``, with why), as names a tree cannot hold are, and never written.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import HOOK_EVENTS
from helpers.builders import write
from helpers.cli import checkpoints
from helpers.rawobjects import BLOB, TREE, blob, commit, tree
from helpers.reading import files_of, version_of

from trading_checkpoints import Checkpoints
from trading_checkpoints.ops.session import OUTSIDE


def _ok(*args: str, workspace: Path, stdin: str | None = None) -> str:
    done = checkpoints(*args, workspace=workspace, stdin=stdin)
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    assert 'error' not in done.stderr, (args, done.stderr)
    return done.stdout


def test_every_verb_works_after_track_remove(workspace: Path, desk: Path, repo_dir: Path) -> None:
    write(desk, 'Memory.md', 'memory\n')
    write(desk, 'memory/people.md', 'Ann\n')
    write(desk, 'notes/plan.md', 'plan v1\n')
    first = json.loads(_ok('snapshot', '-m', 'one', '--json', workspace=workspace))['id']
    write(desk, 'memory/people.md', 'Ann and Bob\n')
    _ok('snapshot', '-m', 'two', workspace=workspace)
    assert 'checkpoints keep what they hold' in _ok(
        'track', '--remove', 'memory', workspace=workspace
    )
    write(desk, 'notes/plan.md', 'plan v2\n')
    outside = files_of(desk / 'memory')

    status = json.loads(_ok('status', '--json', workspace=workspace))
    assert [change['path'] for change in status['changes']] == ['notes/plan.md']
    assert 'plan v1' in _ok('diff', first, workspace=workspace)
    undo = json.loads(_ok('undo', '--dry-run', '--json', workspace=workspace))
    assert undo['written'] == ['notes/plan.md']
    dry = json.loads(_ok('restore', first, '--dry-run', '--json', workspace=workspace))
    assert dry['written'] == ['notes/plan.md']
    assert {'path': 'memory', 'reason': OUTSIDE} in dry['kept']
    _ok('snapshot', '-m', 'three', workspace=workspace)
    # The agent's hook, strict: a failed checkpoint would block the write.
    event = (HOOK_EVENTS / 'claude_pre_tool_use_write.json').read_text()
    _ok(
        'hook', '--strict', workspace=workspace, stdin=event.replace('${WORKSPACE}', str(workspace))
    )
    write(desk, 'notes/plan.md', '# Plan\n')
    _ok('seal', workspace=workspace)

    done = json.loads(_ok('restore', first, '--json', workspace=workspace))
    assert done['written'] == ['notes/plan.md'] and done['deleted'] == []
    assert {'path': 'memory', 'reason': OUTSIDE} in done['kept']
    assert (desk / 'notes/plan.md').read_text() == 'plan v1\n'
    assert files_of(desk / 'memory') == outside, 'no longer tracked: never written'
    # The commit recording the restore holds what the desk tracks, so nothing is left over.
    restored = version_of(repo_dir, done['restored_id'])
    assert sorted(restored) == ['Memory.md', 'notes/plan.md']
    assert json.loads(_ok('status', '--json', workspace=workspace))['changes'] == []
    assert 'Nothing changed' in _ok('snapshot', workspace=workspace)
    assert done['before_id'] in _ok('list', workspace=workspace)


def _tree_with(repo: Path, where: list[bytes]) -> str:
    """A root tree holding notes/fine.md and one file at ``where``."""
    ok = blob(repo, b'from another tool')
    entry = (BLOB, where[-1], ok)
    for name in reversed(where[:-1]):
        entry = (TREE, name, tree(repo, entry))
    notes = (TREE, b'notes', tree(repo, (BLOB, b'fine.md', blob(repo, b'restored'))))
    return tree(repo, *sorted([notes, entry], key=lambda item: item[1]))


@pytest.mark.parametrize(
    ('where', 'reported'),
    [
        ([b'scratch.txt'], 'scratch.txt'),
        ([b'.bashrc'], '.bashrc'),
        ([b'memory_extra', b'deep', b'x.md'], 'memory_extra'),
        ([b'skills', b'other', b'x.md'], 'skills/other'),
    ],
)
def test_entries_from_another_tool_outside_the_tracked_paths_are_never_written(
    workspace: Path, desk: Path, repo_dir: Path, where: list[bytes], reported: str
) -> None:
    write(desk, 'notes/fine.md', 'mine')
    write(desk, 'scratch.txt', 'untracked, never touched')
    cps = Checkpoints(repo_dir, desk)
    cps.snapshot('mine')
    target = commit(repo_dir, _tree_with(repo_dir, where))
    before = files_of(workspace)
    result = cps.restore_with_result(target)
    assert result.kept == ((reported, OUTSIDE),)
    assert (desk / 'notes/fine.md').read_bytes() == b'restored'
    after = files_of(workspace)
    changed = {p for p in set(before) | set(after) if before.get(p) != after.get(p)}
    assert all(p.startswith(('.checkpoints/', 'desks/main/notes/')) for p in changed), changed
    assert (desk / 'scratch.txt').read_text() == 'untracked, never touched'
    shown = _ok('restore', target[:12], workspace=workspace)
    assert f'K {reported}  (kept: {OUTSIDE})' in shown
