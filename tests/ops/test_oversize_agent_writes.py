"""A file the agent grew past the size limit is still the agent's change.

The file is small at the checkpoint; a declared write bloats it past ``maxFileSize`` and the
agent seals. Snapshots leave it out (it is too large to store), yet a restore that keeps
changes made outside the agent (``force=False``, ``--keep-external``) must revert it, saving its
bytes in the pre-snapshot; a person's later edit of it is still kept.
"""

from __future__ import annotations

import json
from pathlib import Path

from helpers.builders import write
from helpers.cli import checkpoints
from helpers.reading import version_of

from trading_checkpoints import Checkpoints

LIMIT = 1000
BLOATED = b'agent output\n' * 400  # 5,200 bytes: over the limit


def _limited(workspace: Path, repo_dir: Path) -> None:
    """A desk whose repository caps stored files at ``LIMIT`` bytes (as `git config` would)."""
    config = repo_dir / 'config'
    config.write_text(config.read_text() + f'[checkpoints]\n\tmaxFileSize = {LIMIT}\n')


def _agent_bloats_the_notes(workspace: Path, desk: Path, repo_dir: Path) -> str:
    """The checkpoint with a small notes/log.md, then the agent's declared, sealed write that
    grows it past the limit (every step a real command); returns the checkpoint's id."""
    write(desk, 'Memory.md', 'memory\n')
    write(desk, 'notes/log.md', 'small log\n')
    taken = checkpoints('snapshot', '-m', 'first', '--json', workspace=workspace)
    assert taken.returncode == 0, taken.stderr
    _limited(workspace, repo_dir)
    declared = checkpoints(
        'snapshot', '-m', 'before write_file', '--path', 'notes/log.md', workspace=workspace
    )
    assert declared.returncode == 0, declared.stderr
    write(desk, 'notes/log.md', BLOATED)
    sealed = checkpoints('seal', workspace=workspace)
    assert sealed.returncode == 0, sealed.stderr
    return json.loads(taken.stdout)['id']


def test_a_keeping_restore_reverts_a_file_the_agent_grew_past_the_limit(
    workspace: Path, desk: Path, repo_dir: Path
) -> None:
    first = _agent_bloats_the_notes(workspace, desk, repo_dir)
    status = checkpoints('status', '--json', workspace=workspace)
    assert json.loads(status.stdout)['external'] == [], 'the agent wrote it'
    done = checkpoints('restore', first, '--keep-external', '--json', workspace=workspace)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result['written'] == ['notes/log.md'] and result['kept'] == []
    assert (desk / 'notes/log.md').read_bytes() == b'small log\n'
    assert version_of(repo_dir, result['before_id'])['notes/log.md'] == ('-', BLOATED)


def test_the_library_reverts_it_with_force_off(workspace: Path, desk: Path, repo_dir: Path) -> None:
    first = _agent_bloats_the_notes(workspace, desk, repo_dir)
    result = Checkpoints(repo_dir, desk).restore_with_result(first, force=False)
    assert result.written == ('notes/log.md',) and result.kept == ()
    assert (desk / 'notes/log.md').read_bytes() == b'small log\n'
    assert version_of(repo_dir, result.before_id)['notes/log.md'] == ('-', BLOATED)


def test_a_person_editing_the_bloated_file_afterwards_is_still_kept(
    workspace: Path, desk: Path, repo_dir: Path
) -> None:
    first = _agent_bloats_the_notes(workspace, desk, repo_dir)
    edited = BLOATED + b'a person added this line\n'
    write(desk, 'notes/log.md', edited)
    result = Checkpoints(repo_dir, desk).restore_with_result(first, force=False)
    assert [path for path, _ in result.kept] == ['notes/log.md']
    assert (desk / 'notes/log.md').read_bytes() == edited
    # Sealing again names the person's version as the state the agent left.
    Checkpoints(repo_dir, desk).seal()
    again = Checkpoints(repo_dir, desk).restore_with_result(first, force=False)
    assert again.written == ('notes/log.md',)
    assert (desk / 'notes/log.md').read_bytes() == b'small log\n'
