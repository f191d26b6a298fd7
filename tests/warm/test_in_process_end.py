"""The ``bin/`` scripts end a command they run themselves (no server) as the server's child
ends one (``command.run_to_end``): what it printed all there, its status, and no teardown of
the interpreter's modules (12-14 ms of every hook event run in-process)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from helpers import ROOT
from helpers.builders import checkpoints_in, desk_in, new_workspace, write
from helpers.hookrun import event
from helpers.processes import environment

HOOK_SCRIPT = ROOT / 'bin' / 'checkpoints-hook'
SCRIPT = ROOT / 'bin' / 'checkpoints'
# Started with every interpreter of the test (``sitecustomize``): an object whose ``__del__``
# runs only when the interpreter tears its modules down, and says so in the file named.
TEARDOWN_PROBE = """\
import os


class _Probe:
    def __del__(self, open=open, mark=os.environ['TEARDOWN_MARK']):  # builtins go first
        with open(mark, 'a') as file:
            file.write('torn down\\n')


_probe = _Probe()
"""


def _run(command: list[str], tmp_path: Path, stdin: bytes = b'') -> tuple[int, str, str, bool]:
    """The command's status, stdout, stderr, and whether the interpreter tore down its
    modules, run without the server."""
    probe = tmp_path / 'probe'
    probe.mkdir(exist_ok=True)
    (probe / 'sitecustomize.py').write_text(TEARDOWN_PROBE)
    mark = tmp_path / 'torn-down'
    mark.unlink(missing_ok=True)
    env = environment({'CHECKPOINTS_SERVER': 'off', 'TEARDOWN_MARK': str(mark)})
    env['PYTHONPATH'] = f'{probe}:{env["PYTHONPATH"]}'
    done = subprocess.run(
        [sys.executable, *map(str, command)],
        input=stdin,
        capture_output=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
    )
    return done.returncode, done.stdout.decode(), done.stderr.decode(), mark.exists()


def test_a_hook_event_run_in_process_is_done_and_ends_without_the_teardown(
    tmp_path: Path,
) -> None:
    workspace = new_workspace(tmp_path / 'project')
    write(desk_in(workspace), 'notes/a.md', 'before the write')
    payload = event('claude_pre_tool_use_write.json', workspace)
    status, out, err, torn_down = _run([HOOK_SCRIPT, '--harness', 'claude'], tmp_path, payload)
    assert (status, out, err) == (0, '', '')
    assert not torn_down
    assert [c.reason for c in checkpoints_in(workspace).list()] != []  # the event's checkpoint
    # The same event through ``python -m``, which ends as any interpreter does: the probe
    # tells a teardown when there is one.
    status, out, err, torn_down = _run(
        ['-m', 'trading_checkpoints.agent.hooks', '--harness', 'claude'], tmp_path, payload
    )
    assert (status, out, err) == (0, '', '') and torn_down


def test_a_command_run_in_process_prints_everything_and_keeps_its_status(
    tmp_path: Path,
) -> None:
    workspace = new_workspace(tmp_path / 'project')
    write(desk_in(workspace), 'notes/a.md', 'one')
    checkpoints_in(workspace).snapshot('the only one')
    status, out, err, torn_down = _run([SCRIPT, '--workspace', workspace, 'list'], tmp_path)
    assert (status, err, torn_down) == (0, '', False)
    assert 'the only one' in out
    status, out, err, torn_down = _run([SCRIPT, 'no-such-verb'], tmp_path)
    assert (status, out, torn_down) == (2, '', False)
    assert "no such command 'no-such-verb'" in err
