"""A size budget never takes a kept restore's undo point: the snapshot a restore took just
before holds the only copy of what the restore overwrote, whatever limit cut the history.

Each test pins a safety check: it fails when ``benchmarks/mutation.py`` breaks that check,
and it runs in this process, where mutation testing sees the calls.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.builders import session_turns, write
from helpers.reading import files_of

from trading_checkpoints import Checkpoints


@pytest.mark.parametrize('dry_run', [False, True], ids=['prune', 'dry-run'])
def test_a_size_budget_keeps_a_restores_pre_snapshot(
    cps: Checkpoints, desk: Path, dry_run: bool
) -> None:
    ids = session_turns(cps, desk, 6)
    write(desk, 'Memory.md', 'an edit no checkpoint holds yet\n')
    edited = files_of(desk)
    undo_point = cps.restore(ids[1])
    restored = files_of(desk)
    # 1 KiB fits no checkpoint at all: the budget alone would keep only the newest (the
    # restore), and the restore's pre-snapshot is kept with it.
    result = cps.prune(max_bytes='1k', dry_run=dry_run)
    assert (result.checkpoints_before, result.checkpoints_after) == (8, 2)
    assert undo_point not in result.pruned and ids[1] in result.pruned
    if dry_run:
        assert len(cps.list(20)) == 8  # nothing dropped
        return
    kept = cps.list(10)
    assert [c.reason for c in kept] == [f'restored {ids[1]}', f'before restoring {ids[1]}']
    assert kept[1].checkpoint_id == undo_point
    assert files_of(desk) == restored
    cps.restore(undo_point)  # the edit comes back from the pre-snapshot
    assert files_of(desk) == edited
    assert (desk / 'Memory.md').read_text() == 'an edit no checkpoint holds yet\n'
