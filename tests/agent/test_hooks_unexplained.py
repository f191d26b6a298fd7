"""A change no hooked call explains, made while a shell command runs, cannot be told from the
command's: the hook after the command credits it to the command (and so to the agent's turn),
and ``restore-turn`` rewinds it with the command's own."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.builders import write
from helpers.cli import checkpoints
from helpers.hookrun import event, hook, ok

from trading_checkpoints.workspace import Workspace


def test_a_persons_write_while_a_command_runs_is_credited_to_the_command(
    workspace: Path, desk: Path
) -> None:
    cps = Workspace(workspace).desk('main')
    write(desk, 'Memory.md', 'v0\n')
    write(desk, 'notes/plan.md', 'plan 0\n')
    assert cps.snapshot('start') is not None
    ok(hook(event('claude_user_prompt_submit.json', workspace)))
    ok(hook(event('claude_pre_tool_use_bash.json', workspace)))
    write(desk, 'Memory.md', 'hi\n')  # what the command does: echo hi > desks/main/Memory.md
    write(desk, 'notes/plan.md', 'a person, meanwhile\n')  # no hook sees this
    ok(hook(event('claude_post_tool_use_bash.json', workspace)))

    taken = cps.list(1)[0]
    assert (taken.tool, taken.action) == ('claude:Bash', 'captured')
    assert taken.paths == ('Memory.md', 'notes/plan.md')
    assert cps.status().external == ()
    done = checkpoints('restore-turn', taken.turn or '', '--json', workspace=workspace)
    assert done.returncode == 0, done.stderr
    assert sorted(json.loads(done.stdout)['written']) == ['Memory.md', 'notes/plan.md']
    assert (desk / 'notes/plan.md').read_text() == 'plan 0\n', 'rewound as the command wrote it'
