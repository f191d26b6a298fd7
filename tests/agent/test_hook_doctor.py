"""`checkpoints hook doctor`, per harness: the file named checked for the harness it holds, the
harness asked about named and only its install suggested, and the last event handled and the
last that failed, with the error text a harness run headless never shows."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from helpers.builders import write
from helpers.cli import checkpoints
from helpers.hooklayout import SETTINGS
from helpers.processes import environment

from trading_checkpoints.agent.hooks.install import command_line, merged


def lines(done: subprocess.CompletedProcess) -> list[str]:
    return done.stdout.splitlines()


def test_a_named_file_is_checked_for_the_harness_it_holds_only(
    project: Path, home: dict[str, str]
) -> None:
    done = checkpoints('hook', 'install', '--harness', 'claude', cwd=project, env=home)
    assert done.returncode == 0, done.stderr
    settings = project / SETTINGS['claude']
    report = checkpoints('hook', 'doctor', '--settings', str(settings), cwd=project, env=home)
    assert report.returncode == 0, report.stdout
    assert not any('gemini' in line.lower() for line in lines(report)), report.stdout
    assert lines(report)[0].startswith(f'claude      ok      installed in {settings}: ')


@pytest.mark.parametrize('harness, other', [('claude', 'gemini'), ('gemini', 'claude')])
def test_doctor_names_the_harness_asked_about_and_suggests_only_its_install(
    project: Path, home: dict[str, str], harness: str, other: str
) -> None:
    done = checkpoints('hook', 'install', '--harness', other, cwd=project, env=home)
    assert done.returncode == 0, done.stderr
    report = checkpoints('hook', 'doctor', '--harness', harness, cwd=project, env=home)
    assert report.returncode == 1
    name = {'claude': 'Claude Code', 'gemini': 'Gemini CLI'}[harness]
    [problem] = [line for line in lines(report) if ' problem ' in line]
    assert problem == (
        f'{harness:<11} problem installed nowhere: not in the settings {name} started in '
        f'{project} reads; run checkpoints hook install --harness {harness} there'
    )
    assert f'--harness {other}' not in report.stdout and other not in report.stdout


def test_an_install_from_before_the_closing_events_is_told_to_install_again(
    project: Path, home: dict[str, str]
) -> None:
    settings = project / SETTINGS['claude']
    settings.parent.mkdir()
    old = merged({}, 'claude', command_line('claude', project / 'workspace'))
    for event in ('PostToolUseFailure', 'Stop'):
        del old['hooks'][event]
    settings.write_text(json.dumps(old))
    report = checkpoints('hook', 'doctor', '--harness', 'claude', cwd=project, env=home)
    assert report.returncode == 1
    [problem] = [line for line in lines(report) if ' problem ' in line]
    assert problem.endswith('; missing PostToolUseFailure, Stop (install again to add them)')
    done = checkpoints('hook', 'install', '--harness', 'claude', cwd=project, env=home)
    assert done.returncode == 0, done.stderr
    again = checkpoints('hook', 'doctor', '--harness', 'claude', cwd=project, env=home)
    assert again.returncode == 0, again.stdout


def _run_hook(project: Path, home: dict[str, str], harness: str, event: dict) -> None:
    """Runs the command the harness's settings register, as the harness runs it."""
    data = json.loads((project / SETTINGS[harness]).read_text())
    [group] = data['hooks']['PreToolUse' if harness == 'claude' else 'BeforeTool']
    subprocess.run(
        ['/bin/sh', '-c', group['hooks'][0]['command']],
        input=json.dumps(event).encode(),
        capture_output=True,
        cwd=project,
        env=environment(home),
        timeout=60,
        check=False,
    )


def _write_event(project: Path, text: str) -> dict:
    memory = project / 'workspace' / 'desks' / 'main' / 'Memory.md'
    memory.write_text(text)
    return {
        'session_id': 's1',
        'cwd': str(project),
        'hook_event_name': 'PreToolUse',
        'tool_name': 'Write',
        'tool_input': {'file_path': str(memory), 'content': 'new\n'},
    }


def test_doctor_shows_the_last_failure_with_its_error_text_per_harness(
    project: Path, home: dict[str, str]
) -> None:
    for harness in ('claude', 'gemini'):
        done = checkpoints('hook', 'install', '--harness', harness, cwd=project, env=home)
        assert done.returncode == 0, done.stderr
    broken = project / 'workspace' / '.checkpoints' / 'main.git'
    broken.parent.mkdir()
    broken.write_text('not a repository')  # every checkpoint of desk main now fails
    _run_hook(project, home, 'claude', _write_event(project, 'v1\n'))

    report = checkpoints('hook', 'doctor', '--harness', 'claude', cwd=project, env=home)
    assert report.returncode == 1
    [failed] = [line for line in lines(report) if line.startswith('last failed')]
    assert failed.startswith('last failed problem claude: ')
    assert "PreToolUse Write: could not checkpoint desk 'main' for Write " in failed
    assert str(broken) in failed, 'the error text, as the hook said it'
    assert 'last event  ok      claude: none handled yet' in lines(report)
    other = checkpoints('hook', 'doctor', '--harness', 'gemini', cwd=project, env=home)
    assert other.returncode == 0, other.stdout
    assert 'last failed' not in other.stdout

    broken.unlink()
    _run_hook(project, home, 'claude', _write_event(project, 'v2\n'))
    later = checkpoints('hook', 'doctor', '--harness', 'claude', cwd=project, env=home)
    assert later.returncode == 0, later.stdout
    [handled] = [line for line in lines(later) if line.startswith('last event')]
    assert 'PreToolUse Write: checkpoint ' in handled
    [kept] = [line for line in lines(later) if line.startswith('last failed')]
    assert kept.startswith('last failed ok      claude: '), 'an older failure: shown, no problem'


def test_gemini_project_settings_in_a_folder_it_does_not_trust_are_a_problem(
    project: Path, tmp_path: Path
) -> None:
    """Gemini CLI reads a folder's project settings only where it trusts the folder."""
    env = {'HOME': str(tmp_path / 'another-home')}
    done = checkpoints('hook', 'install', '--harness', 'gemini', cwd=project, env=env)
    assert done.returncode == 0, done.stderr
    settings = project / SETTINGS['gemini']
    listed = tmp_path / 'another-home' / '.gemini' / 'trustedFolders.json'
    untrusted = (
        f'Gemini CLI ignores {settings}: {project} is not a trusted folder (trust it when Gemini '
        f'CLI asks, or add "{project}": "TRUST_FOLDER" to {listed})'
    )
    assert f'Note: {untrusted}.' in lines(done)
    report = checkpoints('hook', 'doctor', '--harness', 'gemini', cwd=project, env=env)
    assert report.returncode == 1 and f'gemini      problem {untrusted}' in lines(report)
    # TRUST_PARENT on a folder trusts its parent, and what is below it.
    write(
        tmp_path,
        'another-home/.gemini/trustedFolders.json',
        json.dumps({str(project / 'workspace'): 'TRUST_PARENT'}),
    )
    report = checkpoints('hook', 'doctor', '--harness', 'gemini', cwd=project, env=env)
    assert report.returncode == 0, report.stdout
    # The longest rule wins.
    write(
        tmp_path,
        'another-home/.gemini/trustedFolders.json',
        json.dumps({str(tmp_path): 'TRUST_FOLDER', str(project): 'DO_NOT_TRUST'}),
    )
    report = checkpoints('hook', 'doctor', '--harness', 'gemini', cwd=project, env=env)
    assert report.returncode == 1 and f'gemini      problem {untrusted}' in lines(report)
