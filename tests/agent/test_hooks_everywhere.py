"""Hooks installed for every project: silent where no workspace is, a new desk on first write,
and several sessions on one desk, each rewinding its own turn."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from helpers.builders import write
from helpers.cli import checkpoints
from helpers.hookrun import event, hook, ok

from trading_checkpoints.workspace import Workspace

A = 'aaaaaaaa-1111-4000-8000-000000000001'
B = 'bbbbbbbb-2222-4000-8000-000000000002'


def listing(folder: Path) -> list[str]:
    return sorted(
        os.path.relpath(os.path.join(root, name), folder)
        for root, dirs, files in os.walk(folder)
        for name in dirs + files
    )


@pytest.mark.parametrize(
    'name, stdout',
    [
        ('claude_user_prompt_submit.json', ''),
        ('claude_pre_tool_use_write.json', ''),
        ('claude_post_tool_use_write.json', ''),
        ('claude_pre_tool_use_bash.json', ''),
        ('claude_post_tool_use_bash.json', ''),
        ('gemini_before_agent.json', '{}\n'),
        ('gemini_before_tool_write_file.json', '{}\n'),
        ('gemini_before_tool_shell_write.json', '{}\n'),
    ],
)
def test_an_event_outside_any_workspace_does_nothing(
    tmp_path: Path, name: str, stdout: str
) -> None:
    """A project with no workspace above it: exit 0, nothing said, nothing created."""
    project = tmp_path / 'project'
    write(project, 'desks-not/main/Memory.md', 'not a workspace\n')
    write(project, 'notes/plan.md', 'a file the tool writes\n')
    before = listing(tmp_path)
    payload = event(name, project)
    ok(hook(payload, cwd=project), stdout=stdout)
    assert listing(tmp_path) == before


def test_a_write_into_a_new_desk_creates_it(workspace: Path, desk: Path) -> None:
    write(desk, 'Memory.md', 'm0\n')
    target = workspace / 'desks' / 'research' / 'notes' / 'first.md'
    ok(hook(event('claude_user_prompt_submit.json', workspace)))
    before = event(
        'claude_pre_tool_use_write.json', workspace, tool_input={'file_path': str(target)}
    )
    ok(hook(before))
    research = Workspace(workspace).desk('research')
    assert research.desk_directory.is_dir() and research.repository_directory.is_dir()
    [start] = research.list()
    assert start.tool == 'claude:Write' and start.paths == ('notes/first.md',)
    write(research.desk_directory, 'notes/first.md', 'hello\n')  # the tool runs
    ok(
        hook(
            event(
                'claude_post_tool_use_write.json', workspace, tool_input={'file_path': str(target)}
            )
        )
    )
    [turn] = research.turns()
    assert research.restore_turn(turn.turn_id).deleted == ('notes/first.md',)
    assert Workspace(workspace).desk('main').list() == [], 'the other desk is left alone'

    # Not a desk of ours: a hidden folder, or an untracked file, creates nothing.
    for path in ('desks/.cache/notes/x.md', 'desks/other/scratch.txt'):
        payload = event(
            'claude_pre_tool_use_write.json',
            workspace,
            tool_input={'file_path': str(workspace / path)},
        )
        ok(hook(payload))
    assert sorted(os.listdir(workspace / 'desks')) == ['main', 'research']


def agent(session: str, name: str, workspace: Path, **changes: object) -> None:
    """One event of a session, as its harness sends it (and the tool it runs in between)."""
    payload = event(name, workspace, session_id=session, **changes)
    ok(hook(payload))


def write_tool(session: str, workspace: Path, path: str, text: str) -> None:
    target = {'file_path': str(workspace / 'desks' / 'main' / path), 'content': text}
    agent(session, 'claude_pre_tool_use_write.json', workspace, tool_input=target)
    write(workspace / 'desks' / 'main', path, text)
    agent(session, 'claude_post_tool_use_write.json', workspace, tool_input=target)


def bash_tool(session: str, workspace: Path, command: str) -> None:
    tool_input = {'command': command, 'description': 'a shell command'}
    agent(session, 'claude_pre_tool_use_bash.json', workspace, tool_input=tool_input)
    subprocess.run(['bash', '-c', command], cwd=workspace, check=True, timeout=60)
    agent(session, 'claude_post_tool_use_bash.json', workspace, tool_input=tool_input)


def turn_of(workspace: Path, session: str) -> str:
    done = checkpoints('turns', '--json', workspace=workspace)
    [turn] = [t['turn_id'] for t in json.loads(done.stdout) if t['turn_id'].startswith(session)]
    return turn


def test_two_sessions_interleaving_each_rewind_their_own(workspace: Path, desk: Path) -> None:
    write(desk, 'Memory.md', 'm0\n')
    write(desk, 'notes/shared.md', 's0\n')
    Workspace(workspace).desk('main').snapshot('start')
    agent(A, 'claude_user_prompt_submit.json', workspace, prompt='A: write notes')
    agent(B, 'claude_user_prompt_submit.json', workspace, prompt='B: fix the memory')
    write_tool(A, workspace, 'notes/a.md', 'a1\n')
    write_tool(B, workspace, 'Memory.md', 'm1 by B\n')
    bash_tool(A, workspace, 'echo a2 > desks/main/notes/a2.md')
    write_tool(B, workspace, 'notes/b.md', 'b1\n')
    bash_tool(A, workspace, 'echo s1 by A > desks/main/notes/shared.md')
    turn_a, turn_b = turn_of(workspace, A), turn_of(workspace, B)

    done = checkpoints('restore-turn', turn_a, '--json', workspace=workspace)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result['deleted'] == ['notes/a.md', 'notes/a2.md']
    assert result['written'] == ['notes/shared.md']
    assert (desk / 'notes/shared.md').read_text() == 's0\n'
    assert (desk / 'Memory.md').read_text() == 'm1 by B\n' and (desk / 'notes/b.md').exists()
    assert checkpoints('restore', result['before_id'], workspace=workspace).returncode == 0

    # B changes a file A wrote: rewinding A's turn now refuses, naming it, unless forced.
    bash_tool(B, workspace, 'echo s2 by B > desks/main/notes/shared.md')
    refused = checkpoints('restore-turn', turn_a, '--json', workspace=workspace)
    assert refused.returncode == 1
    error = json.loads(refused.stderr)
    assert error['type'] == 'TurnConflictError'
    assert error['fields'] == {
        'paths': ['notes/shared.md'],
        'overrides': ['overwrite', 'keep'],  # --force or --keep-external lets it go ahead
        'turn': turn_a,
    }
    assert (desk / 'notes/a.md').exists(), 'nothing was changed'
    forced = checkpoints('restore-turn', turn_a, '--force', workspace=workspace)
    assert forced.returncode == 0, forced.stderr
    assert 'overwrote 1 file(s) changed outside the agent: notes/shared.md' in forced.stdout
    assert (desk / 'notes/shared.md').read_text() == 's0\n'
    assert not (desk / 'notes/a.md').exists() and (desk / 'notes/b.md').exists()
    assert turn_b != turn_a
