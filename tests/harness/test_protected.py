"""A protected file and a size budget, with the real Claude Code and Gemini CLI.

Desk ``main`` protects ``notes/limits.md`` and gives ``Memory.md`` a budget of 64 bytes. In a
first run (one turn) the agent tries a Write and an Edit of the protected file (denied: the
file is unchanged, the model's next request carries the reason), a shell command that writes
it (put back right after, the reason in the model's next request; a command that then fails
too), and two writes that take
Memory.md past its budget (the model told once). Then a person edits the protected file, and
a second run (a new turn) writes Memory.md again (told again) and runs a shell command
elsewhere: the person's edit stays.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.gitcli import needs_git
from helpers.harness.driver import Harness, Run, install_hooks, prepare_home, run
from helpers.harness.scenario import (
    DESK_FILES,
    Layout,
    cli,
    cli_json,
    copied,
    desk_texts,
    listing,
    make_layout,
    shared,
    versions_of,
)

pytestmark = pytest.mark.harness

LIMITS = 'max position 5\n'
PERSONS = 'max position 6, set by the person\n'
DENIED = 'notes/limits.md is protected on desk'
PUT_BACK = 'protected on desk'
BUDGET = 'its budget is 64 B: condense it'
SHELL_WRITE = "printf 'max position 900\\n' > desks/main/notes/limits.md"


def texts(done: Run) -> list[str]:
    """Each request of the conversation, as the JSON text the harness sent."""
    return [json.dumps(request.body) for request in done.conversation()]


def _play(harness: Harness, folder: Path) -> dict[str, Any]:
    layout = make_layout(folder, {'main': {**DESK_FILES, 'notes/limits.md': LIMITS}})
    assert cli(layout, 'protect', 'notes/limits.md').returncode == 0
    assert cli(layout, 'budget', 'Memory.md', '64').returncode == 0
    start = layout.workspace
    prepare_home(layout.home, [start])
    assert install_hooks(harness, start, layout.home).returncode == 0
    desk = layout.desk()
    limits, memory = desk / 'notes' / 'limits.md', desk / 'Memory.md'
    first = run(
        harness,
        start,
        layout.home,
        'raise the limits and grow the memory',
        [
            [harness.write(limits, 'max position 500\n')],  # reply 1: request 2 is told
            [harness.edit(limits, 'max position 5', 'max position 50')],  # request 3
            [harness.shell(SHELL_WRITE)],  # request 4
            [harness.shell(f'{SHELL_WRITE}; exit 1')],  # request 5: a command that failed
            [harness.write(memory, '# Memory\n' + 'a' * 80 + '\n')],  # request 6: over
            [harness.write(memory, '# Memory\n' + 'b' * 90 + '\n')],  # request 7: not again
            'done',
        ],
    )
    assert first.code == 0 and len(first.tool_results()) == 6, first
    after_first = {'limits': limits.read_text(), 'requests': texts(first)}
    limits.write_text(PERSONS)  # the person's edit, no hook sees it
    second = run(
        harness,
        start,
        layout.home,
        'grow the memory again',
        [
            [harness.write(memory, '# Memory\n' + 'c' * 100 + '\n')],
            [harness.shell('echo more >> desks/main/notes/old.md')],
            'done',
        ],
    )
    assert second.code == 0 and len(second.tool_results()) == 2, second
    return {**after_first, 'second': texts(second)}


@pytest.fixture
def played(harness: Harness, shared_folder: Path) -> tuple[Layout, dict[str, Any]]:
    folder, record = shared(shared_folder, f'protected-{harness.name}', lambda f: _play(harness, f))
    return Layout(folder), record


def test_a_write_and_an_edit_of_a_protected_file_are_denied_and_told(played):
    _, record = played
    requests = record['requests']
    assert DENIED not in requests[0]
    assert DENIED in requests[1], 'the Write: the next request carries the reason'
    assert requests[2].count(DENIED) == 2, 'the Edit too'


def test_a_shell_write_to_a_protected_file_is_put_back_and_told(played):
    layout, record = played
    assert record['limits'] == LIMITS, 'unchanged after the first run'
    told = 'put it back as it was before the command'
    requests = record['requests']
    assert told not in requests[2]
    assert requests[3].count(told) == 1
    assert requests[4].count(told) == 2, 'a command that failed (exit 1) is put back too'
    rows = listing(layout)
    put_back = [row for row in rows if row['reason'].startswith('put back protected')]
    assert len(put_back) == 2 and {row['action'] for row in put_back} == {'restore'}, rows


@needs_git
def test_the_shell_s_change_is_on_record_and_a_person_can_bring_it_back(played, tmp_path):
    layout, _ = played
    assert 'max position 900\n' in versions_of(layout.repository(), 'notes/limits.md')
    assert 'max position 500\n' not in versions_of(layout.repository(), 'notes/limits.md')
    copy = Layout(copied(layout.root, tmp_path))
    rows = listing(copy)
    put_back = max(i for i, row in enumerate(rows) if row['reason'].startswith('put back'))
    captured = rows[put_back + 1]  # the checkpoint just before it: the command's change
    assert captured['action'] == 'captured' and 'notes/limits.md' in captured['paths'], rows
    done = cli(copy, 'restore', captured['id'], 'notes/limits.md')
    assert done.returncode == 0, done.stderr
    assert desk_texts(copy)['notes/limits.md'] == 'max position 900\n'


def test_a_budget_overrun_is_told_once_per_turn(played):
    _, record = played
    first, second = record['requests'], record['second']
    assert BUDGET not in first[4]
    assert first[5].count(BUDGET) == 1, 'the write that took Memory.md past its budget'
    assert first[6].count(BUDGET) == 1, 'the next write of the same turn is not told again'
    assert second[1].count(BUDGET) == 1, 'a new turn is told again'


def test_a_person_s_edit_of_the_protected_file_stays(played):
    layout, _ = played
    assert desk_texts(layout)['notes/limits.md'] == PERSONS
    assert desk_texts(layout)['notes/old.md'] == 'old line\nmore\n'
    assert cli_json(layout, 'protect')['protected'] == ['notes/limits.md']
