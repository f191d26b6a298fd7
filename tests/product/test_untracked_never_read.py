"""Nothing outside the tracked paths is ever read, written or deleted: every file call a
snapshot, status, diff, log, show, restore, undo and redo make (traced by ``strace -f -y``,
which names the file behind every descriptor) is checked for a name outside the allowlist."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.builders import write
from helpers.flushes import STRACE, strace_works
from helpers.processes import environment
from helpers.reading import files_of

UNTRACKED = {
    'scratch.txt': 'untracked',
    'Memory.md.bak': 'a name that starts like a tracked one',
    'memory_extra/a.md': 'a folder that starts like a tracked one',
    'skills/other/b.md': 'a sibling of skills/agent',
    'private/secret.md': 'a folder of its own',
}

# The untracked names at the top of what is untracked (skills/ itself leads to skills/agent).
TOPS = ('scratch.txt', 'Memory.md.bak', 'memory_extra', 'skills/other', 'private')


def paths_in(line: str) -> list[str]:
    """The paths a traced call names: each descriptor's file, each name joined to the folder
    descriptor it is relative to, each absolute name."""
    found = re.findall(r'\d+<([^>]*)>', line)
    found += [
        f'{folder}/{name}' for folder, name in re.findall(r'\d+<([^>]*)>, "([^"/][^"]*)"', line)
    ]
    found += re.findall(r'"(/[^"]*)"', line)
    return found


PROGRAM = """
import sys
from pathlib import Path
from trading_checkpoints import Checkpoints
repo, desk = Path(sys.argv[1]), Path(sys.argv[2])
c = Checkpoints(repo, desk)
first = c.snapshot('first')
(desk / 'Memory.md').write_text('changed')
(desk / 'notes' / 'new.md').write_text('new')
c.status()
c.snapshot('second')
c.diff(first)
c.log()
c.show(first, 'Memory.md')
c.restore(first)
c.undo()
c.redo()
c.status()
"""


def test_no_file_call_names_a_path_outside_the_tracked_paths(tmp_path: Path) -> None:
    why = strace_works()
    if why:
        pytest.skip(why)
    assert STRACE is not None
    desk = tmp_path / 'desk'
    write(desk, 'Memory.md', 'memory')
    write(desk, 'notes/plan.md', 'plan')
    write(desk, 'skills/agent/skill.md', 'skill')
    for path, text in UNTRACKED.items():
        write(desk, path, text)
    before = {path: files_of(desk)[path] for path in UNTRACKED}
    trace = tmp_path / 'trace'
    done = subprocess.run(
        [STRACE, '-f', '-qq', '-y', '-o', str(trace), '-e', 'trace=%file,%desc']
        + [sys.executable, '-c', PROGRAM, str(tmp_path / 'repo.git'), str(desk)],
        env=environment(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = trace.read_text(errors='replace').splitlines()
    named = [path for line in lines for path in paths_in(line)]
    assert f'{desk}/notes/new.md' in named, 'the trace names the files it touches'
    outside = [f'{desk}/{top}' for top in TOPS]
    touched = [p for p in named if any(p == o or p.startswith(o + '/') for o in outside)]
    assert touched == [], 'calls on untracked paths:\n' + '\n'.join(touched[:20])
    assert {path: files_of(desk)[path] for path in UNTRACKED} == before
