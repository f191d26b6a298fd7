"""The hooks' policy answers one step at a time, in this process (``agent/hooks/protect.py``):
the JSON each harness is answered with for each kind of event, and which command lines are
denied and in what words. ``test_hooks_protect.py`` drives the same through whole events."""

from __future__ import annotations

import json

import pytest

from trading_checkpoints.agent.hooks.events import AFTER_TOOL, BEFORE_TOOL, PROMPT, TOOL_FAILED
from trading_checkpoints.agent.hooks.protect import Answer, put_back_text, refuse_command


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
