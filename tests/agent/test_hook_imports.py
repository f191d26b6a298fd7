"""What a hook process imports: an event with nothing to do imports no more than it needs to
find that out, and no event imports click (the hook command runs for every tool call)."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import HOOK_EVENTS
from helpers.builders import checkpoints_in, write
from helpers.hookrun import event
from helpers.processes import python

from trading_checkpoints.agent.hooks import dispatch
from trading_checkpoints.ops import calls

# The hook run in this process (no command server), then the modules it imported, as JSON.
RUN = """\
import json, sys
from trading_checkpoints.agent.hooks.process import main
status = main([])
with open(sys.argv[1], 'w') as out:
    json.dump({'status': status, 'modules': sorted(sys.modules)}, out)
"""
HEAVY = ('trading_checkpoints.checkpoints', 'trading_checkpoints.store', 'dulwich', 'click')


def run_hook(payload: bytes, workspace: Path) -> list[str]:
    """The modules an in-process hook run imported (the run must succeed)."""
    out = workspace.parent / 'modules.json'
    done = python(RUN, str(out), stdin=payload, text=False, cwd=workspace)
    assert done.returncode == 0, done.stderr
    found = json.loads(out.read_text())
    assert found['status'] == 0, done.stderr
    return found['modules']


def heavy(modules: list[str]) -> list[str]:
    return [name for name in modules if name.startswith(HEAVY)]


def test_a_prompt_or_a_stop_with_no_call_at_work_imports_no_store(
    workspace: Path, desk: Path
) -> None:
    write(desk, 'Memory.md', 'v0')
    checkpoints_in(workspace).snapshot('first')
    prompt = event('claude_user_prompt_submit.json', workspace)
    assert heavy(run_hook(prompt, workspace)) == []
    stop = event('claude_user_prompt_submit.json', workspace, hook_event_name='Stop')
    assert heavy(run_hook(stop, workspace)) == []
    # A write left at work when the agent stops is closed: then the store is read.
    run_hook(event('claude_pre_tool_use_write.json', workspace), workspace)
    repository = checkpoints_in(workspace).repository_directory
    assert [c.tool for c in calls.load(repository).values() if c.open] == ['claude:Write']
    assert 'trading_checkpoints.store.repo' in run_hook(stop, workspace)
    assert not [c for c in calls.load(repository).values() if c.open]


def test_no_hook_event_imports_click(workspace: Path, desk: Path) -> None:
    write(desk, 'Memory.md', 'v0')
    for name in ('claude_pre_tool_use_write.json', 'claude_post_tool_use_write.json'):
        modules = run_hook(event(name, workspace), workspace)
        assert 'trading_checkpoints.store.repo' in modules  # the event did its work
        assert not [m for m in modules if m.split('.')[0] == 'click']


def test_the_hooks_look_for_the_call_record_where_calls_keeps_it() -> None:
    assert '/'.join(dispatch.CALLS_RECORD) == calls.NAME


# The operations of verbs no hook event runs (blame, rewinding a turn, the library's guard):
# the facade imports each when its verb runs.
NOT_FOR_HOOKS = tuple(
    f'trading_checkpoints.ops.{name}' for name in ('blame', 'credits', 'guard', 'rewind')
)


def real_event(name: str, project: Path) -> bytes:
    """An event the real harness sent (``hook_events/real/``), in this test's project."""
    raw = (HOOK_EVENTS / 'real' / f'{name}.json').read_text()
    for key, value in (('PROJECT', project), ('HOME', project / 'home'), ('PROJECT_SLUG', 'p')):
        raw = raw.replace('${' + key + '}', str(value))
    return raw.encode()


def test_a_tool_event_imports_no_verb_it_does_not_run(tmp_path: Path) -> None:
    project = tmp_path / 'project'
    workspace = project / 'workspace'
    desk = workspace / 'desks' / 'main'
    write(desk, 'Memory.md', 'v0')
    checkpoints_in(workspace).snapshot('first')
    run_hook(real_event('claude-UserPromptSubmit', project), project)
    for name, change in (
        ('claude-write-PreToolUse', None),
        ('claude-write-PostToolUse', 'notes/new.md'),
        ('claude-shell-PreToolUse', None),
        ('claude-shell-PostToolUse', 'Memory.md'),
    ):
        if change:
            write(desk, change, f'written before {name}')
        modules = run_hook(real_event(name, project), project)
        assert 'trading_checkpoints.store.repo' in modules, name  # the event did its work
        assert [m for m in modules if m.startswith(NOT_FOR_HOOKS)] == [], name
    held = checkpoints_in(workspace).list()
    assert len(held) == 4, [c.message for c in held]  # first, before Write, before Bash, after Bash
