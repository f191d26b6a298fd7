"""The `checkpoints` command, run as a real process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.builders import write
from helpers.cli import checkpoints
from helpers.processes import environment


def test_snapshot_list_restore_round_trip(workspace: Path, desk: Path) -> None:
    write(desk, 'Memory.md', 'v1')
    first = checkpoints(
        'snapshot',
        '-m',
        'first',
        cwd=workspace.parent,
        env={'CHECKPOINTS_WORKSPACE': str(workspace)},
    )
    assert first.returncode == 0, first.stderr
    assert 'first' in first.stdout
    write(desk, 'Memory.md', 'v2')
    write(desk, 'notes/new.md', 'n')
    second = checkpoints('--workspace', str(workspace), 'snapshot', '-m', 'second', cwd=workspace)
    assert second.returncode == 0
    again = checkpoints('--workspace', str(workspace), 'snapshot', cwd=workspace)
    assert again.returncode == 0 and 'Nothing changed' in again.stdout
    listed = checkpoints('--workspace', str(workspace), 'list', '--json', cwd=workspace)
    rows = json.loads(listed.stdout)
    assert [r['reason'] for r in rows] == ['second', 'first']
    assert set(rows[0]) >= {'id', 'created_at', 'reason'}
    restored = checkpoints('--workspace', str(workspace), 'restore', rows[1]['id'], cwd=workspace)
    assert restored.returncode == 0, restored.stderr
    assert 'D notes/new.md' in restored.stdout and 'W Memory.md' in restored.stdout
    undo_line = [line for line in restored.stdout.splitlines() if line.startswith('Undo with:')]
    assert undo_line and rows[0]['id'] in undo_line[0]
    assert (desk / 'Memory.md').read_text() == 'v1'
    table = checkpoints('--workspace', str(workspace), 'list', '-n', '1', cwd=workspace)
    lines = table.stdout.splitlines()
    assert f'restored {rows[1]["id"]}' in lines[0]
    assert lines[1] == '... and 2 older (list -n 0 shows all)'
    assert 'checkpoints diff ID' in lines[2] and 'checkpoints restore ID' in lines[2]
    assert '\x1b[' not in table.stdout, 'no colour when stdout is not a terminal'


def test_workspace_and_desk_from_environment(workspace: Path) -> None:
    other = workspace / 'desks' / 'research'
    write(other, 'notes/a.md', 'a')
    env = {'CHECKPOINTS_WORKSPACE': str(workspace), 'CHECKPOINTS_DESK': 'research'}
    assert checkpoints('snapshot', cwd=workspace, env=env).returncode == 0
    assert (workspace / '.checkpoints' / 'research.git' / 'HEAD').exists()
    assert json.loads(checkpoints('list', '--json', cwd=workspace, env=env).stdout)[0]['reason']


def test_list_json_is_empty_array_without_checkpoints(workspace: Path) -> None:
    done = checkpoints('--workspace', str(workspace), 'list', '--json', cwd=workspace)
    assert done.returncode == 0 and json.loads(done.stdout) == []
    assert not (workspace / '.checkpoints').exists()


@pytest.mark.parametrize(
    ('args', 'message'),
    [
        (['restore', 'zzz'], "'zzz' is not a checkpoint id"),
        (['restore', 'abcdef1'], 'no checkpoint'),
        (['--desk', 'missing', 'snapshot'], "no desk 'missing'"),
        (['--desk', '../x', 'list'], 'is not a desk name'),
    ],
)
def test_errors_are_one_line_without_traceback(
    workspace: Path, desk: Path, args: list[str], message: str
) -> None:
    write(desk, 'Memory.md', 'v1')
    assert checkpoints('--workspace', str(workspace), 'snapshot', cwd=workspace).returncode == 0
    done = checkpoints('--workspace', str(workspace), *args, cwd=workspace)
    assert done.returncode != 0
    assert message in done.stderr
    assert 'Traceback' not in done.stderr
    assert (desk / 'Memory.md').read_text() == 'v1'


def test_corrupt_repository_is_a_clear_error(workspace: Path, desk: Path) -> None:
    write(desk, 'Memory.md', 'v1')
    checkpoints('--workspace', str(workspace), 'snapshot', cwd=workspace)
    head = workspace / '.checkpoints' / 'main.git' / 'refs' / 'heads' / 'main'
    head.write_text('garbage\n')
    done = checkpoints('--workspace', str(workspace), 'list', cwd=workspace)
    assert done.returncode == 1
    assert 'not a commit id' in done.stderr and 'Traceback' not in done.stderr


def test_every_verb_has_help_with_an_example(workspace: Path) -> None:
    for verb in ['list', 'snapshot', 'restore', 'demo']:
        done = checkpoints(verb, '--help', cwd=workspace)
        assert done.returncode == 0
        assert 'Examples:' in done.stdout and f'checkpoints {verb}' in done.stdout


def test_demo_runs_in_a_given_folder_and_keeps_it(tmp_path: Path) -> None:
    target = tmp_path / 'demo'
    done = checkpoints('demo', '--dir', str(target), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert 'Undo the restore' in done.stdout
    assert (target / '.checkpoints' / 'main.git' / 'HEAD').exists()
    assert 'SELL EVERYTHING' in (target / 'desks/main/notes/plan.md').read_text()
    refused = checkpoints('demo', '--dir', str(target), cwd=tmp_path)
    assert refused.returncode == 1 and 'is not empty' in refused.stderr


def test_demo_in_a_temporary_folder_leaves_nothing(tmp_path: Path) -> None:
    done = checkpoints('demo', cwd=tmp_path, env={'TMPDIR': str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_installed_commands_run() -> None:
    """pip installed bin/checkpoints and bin/checkpoints-hook beside this interpreter, their
    first line pointing at it; both run as commands (no terminal, so the warm server is off
    only by the environment)."""
    folder = Path(sys.executable).parent
    for name, args, expected in (
        ('checkpoints', ['--version'], 'checkpoints '),
        ('checkpoints-hook', ['--help'], 'usage: checkpoints hook'),
    ):
        script = folder / name
        first = script.read_text().splitlines()[0]
        assert first.startswith('#!') and 'python' in first, (script, first)
        done = subprocess.run(
            [str(script), *args],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            env=environment({'CHECKPOINTS_SERVER': 'off'}),
            timeout=60,
        )
        assert done.returncode == 0 and done.stdout.startswith(expected), (name, done)
