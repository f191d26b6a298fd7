"""The command line's turn verbs: `turns`, `restore-turn`, and `mcp --help`."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from helpers.builders import write

from trading_checkpoints import Checkpoints
from trading_checkpoints.cli import cli


def run(workspace: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ['--workspace', str(workspace), *args])
    return result.exit_code, result.output


def make_turns(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'v0')
    for n in (1, 2):
        with cps.turn(f'turn number {n}', message_id=f'msg_{n}'):
            with cps.guard('write_file Memory.md'):
                write(desk, 'Memory.md', f'v{n}')
            with cps.guard(f'write_file notes/{n}.md'):
                write(desk, f'notes/{n}.md', str(n))


def test_turns_lists_turns_with_their_checkpoints(
    workspace: Path, cps: Checkpoints, desk: Path
) -> None:
    code, out = run(workspace, 'turns')
    assert code == 0 and "No turns recorded for desk 'main'" in out
    make_turns(cps, desk)
    code, out = run(workspace, 'turns')
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith('msg_2  ') and lines[0].endswith('turn number 2')
    assert lines[1].endswith('before write_file notes/2.md')
    code, out = run(workspace, 'turns', '--json', '-n', '1')
    [row] = json.loads(out)
    assert row['turn_id'] == 'msg_2' and row['label'] == 'turn number 2'
    assert [c['paths'] for c in row['checkpoints']] == [['notes/2.md'], ['Memory.md']]
    assert row['first_checkpoint'] == row['checkpoints'][-1]['id']


def test_restore_turn_from_the_command_line(workspace: Path, cps: Checkpoints, desk: Path) -> None:
    make_turns(cps, desk)
    code, out = run(workspace, 'restore-turn', 'msg_2', '--json')
    assert code == 0, out
    result = json.loads(out)
    assert result['deleted'] == ['notes/2.md'] and result['turn_id'] == 'msg_2'
    assert (desk / 'Memory.md').read_text() == 'v1'
    code, out = run(workspace, 'restore', result['before_id'])
    assert code == 0 and (desk / 'notes/2.md').exists()
    # msg_2 wrote Memory.md after msg_1 did: a conflict, refused unless forced or kept.
    code, out = run(workspace, 'restore-turn', 'msg_1')
    assert code == 1 and 'refusing to rewind turn msg_1' in out and 'Memory.md' in out
    assert (desk / 'Memory.md').read_text() == 'v2' and (desk / 'notes/1.md').exists()
    code, out = run(workspace, 'restore-turn', 'msg_1', '--keep-external', '--json')
    assert code == 0, out
    kept = json.loads(out)
    assert kept['deleted'] == ['notes/1.md'] and kept['written'] == []
    assert kept['kept'] == [{'path': 'Memory.md', 'reason': 'changed outside the agent'}]
    assert kept['external'] == []
    code, out = run(workspace, 'restore', kept['before_id'])
    assert code == 0, out
    code, out = run(workspace, 'restore-turn', 'msg_1', '--keep-external')
    assert code == 0, out
    assert '  D notes/1.md' in out and 'Memory.md' in out and 'changed outside the agent' in out
    code, out = run(workspace, 'restore', out.split()[-1])
    code, out = run(workspace, 'restore-turn', 'msg_1', '--force')
    assert code == 0, out
    assert out.splitlines()[0].startswith('Restored ') and '(before turn msg_1)' in out
    assert '  D notes/1.md' in out and 'notes/2.md' not in out, "msg_2's file stays"
    assert 'overwrote 1 file(s) changed outside the agent: Memory.md' in out
    prefix = f'Undo with: checkpoints --workspace {workspace} --desk main restore '
    assert out.splitlines()[-1].startswith(prefix)
    assert (desk / 'Memory.md').read_text() == 'v0' and (desk / 'notes/2.md').exists()


def test_restore_turn_errors_are_one_line(workspace: Path, cps: Checkpoints, desk: Path) -> None:
    make_turns(cps, desk)
    code, out = run(workspace, 'restore-turn', 'msg_9')
    assert code == 1 and "no turn 'msg_9'" in out and 'Traceback' not in out
    code, out = run(workspace, 'restore-turn')
    assert code == 2 and out.splitlines() == [
        "error: missing argument 'TURN'.",
        'hint: checkpoints restore-turn --help shows the usage and examples',
    ]


def test_mcp_help_names_the_extra() -> None:
    result = CliRunner().invoke(cli, ['mcp', '--help'])
    assert result.exit_code == 0
    assert "pip install 'trading-checkpoints[mcp]'" in ' '.join(result.output.split())
