"""``warm/command.py``: one command line run in this process, as the console script, the warm
server's child and ``python -m trading_checkpoints`` run it. A hook event goes straight to the
hook's parser; everything else (setup verbs, options before ``hook``, ``--``) to the group."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.builders import write
from helpers.hookrun import event
from helpers.processes import environment

from trading_checkpoints import Checkpoints
from trading_checkpoints.warm.command import exit_status, hook_arguments, run


@pytest.mark.parametrize(
    'argv, hook',
    [
        (['hook'], []),
        (['hook', '--harness', 'claude'], ['--harness', 'claude']),
        (['hook', '--help'], ['--help']),
        (['hook', '--strict', '-v', '--desk', 'fx'], ['--strict', '-v', '--desk', 'fx']),
        (['hook', 'install', '--harness', 'claude'], None),
        (['hook', 'uninstall'], None),
        (['hook', 'doctor'], None),
        (['--workspace', 'ws', 'hook', '--harness', 'claude'], None),
        (['hook', '--', '--harness'], None),
        (['list'], None),
        (['snapshot', '-m', 'hook'], None),
        ([], None),
    ],
)
def test_only_a_hook_event_skips_the_command_group(argv: list[str], hook: list[str] | None) -> None:
    assert hook_arguments(argv) == hook


# An event run as the console script runs it with the server off; says whether click (the
# command group's library) was imported, and exits with the command's status.
HOOK_IN_PROCESS = (
    'import sys\n'
    'from trading_checkpoints.warm.command import run\n'
    'status = run(sys.argv[1:])\n'
    'print("click" in sys.modules, file=sys.stderr)\n'
    'sys.exit(status)\n'
)


def test_a_hook_event_takes_its_checkpoint_without_the_command_group(tmp_path: Path) -> None:
    workspace = tmp_path / 'ws'
    desk = workspace / 'desks' / 'main'
    write(desk, 'Memory.md', 'v0\n')
    done = subprocess.run(
        [sys.executable, '-c', HOOK_IN_PROCESS, 'hook', '--harness', 'claude'],
        input=event('claude_pre_tool_use_write.json', workspace),
        capture_output=True,
        cwd=workspace,
        env=environment({'CHECKPOINTS_SERVER': 'off'}),
        timeout=60,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, b'', b'False\n')
    [taken] = Checkpoints(workspace / '.checkpoints' / 'main.git', desk).list()
    assert taken.tool == 'claude:Write'


def test_a_setup_verb_still_goes_through_the_group(tmp_path: Path) -> None:
    workspace = tmp_path / 'ws'
    write(workspace / 'desks' / 'main', 'Memory.md', 'v0\n')
    done = subprocess.run(
        [sys.executable, '-c', HOOK_IN_PROCESS, 'hook', 'install', '--harness', 'claude'],
        capture_output=True,
        text=True,
        cwd=workspace,
        env=environment({'CHECKPOINTS_SERVER': 'off'}),
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == 'True\n'
    assert 'Installed the claude hooks in' in done.stdout
    assert (workspace / '.claude' / 'settings.local.json').is_file()


def test_a_harness_that_stopped_reading_gets_status_1_and_no_traceback(tmp_path: Path) -> None:
    """Gemini CLI reads ``{}`` from a hook's stdout; a harness gone before the answer leaves a
    closed pipe: a non-blocking error, quietly, with the checkpoint taken."""
    workspace = tmp_path / 'ws'
    desk = workspace / 'desks' / 'main'
    write(desk, 'Memory.md', 'v0\n')
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [sys.executable, '-c', HOOK_IN_PROCESS, 'hook', '--harness', 'gemini'],
            input=event('gemini_before_tool_write_file.json', workspace),
            stdout=write_end,
            stderr=subprocess.PIPE,
            cwd=workspace,
            env=environment({'CHECKPOINTS_SERVER': 'off'}),
            timeout=60,
        )
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (1, b'False\n')
    assert len(Checkpoints(workspace / '.checkpoints' / 'main.git', desk).list()) == 1


def test_a_command_line_runs_here_as_given_under_the_programs_name(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """In this process (whose own ``sys.argv`` is another program's): the arguments given, and
    ``checkpoints`` as the program's name whatever ``sys.argv[0]`` says."""
    assert run(['list', '--help']) == 0
    assert capsys.readouterr().out.startswith('Usage: checkpoints list [OPTIONS]')
    assert run(['list', '--no-such-option']) == 2
    assert "no such option '--no-such-option'" in capsys.readouterr().err


@pytest.mark.parametrize(
    'code, status, printed',
    [
        (None, 0, ''),
        (0, 0, ''),
        (3, 3, ''),
        (258, 2, ''),
        (-1, 255, ''),
        ('no desk', 1, 'no desk\n'),
    ],
)
def test_an_exit_code_becomes_the_status_python_gives_it(
    capsys: pytest.CaptureFixture[str], code: object, status: int, printed: str
) -> None:
    assert exit_status(code) == status
    assert capsys.readouterr() == ('', printed)
