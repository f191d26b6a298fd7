"""The command line for diff, show, log, status, restore options, undo, redo and seal."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.builders import write
from helpers.cli import start

from trading_checkpoints import Checkpoints
from trading_checkpoints.cli import cli

PNG = b'\x89PNG\r\n\x1a\n\x00binary\xff'


def run(workspace: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ['--workspace', str(workspace), *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def history(workspace: Path, cps: Checkpoints, desk: Path) -> tuple[str, str]:
    write(desk, 'Memory.md', 'one\ntwo\n')
    write(desk, 'memory/chart.png', PNG)
    first = cps.snapshot('first', tool='write_file', paths=['notes/plan.md'], turn='t1')
    write(desk, 'notes/plan.md', 'plan\n')
    write(desk, 'Memory.md', 'one\nTWO\n')
    write(desk, 'memory/chart.png', PNG + b'\x00')
    second = cps.snapshot('second')
    assert first and second
    return first, second


def test_history_verbs_have_help_with_an_example(workspace: Path) -> None:
    for verb in ('diff', 'show', 'log', 'status', 'restore', 'undo', 'redo', 'seal'):
        code, out, _ = run(workspace, verb, '--help')
        assert code == 0 and 'Examples:' in out and f'checkpoints {verb}' in out


def test_diff_patch_stat_name_status_and_json(workspace: Path, history: tuple[str, str]) -> None:
    first, second = history
    code, out, _ = run(workspace, 'diff', first, second)
    assert code == 0
    assert '--- a/Memory.md\n+++ b/Memory.md\n' in out and '-two\n+TWO\n' in out
    assert 'Binary file memory/chart.png modified' in out
    assert '\x1b[' not in out  # not a terminal: no colour
    code, out, _ = run(workspace, 'diff', first, second, '--name-status')
    assert out.splitlines() == ['M\tMemory.md', 'M\tmemory/chart.png', 'A\tnotes/plan.md']
    code, out, _ = run(workspace, 'diff', first, second, '--stat')
    assert 'Memory.md        | 2 +-' in out and '| Bin' in out and '3 file(s) changed' in out
    code, out, _ = run(workspace, 'diff', first, second, '--json')
    data = json.loads(out)
    assert data['from'] == first and data['to'] == second
    kinds = {c['path']: (c['kind'], c['binary']) for c in data['changes']}
    assert kinds == {
        'Memory.md': ('modified', False),
        'memory/chart.png': ('modified', True),
        'notes/plan.md': ('added', False),
    }


def test_diff_against_desk_and_errors(
    workspace: Path, desk: Path, history: tuple[str, str]
) -> None:
    first, second = history
    write(desk, 'notes/plan.md', 'changed\n')
    code, out, _ = run(workspace, 'diff', second, '--name-status')
    assert (code, out) == (0, 'M\tnotes/plan.md\n')
    code, out, err = run(workspace, 'diff', 'abcdef1')
    assert code == 1 and out == '' and err.startswith("error: no checkpoint 'abcdef1'")
    assert 'Traceback' not in err


def test_show_prints_raw_bytes_or_json(workspace: Path, history: tuple[str, str]) -> None:
    first, _ = history
    code, out, _ = run(workspace, 'show', first, 'Memory.md')
    assert (code, out) == (0, 'one\ntwo\n')
    result = CliRunner().invoke(
        cli, ['--workspace', str(workspace), 'show', first, 'memory/chart.png']
    )
    assert result.stdout_bytes == PNG
    code, out, _ = run(workspace, 'show', first, 'memory/chart.png', '--json')
    data = json.loads(out)
    assert data['encoding'] == 'base64' and data['size'] == len(PNG)
    code, out, err = run(workspace, 'show', first, 'notes/never.md')
    assert code == 1 and "holds no file 'notes/never.md'" in err


def test_log_filters_and_json_has_metadata(workspace: Path, history: tuple[str, str]) -> None:
    first, second = history
    code, out, _ = run(workspace, 'log', 'notes/plan.md')
    assert code == 0 and second in out and first not in out
    code, out, _ = run(workspace, 'log', '--json')
    rows = json.loads(out)
    assert [r['id'] for r in rows] == [second, first]
    assert rows[1]['tool'] == 'write_file' and rows[1]['turn'] == 't1'
    assert rows[1]['paths'] == ['notes/plan.md']
    assert rows[0]['changed'] == ['Memory.md', 'memory/chart.png', 'notes/plan.md']
    code, out, _ = run(workspace, 'log', 'notes/never.md')
    assert (code, out) == (0, 'No checkpoints changed notes/never.md.\n')


def test_list_json_gains_metadata(workspace: Path, history: tuple[str, str]) -> None:
    first, _ = history
    rows = json.loads(run(workspace, 'list', '--json')[1])
    assert rows[1] == {
        'id': first,
        'created_at': rows[1]['created_at'],
        'reason': 'first',
        'tool': 'write_file',
        'paths': ['notes/plan.md'],
        'turn': 't1',
        'action': None,
        'files_changed': 2,  # Memory.md (2 lines) and a binary file (counted, no lines)
        'lines_added': 2,
        'lines_removed': 0,
    }
    assert rows[0]['tool'] is None and rows[0]['paths'] == []
    assert (rows[0]['files_changed'], rows[0]['lines_added'], rows[0]['lines_removed']) == (3, 2, 1)
    assert '  second  (3 files, +2/-1)' in run(workspace, 'list')[1]


def test_status_marks_external_changes(
    workspace: Path, desk: Path, history: tuple[str, str]
) -> None:
    code, out, _ = run(workspace, 'status')
    assert code == 0 and out.startswith('No changes since checkpoint')
    write(desk, 'notes/plan.md', 'agent\n')
    assert run(workspace, 'seal')[0] == 0
    write(desk, 'Memory.md', 'person\n')
    code, out, _ = run(workspace, 'status')
    assert '  M Memory.md (external)' in out and '  M notes/plan.md\n' in out
    data = json.loads(run(workspace, 'status', '--json')[1])
    assert data['external'] == ['Memory.md'] and data['basis'] == 'sealed'


def test_restore_default_target_paths_and_dry_run(
    workspace: Path, desk: Path, history: tuple[str, str]
) -> None:
    first, second = history
    write(desk, 'notes/plan.md', 'bad\n')
    write(desk, 'Memory.md', 'keep\n')
    code, out, _ = run(workspace, 'restore', 'notes/plan.md', '--dry-run')
    assert code == 0 and 'Would restore' in out and 'Dry run: nothing was changed.' in out
    assert (desk / 'notes/plan.md').read_text() == 'bad\n'
    code, out, _ = run(workspace, 'restore', 'notes/plan.md')
    assert code == 0 and f'Restored {second}' in out
    assert (desk / 'notes/plan.md').read_text() == 'plan\n'
    assert (desk / 'Memory.md').read_text() == 'keep\n'
    code, out, _ = run(workspace, 'restore', first, 'notes', '--json')
    data = json.loads(out)
    assert data['deleted'] == ['notes/plan.md'] and data['dry_run'] is False
    code, _, err = run(workspace, 'restore', first, 'notes/never.md')
    assert code == 1 and 'neither in checkpoint' in err


def test_undo_redo_round_trip(workspace: Path, desk: Path, history: tuple[str, str]) -> None:
    write(desk, 'notes/plan.md', 'w3\n')
    code, out, _ = run(workspace, 'undo')
    assert code == 0 and out.startswith("Undid on desk 'main' of workspace")
    assert ', back to ' in out.splitlines()[0]
    assert f'Redo with: checkpoints --workspace {workspace} --desk main redo' in out
    assert (desk / 'notes/plan.md').read_text() == 'plan\n'
    code, out, _ = run(workspace, 'undo', '--json')
    assert json.loads(out)['action'] == 'undo'
    assert not (desk / 'notes/plan.md').exists()
    code, out, _ = run(workspace, 'redo')
    assert code == 0 and out.startswith('Redid')
    assert run(workspace, 'redo')[0] == 0
    assert (desk / 'notes/plan.md').read_text() == 'w3\n'
    code, _, err = run(workspace, 'redo')
    assert code == 1 and err.startswith('error: nothing to redo')


def test_undo_refusal_and_force(workspace: Path, desk: Path, cps: Checkpoints) -> None:
    write(desk, 'Memory.md', 'start\n')
    cps.snapshot('before write_file notes/a.md', paths=['notes/a.md'])
    write(desk, 'notes/a.md', 'agent\n')
    write(desk, 'Memory.md', 'person\n')
    # The agent's step is undone; the person's unrelated edit is kept and marked.
    code, out, _ = run(workspace, 'undo', '--dry-run')
    assert code == 0 and 'K Memory.md  (kept: changed outside the agent)' in out, out
    code, out, _ = run(workspace, 'undo', '--force')
    assert code == 0 and 'warning: overwrote 1 file(s) changed outside the agent: Memory.md' in out
    code, out, _ = run(workspace, 'redo', '--force')
    assert code == 0 and (desk / 'Memory.md').read_text() == 'person\n'
    # Where a person changed what the agent's step wrote, undo refuses with one error line.
    cps.seal()
    write(desk, 'notes/a.md', 'the person took over\n')
    cps.snapshot('before write_file notes/a.md', paths=['notes/a.md'])
    write(desk, 'notes/a.md', 'agent again\n')
    cps.seal()
    write(desk, 'notes/a.md', 'person again\n')
    code, _, err = run(workspace, 'undo')
    assert code == 1 and err.startswith('error: refusing to undo') and 'notes/a.md' in err, err
    code, out, _ = run(workspace, 'undo', '--keep-external', '--json')
    assert code == 0 and json.loads(out)['kept'] == [
        {'path': 'notes/a.md', 'reason': 'changed outside the agent'}
    ]
    assert (desk / 'notes/a.md').read_text() == 'person again\n'


def test_colour_only_on_a_terminal_and_never_with_no_color(
    workspace: Path, history: tuple[str, str]
) -> None:
    """A real process on a pseudo-terminal gets colour; NO_COLOR turns it off."""
    pty = pytest.importorskip('pty')
    first, second = history

    def on_tty(extra_env: dict[str, str | None]) -> bytes:
        primary, secondary = pty.openpty()
        process = start(
            'diff',
            first,
            second,
            workspace=workspace,
            env={'NO_COLOR': None, 'TERM': 'xterm', **extra_env},
            stdout=secondary,
            stderr=subprocess.PIPE,
        )
        os.close(secondary)
        chunks = []
        while True:
            try:
                chunk = os.read(primary, 65536)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        process.wait(timeout=60)
        os.close(primary)
        return b''.join(chunks)

    assert b'\x1b[32m+TWO' in on_tty({})
    assert b'\x1b[' not in on_tty({'NO_COLOR': '1'})


def test_demo_shows_a_diff_and_an_undo(tmp_path: Path) -> None:
    code, out, _ = run(tmp_path / 'unused', 'demo', '--dir', str(tmp_path / 'demo'))
    assert code == 0
    assert '-Buy MSFT below 400.' in out and '+SELL EVERYTHING NOW!!!' in out
    assert 'Undo the restore: undo' in out
    desk = tmp_path / 'demo' / 'desks' / 'main'
    assert (desk / 'notes/plan.md').read_text().endswith('SELL EVERYTHING NOW!!!\n')
    assert (
        Checkpoints(tmp_path / 'demo/.checkpoints/main.git', desk)
        .list()[0]
        .reason.startswith('undo: back to')
    )


def test_restore_first_argument_neither_id_nor_tracked_path(
    workspace: Path, desk: Path, history: tuple[str, str]
) -> None:
    code, _, err = run(workspace, 'restore', 'zzz')
    assert code == 1 and "'zzz' is not a checkpoint id" in err and 'nor a tracked path' in err
    code, _, err = run(workspace, 'restore', 'notes/a.md', 'scratch.txt')
    assert code == 1 and "'scratch.txt' is not tracked" in err


def test_snapshot_notes_external_changes(workspace: Path, desk: Path, cps: Checkpoints) -> None:
    write(desk, 'Memory.md', 'a\n')
    cps.snapshot('first', paths=['notes/a.md'])
    write(desk, 'notes/a.md', 'agent\n')
    write(desk, 'Memory.md', 'person\n')
    code, out, _ = run(workspace, 'snapshot', '-m', 'second', '--json')
    assert code == 0 and json.loads(out)['external'] == ['Memory.md']
    write(desk, 'Memory.md', 'a\n')
    cps.seal()
    write(desk, 'Memory.md', 'person again\n')
    code, out, _ = run(workspace, 'snapshot', '-m', 'third')
    assert 'note: changed outside the agent since the state it left: Memory.md' in out
