"""A write tool the agent is refused, then a person edits that file: the person's edit is theirs.

Claude Code refuses a tool not allowed in ``-p`` mode after its ``PreToolUse`` hooks ran; Gemini
CLI refuses one a ``BeforeTool`` hook denies (a second hook here, beside the product's). The
model is told; the file is left as it was; then the person edits it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.harness.capture import RECORDER
from helpers.harness.driver import CLAUDE, Harness, install_hooks, prepare_home, run
from helpers.harness.scenario import (
    DESK_FILES,
    Layout,
    cli,
    copied,
    desk_texts,
    make_layout,
    shared,
    turns,
)

pytestmark = pytest.mark.harness

PROMPT = 'rewrite the plan'
PLAN, AGENTS, PERSONS = 'the plan\n', "the agent's plan\n", "the person's plan\n"


def deny_in(settings: Path, folder: Path) -> None:
    """Adds a hook that denies every ``write_file`` to Gemini CLI settings."""
    replies = folder / 'deny.json'
    replies.write_text(
        json.dumps({'BeforeTool:write_file': {'stdout': {'decision': 'deny', 'reason': 'no'}}})
    )
    (folder / 'denials').mkdir()
    command = f'{sys.executable} {RECORDER} {folder / "denials"} {replies}'
    data = json.loads(settings.read_text())
    group = {'matcher': 'write_file', 'hooks': [{'type': 'command', 'command': command}]}
    data['hooks']['BeforeTool'].append(group)
    settings.write_text(json.dumps(data, indent=2))


def _play(harness: Harness, folder: Path) -> dict[str, Any]:
    layout = make_layout(folder, {'main': {**DESK_FILES, 'notes/plan.md': PLAN}})
    start = layout.workspace
    prepare_home(layout.home, [start])
    assert install_hooks(harness, start, layout.home).returncode == 0
    options: dict[str, Any] = {}
    if harness is CLAUDE:
        options['allowed_tools'] = 'Read Edit Bash'  # not Write
    else:
        deny_in(start / '.gemini' / 'settings.json', folder)
    plan = layout.desk() / 'notes' / 'plan.md'
    done = run(
        harness, start, layout.home, PROMPT, [[harness.write(plan, AGENTS)], 'done'], **options
    )
    assert done.code == 0, done
    (told,) = done.tool_results()
    assert told.get('is_error') or 'error' in told.get('response', {}), done
    assert plan.read_text() == PLAN
    plan.write_text(PERSONS)  # the person's edit, after the agent's turn
    return {}


@pytest.fixture
def played(harness: Harness, shared_folder: Path) -> Layout:
    folder, _ = shared(shared_folder, f'denied-{harness.name}', lambda f: _play(harness, f))
    return Layout(folder)


def test_restore_turn_keeps_a_persons_edit_of_the_refused_file(played: Layout, tmp_path: Path):
    layout = Layout(copied(played.root, tmp_path))
    for turn in turns(layout):
        cli(layout, 'restore-turn', turn['turn_id'])
    assert desk_texts(layout)['notes/plan.md'] == PERSONS


def test_status_calls_the_persons_edit_external(played: Layout):
    status = json.loads(cli(played, 'status', '--json').stdout)
    assert status['external'] == ['notes/plan.md'], status
