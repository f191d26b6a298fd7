"""What a hook event writes: nothing when it has nothing to record, and no commit that the
same event supersedes."""

from __future__ import annotations

import os
from pathlib import Path

from helpers.builders import checkpoints_in, write
from helpers.gitcli import git, needs_git
from helpers.hookrun import event, hook, ok

from trading_checkpoints.store import metadata


def files_of(folder: Path) -> dict[str, tuple[int, int, int]]:
    """Every file and folder under ``folder``: (inode, size, mtime in ns)."""
    found = {}
    for root, dirs, files in os.walk(folder):
        for name in [*dirs, *files]:
            st = os.lstat(os.path.join(root, name))
            found[os.path.relpath(os.path.join(root, name), folder)] = (
                st.st_ino,
                st.st_size,
                st.st_mtime_ns,
            )
    return found


def test_an_event_with_nothing_to_record_writes_nothing(workspace: Path, desk: Path) -> None:
    write(desk, 'Memory.md', 'v0')
    checkpoints_in(workspace).snapshot('first')
    ok(hook(event('claude_user_prompt_submit.json', workspace)))
    before = files_of(workspace)
    for payload in (
        event('claude_user_prompt_submit.json', workspace, hook_event_name='Stop'),
        event('claude_pre_tool_use_read.json', workspace),
    ):
        ok(hook(payload))
        assert files_of(workspace) == before


@needs_git
def test_a_turns_first_write_on_an_unchanged_desk_commits_only_its_start(
    workspace: Path, desk: Path
) -> None:
    """The turn's start is a checkpoint declaring the write's path; no announcement is made
    on the checkpoint before it (the start would supersede it at once)."""
    write(desk, 'Memory.md', 'v0')
    cps = checkpoints_in(workspace)
    cps.snapshot('first')
    repository = cps.repository_directory
    ok(hook(event('claude_user_prompt_submit.json', workspace)))
    count = int(git(repository, 'rev-list', '--all', '--count'))
    ok(hook(event('claude_pre_tool_use_write.json', workspace)))
    assert int(git(repository, 'rev-list', '--all', '--count')) == count + 1
    start = cps.list()[0]
    assert start.turn is not None and start.reason.startswith('before Write')
    message = git(repository, 'log', '-1', '--format=%B', 'main')
    assert metadata.parse(message).paths == ('notes/plan.md',)
    # The write is the turn's: sealed after it, credited to it at the next checkpoint.
    write(desk, 'notes/plan.md', '# Plan\n\n- merge into Memory.md\n')
    ok(hook(event('claude_post_tool_use_write.json', workspace)))
    cps.snapshot('after')
    after = git(repository, 'log', '-1', '--format=%B', 'main')
    assert metadata.trailer_values(after).get(metadata.WROTE_BY) == [start.turn]
