"""Every change an agent makes is captured, in each of the three folders it may be started in.

The agent, started in the project holding ``./workspace`` (the README's layout), in the
workspace, or in the desk, with the hooks ``checkpoints hook install`` wrote there: a read-only
shell command, Write, Edit, Read, a shell command that writes, one that deletes, and one whose
command line carries a token after a quoted ``|``. One run per harness and folder; each test
checks one promise about it with the product's own verbs and real git.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from helpers.gitcli import needs_git
from helpers.harness.driver import Harness, install_hooks, prepare_home, run
from helpers.harness.scenario import (
    DESK_FILES,
    Layout,
    cli,
    copied,
    desk_texts,
    empty_commits,
    git_messages,
    listing,
    make_layout,
    shared,
    turn_files,
    turns,
)

FOLDERS = ('project', 'workspace', 'desk')  # where the harness starts
pytestmark = [pytest.mark.harness, pytest.mark.parametrize('start_in', FOLDERS)]

PROMPT = 'tidy up the notes'
TOKEN = 'TOKEN123'
QUOTED = f'echo "x|{TOKEN} y"'  # a token after a quoted "|"
AGENT_PATHS = {'notes/new.md', 'notes/old.md', 'notes/shell.md', 'notes/gone.md', 'notes/quoted.md'}

# The project settings a harness started in a folder reads (tests/harness/test_settings_files.py).
READ = {
    'claude': ['.claude/settings.json', '.claude/settings.local.json'],
    'gemini': ['.gemini/settings.json'],
}


def _play(harness: Harness, start_in: str, folder: Path) -> dict[str, Any]:
    layout = make_layout(folder)
    start = layout.start(start_in)
    prepare_home(layout.home, [start])
    installed = install_hooks(harness, start, layout.home)
    desk = layout.desk()
    here = os.path.relpath(desk, start)  # the desk, as the agent's shell names it
    script = [
        [harness.shell(f'cat {here}/Memory.md; ls {here}/notes')],
        [harness.write(desk / 'notes' / 'new.md', 'written by the agent\n')],
        [harness.edit(desk / 'notes' / 'old.md', 'old line', 'edited line')],
        [harness.read(desk / 'Memory.md')],
        [harness.shell(f'echo shell > {here}/notes/shell.md')],
        [harness.shell(f'rm {here}/notes/gone.md')],
        [
            harness.shell(
                f'echo "a|b" ; echo {TOKEN} > /dev/null; {QUOTED} > {here}/notes/quoted.md'
            )
        ],
        'done',
    ]
    done = run(harness, start, layout.home, PROMPT, script)
    assert done.code == 0 and len(done.tool_results()) == 7, done
    return {
        'install': [installed.returncode, installed.stdout + installed.stderr],
        'settings_read': [str(start / name) for name in READ[harness.name]],
    }


@pytest.fixture
def played(harness: Harness, start_in: str, shared_folder: Path) -> tuple[Layout, dict[str, Any]]:
    folder, record = shared(
        shared_folder,
        f'layout-{harness.name}-{start_in}',
        lambda folder: _play(harness, start_in, folder),
    )
    return Layout(folder), record


def the_turn(layout: Layout) -> str:
    """The one turn of the run, labelled with its prompt."""
    found = turns(layout)
    assert [turn['label'] for turn in found] == [PROMPT], found
    return found[0]['turn_id']


def test_install_writes_the_settings_the_harness_reads(played):
    _, record = played
    code, output = record['install']
    assert code == 0, output
    assert any(path in output for path in record['settings_read']), output


def test_every_change_is_captured_in_the_prompts_turn(played):
    layout, _ = played
    assert turn_files(layout, the_turn(layout)) == AGENT_PATHS
    assert all(row['tool'] not in ('claude:Read', 'gemini:read_file') for row in listing(layout))
    status = cli(layout, 'status', '--json')
    assert '"changes": []' in status.stdout and '"external": []' in status.stdout, status.stdout


def test_restore_turn_puts_the_desk_back(played, tmp_path: Path):
    layout = Layout(copied(played[0].root, tmp_path))
    done = cli(layout, 'restore-turn', the_turn(layout))
    assert done.returncode == 0, done.stderr
    assert desk_texts(layout) == DESK_FILES


@needs_git
def test_read_only_commands_leave_no_checkpoint(played):
    layout, _ = played
    assert 'notes/new.md' in turn_files(layout, the_turn(layout))
    # (A turn's first checkpoint, before a write tool, is kept even when nothing changed.)
    empty = empty_commits(layout.repository())
    assert not [subject for subject in empty if 'Bash' in subject or 'shell' in subject], empty
    reasons = [row['reason'] for row in listing(layout)]
    assert not [reason for reason in reasons if 'cat' in reason or 'ls' in reason.split()], reasons


@needs_git
def test_no_command_text_is_stored(played):
    layout, _ = played
    assert 'notes/quoted.md' in turn_files(layout, the_turn(layout))
    assert TOKEN not in git_messages(layout.repository())
    assert TOKEN not in cli(layout, 'log', '-n', '0').stdout
