"""A desk's Memory.md written by two agent turns, a person and a process ``checkpoints watch``
saw, on a real repository, as the hooks, the command line and the watcher write it: what the
blame, show and log tests read back."""

from __future__ import annotations

from pathlib import Path

from helpers.builders import StoreClock, write
from trading_checkpoints import Checkpoints
from trading_checkpoints.ops import engine
from trading_checkpoints.ops import snapshot as snapshots
from trading_checkpoints.ops.turns import snapshot_in_turn

START = 1741962600  # 2025-03-14T14:30:00Z


def append(desk: Path, line: str) -> None:
    with open(desk / 'Memory.md', 'a') as handle:
        handle.write(line + '\n')


def hook_write(cps: Checkpoints, turn: str, label: str, session: str, line: str) -> None:
    """A harness's write tool as the hooks drive it: a snapshot declaring the path (the turn's
    first is labelled with the prompt), the write, a seal."""
    snapshot_in_turn(
        cps, turn, 'before Write Memory.md', label=label, tool='claude:Write',
        paths=['Memory.md'], session=session,
    )  # fmt: skip
    append(cps.desk_directory, line)
    cps.seal()


def watch_capture(cps: Checkpoints) -> str | None:
    """What ``checkpoints watch`` records once writes settle."""
    with engine.locked(cps.desk_config, report_to=cps, verb='watch') as session:
        done = snapshots.capture(session, 'changes seen by checkpoints watch', 'watch', None)
    return done.checkpoint_id


def four_writers(cps: Checkpoints, desk: Path) -> dict[str, str]:
    """Memory.md written by two turns, a person and a process ``watch`` saw, one checkpoint
    each, a minute apart from 14:30 UTC; the ids of the checkpoints that first hold each
    writer's line (``start`` holds the first line)."""
    ids: dict[str, str] = {}
    with StoreClock(START) as clock:
        write(desk, 'Memory.md', '# Memory\n')
        ids['start'] = str(cps.snapshot('start'))
        clock.at += 60
        hook_write(cps, 't-1', 'add AAPL to the watchlist', 'S1', '- Watchlist: AAPL')
        clock.at += 60
        hook_write(cps, 't-2', 'set the risk limit', 'S2', '- Risk limit: 2% per trade')
        ids['t-1'] = cps.list(1)[0].checkpoint_id  # t-2's first checkpoint holds t-1's write
        clock.at += 60
        ids['t-2'] = str(cps.snapshot('after the turns'))
        clock.at += 60
        append(desk, '- my own note')  # a person, with no agent write in flight
        ids['person'] = str(cps.snapshot('a manual snapshot'))
        clock.at += 60
        append(desk, '- from the nightly job')  # a process no hook sees
        ids['watch'] = str(watch_capture(cps))
    return ids
