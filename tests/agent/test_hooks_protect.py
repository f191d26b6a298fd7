"""The desk's policy through the hooks, one event at a time (``hooks.run``, in this process), in
each harness's own answer: a write tool aimed at a protected path is denied; what a shell
command changed there is put back right after, and the agent told; a budget overrun is told
once per turn; a person's edits are never reverted. The real harnesses are driven through the
same answers in ``tests/harness/test_protected.py``."""

from __future__ import annotations

import json
import os
import subprocess
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from helpers.builders import checkpoints_in, write
from helpers.faults import ChildOutcome, run_child
from helpers.gitcli import git

from trading_checkpoints import Checkpoints
from trading_checkpoints.agent import watch
from trading_checkpoints.agent.hooks import Options, run
from trading_checkpoints.errors import ProtectedPathError
from trading_checkpoints.ops import putback, toolcalls
from trading_checkpoints.ops.toolcalls import ToolCall
from trading_checkpoints.store.metadata import Writer

SESSIONS = {'claude': 'c0ffee00-0000-4000-8000-000000000001', 'gemini': 'gem-session-0001'}
NAMES = {
    'claude': {'prompt': 'UserPromptSubmit', 'before': 'PreToolUse', 'after': 'PostToolUse'},
    'gemini': {'prompt': 'BeforeAgent', 'before': 'BeforeTool', 'after': 'AfterTool'},
}
TOOLS = {
    'claude': {'write': 'Write', 'edit': 'Edit', 'shell': 'Bash'},
    'gemini': {'write': 'write_file', 'edit': 'replace', 'shell': 'run_shell_command'},
}
LIMITS = 'max position 5\n'


def event(harness: str, which: str, workspace: Path, **fields: Any) -> bytes:
    """A hook event as the harness sends it (``which``: prompt, before, after, failed)."""
    name = 'PostToolUseFailure' if which == 'failed' else NAMES[harness][which]
    data = {
        'session_id': SESSIONS[harness],
        'transcript_path': '/nowhere',
        'cwd': str(workspace),
        'hook_event_name': name,
        **fields,
    }
    return json.dumps(data).encode()


def tool(harness: str, which: str, workspace: Path, kind: str, tool_input: dict, n: int = 1):
    fields: dict[str, Any] = {'tool_name': TOOLS[harness][kind], 'tool_input': tool_input}
    if harness == 'claude':
        fields['tool_use_id'] = f'toolu_{kind}_{n}'
    return run(event(harness, which, workspace, **fields), Options(workspace=workspace))


def answer(reply) -> dict:
    assert reply.code == 0, reply
    return json.loads(reply.stdout) if reply.stdout.strip() else {}


def prompt(harness: str, workspace: Path, text: str = 'tidy the desk') -> None:
    assert run(event(harness, 'prompt', workspace, prompt=text), Options()).code == 0


def shell(harness: str, workspace: Path, command: str, n: int = 1) -> dict:
    """A hooked shell command: the hook before, the command (bash -c, in the workspace), the
    hook after; the answer after (or the denial before, when denied)."""
    tool_input = {'command': command, 'description': 'a command'}
    before = answer(tool(harness, 'before', workspace, 'shell', tool_input, n))
    if before:
        return before
    done = subprocess.run(['bash', '-c', command], cwd=workspace, timeout=60)
    which = 'failed' if done.returncode and harness == 'claude' else 'after'
    return answer(tool(harness, which, workspace, 'shell', tool_input, n))


def denial(harness: str, reply: dict) -> str:
    """The reason of a deny before a tool, checked to be in the harness's own terms."""
    if harness == 'claude':
        said = reply['hookSpecificOutput']
        assert (said['hookEventName'], said['permissionDecision']) == ('PreToolUse', 'deny')
        return said['permissionDecisionReason']
    assert reply['decision'] == 'deny'
    return reply['reason']


def context(harness: str, reply: dict) -> str | None:
    said = reply.get('hookSpecificOutput')
    if said is None:
        return None
    assert said['hookEventName'] == NAMES[harness]['after']
    return said['additionalContext']


