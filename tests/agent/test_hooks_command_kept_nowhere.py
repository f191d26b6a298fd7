"""A shell command's text (it may carry tokens) is kept nowhere: not in a commit message, not in
any object of the repository, not in any file of the workspace (the calls record, the hooks'
state and last events included)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from helpers.builders import write
from helpers.gitcli import GIT, needs_git
from helpers.hookrun import event, hook, ok

SECRET = 'ghp_abcdefghijklmnopqrstuvwxyz0123456789'


def every_byte(workspace: Path) -> bytes:
    """Every file of the workspace, and every object of its repository decompressed."""
    assert GIT is not None
    found = b''.join(p.read_bytes() for p in workspace.rglob('*') if p.is_file())
    repository = workspace / '.checkpoints' / 'main.git'
    found += subprocess.run(
        [GIT, '--git-dir', str(repository), 'cat-file', '--batch-all-objects', '--batch'],
        capture_output=True,
        check=True,
    ).stdout
    return found


@needs_git
def test_a_shell_commands_text_is_kept_nowhere(workspace: Path, desk: Path) -> None:
    command = f'GITHUB_TOKEN={SECRET} printf "x\\n" > desks/main/Memory.md'
    write(desk, 'Memory.md', 'v0\n')
    ok(hook(event('claude_user_prompt_submit.json', workspace)))
    payload = {'command': command}
    ok(hook(event('claude_pre_tool_use_bash.json', workspace, tool_input=payload)))
    subprocess.run(['bash', '-c', command], cwd=workspace, check=True)
    ok(hook(event('claude_post_tool_use_bash.json', workspace, tool_input=payload)))
    assert (desk / 'Memory.md').read_text() == 'x\n'
    kept = every_byte(workspace)
    assert b'after Bash: printf' in kept, 'the objects are read'
    for leak in (SECRET, 'GITHUB_TOKEN'):
        assert leak.encode() not in kept
