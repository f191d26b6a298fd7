"""Hook adapters: recorded Claude Code and Gemini CLI events through a real hook process."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers import HOOK_EVENTS, ROOT
from helpers.builders import write
from helpers.cli import checkpoints
from helpers.hookrun import event, hook, ok
from helpers.processes import python

from trading_checkpoints import Checkpoints
from trading_checkpoints.workspace import Workspace


def cps_of(workspace: Path, name: str = 'main') -> Checkpoints:
    return Workspace(workspace).desk(name)


def test_claude_turn_of_writes(workspace: Path, desk: Path) -> None:
    write(desk, 'Memory.md', 'v0')
    write(desk, 'memory/people.md', 'Ann and Bob')
    cps = cps_of(workspace)
    assert cps.snapshot('before the session') is not None

    ok(hook(event('claude_user_prompt_submit.json', workspace)))
    assert cps.list(5)[0].reason == 'before the session', 'opening a turn writes no checkpoint'

    ok(hook(event('claude_pre_tool_use_write.json', workspace)))
    write(desk, 'notes/plan.md', '# Plan\n')  # the tool runs
    ok(hook(event('claude_post_tool_use_write.json', workspace)))
    ok(hook(event('claude_pre_tool_use_edit.json', workspace)))
    write(desk, 'Memory.md', 'v1')
    # The harness reports each tool's end (a write tool left unanswered is closed as
    # unfinished by the session's next event: see test_hooks_calls.py).
    ok(hook(event('claude_pre_tool_use_edit.json', workspace, hook_event_name='PostToolUse')))
    ok(hook(event('claude_pre_tool_use_multiedit.json', workspace)))
    write(desk, 'memory/people.md', 'Anne and Robert')

    newest = cps.list(4)
    assert [c.reason for c in newest] == [
        'before MultiEdit memory/people.md',
        'before Edit Memory.md',
        'before Write notes/plan.md',
        'before the session',
    ]
    assert [c.tool for c in newest[:3]] == ['claude:MultiEdit', 'claude:Edit', 'claude:Write']
    assert [c.paths for c in newest[:3]] == [
        ('memory/people.md',),
        ('Memory.md',),
        ('notes/plan.md',),
    ]
    session = '3f1c2b7e-8d4a-4c55-9a0e-2b6f7c1d9e42'
    [turn] = cps.turns()
    assert turn.turn_id.startswith(session + '-') and len(turn.turn_id.split()) == 1
    assert {c.turn for c in newest[:3]} == {turn.turn_id}
    assert turn.label == 'Tidy the notes: merge plan.md into Memory.md'
    assert turn.first.checkpoint_id == newest[2].checkpoint_id
    assert cps.status().basis in ('sealed', 'declared')

    # The whole answer rewinds in one go, and the rewind itself can be undone.
    result = cps.restore_turn(turn.turn_id)
    assert (desk / 'Memory.md').read_text() == 'v0' and not (desk / 'notes').exists()
    assert (desk / 'memory/people.md').read_text() == 'Ann and Bob'
    cps.restore(result.before_id)
    assert (desk / 'memory/people.md').read_text() == 'Anne and Robert'

    # The next prompt opens a new turn; its first write is that turn's first checkpoint.
    ok(hook(event('claude_user_prompt_submit.json', workspace, prompt='second request')))
    ok(hook(event('claude_pre_tool_use_notebookedit.json', workspace)))
    [second, first] = cps.turns()
    assert first.turn_id == turn.turn_id and second.turn_id != turn.turn_id
    assert second.label == 'second request'
    assert second.first.reason == 'before NotebookEdit notes/analysis.ipynb'
    assert second.first.tool == 'claude:NotebookEdit'


def test_untracked_targets_and_other_tools_take_no_checkpoint(
    workspace: Path, desk: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    write(desk, 'Memory.md', 'v0')
    outside = tmp_path_factory.mktemp('outside')
    for name in (
        'claude_pre_tool_use_write_untracked.json',
        'claude_pre_tool_use_write_outside.json',
        'claude_pre_tool_use_read.json',
    ):
        ok(hook(event(name, workspace, outside)))
    # An event this adapter does not act on is fine too.
    ok(hook(event('claude_pre_tool_use_bash.json', workspace, hook_event_name='Stop')))
    assert cps_of(workspace).list() == []
    assert not (workspace / '.checkpoints' / 'main.git').exists(), 'nothing was even created'


def test_gemini_cli_events(workspace: Path, desk: Path) -> None:
    write(desk, 'Memory.md', 'v0')
    write(desk, 'notes/plan.md', '# Plan\n')
    cps = cps_of(workspace)

    for name in ('gemini_before_agent.json', 'gemini_before_tool_write_file.json'):
        ok(hook(event(name, workspace)), stdout='{}\n')  # Gemini CLI parses stdout as JSON
    write(desk, 'notes/plan.md', '# Plan, rewritten\n')
    ok(hook(event('gemini_after_tool_write_file.json', workspace)), stdout='{}\n')
    write(desk, 'notes/plan.md', '# Plan, edited by a person\n')
    assert cps.status().external == ('notes/plan.md',), 'the seal tells the person apart'
    # replace names a path relative to the cwd (desks/main).
    ok(hook(event('gemini_before_tool_replace.json', workspace)), stdout='{}\n')

    [replace, write_file] = cps.list(2)
    assert (write_file.reason, write_file.tool) == (
        'before write_file notes/plan.md',
        'gemini:write_file',
    )
    assert (replace.reason, replace.tool, replace.paths) == (
        'before replace Memory.md',
        'gemini:replace',
        ('Memory.md',),
    )
    [turn] = cps.turns()
    assert turn.turn_id.startswith('b2f0c6de-5a1e-4f0a-9d7c-0c4d3e2f1a60-')
    assert turn.label == 'Rewrite the plan in notes/plan.md'
    assert [c.checkpoint_id for c in turn.checkpoints] == [
        replace.checkpoint_id,
        write_file.checkpoint_id,
    ]
    assert cps.show(replace.checkpoint_id, 'notes/plan.md') == b'# Plan, edited by a person\n'


def test_session_without_a_prompt_event_is_one_turn(workspace: Path, desk: Path) -> None:
    write(desk, 'Memory.md', 'v0')
    ok(hook(event('claude_pre_tool_use_edit.json', workspace)))
    [turn] = cps_of(workspace).turns()
    assert turn.turn_id == '3f1c2b7e-8d4a-4c55-9a0e-2b6f7c1d9e42' and turn.label == ''

    # Without a session id at all, a plain snapshot.
    write(desk, 'Memory.md', 'v1')
    ok(hook(event('claude_pre_tool_use_edit.json', workspace, session_id=None)))
    newest = cps_of(workspace).list(1)[0]
    assert newest.turn is None and newest.tool == 'claude:Edit'


def test_damaged_turn_record_falls_back_to_the_session(workspace: Path, desk: Path) -> None:
    write(desk, 'Memory.md', 'v0')
    ok(hook(event('claude_user_prompt_submit.json', workspace)))
    [record] = [p for p in (workspace / '.checkpoints' / 'hooks').iterdir() if 'last' not in p.name]
    assert record.suffix == '.json' and 'Tidy the notes' in record.read_text()
    record.write_text('{"turn": "two words", "label": 3}')
    ok(hook(event('claude_pre_tool_use_edit.json', workspace)))
    [turn] = cps_of(workspace).turns()
    assert turn.turn_id == '3f1c2b7e-8d4a-4c55-9a0e-2b6f7c1d9e42'


def test_workspace_and_desk_resolution(workspace: Path, desk: Path, tmp_path: Path) -> None:
    research = workspace / 'desks' / 'research'
    write(research, 'Memory.md', 'r0')
    write(desk, 'Memory.md', 'm0')
    target = str(research / 'Memory.md')

    # The desk the target file is in, found from the event's cwd (the workspace root).
    ok(hook(event('claude_pre_tool_use_edit.json', workspace, tool_input={'file_path': target})))
    assert len(cps_of(workspace, 'research').list()) == 1 and cps_of(workspace).list() == []

    # --desk names another desk: the target is outside it, so nothing happens.
    payload = event('claude_pre_tool_use_edit.json', workspace, tool_input={'file_path': target})
    ok(hook(payload, '--desk', 'main'))
    assert cps_of(workspace).list() == []

    # $CHECKPOINTS_WORKSPACE and $CHECKPOINTS_DESK, with a cwd far from the workspace.
    payload = event(
        'claude_pre_tool_use_edit.json',
        workspace,
        cwd=str(tmp_path.parent),
        tool_input={'file_path': 'Memory.md'},
    )
    done = hook(payload, CHECKPOINTS_WORKSPACE=str(workspace), CHECKPOINTS_DESK='main')
    ok(done)  # a relative path resolves against the cwd, which is outside the desk
    assert cps_of(workspace).list() == []
    payload = event('claude_pre_tool_use_edit.json', workspace, cwd=str(desk / 'notes'))
    ok(hook(payload, '--workspace', str(workspace)))
    assert cps_of(workspace).list(1)[0].paths == ('Memory.md',)


def test_missing_desk_or_workspace_is_a_non_blocking_error(
    workspace: Path, desk: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    payload = event('claude_pre_tool_use_edit.json', workspace)
    done = hook(payload, '--desk', 'research')
    assert done.code == 1 and done.stdout == ''
    assert done.stderr.startswith("checkpoints hook: no desk 'research' in ")
    assert done.stderr.count('\n') == 1, 'one line, no traceback'
    strict = hook(payload, '--desk', 'research', '--strict')
    assert strict.code == 2 and strict.stdout == '' and '(blocked: --strict)' in strict.stderr

    gone = tmp_path_factory.mktemp('gone') / 'not-a-folder'
    done = hook(payload, '--workspace', str(gone))
    assert done.code == 1 and done.stdout == '' and 'is not a folder' in done.stderr

    bad = hook(payload, '--desk', '../etc')
    assert bad.code == 1 and 'is not a desk name' in bad.stderr


def test_failed_checkpoint_never_blocks_unless_strict(workspace: Path, desk: Path) -> None:
    write(desk, 'Memory.md', 'v0')
    (workspace / '.checkpoints').mkdir()
    (workspace / '.checkpoints' / 'main.git').write_text('not a repository')
    payload = event('claude_pre_tool_use_edit.json', workspace)
    done = hook(payload)
    assert done.code == 1 and done.stdout == ''
    assert done.stderr.startswith("checkpoints hook: could not checkpoint desk 'main' for Edit ")
    strict = hook(payload, '--strict')
    assert strict.code == 2 and strict.stderr.rstrip().endswith('(blocked: --strict)')
    gemini = hook(event('gemini_before_tool_replace.json', workspace), '--strict')
    assert gemini.code == 2 and gemini.stdout == '', 'a blocking answer carries no JSON'
    after = hook(event('claude_post_tool_use_write.json', workspace), '--strict')
    assert after.code == 1, 'after the tool ran there is nothing left to block'
    assert after.stderr.startswith("checkpoints hook: could not seal desk 'main' for Write ")


@pytest.mark.parametrize(
    'payload, problem',
    [
        ((HOOK_EVENTS / 'malformed_truncated.json').read_bytes(), 'is not valid JSON'),
        (b'', 'no hook event on stdin'),
        (b'[1, 2]', 'must be a JSON object, not list'),
        (b'{"tool_name": "Write"}', 'has no "hook_event_name"'),
    ],
)
def test_unreadable_events(workspace: Path, payload: bytes, problem: str) -> None:
    done = hook(payload, '--workspace', str(workspace))
    assert done.code == 1 and done.stdout == '' and problem in done.stderr
    assert done.stderr.startswith('checkpoints hook: ') and done.stderr.count('\n') == 1
    assert hook(payload, '--strict').code == 2, 'strict fails closed'


def test_verbose_and_harness_options(workspace: Path, desk: Path) -> None:
    write(desk, 'Memory.md', 'v0')
    done = hook(
        event('claude_pre_tool_use_edit.json', workspace), '--verbose', '--harness', 'gemini'
    )
    assert done.code == 0 and done.stdout == '{}\n'
    assert done.stderr.startswith('checkpoints hook: checkpoint ') and "desk 'main'" in done.stderr
    bad = hook(b'{}', '--harness', 'codex')
    assert bad.code == 1 and 'invalid choice' in bad.stderr, 'a bad command line never blocks'


def test_non_write_events_stay_cheap(workspace: Path) -> None:
    """A hook on every tool must not load git machinery for the tools it ignores."""
    code = (
        'import sys\nfrom trading_checkpoints.agent.hooks import main\ncode = main([])\n'
        'print(sorted({m.split(".")[0] for m in sys.modules} & {"dulwich"}), file=sys.stderr)\n'
        'sys.exit(code)'
    )
    done = python(
        code, stdin=event('claude_pre_tool_use_read.json', workspace), text=False, timeout=60
    )
    assert done.returncode == 0 and done.stdout == b'' and done.stderr == b'[]\n'


def test_the_manual_shows_what_install_writes() -> None:
    """The settings the manual shows are valid JSON and are what `hook install` merges into an
    empty file (the absolute command aside), and they cover every write and shell tool."""
    from trading_checkpoints.agent.hooks import EVENTS, SHELL_TOOLS, WRITE_TOOLS
    from trading_checkpoints.agent.hooks.install import merged

    # The events that close a tool's announcement (a failed tool, the end of the answer).
    closing = {'claude': {'PostToolUseFailure', 'Stop'}, 'gemini': {'AfterAgent'}}

    manual = (ROOT / 'docs' / 'agents.md').read_text()
    section = manual.split('## Hooks for Claude Code and Gemini CLI', 1)[1].split('\n## ', 1)[0]
    blocks = [json.loads(b) for b in re.findall(r'```json\n(.*?)```', section, re.S)]
    assert len(blocks) == 2
    for settings, harness in zip(blocks, ('claude', 'gemini'), strict=True):
        command = (
            f'/opt/venv/bin/python /opt/venv/bin/checkpoints-hook --harness {harness} '
            '--workspace /home/me/project/workspace'
        )
        assert settings == merged({}, harness, command)
        assert closing[harness] <= set(settings['hooks'])
        hooks = [name for name in settings['hooks'] if name not in closing[harness]]
        assert {EVENTS[name][0] for name in hooks} == {harness}
        assert sorted(EVENTS[name][1] for name in hooks) == ['after-tool', 'before-tool', 'prompt']
        for name, [group] in settings['hooks'].items():
            if 'matcher' in group:
                matched = set(group['matcher'].split('|'))
                tools = {*WRITE_TOOLS, *SHELL_TOOLS}
                ours = {t for t in tools if (t[0].isupper()) == (harness == 'claude')}
                assert matched == ours, (name, matched, ours)


def test_the_checkpoints_hook_verb_passes_everything_through(workspace: Path, desk: Path) -> None:
    """`checkpoints hook` is the same adapter: options after the verb reach it untouched (a
    usage error would read as a refusal), and global --workspace/--desk reach it too."""
    done = checkpoints(
        'hook',
        '--harness',
        'claude',
        workspace=workspace,
        stdin=event('claude_pre_tool_use_write.json', workspace),
        text=False,
        cwd=workspace.parent,
        timeout=60,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, b'', b''), done
    [taken] = Checkpoints(workspace / '.checkpoints' / 'main.git', desk).list()
    assert taken.tool == 'claude:Write'
    done = checkpoints(
        'hook', '--no-such-option', workspace=workspace, stdin=b'{}', text=False, timeout=60
    )
    assert done.returncode == 1, 'an unknown option is a non-blocking error, never exit 2'
    done = checkpoints('hook', '--help', workspace=workspace, text=False, timeout=60)
    assert done.returncode == 0 and b'--harness' in done.stdout
