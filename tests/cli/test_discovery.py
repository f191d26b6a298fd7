"""Which workspace and desk the command acts on, found like git finds its repository, and the
errors when they are missing: the real command in a subprocess, from real folders."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from helpers.builders import checkpoints_in, write
from helpers.cli import checkpoints, command
from helpers.processes import environment

READ_VERBS = [
    ['list'],
    ['log'],
    ['status'],
    ['turns'],
    ['diff', 'abc1234'],
    ['show', 'abc1234', 'Memory.md'],
    ['restore', 'abc1234'],
    ['restore-turn', 't1'],
    ['undo'],
    ['redo'],
    ['seal'],
    ['snapshot'],
    ['prune', '--dry-run'],
    ['track'],
    ['remote', 'list'],
    ['push'],
    ['pull'],
]


@pytest.fixture
def agent(tmp_path: Path) -> Path:
    """A project folder holding a workspace with desks main (two checkpoints) and research."""
    root = tmp_path / 'project' / 'workspace'
    main = checkpoints_in(root)
    write(main.desk_directory, 'Memory.md', 'v1\n')
    main.snapshot('main first')
    write(main.desk_directory, 'Memory.md', 'v2\n')
    main.snapshot('main second')
    research = checkpoints_in(root, 'research')
    write(research.desk_directory, 'notes/a.md', 'a\n')
    research.snapshot('research first')
    return root


def reasons(done) -> list[str]:
    assert done.returncode == 0, done.stderr
    return [row['reason'] for row in json.loads(done.stdout)]


def test_inside_a_desk_the_workspace_and_desk_are_found(agent: Path) -> None:
    """The newcomer's first command: cd into the desk and list."""
    done = checkpoints('list', cwd=agent / 'desks' / 'main')
    assert done.returncode == 0, done.stderr
    assert 'main second' in done.stdout and 'No checkpoints' not in done.stdout
    assert reasons(checkpoints('list', '--json', cwd=agent / 'desks' / 'research')) == [
        'research first'
    ]
    write(agent / 'desks' / 'research', 'notes/deep/b.md', 'b')
    deep = agent / 'desks' / 'research' / 'notes' / 'deep'
    assert reasons(checkpoints('list', '--json', cwd=deep)) == ['research first']


def test_from_the_workspace_or_its_repositories_the_desk_is_main_or_that_one(agent: Path) -> None:
    assert reasons(checkpoints('list', '--json', cwd=agent))[0] == 'main second'
    assert reasons(checkpoints('list', '--json', cwd=agent / 'desks'))[0] == 'main second'
    inside_repo = agent / '.checkpoints' / 'research.git' / 'refs'
    assert reasons(checkpoints('list', '--json', cwd=inside_repo)) == ['research first']


def test_from_the_project_folder_the_default_workspace_is_used(agent: Path) -> None:
    assert reasons(checkpoints('list', '--json', cwd=agent.parent))[0] == 'main second'


