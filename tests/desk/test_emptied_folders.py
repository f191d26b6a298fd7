"""A restore removes the tracked folders its deletions emptied, and never a folder outside the
tracked paths, even one left empty: ``skills/`` holds the tracked ``skills/agent`` and is
itself untracked, so it stays when a restore takes ``skills/agent`` away.

Each test pins a safety check: it fails when ``benchmarks/mutation.py`` breaks that check,
and it runs in this process, where mutation testing sees the calls.
"""

from __future__ import annotations

from pathlib import Path

from helpers.builders import write
from helpers.reading import tree_of

from trading_checkpoints import Checkpoints


def test_restoring_before_skills_agent_existed_keeps_the_untracked_parent(
    cps: Checkpoints, desk: Path
) -> None:
    write(desk, 'Memory.md', '# memory\n')
    before = cps.snapshot('before the skill')
    assert before is not None
    write(desk, 'skills/agent/run.sh', '#!/bin/sh\necho hi\n')
    write(desk, 'skills/agent/lib/helper.sh', 'true\n')
    assert cps.snapshot('with the skill') is not None
    result = cps.restore_with_result(before)
    assert sorted(result.deleted) == ['skills/agent/lib/helper.sh', 'skills/agent/run.sh']
    assert tree_of(desk) == {'Memory.md': ('-', b'# memory\n'), 'skills': 'dir'}


def test_emptied_tracked_folders_go_and_untracked_ones_stay(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', '# memory\n')
    write(desk, 'notes/keep.md', 'kept\n')
    before = cps.snapshot('before')
    assert before is not None
    write(desk, 'notes/deep/er/new.md', 'new\n')
    write(desk, 'skills/agent/run.sh', 'echo\n')
    write(desk, 'skills/other/keep.md', 'untracked, beside the tracked folder\n')
    assert cps.snapshot('after') is not None
    cps.restore(before)
    assert tree_of(desk) == {
        'Memory.md': ('-', b'# memory\n'),
        'notes': 'dir',
        'notes/keep.md': ('-', b'kept\n'),
        'skills': 'dir',
        'skills/other': 'dir',
        'skills/other/keep.md': ('-', b'untracked, beside the tracked folder\n'),
    }
