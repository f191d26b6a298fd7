"""`checkpoints hook install` run in the folder the harness is started in: the project settings
written there, the hook command bound to the workspace found from there as every verb finds
it, and a "Check with:" line that works when pasted."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest
from helpers.builders import write
from helpers.cli import checkpoints, shell
from helpers.hooklayout import SETTINGS
from helpers.processes import environment

from trading_checkpoints.agent.hooks.install import bound_workspace, is_ours
from trading_checkpoints.workspace import Workspace


def commands(settings: Path) -> set[str]:
    data = json.loads(settings.read_text())
    return {
        hook['command']
        for groups in data['hooks'].values()
        for group in groups
        for hook in group['hooks']
        if is_ours(hook['command'])
    }


def check_line(stdout: str) -> str:
    [line] = [line for line in stdout.splitlines() if line.startswith('Check with: ')]
    return line[len('Check with: ') :]


@pytest.mark.parametrize('harness', ['claude', 'gemini'])
def test_install_in_the_folder_holding_workspace_writes_its_project_settings(
    project: Path, home: dict[str, str], harness: str
) -> None:
    done = checkpoints('hook', 'install', '--harness', harness, cwd=project, env=home)
    assert done.returncode == 0, done.stderr
    settings = project / SETTINGS[harness]
    name = {'claude': 'Claude Code', 'gemini': 'Gemini CLI'}[harness]
    assert done.stdout.splitlines()[:3] == [
        f'Installed the {harness} hooks in {settings}.',
        f'The hook acts on the workspace {project / "workspace"} (found as ./workspace).',
        f'{name} started in {project} reads it.',
    ]
    [command] = commands(settings)
    assert bound_workspace(command) == project / 'workspace'
    assert not (project / 'workspace' / SETTINGS[harness]).exists()
    assert not (Path(home['HOME']) / f'.{harness}' / 'settings.json').exists()
    pasted = shell(check_line(done.stdout), cwd=project.parent, env=home)
    assert pasted.returncode == 0, pasted.stdout + pasted.stderr
    assert 'No problems found.' in pasted.stdout


def test_the_bound_command_captures_a_write_from_the_folder_holding_workspace(
    project: Path, home: dict[str, str]
) -> None:
    """What Claude Code started in ``project`` runs: the registered command, with an event whose
    cwd is ``project``, writing ``workspace/desks/main/Memory.md``."""
    done = checkpoints('hook', 'install', '--harness', 'claude', cwd=project, env=home)
    assert done.returncode == 0, done.stderr
    [command] = commands(project / SETTINGS['claude'])
    memory = write(project, 'workspace/desks/main/Memory.md', 'v0\n')
    event = {
        'session_id': 's1',
        'cwd': str(project),
        'hook_event_name': 'PreToolUse',
        'tool_name': 'Write',
        'tool_input': {'file_path': str(memory), 'content': 'v1\n'},
    }
    ran = subprocess.run(
        ['/bin/sh', '-c', command],
        input=json.dumps(event).encode(),
        capture_output=True,
        cwd=project,
        env=environment(home),
        timeout=60,
        check=False,
    )
    assert (ran.returncode, ran.stderr) == (0, b'')
    [taken] = Workspace(project / 'workspace').desk('main').list()
    assert taken.tool == 'claude:Write'


def test_install_binds_the_workspace_of_the_environment(
    project: Path, tmp_path: Path, home: dict[str, str]
) -> None:
    elsewhere = tmp_path / 'agent-workspace'
    (elsewhere / 'desks' / 'main').mkdir(parents=True)
    env = {**home, 'CHECKPOINTS_WORKSPACE': str(elsewhere)}
    done = checkpoints('hook', 'install', '--harness', 'gemini', cwd=project, env=env)
    assert done.returncode == 0, done.stderr
    assert f'workspace {elsewhere} (from $CHECKPOINTS_WORKSPACE)' in done.stdout
    [command] = commands(project / SETTINGS['gemini'])
    assert bound_workspace(command) == elsewhere


def test_install_with_workspace_given_writes_the_current_folder_not_the_workspace(
    project: Path, home: dict[str, str]
) -> None:
    """A harness started in ``project`` never reads ``workspace/.claude/``."""
    workspace = project / 'workspace'
    done = checkpoints(
        'hook', 'install', '--harness', 'claude', workspace=workspace, cwd=project, env=home
    )
    assert done.returncode == 0, done.stderr
    assert f'workspace {workspace} (from --workspace)' in done.stdout
    [command] = commands(project / SETTINGS['claude'])
    assert bound_workspace(command) == workspace
    assert not (workspace / '.claude').exists()


def test_install_with_settings_names_the_file_and_the_check_line_names_it_too(
    project: Path, tmp_path: Path, home: dict[str, str]
) -> None:
    settings = project / '.claude' / 'settings.json'  # the shared project settings
    done = checkpoints(
        'hook', 'install', '--harness', 'claude', '--settings', str(settings), cwd=project, env=home
    )
    assert done.returncode == 0, done.stderr
    assert not (project / SETTINGS['claude']).exists()
    [command] = commands(settings)
    assert bound_workspace(command) == project / 'workspace'
    line = check_line(done.stdout)
    assert shlex.split(line)[-2:] == ['--settings', str(settings)]
    pasted = shell(line, cwd=tmp_path, env=home)
    assert pasted.returncode == 0, pasted.stdout + pasted.stderr
    assert f'claude      ok      installed in {settings}' in pasted.stdout


def test_install_where_no_workspace_is_found_says_how_to_go_on(
    tmp_path: Path, home: dict[str, str]
) -> None:
    done = checkpoints('hook', 'install', '--harness', 'claude', cwd=tmp_path, env=home)
    assert done.returncode == 1
    assert done.stderr.startswith('error: no workspace found: ')
    assert '--workspace DIR' in done.stderr and '--global' in done.stderr
    assert not (tmp_path / '.claude').exists()


def test_a_global_install_is_bound_to_no_workspace(tmp_path: Path, home: dict[str, str]) -> None:
    done = checkpoints('hook', 'install', '--harness', 'claude', '--global', cwd=tmp_path, env=home)
    assert done.returncode == 0, done.stderr
    settings = Path(home['HOME']) / '.claude' / 'settings.json'
    [command] = commands(settings)
    assert bound_workspace(command) is None
    assert 'Claude Code reads it in every project.' in done.stdout
    pasted = shell(check_line(done.stdout), cwd=tmp_path, env=home)
    assert pasted.returncode == 0, pasted.stdout + pasted.stderr
