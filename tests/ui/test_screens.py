"""Pictures of the browser's main screens (SVG, pytest-textual-snapshot), compared with the ones
checked in under ``__snapshots__/``: the timeline with a checkpoint's diff, a turn folded, the
restore plan asking for confirmation, and a diff against the desk. After a deliberate change to
the screen, ``python -m pytest tests/ui/test_screens.py --snapshot-update`` rewrites them (look
at them first: the report shows the old and the new side by side)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import ROOT
from helpers.builders import write

from trading_checkpoints import Checkpoints
from trading_checkpoints.ui.app import Browser

pytest.importorskip('pytest_textual_snapshot', reason='pytest-textual-snapshot is not installed')

SIZE = (120, 32)


def browser(cps: Checkpoints) -> Browser:
    return Browser(cps, poll=0, storage=False)


def test_the_timeline_and_the_newest_checkpoint_s_diff(
    cps: Checkpoints, history: list[str], snap_compare
) -> None:
    assert snap_compare(browser(cps), terminal_size=SIZE)


def test_a_checkpoint_of_a_turn_selected(cps: Checkpoints, history: list[str], snap_compare):
    assert snap_compare(browser(cps), press=['j', 'j'], terminal_size=SIZE)


def test_the_restore_plan_asks_first(cps: Checkpoints, history: list[str], snap_compare) -> None:
    assert snap_compare(browser(cps), press=['end', 'r'], terminal_size=SIZE)


def test_a_diff_against_the_desk_now(
    cps: Checkpoints, desk: Path, history: list[str], snap_compare
) -> None:
    write(desk, 'notes/plan.md', 'SELL EVERYTHING\n')
    assert snap_compare(browser(cps), press=['j', 'j', 'd'], terminal_size=SIZE)


def test_the_docs_picture_is_the_current_screen() -> None:
    """docs/images/browse.svg is the picture of a turn's checkpoint selected, as checked in here
    (copy it again after ``--snapshot-update``)."""
    picture = Path(__file__).parent / '__snapshots__' / 'test_screens'
    shown = picture / 'test_a_checkpoint_of_a_turn_selected.svg'
    assert (ROOT / 'docs' / 'images' / 'browse.svg').read_bytes() == shown.read_bytes()
