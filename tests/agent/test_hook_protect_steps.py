"""The hooks' policy answers one step at a time, in this process (``agent/hooks/protect.py``):
the JSON each harness is answered with for each kind of event, and which command lines are
denied and in what words. ``test_hooks_protect.py`` drives the same through whole events."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers import HOOK_EVENTS
from helpers.builders import write

from trading_checkpoints import Checkpoints
from trading_checkpoints.agent.hooks import Options, Reply, run
from trading_checkpoints.agent.hooks.events import AFTER_TOOL, BEFORE_TOOL, PROMPT, TOOL_FAILED
from trading_checkpoints.agent.hooks.place import session_file
from trading_checkpoints.agent.hooks.protect import TOLD, Answer, put_back_text, refuse_command
from trading_checkpoints.workspace import Workspace


def test_an_answer_with_nothing_to_say():
    assert not Answer()
    for kind in (PROMPT, BEFORE_TOOL, AFTER_TOOL, TOOL_FAILED):
        assert Answer().stdout('claude', 'PreToolUse', kind) == ''
        assert Answer().stdout(None, 'PreToolUse', kind) == ''
        assert Answer().stdout('gemini', 'BeforeTool', kind) == '{}\n'
    assert Answer(deny=['x']) and Answer(block=['x']) and Answer(context=['x'])


def test_a_denial_before_a_tool_in_each_harness_s_terms():
    answer = Answer(deny=['one.', 'two.'], context=['ignored before a tool'])
    assert json.loads(answer.stdout('claude', 'PreToolUse', BEFORE_TOOL)) == {
        'hookSpecificOutput': {
            'hookEventName': 'PreToolUse',
            'permissionDecision': 'deny',
            'permissionDecisionReason': 'one. two.',
        }
    }
    assert answer.stdout('gemini', 'BeforeTool', BEFORE_TOOL) == (
        '{"decision": "deny", "reason": "one. two."}\n'
    )
    assert answer.stdout('claude', 'PostToolUse', AFTER_TOOL).endswith('}\n')
    assert Answer(deny=['x']).stdout('claude', 'PostToolUse', AFTER_TOOL) == '', 'too late'


def test_a_block_and_context_after_a_tool():
    answer = Answer(block=['put back.', 'again.'], context=['over budget.', 'twice.'])
    assert json.loads(answer.stdout('claude', 'PostToolUse', AFTER_TOOL)) == {
        'decision': 'block',
        'reason': 'put back. again.',
        'hookSpecificOutput': {
            'hookEventName': 'PostToolUse',
            'additionalContext': 'over budget. twice.',
        },
    }
    assert json.loads(Answer(block=['b.']).stdout('gemini', 'AfterTool', AFTER_TOOL)) == {
        'decision': 'block',
        'reason': 'b.',
    }
    only_context = Answer(context=['c.']).stdout('gemini', 'AfterTool', AFTER_TOOL)
    assert json.loads(only_context) == {
        'hookSpecificOutput': {'hookEventName': 'AfterTool', 'additionalContext': 'c.'}
    }


def test_a_failed_tool_s_event_has_no_block_the_reason_goes_to_the_context():
    answer = Answer(block=['put back.'], context=['over budget.'])
    assert json.loads(answer.stdout('claude', 'PostToolUseFailure', TOOL_FAILED)) == {
        'hookSpecificOutput': {
            'hookEventName': 'PostToolUseFailure',
            'additionalContext': 'put back. over budget.',
        }
    }


SESSION = '5d57f2df-ff97-4d01-b306-14d2f3e0c1c9'  # the saved Claude Code run's
REPOSITORIES = (
    'This command names the checkpoint repositories (.checkpoints): their history and '
    "the desk's policy are a person's to change, so the checkpoints hook denies it. Read "
    'the history with the checkpoints commands (list, log, diff, show) instead.'
)


def verb(name: str, listing: bool) -> str:
    tail = f' `checkpoints {name}` alone lists what is set.' if listing else ''
    return (
        f'`checkpoints {name}` changes what the checkpoints hooks hold you to (protected '
        "paths, budgets, tracked paths, the hooks): that is a person's act, so the checkpoints "
        f'hook denies it.{tail}'
    )


@pytest.mark.parametrize(
    'command, reason',
    [
        ('cat workspace/.checkpoints/main.git/config', REPOSITORIES),
        ('checkpoints protect notes/a.md', verb('protect', True)),
        ('checkpoints budget Memory.md 20', verb('budget', True)),
        ('/usr/local/bin/checkpoints track notes', verb('track', True)),
        ('python -m trading_checkpoints.cli track --reset', verb('track', True)),
        ('checkpoints --desk main protect --json x', verb('protect', True)),
        ('checkpoints --desk=main protect x', verb('protect', True)),
        ('checkpoints --workspace /w hook install', verb('hook install', False)),
        ('checkpoints hook uninstall --harness claude', verb('hook uninstall', False)),
        ("ls; echo 'a\\\ncheckpoints budget x 1'", None),
        ('ls \\\n&& checkpoints protect x', verb('protect', True)),
        ('ls\ncheckpoints protect x', verb('protect', True)),
        ('echo "checkpoints protect x', verb('protect', True)),
        ("echo 'checkpoints hook", verb('hook', False)),
        ('echo "open quote', None),
        ("bash -c 'checkpoints protect x'", verb('protect', True)),
        ("eval 'checkpoints budget x 1'", verb('budget', True)),
        ('sh -c \'sh -c "checkpoints protect x"\'', verb('protect', True)),
        ("echo -c 'checkpoints protect x'", verb('protect', True)),
        ("echo 'checkpoints protect x'", None),
        ('checkpoints protect', None),
        ('checkpoints protect --json -h --help', None),
        ('echo checkpoints\nprotect x', None),
        ('echo "open\ncheckpoints protect x', verb('protect', True)),
        ('checkpoints protect -h --json', None),
        ('checkpoints hook doctor', None),
        ('checkpoints hook', None),
        ('checkpoints --desk protect', None),
        ('my-checkpoints protect x', None),
        ('checkpointsfile protect x', None),
        (None, None),
    ],
)
def test_which_commands_are_denied_and_why(command: object, reason: str | None):
    assert refuse_command(command) == reason


def test_a_command_run_four_shells_deep_is_not_read():
    inner = 'checkpoints protect x'
    for _ in range(3):
        inner = f'bash -c {json.dumps(inner)}'
    assert refuse_command(inner) == verb('protect', True), 'three deep: read'
    assert refuse_command(f'bash -c {json.dumps(inner)}') is None, 'four deep: not read'


def test_what_the_agent_is_told_when_its_change_was_put_back():
    assert put_back_text('main', ['a.md']) == (
        "Your command changed a.md, protected on desk 'main': you may read it but not change "
        'it, so the checkpoints hook put it back as it was before the command. Leave it as it is.'
    )
    many = [f'{n}.md' for n in range(6)]
    assert put_back_text('main', many).startswith(
        "Your command changed 0.md, 1.md, 2.md, 3.md, 4.md ..., protected on desk 'main'"
    )
    assert 'changed 0.md, 1.md, 2.md, 3.md, 4.md, protected' in put_back_text('m', many[:5])


# -- through whole events, the real harnesses' payloads ---------------------------------------


def real(name: str, project: Path, **changes: Any) -> bytes:
    text = (HOOK_EVENTS / 'real' / f'{name}.json').read_text()
    text = text.replace('${PROJECT}', str(project)).replace('${HOME}', str(project.parent))
    data = json.loads(text.replace('${PROJECT_SLUG}', 'project'))
    data.update(changes)
    return json.dumps(data).encode()


@pytest.fixture
def workspace(project: Path) -> Path:
    """The README's layout: desks main and research, notes/limits.md in each."""
    for desk in ('main', 'research'):
        write(project, f'workspace/desks/{desk}/notes/limits.md', f'{desk} limits\n')
        write(project, f'workspace/desks/{desk}/notes/old.md', 'old\n')
    return project / 'workspace'


