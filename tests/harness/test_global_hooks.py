"""Hooks installed for every project (``hook install --global``, in the test's HOME): in a
folder with no workspace they create nothing and say nothing; in a workspace they capture."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.harness.driver import CLAUDE, Harness, Run, install_hooks, prepare_home, run
from helpers.harness.scenario import DESK_FILES, cli, desk_texts, make_layout, turns
from helpers.reading import tree_of

pytestmark = pytest.mark.harness


def hook_failures(done: Run) -> list[str]:
    """What the harness said about hooks that failed (Claude Code: only in its transcript)."""
    if done.harness is CLAUDE:
        return [
            str(line['attachment'])
            for line in done.transcript
            if 'hook' in str(line.get('attachment', {}).get('type', ''))
        ]
    return [line for line in done.stderr.splitlines() if 'Hook' in line and 'failed' in line]


def test_global_hooks_create_nothing_outside_a_workspace(harness: Harness, tmp_path: Path):
    layout = make_layout(tmp_path)
    elsewhere = tmp_path / 'elsewhere'  # no workspace in it or above it
    (elsewhere / 'notes').mkdir(parents=True)
    prepare_home(layout.home, [elsewhere, layout.workspace])
    installed = install_hooks(harness, elsewhere, layout.home, '--global')
    assert installed.returncode == 0, installed.stderr
    assert str(layout.home.joinpath(*harness.global_settings)) in installed.stdout
    project_before = tree_of(layout.project)

    note = elsewhere / 'notes' / 'a.md'
    script = [
        [harness.write(note, 'one\n')],
        [harness.edit(note, 'one', 'two')],
        [harness.shell('echo b > notes/b.md; rm notes/a.md; cat notes/b.md')],
        'done',
    ]
    done = run(harness, elsewhere, layout.home, 'take notes here', script)
    assert done.code == 0, done
    assert not [
        r for r in done.tool_results() if r.get('is_error') or 'error' in r.get('response', {})
    ]
    assert hook_failures(done) == []
    assert tree_of(elsewhere) == {'notes': 'dir', 'notes/b.md': ('-', b'b\n')}
    assert tree_of(layout.project) == project_before

    # The same hooks in a workspace: the agent's write is its turn's, which restore-turn undoes.
    desk_note = layout.desk() / 'notes' / 'c.md'
    done = run(
        harness,
        layout.workspace,
        layout.home,
        'and here',
        [[harness.write(desk_note, 'c\n')], 'done'],
    )
    assert done.code == 0 and hook_failures(done) == [], done
    (turn,) = [turn['turn_id'] for turn in turns(layout) if turn['label'] == 'and here']
    assert cli(layout, 'restore-turn', turn).returncode == 0
    assert desk_texts(layout) == DESK_FILES
