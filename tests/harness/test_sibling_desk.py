"""A shell command run in one desk that writes a sibling desk (``../other/notes/x.md``), where a
person had an edit not yet in any checkpoint: the sibling is snapshotted first (the person's
edit kept), and the command's change there is credited to the agent's turn.

The harness starts in desk ``main``, its hooks installed there with ``hook install --settings``
(the project settings file of that folder).
"""

from __future__ import annotations

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
    make_layout,
    shared,
    turn_files,
    turns,
    versions_of,
)

pytestmark = pytest.mark.harness

PROMPT = 'note it in the other desk too'
SAVED, PERSONS, AGENTS = 'saved\n', "the person's edit\n", "the agent's line\n"


def _play(harness: Harness, folder: Path) -> dict[str, Any]:
    layout = make_layout(folder, {'main': DESK_FILES, 'other': {'notes/x.md': SAVED}})
    (layout.desk('other') / 'notes' / 'x.md').write_text(PERSONS)  # in no checkpoint yet
    start = layout.desk('main')
    prepare_home(layout.home, [start])
    settings = start.joinpath(*harness.project_settings[:1], 'settings.json')
    installed = install_hooks(harness, start, layout.home, '--settings', str(settings))
    assert installed.returncode == 0, installed.stderr
    command = harness.shell(f'echo "{AGENTS.strip()}" > ../other/notes/x.md')
    done = run(harness, start, layout.home, PROMPT, [[command], 'done'])
    assert done.code == 0, done
    assert desk_texts(layout, 'other') == {'notes/x.md': AGENTS}
    return {}


@pytest.fixture
def played(harness: Harness, shared_folder: Path) -> Layout:
    folder, _ = shared(shared_folder, f'sibling-{harness.name}', lambda f: _play(harness, f))
    return Layout(folder)


def the_turn(layout: Layout, desk: str) -> str:
    found = [turn['turn_id'] for turn in turns(layout, desk) if turn['label'] == PROMPT]
    assert len(found) == 1, turns(layout, desk)
    return found[0]


@needs_git
def test_the_persons_unsaved_edit_in_the_sibling_desk_is_kept(played: Layout):
    assert PERSONS in versions_of(played.repository('other'), 'notes/x.md')


def test_the_change_in_the_sibling_desk_is_credited_to_the_turn(played: Layout):
    assert turn_files(played, the_turn(played, 'other'), 'other') == {'notes/x.md'}


def test_restore_turn_in_the_sibling_desk_brings_the_persons_edit_back(
    played: Layout, tmp_path: Path
):
    layout = Layout(copied(played.root, tmp_path))
    done = cli(layout, 'restore-turn', the_turn(layout, 'other'), desk='other')
    assert done.returncode == 0, done.stderr
    assert desk_texts(layout, 'other') == {'notes/x.md': PERSONS}