def test_options_go_before_or_after_the_verb_and_the_last_wins(agent: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / 'elsewhere'
    elsewhere.mkdir()
    ws = str(agent)
    for args in (
        ['--workspace', ws, '--desk', 'research', 'list', '--json'],
        ['list', '--json', '--workspace', ws, '--desk', 'research'],
        ['--workspace', ws, 'list', '--desk', 'research', '--json'],
        ['--desk', 'main', '--workspace', ws, 'list', '--desk', 'research', '--json'],
    ):
        assert reasons(checkpoints(*args, cwd=elsewhere)) == ['research first'], args
    # A subgroup's verb takes them too.
    done = checkpoints('remote', 'list', '--workspace', ws, '--desk', 'research', cwd=elsewhere)
    assert done.returncode == 0 and "No remotes for desk 'research'" in done.stdout


def test_options_and_environment_win_over_discovery(agent: Path, tmp_path: Path) -> None:
    other = tmp_path / 'other'
    write(other / 'desks' / 'main', 'Memory.md', 'o')
    checkpoints_in(other).snapshot('other')
    inside = agent / 'desks' / 'main'
    env = {'CHECKPOINTS_WORKSPACE': str(other)}
    assert reasons(checkpoints('list', '--json', cwd=inside, env=env)) == ['other']
    explicit = checkpoints('list', '--json', '--workspace', str(agent), cwd=inside, env=env)
    assert reasons(explicit)[0] == 'main second'
    # Inside desks/research of the workspace named by the environment: that desk.
    env = {'CHECKPOINTS_WORKSPACE': str(agent)}
    assert reasons(checkpoints('list', '--json', cwd=agent / 'desks' / 'research', env=env)) == [
        'research first'
    ]
    # $CHECKPOINTS_DESK wins over the folder; --desk over both.
    env['CHECKPOINTS_DESK'] = 'main'
    research = agent / 'desks' / 'research'
    assert reasons(checkpoints('list', '--json', cwd=research, env=env))[0] == 'main second'
    done = checkpoints('list', '--json', '--desk', 'research', cwd=research, env=env)
    assert reasons(done) == ['research first']


def test_no_workspace_anywhere_is_an_error_naming_where_it_looked(tmp_path: Path) -> None:
    for verb in READ_VERBS + [['desks']]:
        done = checkpoints(*verb, cwd=tmp_path)
        assert done.returncode == 1, (verb, done.stdout)
        assert done.stdout == ''
        [line] = done.stderr.splitlines()
        assert line.startswith('error: no workspace found'), line
        assert str(tmp_path) in line and str(tmp_path / 'workspace') in line


def test_a_missing_explicit_workspace_is_an_error(tmp_path: Path) -> None:
    done = checkpoints('--workspace', str(tmp_path / 'nope'), 'list', cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr == f'error: no workspace at {tmp_path / "nope"}: it does not exist ' + (
        '(from --workspace)\n'
    )
    env = {'CHECKPOINTS_WORKSPACE': str(tmp_path / 'gone')}
    done = checkpoints('status', cwd=tmp_path, env=env)
    assert done.returncode == 1 and '(from $CHECKPOINTS_WORKSPACE)' in done.stderr


@pytest.mark.parametrize('verb', READ_VERBS, ids=lambda verb: verb[0] + '-' + str(len(verb)))
def test_a_desk_that_does_not_exist_is_an_error_for_every_verb(agent: Path, verb) -> None:
    done = checkpoints(*verb, '--desk', 'mian', cwd=agent / 'desks' / 'main')
    assert done.returncode == 1, done.stdout
    [line] = done.stderr.splitlines()
    assert line == (
        f"error: no desk 'mian' in workspace {agent}: neither {agent}/desks/mian nor "
        f'{agent}/.checkpoints/mian.git exists (desks there: main, research)'
    )
    assert not (agent / '.checkpoints' / 'mian.git').exists()


def test_a_desk_that_is_a_file_is_an_error(agent: Path) -> None:
    write(agent / 'desks', 'notes.txt', 'a file, not a desk')
    for verb in (['list'], ['status'], ['snapshot'], ['log']):
        done = checkpoints(*verb, '--desk', 'notes.txt', cwd=agent)
        assert done.returncode == 1
        assert done.stderr == f"error: desk 'notes.txt' is not a folder: {agent}/desks/notes.txt\n"


def test_an_existing_desk_without_checkpoints_is_the_one_empty_answer(agent: Path) -> None:
    (agent / 'desks' / 'fresh').mkdir()
    inside = agent / 'desks' / 'fresh'
    done = checkpoints('list', cwd=inside)
    assert done.returncode == 0
    assert done.stdout.startswith("No checkpoints yet for desk 'fresh'")
    assert checkpoints('list', '--json', cwd=inside).stdout == '[]\n'
    assert checkpoints('status', cwd=inside).stdout.startswith(
        "No checkpoints yet for desk 'fresh'"
    )
    assert checkpoints('log', cwd=inside).stdout == "No checkpoints yet for desk 'fresh'.\n"
    assert not (agent / '.checkpoints' / 'fresh.git').exists(), 'reading creates nothing'


def test_a_desk_with_only_checkpoints_left_can_be_listed_and_restored(agent: Path) -> None:
    import shutil

    shutil.rmtree(agent / 'desks' / 'research')
    done = checkpoints('--desk', 'research', 'list', '--json', cwd=agent)
    [row] = json.loads(done.stdout)
    snap = checkpoints('--desk', 'research', 'snapshot', cwd=agent)
    assert snap.returncode == 1 and 'no desk folder' in snap.stderr
    done = checkpoints('--desk', 'research', 'restore', row['id'], cwd=agent)
    assert done.returncode == 0, done.stderr
    assert (agent / 'desks' / 'research' / 'notes' / 'a.md').read_text() == 'a\n'


@pytest.mark.parametrize(
    'name', ['a\nb', 'a\tb', 'a\x1bb', 'a\x9bb', '../x', 'a/b', 'a\\b', '.', '..', '']
)
@pytest.mark.parametrize('verb', [['list'], ['snapshot'], ['clone', 'url'], ['status']])
def test_one_desk_name_rule_for_every_verb(agent: Path, name: str, verb: list[str]) -> None:
    for args in (['--desk', name, *verb], [*verb, '--desk', name]):
        done = checkpoints(*args, cwd=agent)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert 'is not a desk name' in done.stderr.splitlines()[0]
    assert sorted(p.name for p in (agent / '.checkpoints').iterdir()) == [
        'main.git',
        'research.git',
    ]


def test_a_bad_desk_name_in_the_environment_is_an_error(agent: Path) -> None:
    done = checkpoints('list', cwd=agent, env={'CHECKPOINTS_DESK': 'a/b'})
    assert done.returncode == 1
    assert done.stderr.startswith("error: $CHECKPOINTS_DESK='a/b' is not a desk name")


def test_desks_lists_them_and_marks_the_current_one(agent: Path) -> None:
    import shutil

    (agent / 'desks' / 'fresh').mkdir()
    shutil.rmtree(agent / 'desks' / 'research')
    done = checkpoints('desks', cwd=agent / 'desks' / 'main')
    assert done.returncode == 0
    assert done.stdout.splitlines() == [
        '  fresh     (no checkpoints yet)',
        '* main',
        '  research  (no folder: checkpoints only)',
        'hint: checkpoints --desk NAME VERB acts on another desk',
    ]
    rows = json.loads(checkpoints('desks', '--json', cwd=agent / 'desks' / 'fresh').stdout)
    assert rows == [
        {'name': 'fresh', 'folder': True, 'checkpoints': False, 'current': True},
        {'name': 'main', 'folder': True, 'checkpoints': True, 'current': False},
        {'name': 'research', 'folder': False, 'checkpoints': True, 'current': False},
    ]


def test_from_a_removed_folder_a_relative_workspace_is_refused_naming_why(
    agent: Path, tmp_path: Path
) -> None:
    """Started in a folder removed since: a relative ``--workspace`` (or none: the folder
    itself is where the search starts) cannot be found, and the error says why."""
    gone = tmp_path / 'gone'
    gone.mkdir()
    for words in (['--workspace', 'agent'], []):
        done = subprocess.run(
            ['sh', '-c', 'cd "$0" && rmdir "$0" && exec "$@"', str(gone), *command(*words, 'list')],
            env=environment(None),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
        gone.mkdir()
        assert (done.returncode, done.stdout) == (1, ''), done.stderr
        assert done.stderr == (
            'error: the current folder no longer exists: run from an existing folder, or give '
            '--workspace as an absolute path\n'
        )
