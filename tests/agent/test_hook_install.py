"""`checkpoints hook install|uninstall|doctor`: the harness's settings file, merged and undone."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.builders import write
from helpers.cli import checkpoints
from helpers.hookrun import event
from helpers.processes import environment

from trading_checkpoints.agent.hooks.install import HOOK_SCRIPT, is_ours
from trading_checkpoints.workspace import Workspace

CLAUDE_SETTINGS = {
    'model': 'opus',
    'permissions': {'allow': ['Bash(ls:*)']},
    'hooks': {
        'PreToolUse': [
            {'matcher': 'Read', 'hooks': [{'type': 'command', 'command': 'echo mine'}]},
            # The spelling an older manual offered: a bare command, replaced by install.
            {'matcher': 'Write', 'hooks': [{'type': 'command', 'command': 'checkpoints hook'}]},
        ],
        'Stop': [{'hooks': [{'type': 'command', 'command': 'notify-send done'}]}],
    },
    'env': {'LANG': 'fr_FR.UTF-8', 'NOTE': 'café'},
}
GEMINI_SETTINGS = {
    'theme': 'GitHub',
    'tools': {'sandbox': False},
    'hooks': {
        'AfterTool': [{'matcher': 'read_file', 'hooks': [{'type': 'command', 'command': 'x'}]}]
    },
}


def backups(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith('.bak'))


def ours(settings: dict) -> list[tuple[str, str, str]]:
    return [
        (event, group.get('matcher', ''), hook['command'])
        for event, groups in settings['hooks'].items()
        for group in groups
        for hook in group['hooks']
        if is_ours(hook['command'])
    ]


@pytest.mark.parametrize(
    'harness, original, name',
    [
        ('claude', CLAUDE_SETTINGS, '.claude/settings.local.json'),
        ('gemini', GEMINI_SETTINGS, '.gemini/settings.json'),
    ],
)
def test_install_merges_idempotently_and_uninstall_removes_only_its_own(
    workspace: Path, desk: Path, harness: str, original: dict, name: str
) -> None:
    settings = workspace / name
    write(workspace, name, json.dumps(original, indent=4, ensure_ascii=False))
    done = checkpoints('hook', 'install', '--harness', harness, cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert f'Installed the {harness} hooks in {settings}' in done.stdout
    installed = json.loads(settings.read_text())
    first = settings.read_bytes()
    [backup] = backups(settings.parent)
    assert json.loads((settings.parent / backup).read_text()) == original

    added = ours(installed)
    [command] = {command for _, _, command in added}
    # The interpreter running checkpoints, and the hook script beside it.
    interpreter, script, *rest = shlex.split(command)
    assert os.path.isabs(interpreter) and os.access(interpreter, os.X_OK)
    assert os.path.samefile(interpreter, sys.executable)
    assert script == str(Path(sys.executable).absolute().parent / HOOK_SCRIPT)
    assert rest == ['--harness', harness, '--workspace', str(workspace)]
    if harness == 'claude':
        tools = 'Write|Edit|MultiEdit|NotebookEdit|Bash'
        assert sorted(added) == [
            ('PostToolUse', tools, command),
            ('PostToolUseFailure', tools, command),
            ('PreToolUse', tools, command),
            ('Stop', '', command),
            ('UserPromptSubmit', '', command),
        ]
    else:
        tools = 'write_file|replace|run_shell_command'
        assert sorted(added) == [
            ('AfterAgent', '', command),
            ('AfterTool', tools, command),
            ('BeforeAgent', '', command),
            ('BeforeTool', tools, command),
        ]
    for key in original:  # every other key kept, with its values
        if key != 'hooks':
            assert installed[key] == original[key]
    if harness == 'claude':  # another program's entry for an event ours share is kept first
        assert installed['hooks']['Stop'][0] == original['hooks']['Stop'][0]

    again = checkpoints('hook', 'install', '--harness', harness, cwd=workspace)
    assert again.returncode == 0 and 'nothing changed' in again.stdout
    assert settings.read_bytes() == first, 'a second install is byte-identical'
    assert backups(settings.parent) == [backup], 'and copies nothing aside'

    gone = checkpoints('hook', 'uninstall', '--harness', harness, cwd=workspace)
    assert gone.returncode == 0 and f'Removed the hooks from {settings}' in gone.stdout
    left = json.loads(settings.read_text())
    expected = json.loads(json.dumps(original))
    if harness == 'claude':  # the old bare spelling was ours too
        del expected['hooks']['PreToolUse'][1]
    assert left == expected
    assert len(backups(settings.parent)) == 2


def test_the_installed_command_runs_without_the_virtualenv_on_the_path(
    workspace: Path, desk: Path
) -> None:
    """A harness started from another shell: PATH without this virtualenv, no PYTHONPATH."""
    done = checkpoints('hook', 'install', '--harness', 'claude', cwd=workspace)
    assert done.returncode == 0, done.stderr
    settings = json.loads((workspace / '.claude/settings.local.json').read_text())
    [command] = {command for _, _, command in ours(settings)}
    write(desk, 'Memory.md', 'v0\n')
    bare = {'PATH': os.defpath, 'HOME': str(workspace.parent), 'LANG': 'C.UTF-8'}
    ran = subprocess.run(
        ['/bin/sh', '-c', command],
        input=event('claude_pre_tool_use_edit.json', workspace),
        capture_output=True,
        env=bare,
        cwd=workspace,
        timeout=60,
        check=False,
    )
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, b'', b'')
    [taken] = Workspace(workspace).desk('main').list()
    assert taken.tool == 'claude:Edit'


def test_global_dry_run_and_a_settings_file(workspace: Path, tmp_path: Path) -> None:
    home = tmp_path / 'home'
    home.mkdir()
    env = {'HOME': str(home)}
    dry = checkpoints(
        'hook', 'install', '--harness', 'gemini', '--global', '--dry-run', env=env, cwd=tmp_path
    )
    assert dry.returncode == 0 and 'Dry run:' in dry.stdout
    assert '"BeforeTool"' in dry.stdout and not (home / '.gemini').exists()
    done = checkpoints('hook', 'install', '--harness', 'gemini', '--global', env=env, cwd=tmp_path)
    assert done.returncode == 0 and (home / '.gemini/settings.json').is_file()
    assert backups(home / '.gemini') == [], 'a new file has nothing to copy aside'

    # --settings names the file; a symlinked one keeps its link and changes its target.
    real = write(tmp_path, 'dotfiles/claude.json', '{"model": "haiku"}')
    link = tmp_path / 'project' / '.claude' / 'settings.json'
    link.parent.mkdir(parents=True)
    link.symlink_to(real)
    done = checkpoints(
        'hook', 'install', '--harness', 'claude', '--settings', str(link), cwd=workspace
    )
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and json.loads(real.read_text())['model'] == 'haiku'
    assert 'UserPromptSubmit' in json.loads(real.read_text())['hooks']


def test_a_broken_settings_file_is_left_alone(workspace: Path) -> None:
    settings = write(workspace, '.claude/settings.local.json', '{"model": "opus",}')
    done = checkpoints('hook', 'install', '--harness', 'claude', cwd=workspace)
    assert done.returncode == 1 and 'is not valid JSON' in done.stderr
    assert settings.read_text() == '{"model": "opus",}' and backups(settings.parent) == []
    write(workspace, '.claude/settings.local.json', '{"hooks": []}')
    done = checkpoints('hook', 'install', '--harness', 'claude', cwd=workspace)
    assert done.returncode == 1 and '"hooks" is not an object' in done.stderr


def test_no_workspace_means_global_or_a_file(tmp_path: Path) -> None:
    done = checkpoints('hook', 'install', '--harness', 'claude', cwd=tmp_path)
    assert done.returncode == 1 and '--global' in done.stderr


def test_doctor_says_what_a_harness_would_see(
    workspace: Path, desk: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    elsewhere = tmp_path_factory.mktemp('elsewhere')
    env = {'HOME': str(elsewhere / 'home')}
    before = checkpoints('hook', 'doctor', '--json', cwd=workspace, env=env)
    assert before.returncode == 1
    found = json.loads(before.stdout)
    assert found['problems'] == 1 and any(
        'installed nowhere' in f['seen'] for f in found['findings']
    )

    # Installed in the folder the harness is started in: here the desk.
    assert checkpoints('hook', 'install', '--harness', 'claude', cwd=desk, env=env).returncode == 0
    write(desk, 'Memory.md', 'v0\n')
    ran = checkpoints(
        'hook', stdin=event('claude_pre_tool_use_edit.json', workspace), text=False, env=env
    )
    assert ran.returncode == 0
    report = checkpoints('hook', 'doctor', '--from', str(desk), cwd=workspace, env=env)
    assert report.returncode == 0, report.stdout
    lines = report.stdout.splitlines()
    assert any(line.startswith('command') and line.endswith(': runs') for line in lines)
    assert any(line.startswith('workspace') and str(workspace) in line for line in lines)
    assert any(line.startswith('desk') and 'main: its folder exists' in line for line in lines)
    [last] = [line for line in lines if line.startswith('last event')]
    assert 'PreToolUse Edit: checkpoint ' in last and lines[-1] == 'No problems found.'

    nowhere = checkpoints('hook', 'doctor', '--from', str(elsewhere), workspace=workspace, env=env)
    assert 'events from there are ignored' in nowhere.stdout


@pytest.mark.parametrize(
    'command, ours_too',
    [
        ('/opt/venv/bin/python /opt/venv/bin/checkpoints-hook --harness claude', True),
        ("'/opt/my venv/bin/python3.11' '/opt/my venv/bin/checkpoints-hook'", True),
        ('/opt/venv/bin/checkpoints-hook --harness gemini --strict', True),
        ('/opt/venv/bin/checkpoints hook --harness claude', True),
        ('checkpoints hook', True),
        ('/usr/bin/python3 -m trading_checkpoints hook --harness claude', True),
        ('python -m trading_checkpoints.agent.hooks --harness gemini', True),
        ('/opt/venv/bin/checkpoints-hook install --harness claude', False),
        ('/opt/venv/bin/python /opt/venv/bin/checkpoints-hook uninstall', False),
        ('/opt/venv/bin/checkpoints hook install --harness claude', False),
        ('/opt/venv/bin/checkpoints list', False),
        ('echo /opt/venv/bin/checkpoints-hook', False),
        ('/opt/venv/bin/python /opt/venv/bin/other-hook --harness claude', False),
        ('notify-send done', False),
        ('', False),
    ],
)
def test_uninstall_knows_every_spelling_of_the_hook_command(command: str, ours_too: bool) -> None:
    """What uninstall removes and install replaces: the hook command in any spelling this or
    an earlier version wrote, and nothing else (not a setup verb, not another program)."""
    assert is_ours(command) is ours_too


def test_install_writes_the_console_script_where_the_hook_script_is_missing(
    workspace: Path, tmp_path: Path
) -> None:
    """An installation without ``checkpoints-hook`` beside its interpreter (a checkout run
    from its folder) gets ``checkpoints hook`` in the spelling that runs there, and it runs."""
    python = tmp_path / 'bin' / 'python'
    python.parent.mkdir()
    python.symlink_to(sys.executable)
    code = (
        'from trading_checkpoints.agent.hooks.install import command_line;'
        'print(command_line("claude"))'
    )
    done = subprocess.run(
        [str(python), '-c', code], capture_output=True, text=True, check=True, timeout=60
    )
    words = shlex.split(done.stdout)
    assert HOOK_SCRIPT not in done.stdout
    assert words[-3:] == ['hook', '--harness', 'claude'], words
    assert is_ours(done.stdout.strip())


@pytest.mark.parametrize(
    'harness, event, answer',
    [
        ('claude', 'PostToolUseFailure', b''),
        ('claude', 'Stop', b''),
        ('gemini', 'AfterAgent', b'{}\n'),
    ],
)
def test_the_closing_events_install_registers_are_answered_quietly(
    workspace: Path, desk: Path, harness: str, event: str, answer: bytes
) -> None:
    """The events that close a tool's announcement are registered (the real binaries know
    them: Claude Code 2.1.328, Gemini CLI 0.61.0); the registered command answers each with
    exit 0 and takes no checkpoint."""
    done = checkpoints('hook', 'install', '--harness', harness, cwd=workspace)
    assert done.returncode == 0, done.stderr
    name = '.claude/settings.local.json' if harness == 'claude' else '.gemini/settings.json'
    [group] = json.loads((workspace / name).read_text())['hooks'][event]
    write(desk, 'Memory.md', 'v0\n')
    payload = {
        'session_id': 's1',
        'cwd': str(workspace),
        'hook_event_name': event,
        'tool_name': 'Write',
        'tool_input': {'file_path': str(desk / 'Memory.md')},
        'error': 'The user denied this tool.',
    }
    ran = subprocess.run(
        ['/bin/sh', '-c', group['hooks'][0]['command']],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env=environment(),
        cwd=workspace,
        timeout=60,
        check=False,
    )
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, answer, b'')
    assert Workspace(workspace).desk('main').list() == []
