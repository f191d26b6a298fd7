"""``checkpoints protect`` and ``checkpoints budget`` (a person's verbs), and the policy in
``status``; a person's ``restore`` of a protected path is not refused: the policy binds the
agent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.builders import checkpoints_in, write
from helpers.cli import checkpoints


def ok(*args: str, workspace: Path | None = None, cwd: Path | None = None) -> str:
    done = checkpoints(*args, workspace=workspace, cwd=cwd)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ''
    return done.stdout


@pytest.fixture
def started(workspace: Path, desk: Path) -> Path:
    write(desk, 'Memory.md', '# Memory\n' + 'x' * 40 + '\n')
    write(desk, 'notes/limits.md', 'max position 5\n')
    write(desk, 'notes/rules/sizes.md', 'sizes\n')
    checkpoints_in(workspace).snapshot('start')
    return workspace


def test_protect_lists_adds_and_removes(started: Path, desk: Path):
    assert ok('protect', cwd=started) == (
        "Desk 'main' protects nothing.\n"
        f'Protect a tracked path with: checkpoints --workspace {started} --desk main protect PATH\n'
    )
    assert ok('protect', 'notes/limits.md', 'notes/rules/', cwd=started) == (
        "Desk 'main' now protects:\n  notes/limits.md\n  notes/rules\n"
    )
    # From inside the desk, paths are taken from the current folder.
    added = json.loads(ok('protect', 'Memory.md', '--json', cwd=desk))
    assert added == {
        'desk': 'main',
        'protected': ['notes/limits.md', 'notes/rules', 'Memory.md'],
        'changed': True,
    }
    removed = json.loads(ok('protect', '--remove', 'rules', '--json', cwd=desk / 'notes'))
    assert removed['protected'] == ['notes/limits.md', 'Memory.md']
    assert ok('protect', cwd=started) == ("Desk 'main' protects:\n  notes/limits.md\n  Memory.md\n")


@pytest.mark.parametrize(
    ('args', 'said'),
    [
        (['protect', 'other.txt'], "error: 'other.txt' is not tracked"),
        (['protect', '../x'], "error: '../x' is not a usable desk path"),
        (['protect', '--remove', 'notes/plan.md'], "error: 'notes/plan.md' is not one of"),
        (['budget', 'Memory.md', 'lots'], "error: 'lots' is not a size in bytes"),
        (['budget', 'Memory.md', '0'], 'error: a budget must be a whole number of at least 1'),
        (['budget', 'Memory.md', '5', '--tokens', '5'], 'error: give a budget in bytes or'),
        (['budget', '--remove', 'Memory.md'], "error: 'Memory.md' has no budget"),
        (['budget', '--tokens', '5'], 'error: name the PATH whose budget to set'),
    ],
)
def test_a_bad_request_is_one_line_and_changes_nothing(started: Path, args, said):
    done = checkpoints(*args, workspace=started)
    assert done.returncode == 1 and done.stderr.startswith(said), done.stderr
    assert ok('protect', '--json', workspace=started).count('"protected": []') == 1
    assert '"budgets": []' in ok('budget', '--json', workspace=started)


def test_budget_sets_lists_and_removes(started: Path):
    assert ok('budget', cwd=started).startswith("Desk 'main' has no size budgets.\n")
    assert ok('budget', 'Memory.md', '20', cwd=started) == (
        "Desk 'main' budgets:\n  Memory.md  50 B of 20 B  (over)\n"
    )
    listed = json.loads(ok('budget', 'notes', '--tokens', '100', '--json', workspace=started))
    assert listed['budgets'] == [
        {'path': 'Memory.md', 'bytes': 20, 'tokens': None, 'size': 50, 'over': True},
        {'path': 'notes', 'bytes': 400, 'tokens': 100, 'size': 21, 'over': False},
    ]
    ok('budget', '--remove', 'Memory.md', workspace=started)
    assert ok('budget', cwd=started) == (
        "Desk 'main' budgets:\n  notes  about 5 tokens (21 B) of 100 tokens\n"
    )


def test_status_shows_the_policy(started: Path):
    ok('protect', 'notes/limits.md', workspace=started)
    ok('budget', 'Memory.md', '2k', workspace=started)
    ok('budget', 'notes', '10', workspace=started)
    text = ok('status', workspace=started)
    assert 'Protected: notes/limits.md\n' in text
    assert 'Budget: Memory.md 50 B of 2.0 KiB\n' in text
    assert 'Budget: notes 21 B of 10 B  (over)\n' in text
    quiet = ok('status', '-q', workspace=started)
    assert 'Budget: Memory.md' not in quiet and 'Budget: notes 21 B' in quiet
    data = json.loads(ok('status', '--json', workspace=started))
    assert data['protected'] == ['notes/limits.md']
    assert [(b['path'], b['over']) for b in data['budgets']] == [
        ('Memory.md', False),
        ('notes', True),
    ]


def test_a_person_s_restore_of_a_protected_path_goes_ahead(started: Path, desk: Path):
    first = checkpoints_in(started).list(1)[0].checkpoint_id
    ok('protect', 'notes/limits.md', workspace=started)
    write(desk, 'notes/limits.md', 'max position 50\n')
    ok('restore', first, 'notes/limits.md', workspace=started)
    assert (desk / 'notes' / 'limits.md').read_text() == 'max position 5\n'