@pytest.fixture(params=['claude', 'gemini'])
def harness(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def cps(workspace: Path) -> Checkpoints:
    """Desk main with notes/limits.md protected (and the folder rules/), one checkpoint."""
    cps = checkpoints_in(workspace)
    desk = cps.desk_directory
    write(desk, 'Memory.md', '# Memory\n')
    write(desk, 'notes/limits.md', LIMITS)
    write(desk, 'notes/plan.md', 'plan\n')
    write(desk, 'notes/rules/sizes.md', 'sizes\n')
    cps.snapshot('the person starts')
    cps.protect(['notes/limits.md', 'notes/rules'])
    return cps


# -- before a write tool ---------------------------------------------------------------------


def test_a_write_to_a_protected_file_is_denied_in_the_harness_s_terms(harness, workspace, cps):
    prompt(harness, workspace)
    target = cps.desk_directory / 'notes' / 'limits.md'
    taken = len(cps.list(None))
    reply = answer(tool(harness, 'before', workspace, 'write', {'file_path': str(target)}))
    reason = denial(harness, reply)
    assert 'notes/limits.md is protected on desk' in reason and 'read it but not' in reason
    assert len(cps.list(None)) == taken, 'a denied write takes no checkpoint'
    calls = cps.repository_directory / 'checkpoints' / 'calls'
    assert not calls.exists() or 'limits' not in calls.read_text(), 'nor goes on record'


def test_a_new_file_in_a_protected_folder_is_denied_and_a_neighbour_is_not(harness, workspace, cps):
    desk = cps.desk_directory
    new = answer(
        tool(harness, 'before', workspace, 'write', {'file_path': f'{desk}/notes/rules/x'})
    )
    assert 'notes/rules/x (in the protected folder notes/rules)' in denial(harness, new)
    beside = answer(
        tool(harness, 'before', workspace, 'write', {'file_path': f'{desk}/notes/rules_old/x'})
    )
    assert beside == {}, 'notes/rules covers notes/rules/..., never notes/rules_old'


def test_an_edit_through_a_relative_path_with_dots_is_denied(harness, workspace, cps):
    relative = 'desks/main/notes/plan/../limits.md'  # relative to the event's cwd
    reply = tool(harness, 'before', workspace, 'edit', {'file_path': relative})
    assert 'notes/limits.md is protected' in denial(harness, answer(reply))


def test_a_symlink_into_a_protected_file_is_denied(harness, workspace, cps):
    desk = cps.desk_directory
    os.symlink('limits.md', desk / 'notes' / 'link.md')
    reply = answer(
        tool(harness, 'before', workspace, 'write', {'file_path': f'{desk}/notes/link.md'})
    )
    assert 'notes/limits.md is protected' in denial(harness, reply)


def test_dots_after_a_symlinked_folder_are_applied_where_the_link_leads(harness, workspace, cps):
    """``notes/deep/../sizes.md`` reads as ``notes/sizes.md``; with ``notes/deep`` a link to
    ``rules/sub`` the system writes ``notes/rules/sizes.md``, which is protected."""
    desk = cps.desk_directory
    (desk / 'notes' / 'rules' / 'sub').mkdir()
    os.symlink('rules/sub', desk / 'notes' / 'deep')
    target = f'{desk}/notes/deep/../sizes.md'
    reply = answer(tool(harness, 'before', workspace, 'write', {'file_path': target}))
    assert 'notes/rules/sizes.md' in denial(harness, reply)


def test_a_hard_link_of_a_protected_file_is_that_file(harness, workspace, cps):
    """Two names, one file: as a case-insensitive file system makes ``Limits.md`` of
    ``limits.md``. On a case-sensitive one (this one) another case is another file."""
    desk = cps.desk_directory
    os.link(desk / 'notes' / 'limits.md', desk / 'notes' / 'Limits.md')
    reply = answer(
        tool(harness, 'before', workspace, 'write', {'file_path': f'{desk}/notes/Limits.md'})
    )
    assert 'notes/Limits.md (the same file or folder as notes/limits.md)' in denial(harness, reply)
    other = answer(
        tool(harness, 'before', workspace, 'write', {'file_path': f'{desk}/notes/LIMITS.md'})
    )
    assert other == {}, 'a new file of another case is another file here'


def test_a_symlink_into_another_desk_asks_that_desk_s_policy(harness, workspace, cps):
    other = checkpoints_in(workspace, 'other')
    write(other.desk_directory, 'notes/limits.md', 'other limits\n')
    other.snapshot('start')
    other.protect('notes/limits.md')
    os.symlink('../../other/notes/limits.md', cps.desk_directory / 'notes' / 'theirs.md')
    target = f'{cps.desk_directory}/notes/theirs.md'
    reply = answer(tool(harness, 'before', workspace, 'write', {'file_path': target}))
    assert "protected on desk 'other'" in denial(harness, reply)


def test_an_allowed_write_still_takes_its_checkpoint(harness, workspace, cps):
    prompt(harness, workspace)
    target = f'{cps.desk_directory}/notes/plan.md'
    reply = tool(harness, 'before', workspace, 'write', {'file_path': target})
    assert reply.stdout == ('{}\n' if harness == 'gemini' else '') and reply.code == 0
    assert cps.list(1)[0].tool.endswith(TOOLS[harness]['write'])


# -- after a shell command -------------------------------------------------------------------


def test_a_shell_write_to_a_protected_file_is_put_back_and_told(harness, workspace, cps):
    desk = cps.desk_directory
    prompt(harness, workspace)
    reply = shell(harness, workspace, "printf 'max position 500\\n' > desks/main/notes/limits.md")
    assert reply['decision'] == 'block'
    assert 'notes/limits.md' in reply['reason'] and 'put it back' in reply['reason']
    assert (desk / 'notes' / 'limits.md').read_text() == LIMITS
    # On record: the capture holds the command's change, then a restore puts it back.
    newest, capture = cps.list(2)
    assert capture.action == 'captured' and capture.paths == ('notes/limits.md',)
    assert cps.show(capture.checkpoint_id, 'notes/limits.md') == b'max position 500\n'
    assert newest.action == 'restore' and newest.reason.startswith('put back protected')
    # A person can undo the put-back: the command's version comes back.
    cps.undo()
    assert (desk / 'notes' / 'limits.md').read_text() == 'max position 500\n'


def test_a_new_file_a_command_left_in_a_protected_folder_is_removed(harness, workspace, cps):
    desk = cps.desk_directory
    reply = shell(
        harness,
        workspace,
        'echo x > desks/main/notes/rules/new.md && rm desks/main/notes/rules/sizes.md',
    )
    assert reply['decision'] == 'block'
    assert not (desk / 'notes' / 'rules' / 'new.md').exists()
    assert (desk / 'notes' / 'rules' / 'sizes.md').read_text() == 'sizes\n'


def test_a_command_that_failed_is_put_back_too(workspace, cps):
    """Claude Code sends PostToolUseFailure, which has no block decision: the reason goes as
    additional context."""
    reply = shell('claude', workspace, 'echo 9 > desks/main/notes/limits.md; exit 1')
    said = reply['hookSpecificOutput']
    assert (
        said['hookEventName'] == 'PostToolUseFailure' and 'put it back' in said['additionalContext']
    )
    assert (cps.desk_directory / 'notes' / 'limits.md').read_text() == LIMITS


def test_a_command_leaving_protected_paths_alone_changes_nothing_else(harness, workspace, cps):
    desk = cps.desk_directory
    reply = shell(harness, workspace, 'echo more >> desks/main/notes/plan.md')
    assert 'decision' not in reply
    assert (desk / 'notes' / 'plan.md').read_text() == 'plan\nmore\n'
    assert cps.list(1)[0].action == 'captured'


def test_a_person_s_edit_of_a_protected_file_stays(harness, workspace, cps):
    desk = cps.desk_directory
    write(desk, 'notes/limits.md', 'max position 7, says the person\n')  # no hook sees it
    shell(harness, workspace, 'echo more >> desks/main/notes/plan.md')
    assert (desk / 'notes' / 'limits.md').read_text() == 'max position 7, says the person\n'
    watch.capture(cps)  # checkpoints watch records a person's edit; it reverts nothing
    write(desk, 'notes/limits.md', 'max position 8, says the person\n')
    assert watch.capture(cps).checkpoint_id is not None
    assert (desk / 'notes' / 'limits.md').read_text() == 'max position 8, says the person\n'


def test_a_change_the_watcher_records_mid_command_is_put_back_all_the_same(workspace, cps):
    """The command's change may be in a checkpoint before its hook after runs (the watcher
    captured it): what is put back is the checkpoint before the command, on the call's record."""
    desk = cps.desk_directory
    tool_input = {'command': 'echo 9 > desks/main/notes/limits.md', 'description': 'x'}
    prompt('claude', workspace)
    assert answer(tool('claude', 'before', workspace, 'shell', tool_input)) == {}
    write(desk, 'notes/limits.md', '9\n')
    assert watch.capture(cps).checkpoint_id is not None
    reply = answer(tool('claude', 'after', workspace, 'shell', tool_input))
    assert reply['decision'] == 'block'
    assert (desk / 'notes' / 'limits.md').read_text() == LIMITS


# -- the policy itself: a person's act -----------------------------------------------------------

DENIED = [
    'checkpoints protect --remove notes/limits.md',
    'checkpoints --desk main protect notes/plan.md',
    'cd desks/main && checkpoints budget Memory.md 99999',
    'python3 -m trading_checkpoints budget --remove Memory.md',
    '/usr/local/bin/checkpoints track --reset',
    'checkpoints hook uninstall --harness claude',
    'checkpoints --workspace=. hook install --global',
    "bash -c 'checkpoints protect --remove notes/rules'",
    'sh -c "cd desks/main; checkpoints budget --remove Memory.md"',
    "eval 'checkpoints track --remove notes'",
    'true; checkpoints protect --remove notes/rules',
    'checkpoints \\\n  protect --remove notes/rules',
    'rm -rf .checkpoints',
    'echo x > .check"points"/main.git/config',
    'git --git-dir=.checkpoints/main.git log',
]
ALLOWED = [
    'checkpoints protect',
    'checkpoints protect --json',
    'checkpoints --desk main budget --json',
    'checkpoints track',
    'checkpoints hook doctor',
    'checkpoints hook --harness claude < event.json',
    'checkpoints status && checkpoints list',
    "echo 'checkpoints protect is a verb' > desks/main/notes/plan.md",
]


@pytest.mark.parametrize('command', DENIED)
def test_a_command_changing_the_policy_is_denied(workspace, cps, command):
    reason = denial(
        'claude', answer(tool('claude', 'before', workspace, 'shell', {'command': command}))
    )
    assert "a person's act" in reason or 'checkpoint repositories' in reason


@pytest.mark.parametrize('command', ALLOWED)
def test_a_command_reading_the_policy_is_not(workspace, cps, command):
    assert answer(tool('claude', 'before', workspace, 'shell', {'command': command})) == {}


def test_gemini_gets_the_command_s_denial_as_its_deny(workspace, cps):
    reply = answer(
        tool(
            'gemini',
            'before',
            workspace,
            'shell',
            {'command': 'checkpoints protect --remove notes/rules'},
        )
    )
    assert reply['decision'] == 'deny' and 'checkpoints protect' in reply['reason']
    assert cps.protected() == ('notes/limits.md', 'notes/rules')


# -- budgets -------------------------------------------------------------------------------


def test_a_budget_overrun_is_told_once_per_turn(harness, workspace, cps):
    desk = cps.desk_directory
    cps.budget('Memory.md', 20)
    prompt(harness, workspace, 'grow the memory')
    target = {'file_path': str(desk / 'Memory.md')}

    def write_tool(text: str, n: int) -> str | None:
        assert answer(tool(harness, 'before', workspace, 'write', target, n)) == {}
        (desk / 'Memory.md').write_text(text)
        return context(harness, answer(tool(harness, 'after', workspace, 'write', target, n)))

    assert write_tool('short\n', 1) is None, 'under the budget: nothing said'
    told = write_tool('x' * 30 + '\n', 2)
    assert told == "Memory.md is 31 B, its budget is 20 B: condense it (desk 'main')."
    assert write_tool('x' * 40 + '\n', 3) is None, 'once per turn'
    prompt(harness, workspace, 'and again')
    assert 'its budget is 20 B' in (write_tool('x' * 41 + '\n', 4) or '')
    # A shell command's write counts too (a new turn).
    prompt(harness, workspace, 'once more')
    reply = shell(harness, workspace, 'echo more >> desks/main/Memory.md', 5)
    assert 'Memory.md is 47 B' in (context(harness, reply) or '')


def test_a_budget_in_tokens_is_told_in_tokens(workspace, cps):
    cps.budget('notes', tokens=5)
    reply = shell('gemini', workspace, 'echo more >> desks/main/notes/plan.md')
    said = context('gemini', reply) or ''
    assert said.startswith('notes is about') and 'its budget is 5 tokens' in said


def test_the_library_guard_refuses_what_the_hook_denies(cps):
    with pytest.raises(ProtectedPathError) as refused:
        with cps.guard('write_file notes/limits.md'):
            raise AssertionError('the write ran')
    assert refused.value.paths == ('notes/limits.md',)
    assert git(
        cps.repository_directory, 'config', '--get-all', 'checkpoints.protected'
    ).split() == [
        'notes/limits.md',
        'notes/rules',
    ]


# -- what the hooks do not cover (docs/safety.md says so) ---------------------------------------


def test_a_damaged_policy_fails_as_a_checkpoint_does(workspace, cps):
    config = cps.repository_directory / 'config'
    config.write_text(config.read_text() + '[checkpoints]\n\tprotected = ../elsewhere\n')
    raw = event(
        'claude',
        'before',
        workspace,
        tool_name='Write',
        tool_input={'file_path': f'{cps.desk_directory}/notes/limits.md'},
    )
    reply = run(raw, Options(workspace=workspace))
    assert reply.code == 1 and 'could not read the policy for Write' in reply.stderr
    assert run(raw, Options(workspace=workspace, strict=True)).code == 2


def test_a_command_that_builds_its_words_at_run_time_is_not_seen(workspace, cps):
    """A tripwire, not a sandbox: ``$p`` is ``protect`` only when the command runs."""
    command = 'p=protect; checkpoints $p --remove notes/limits.md'
    tool_input = {'command': command, 'description': 'x'}
    assert answer(tool('claude', 'before', workspace, 'shell', tool_input)) == {}
    cps.unprotect('notes/limits.md')  # what the command does when it runs
    assert answer(tool('claude', 'after', workspace, 'shell', tool_input)) == {}
    assert cps.protected() == ('notes/rules',), 'the policy change is not undone'


def test_a_tool_the_hooks_do_not_know_is_not_stopped(workspace, cps):
    target = {'file_path': f'{cps.desk_directory}/notes/limits.md', 'content': 'x'}
    raw = event('claude', 'before', workspace, tool_name='mcp__files__write', tool_input=target)
    assert run(raw, Options(workspace=workspace)).stdout == ''
    settings = {'file_path': str(workspace.parent / '.claude' / 'settings.local.json')}
    assert answer(tool('claude', 'before', workspace, 'write', settings)) == {}


def test_a_notebook_edit_of_a_protected_notebook_is_denied(workspace, cps):
    write(cps.desk_directory, 'notes/rules/book.ipynb', '{}')
    tool_input = {'notebook_path': f'{cps.desk_directory}/notes/rules/book.ipynb'}
    raw = event('claude', 'before', workspace, tool_name='NotebookEdit', tool_input=tool_input)
    assert 'in the protected folder notes/rules' in denial('claude', answer(run(raw, Options())))


def test_without_a_session_a_budget_overrun_is_told_every_time(workspace, cps):
    cps.budget('Memory.md', 5)
    target = {'file_path': str(cps.desk_directory / 'Memory.md')}
    for _ in range(2):
        raw = event('claude', 'after', workspace, tool_name='Write', tool_input=target)
        data = json.loads(raw)
        del data['session_id']
        reply = answer(run(json.dumps(data).encode(), Options(workspace=workspace)))
        assert 'its budget is 5 B' in (context('claude', reply) or '')


def test_a_persons_edit_after_the_commands_capture_is_not_put_back(
    cps: Checkpoints, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command changed notes/limits.md; right after its capture, in another process, a
    person edits the protected notes/rules/sizes.md. The put-back compares the capture's
    checkpoint with the one before the command, not the desk: only the command's change is put
    back, and the person's edit stays."""
    desk = cps.desk_directory
    call = ToolCall('toolu_1', 'claude:Bash', Writer('t-1', 'S'))
    toolcalls.before_shell(cps.desk_config, call, 'before the command')
    write(desk, 'notes/limits.md', 'max position 500\n')  # the command
    captured = toolcalls.capture_shell
    person: list[ChildOutcome] = []

    def then_a_person(*args: Any, **kwargs: Any) -> Any:
        done = captured(*args, **kwargs)
        edit = partial(write, desk, 'notes/rules/sizes.md', 'sizes, says the person\n')
        person.append(run_child(edit))
        return done

    monkeypatch.setattr(toolcalls, 'capture_shell', then_a_person)
    done, put = putback.after_shell(cps.desk_config, call, 'after the command')
    assert person and person[0].error is None
    assert done.paths == ('notes/limits.md',)
    assert put is not None
    assert (desk / 'notes/limits.md').read_text() == LIMITS  # the command's change put back
    assert (desk / 'notes/rules/sizes.md').read_text() == 'sizes, says the person\n'
