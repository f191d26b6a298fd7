"""Shell commands through the hooks: a real ``bash -c`` between the events before and after.

Claude Code's ``Bash`` and Gemini CLI's ``run_shell_command``: a snapshot before, and after
the command a checkpoint of what it changed, credited to the session's turn and sealed, so
``restore-turn`` rewinds it and ``--keep-external`` counts it as the agent's.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from helpers.builders import write
from helpers.cli import checkpoints
from helpers.hookrun import event, hook, ok

from trading_checkpoints import Checkpoint, Checkpoints
from trading_checkpoints.agent.hooks import programs
from trading_checkpoints.store.repo import ShadowRepo
from trading_checkpoints.workspace import Workspace

CLAUDE_SESSION = '3f1c2b7e-8d4a-4c55-9a0e-2b6f7c1d9e42'


def run_tool(payload: bytes, cwd: Path) -> None:
    """What the harness does between the two events: the command, through bash -c."""
    tool_input = json.loads(payload)['tool_input']
    folder = cwd / tool_input.get('dir_path', '.')
    subprocess.run(['bash', '-c', tool_input['command']], cwd=folder, check=True, timeout=60)


def messages(repository: Path) -> list[str]:
    repo = ShadowRepo.open(repository)
    assert repo is not None
    try:
        return [info.message for info in repo.history()]
    finally:
        repo.close()


def started(workspace: Path, files: dict[str, str]) -> Checkpoints:
    """Desk main holding ``files``, and one checkpoint of them."""
    cps = Workspace(workspace).desk('main')
    for path, text in files.items():
        write(cps.desk_directory, path, text)
    cps.snapshot('start')
    return cps


def newest(workspace: Path) -> Checkpoint:
    return Workspace(workspace).desk('main').list(1)[0]


def json_of(*args: str, workspace: Path) -> dict:
    done = checkpoints(*args, '--json', workspace=workspace)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_claude_bash_command_is_captured_and_rewound(workspace: Path, desk: Path) -> None:
    cps = started(workspace, {'Memory.md': 'v0\n', 'notes/keep.md': 'k0\n'})
    ok(hook(event('claude_user_prompt_submit.json', workspace)))
    before = event('claude_pre_tool_use_bash.json', workspace)
    ok(hook(before))
    run_tool(before, workspace)  # echo hi > desks/main/Memory.md
    ok(hook(event('claude_post_tool_use_bash.json', workspace)))

    taken = newest(workspace)
    assert (taken.tool, taken.paths, taken.action) == ('claude:Bash', ('Memory.md',), 'captured')
    assert taken.reason == 'after Bash: echo' and taken.turn.startswith(CLAUDE_SESSION + '-')
    assert cps.status().basis == 'sealed' and cps.status().external == ()
    assert not any('hi >' in m or 'desks/main' in m for m in messages(cps.repository_directory))

    # restore-turn puts Memory.md back; it is undoable.
    done = json_of('restore-turn', taken.turn, workspace=workspace)
    assert done['written'] == ['Memory.md'] and (desk / 'Memory.md').read_text() == 'v0\n'
    assert checkpoints('restore', done['before_id'], workspace=workspace).returncode == 0
    assert (desk / 'Memory.md').read_text() == 'hi\n'

    # --keep-external: the command's change is the agent's (reverted), a person's stays.
    write(desk, 'notes/keep.md', 'k1 by a person\n')
    done = json_of('restore-turn', taken.turn, '--keep-external', workspace=workspace)
    assert done['written'] == ['Memory.md'] and done['kept'] == [] and done['external'] == []
    assert (desk / 'Memory.md').read_text() == 'v0\n'
    assert (desk / 'notes/keep.md').read_text() == 'k1 by a person\n'
    assert checkpoints('restore', done['before_id'], workspace=workspace).returncode == 0

    # A person's edit of the file the command wrote: refused, or kept with --keep-external.
    write(desk, 'Memory.md', 'hi, and a person\n')
    refused = checkpoints('restore-turn', taken.turn, workspace=workspace)
    assert refused.returncode == 1 and 'Memory.md' in refused.stderr
    assert (desk / 'Memory.md').read_text() == 'hi, and a person\n'
    kept = checkpoints('restore-turn', taken.turn, '--keep-external', workspace=workspace)
    assert kept.returncode == 0, kept.stderr
    assert '  K Memory.md  (kept: changed outside the agent)' in kept.stdout
    assert (desk / 'Memory.md').read_text() == 'hi, and a person\n'


def test_a_gemini_shell_command_in_a_desk_folder(workspace: Path, desk: Path) -> None:
    cps = started(workspace, {'Memory.md': 'v0\n', 'notes/old.md': 'old\n'})
    ok(hook(event('gemini_before_agent.json', workspace)), stdout='{}\n')
    before = event('gemini_before_tool_shell_write.json', workspace)
    ok(hook(before), stdout='{}\n')
    run_tool(before, workspace)
    ok(hook(event('gemini_after_tool_shell_write.json', workspace)), stdout='{}\n')

    taken = newest(workspace)
    assert taken.tool == 'gemini:run_shell_command' and taken.action == 'captured'
    assert taken.paths == ('notes/old.md', 'notes/shell.md')
    assert taken.reason == 'after run_shell_command: mkdir, printf, rm'
    [turn] = cps.turns()
    assert turn.label == 'Rewrite the plan in notes/plan.md' and taken in turn.checkpoints
    result = cps.restore_turn(turn.turn_id)
    assert result.written == ('notes/old.md',) and result.deleted == ('notes/shell.md',)
    assert (desk / 'notes/old.md').read_text() == 'old\n'


def test_a_command_that_changes_nothing_leaves_no_checkpoint(workspace: Path, desk: Path) -> None:
    cps = started(workspace, {'Memory.md': 'v0\n', 'notes/a.md': 'a\n'})
    listed = cps.list(None)
    ok(hook(event('gemini_before_agent.json', workspace)), stdout='{}\n')  # a turn opens
    before = event('gemini_before_tool_shell.json', workspace)  # ls notes
    ok(hook(before), stdout='{}\n')  # no row for the turn's start: nothing changed
    assert cps.list(None) == listed
    run_tool(before, workspace / 'desks' / 'main')
    after = event('gemini_before_tool_shell.json', workspace, hook_event_name='AfterTool')
    ok(hook(after), stdout='{}\n')
    assert cps.list(None) == listed and cps.turns() == []


def test_a_command_run_from_the_workspace_concerns_every_desk(workspace: Path, desk: Path) -> None:
    research = workspace / 'desks' / 'research'
    write(desk, 'Memory.md', 'm0\n')
    write(research, 'Memory.md', 'r0\n')
    command = 'echo m1 > desks/main/Memory.md; echo r1 > desks/research/notes.md; mkdir -p x'
    before = event('claude_pre_tool_use_bash.json', workspace, tool_input={'command': command})
    ok(hook(before))
    run_tool(before, workspace)
    ok(hook(event('claude_post_tool_use_bash.json', workspace, tool_input={'command': command})))
    ws = Workspace(workspace)
    assert ws.desk('main').list(1)[0].paths == ('Memory.md',)
    assert ws.desk('research').list(1)[0].action != 'captured', 'notes.md is not tracked'
    assert ws.desk('research').list(1)[0].reason == 'before Bash: echo, mkdir'


def test_the_command_line_is_never_stored(workspace: Path, desk: Path) -> None:
    secret = 'ghp_abcdefghijklmnopqrstuvwxyz0123456789'
    command = (
        f'GITHUB_TOKEN={secret} printf "x\\n" > desks/main/Memory.md '
        f'&& echo "Authorization: Bearer sk-live-1234" >/dev/null # https://me:pw@host\n'
        f'{secret}'
    )
    write(desk, 'Memory.md', 'v0\n')
    before = event('claude_pre_tool_use_bash.json', workspace, tool_input={'command': command})
    ok(hook(before))
    subprocess.run(['bash', '-c', command.split('\n')[0]], cwd=workspace, check=True)
    ok(hook(event('claude_post_tool_use_bash.json', workspace, tool_input={'command': command})))
    repository = workspace / '.checkpoints' / 'main.git'
    text = '\n'.join(messages(repository))
    assert 'after Bash: printf, echo' in text
    for leak in (secret, 'sk-live', 'me:pw', 'Authorization', 'GITHUB_TOKEN'):
        assert leak not in text


@pytest.mark.parametrize(
    'command, shown',
    [
        ('ls -la notes', 'ls'),
        ('cd notes && sed -i s/a/b/ x.md | tee y', 'cd, sed, tee'),
        ('A=1 B=2 /usr/bin/python3 - <<EOF\nprint(1)\nEOF', 'python3'),
        ('curl -H "Authorization: Bearer abc" https://u:p@h', 'curl'),
        ('ghp_abcdefghijklmnopqrstuvwxyz0123456789 --x', 'a command'),
        ('', 'a command'),
        (None, 'a command'),
        # Quotes are respected: a separator inside them starts no command, so the word after
        # it (a token, say) is an argument, never a program name.
        ('echo "a|b" ; echo TOKEN123 > /dev/null', 'echo'),
        ("printf 'x;TOKEN123' && grep -c 'y&&TOKEN456' f", 'printf, grep'),
        ('git commit -m "fix; TOKEN123" # x; TOKEN456', 'git'),
        ('echo "unterminated; TOKEN123', 'a command'),
        ('if true; then touch a; fi', 'true, touch'),
        ('for TOKEN123 in a b; do cat $TOKEN123; done', 'cat'),
        (
            ' ; '.join(f'tool{n:02d}' for n in range(30)),
            ', '.join(f'tool{n:02d}' for n in range(10)),
        ),
    ],
)
def test_only_program_names_are_kept(command: object, shown: str) -> None:
    assert programs(command) == shown
