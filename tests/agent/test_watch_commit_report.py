"""A snapshot that commits tells the watcher it asked what it committed, so the no-op snapshot
after it is answered without a walk (``ops/snapshot.py: _report_commit``)."""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

import pytest
from helpers.builders import write
from helpers.watcher import Walks, end, start_watcher, vouched_noop

from trading_checkpoints import Checkpoints

pytestmark = pytest.mark.skipif(not sys.platform.startswith('linux'), reason='inotify')


def test_the_no_op_after_a_commit_walks_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = tempfile.mkdtemp(prefix='report-', dir='/tmp')  # a socket's path is short
    monkeypatch.setenv('XDG_RUNTIME_DIR', runtime)
    desk = tmp_path / 'desk'
    write(desk, 'Memory.md', 'memory\n')
    write(desk, 'notes/a.md', 'a\n')
    cps = Checkpoints(tmp_path / 'repo.git', desk)
    assert cps.snapshot('start') is not None
    walks = Walks(monkeypatch)
    watcher = start_watcher(cps)
    try:
        vouched_noop(cps, walks)
        write(desk, 'notes/a.md', 'changed\n')
        time.sleep(1.1)  # past the stat cache's racy window: the file's entry is settled
        before = walks.count
        assert cps.snapshot('the change') is not None
        assert walks.count == before + 1, 'the commit walks'
        assert cps.snapshot('noop') is None
        assert walks.count == before + 1, 'the no-op after it is answered by the watcher'
    finally:
        end(watcher)
        shutil.rmtree(runtime, ignore_errors=True)
