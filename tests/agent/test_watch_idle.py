"""`checkpoints watch` between changes: it waits on the kernel's events and never looks at the
desk itself, and the checkpoint it takes is sealed, so the agent's next checkpoint holds only
the agent's change."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
from helpers.builders import write
from helpers.cli import command
from helpers.flushes import STRACE, strace_works
from helpers.processes import environment

from trading_checkpoints.workspace import Workspace

pytest.importorskip('watchfiles')

# The calls that would look at the desk: open, stat, list a folder, read a link.
LOOKS = 'openat,open,newfstatat,fstatat64,statx,stat,lstat,getdents64,readlink,readlinkat'


def test_an_idle_watcher_never_touches_the_desk(
    tmp_path: Path, workspace: Path, desk: Path
) -> None:
    why = strace_works()
    if why:
        pytest.skip(why)
    assert STRACE is not None
    write(desk, 'Memory.md', 'v0\n')
    write(desk, 'notes/a.md', 'a\n')
    Workspace(workspace).desk('main').snapshot('start')
    trace = tmp_path / 'trace'
    process = subprocess.Popen(
        [STRACE, '-f', '-qq', '-y', '-ttt', '-o', str(trace), '-e', f'trace={LOOKS}']
        + command('--workspace', str(workspace), 'watch', '--debounce', '0.2'),
        env=environment(),
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().startswith("Watching desk 'main'")
        time.sleep(1.0)  # its start: the kernel watch set up, what changed since recorded
        idle_from = time.time()
        time.sleep(2.0)
        [watcher] = Path(f'/proc/{process.pid}/task/{process.pid}/children').read_text().split()
        os.kill(int(watcher), signal.SIGTERM)  # the watcher, not strace, is told to stop
        assert process.wait(30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
    lines = trace.read_text(errors='replace').splitlines()
    stamped = [
        (float(m.group(1)), line) for line in lines if (m := re.search(r' (\d+\.\d+) ', line))
    ]
    assert any(str(desk) in line for at, line in stamped if at < idle_from), 'the trace sees it'
    looked = [line for at, line in stamped if idle_from <= at and str(desk) in line]
    assert looked == [], 'an idle watcher looked at the desk:\n' + '\n'.join(looked[:20])


def test_its_checkpoint_is_sealed_so_the_agents_next_holds_only_its_change(
    workspace: Path, desk: Path
) -> None:
    cps = Workspace(workspace).desk('main')
    write(desk, 'Memory.md', 'v0\n')
    cps.snapshot('start')
    cps.seal()
    process = subprocess.Popen(
        command('--workspace', str(workspace), 'watch', '--debounce', '0.2'),
        env=environment(),
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().startswith("Watching desk 'main'")
        time.sleep(0.3)
        write(desk, 'notes/person.md', 'a person wrote this\n')
        assert process.stdout.readline().split(': ')[1].strip() == 'notes/person.md'
        taken = cps.list(1)[0]
        assert (taken.tool, taken.paths) == ('watch', ('notes/person.md',))
        status = cps.status()
        assert (status.changes, status.basis) == ((), 'sealed'), 'the watch left the desk sealed'
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0
    # Sealed, a person's edit of a path the watch recorded is told apart from the agent's.
    write(desk, 'notes/person.md', 'the person again\n')
    assert cps.status().external == ('notes/person.md',)
    write(desk, 'notes/person.md', 'a person wrote this\n')
    with cps.guard('write_file notes/plan.md', tool='write_file', paths=['notes/plan.md']):
        write(desk, 'notes/plan.md', 'the agent wrote this\n')
    assert cps.list(1)[0].checkpoint_id == taken.checkpoint_id, 'nothing new before the write'
    agents = cps.snapshot('after write_file notes/plan.md')
    assert agents is not None
    assert [c.path for c in cps.diff(taken.checkpoint_id, agents).changes] == ['notes/plan.md']
