"""What the desk held at a moment, the agent's sealed writes counted (``ops/heldat.py``).

Checkpoints carry times to the second, so each step here waits for the next second: the
moments asked about fall between two recorded states.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from pathlib import Path

from helpers.builders import write
from helpers.cli import checkpoints as run

from trading_checkpoints import Checkpoints


def next_second() -> None:
    time.sleep(1.05 - time.time() % 1)


def moment_after(stamp: str) -> str:
    return (datetime.fromisoformat(stamp) + timedelta(microseconds=500_000)).isoformat()


def declare_write_seal(cps: Checkpoints, desk: Path, text: str, turn: str) -> None:
    """What the hooks do around an agent's write: declare, write, seal."""
    cps.snapshot('before write_file Memory.md', paths=['Memory.md'], turn=turn, session='S')
    next_second()
    write(desk, 'Memory.md', text)
    cps.seal()


def test_after_a_sealed_write_the_desk_held_the_write(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'Risk limit: 1%\n')
    cps.snapshot('start')
    next_second()
    declare_write_seal(cps, desk, 'Risk limit: 2%\n', 't-1')
    held = cps.held_at('0s')
    assert held.sealed and held.turn == 't-1'
    assert cps.show(held.checkpoint.checkpoint_id, 'Memory.md') == b'Risk limit: 2%\n'
    assert cps.show(None, 'Memory.md', at='0s') == (desk / 'Memory.md').read_bytes()


def test_a_write_superseded_by_the_next_checkpoint_is_still_found(
    cps: Checkpoints, desk: Path
) -> None:
    write(desk, 'Memory.md', 'Risk limit: 1%\n')
    cps.snapshot('start')
    next_second()
    declare_write_seal(cps, desk, 'Risk limit: 2%\n', 't-1')
    sealed_at = cps.held_at('0s').checkpoint.created_at
    next_second()
    declare_write_seal(cps, desk, 'Risk limit: 3%\n', 't-2')  # supersedes the first seal
    between = cps.held_at(moment_after(sealed_at))
    assert between.sealed and between.turn == 't-1' and between.changed_before is None
    assert cps.show(between.checkpoint.checkpoint_id, 'Memory.md') == b'Risk limit: 2%\n'


def test_a_change_nobody_recorded_in_time_is_said(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'v1\n')
    first = cps.snapshot('start')
    next_second()
    at = datetime.now().astimezone().isoformat()
    next_second()
    write(desk, 'Memory.md', 'v2, a person\n')  # no hook saw it
    cps.snapshot('later')
    held = cps.held_at(at)
    assert not held.sealed and held.checkpoint.checkpoint_id == first
    assert held.changed_before is not None, 'the desk changed after it, nobody knows when'


def test_a_write_sealed_after_the_moment_is_not_an_unrecorded_change(
    cps: Checkpoints, desk: Path
) -> None:
    write(desk, 'Memory.md', 'v1\n')
    cps.snapshot('start')
    next_second()
    cps.snapshot('before write_file Memory.md', paths=['Memory.md'], turn='t-1', session='S')
    at = datetime.now().astimezone().isoformat()
    next_second()
    write(desk, 'Memory.md', 'v2\n')
    cps.seal()
    next_second()
    cps.snapshot('before write_file notes/x.md', paths=['notes/x.md'], turn='t-1', session='S')
    held = cps.held_at(at)
    assert not held.sealed and held.changed_before is None
    assert cps.show(held.checkpoint.checkpoint_id, 'Memory.md') == b'v1\n'


def test_the_command_line_prints_the_sealed_write_and_says_so(
    cps: Checkpoints, desk: Path, workspace: Path
) -> None:
    write(desk, 'Memory.md', 'Risk limit: 1%\n')
    cps.snapshot('start')
    next_second()
    declare_write_seal(cps, desk, 'Risk limit: 2%\n', 't-1')
    done = run('show', '--at', '0s', 'Memory.md', workspace=workspace)
    assert done.returncode == 0, done.stderr
    assert done.stdout == 'Risk limit: 2%\n'
    assert "the agent's sealed write in turn t-1" in done.stderr