def denied(reply) -> str | None:
    assert reply.code == 0, reply
    said = json.loads(reply.stdout) if reply.stdout else {}
    return said.get('hookSpecificOutput', {}).get('permissionDecisionReason')


def test_dots_after_a_link_into_another_desk_ask_that_desk(project: Path, workspace: Path):
    """``main/link/../notes/limits.md`` reads as main's file; the system writes research's."""
    research = Workspace(workspace).desk('research')
    research.protect(['notes/limits.md'])
    (workspace / 'desks' / 'research' / 'deep').mkdir()
    (workspace / 'desks' / 'main' / 'link').symlink_to(workspace / 'desks' / 'research' / 'deep')
    target = str(workspace / 'desks' / 'main' / 'link' / '..' / 'notes' / 'limits.md')
    reply = run(
        real('claude-edit-PreToolUse', project, tool_input={'file_path': target}), Options()
    )
    assert "protected on desk 'research'" in (denied(reply) or ''), reply
    # Both desks protecting it: both reasons, one after the other.
    Workspace(workspace).desk('main').protect(['notes/limits.md'])
    reason = denied(
        run(real('claude-edit-PreToolUse', project, tool_input={'file_path': target}), Options())
    )
    tail = (
        ': you may read it but not change it (a person may; `checkpoints protect` lists the '
        'protected paths).'
    )
    assert reason == (
        f"notes/limits.md is protected on desk 'main'{tail} "
        f"notes/limits.md is protected on desk 'research'{tail}"
    )


