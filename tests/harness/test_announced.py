"""A write tool after a shell command that wrote: its hook before finds nothing to checkpoint and
announces the write (kept beside the seal ref, ``ops/announced.py``); its hook after seals it.

With the real harness: a Write, a shell command that writes, a second Write, in one turn. The
second Write's hook before finds the desk as the shell command's capture sealed it, so its write
is announced rather than checkpointed; the seal after it keeps the announced turn (a seal made
over no announcement names none), which real git reads. Every file is the turn's, nothing is
external, and restoring the turn puts the desk back.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from helpers.gitcli import git, needs_git
from helpers.harness.driver import Harness, install_hooks, prepare_home, run
from helpers.harness.scenario import (
    DESK_FILES,
    Layout,
    cli,
    copied,
    desk_texts,
    make_layout,
    shared,
    turn_files,
    turns,
)

pytestmark = pytest.mark.harness

PROMPT = 'write the notes'


def _play(harness: Harness, folder: Path) -> dict[str, Any]:
    layout = make_layout(folder)
    start = layout.project
    prepare_home(layout.home, [start])
    assert install_hooks(harness, start, layout.home).returncode == 0
    desk = layout.desk()
    here = os.path.relpath(desk, start)
    script = [
        [harness.write(desk / 'notes' / 'first.md', 'first\n')],
        [harness.shell(f'echo shell > {here}/notes/shell.md')],
        [harness.write(desk / 'notes' / 'second.md', 'second\n')],
        'done',
    ]
    done = run(harness, start, layout.home, PROMPT, script)
    assert done.code == 0 and len(done.tool_results()) == 3, done
    return {}


@pytest.fixture
def played(harness: Harness, shared_folder: Path) -> Layout:
    folder, _ = shared(shared_folder, f'announced-{harness.name}', lambda f: _play(harness, f))
    return Layout(folder)


def _the_turn(layout: Layout) -> str:
    (turn,) = turns(layout)
    return turn['turn_id']


@needs_git
def test_the_write_after_the_shell_command_was_announced_and_sealed_for_the_turn(
    played: Layout,
):
    message = git(played.repository(), 'log', '-1', '--format=%B', 'refs/checkpoints/sealed')
    assert f'Checkpoint-Turn: {_the_turn(played)}\n' in message, message
    assert not (played.repository() / 'checkpoints' / 'announced').exists(), 'the seal ended it'


def test_every_file_is_the_turns_and_nothing_is_external(played: Layout):
    files = turn_files(played, _the_turn(played))
    assert files == {'notes/first.md', 'notes/shell.md', 'notes/second.md'}, files
    status = json.loads(cli(played, 'status', '--json').stdout)
    assert status['external'] == [] and status['basis'] == 'sealed', status


def test_restore_turn_puts_the_desk_back(played: Layout, tmp_path: Path):
    layout = Layout(copied(played.root, tmp_path))
    done = cli(layout, 'restore-turn', _the_turn(layout))
    assert done.returncode == 0, done.stderr
    assert desk_texts(layout) == DESK_FILES
