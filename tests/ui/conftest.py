"""A desk with a short history for the browser, stamped at fixed times (the store's clock, UTC)
so the screen is the same on every run: two checkpoints outside any turn around one turn of
two writes."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.builders import StoreClock, write

from trading_checkpoints import Checkpoints

pytest.importorskip('textual', reason="Textual is not installed (pip install '.[ui]')")

START = 1741962600  # 2025-03-14T14:30:00Z


@pytest.fixture
def utc() -> Iterator[None]:
    """The process's local time is UTC for the test (the store stamps commits in local time)."""
    before = os.environ.get('TZ')
    os.environ['TZ'] = 'UTC'
    time.tzset()
    yield
    if before is None:
        del os.environ['TZ']
    else:
        os.environ['TZ'] = before
    time.tzset()


@pytest.fixture
def history(cps: Checkpoints, desk: Path, utc: None) -> list[str]:
    """Four checkpoints a minute apart, oldest first; the desk holds the newest."""
    taken = []
    with StoreClock(START) as clock:
        plan = 'notes/plan.md'
        steps = [
            ('Memory.md', '# Memory\n- MSFT: watch\n', 'first notes', None, None),
            (plan, 'Buy MSFT below 400.\n', f'write_file {plan}', 'write_file', 'turn-7'),
            (plan, 'Buy MSFT below 400.\nStop-loss 380.\n', f'edit_file {plan}', 'edit', 'turn-7'),
            ('Memory.md', '# Memory\n- MSFT: bought at 398\n', 'remember the fill', None, None),
        ]
        for path, text, reason, tool, turn in steps:
            write(desk, path, text)
            paths = [path] if tool else None
            taken.append(cps.snapshot(reason, tool=tool, paths=paths, turn=turn))
            clock.at += 60
    return taken