def test_a_desk_named_that_has_no_folder_does_not_keep_the_others_from_being_asked(
    project: Path, workspace: Path
):
    Workspace(workspace).desk('main').protect(['notes/limits.md'])
    target = str(workspace / 'desks' / 'main' / 'notes' / 'limits.md')
    raw = real('claude-edit-PreToolUse', project, tool_input={'file_path': target})
    assert denied(run(raw, Options(desk='ghost'))) is not None


def test_a_link_into_a_folder_that_is_no_desk_is_not_asked(project: Path, workspace: Path):
    odd = workspace / 'desks' / 'back\\slash'
    write(odd, 'notes/a.md', 'a\n')
    # A repository and a policy made for it by hand: never read, the folder is no desk.
    repository = workspace / '.checkpoints' / 'back\\slash.git'
    Checkpoints(repository, odd).protect(['notes/a.md'])
    link = workspace / 'desks' / 'main' / 'notes' / 'odd.md'
    link.symlink_to(odd / 'notes' / 'a.md')
    raw = real('claude-edit-PreToolUse', project, tool_input={'file_path': str(link)})
    assert run(raw, Options()) == Reply(0)


def budget_told(project: Path, session: str | None, **options: Any) -> str | None:
    """A write tool's after event on main's notes/old.md, over its budget: what is told."""
    changes: dict[str, Any] = {'session_id': session}
    target = str(project / 'workspace' / 'desks' / 'main' / 'notes' / 'old.md')
    changes['tool_input'] = {'file_path': target}
    reply = run(real('claude-edit-PostToolUse', project, **changes), Options(**options))
    assert reply.code == 0, reply
    said = json.loads(reply.stdout) if reply.stdout else {}
    return said.get('hookSpecificOutput', {}).get('additionalContext')


def test_a_session_with_no_word_of_its_own_is_told_every_time(project: Path, workspace: Path):
    Workspace(workspace).desk('main').budget('notes/old.md', 2)
    for _ in range(2):
        assert (
            budget_told(project, '///')
            == "notes/old.md is 4 B, its budget is 2 B: condense it (desk 'main')."
        )


def test_the_first_notice_of_a_session_is_kept_with_no_hook_state_yet(
    project: Path, workspace: Path
):
    Workspace(workspace).desk('main').budget('notes/old.md', 2)
    assert not (workspace / '.checkpoints' / 'hooks').exists()
    assert budget_told(project, 'a-session') is not None
    assert budget_told(project, 'a-session') is None, 'told once this turn'


@pytest.mark.parametrize('told', ['5', '"notes"', '{"a": 1}', 'null'])
def test_a_damaged_record_of_what_was_told_is_read_as_nothing_told(
    project: Path, workspace: Path, told: str
):
    Workspace(workspace).desk('main').budget('notes/old.md', 2)
    assert budget_told(project, 'a-session') is not None
    path = session_file(workspace, 'a-session', TOLD)
    record = json.loads(path.read_text())
    path.write_text(f'{{"turn": {json.dumps(record["turn"])}, "told": {told}}}')
    assert budget_told(project, 'a-session') is not None
    assert budget_told(project, 'a-session') is None
    os.unlink(path)


def test_at_most_200_notices_are_remembered_a_turn(project: Path, workspace: Path):
    desk = Workspace(workspace).desk('main')
    for number in range(201):
        write(workspace, f'desks/main/notes/f{number:03d}.md', 'four\n')
        desk.budget(f'notes/f{number:03d}.md', 2)
    command = 'for f in workspace/desks/main/notes/f*.md; do echo x >> $f; done'
    tool_input = {'command': command, 'description': 'x'}
    assert run(real('claude-shell-PreToolUse', project, tool_input=tool_input), Options()).code == 0
    subprocess.run(['bash', '-c', command], cwd=project, check=True, timeout=60)
    reply = run(real('claude-shell-PostToolUse', project, tool_input=tool_input), Options())
    told = json.loads(reply.stdout)['hookSpecificOutput']['additionalContext']
    assert told.count('is 7 B, its budget is 2 B') == 201
    record = json.loads(session_file(workspace, SESSION, TOLD).read_text())
    assert len(record['told']) == 200 and 'main\0notes/f200.md' not in record['told']
