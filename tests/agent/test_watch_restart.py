"""A watcher started again never takes a report made under its predecessor's token.

A walk takes its token from the running watcher and reads the desk; while it runs, that
watcher is replaced by a new process (a restart, a crash and a supervisor), and a person edits
a tracked file, which the new watcher sees. Both count their generation from the start, so the
new watcher's generation can meet the old token's: here it is brought exactly there (a touch
of a tracked file moves it by one). The walk then reports the desk clean under the old token.
It was made under another instance's token: it is never kept, and the next snapshot records
the person's edit.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.builders import write
from helpers.watcher import (
    Walks,
    desk_files,
    end,
    newest_files,
    start_watcher,
    vouched_noop,
)

from trading_checkpoints import Checkpoints
from trading_checkpoints.desk import vouch
from trading_checkpoints.ops import vouched
from trading_checkpoints.ops.session import open_reading

pytestmark = pytest.mark.skipif(not sys.platform.startswith('linux'), reason='inotify')


@pytest.fixture
def checkpoints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Checkpoints]:
    runtime = Path(tempfile.mkdtemp(prefix='restart-', dir='/tmp'))  # a socket path is short
    monkeypatch.setenv('XDG_RUNTIME_DIR', str(runtime))
    desk = tmp_path / 'desk'
    for index in range(4):
        write(desk, f'notes/day{index % 2}/n{index}.md', f'note {index}\n')
    write(desk, 'Memory.md', 'memory\n')
    cps = Checkpoints(tmp_path / 'repo.git', desk, ('notes', 'Memory.md'))
    assert cps.snapshot('start') is not None
    cps.seal()  # the desk is settled: a watcher's first capture writes nothing
    yield cps
    shutil.rmtree(runtime, ignore_errors=True)


def generation(cps: Checkpoints) -> int:
    """The running watcher's generation, as its token says."""
    name = vouch.key(cps.desk_directory, cps.repository_directory)
    assert name is not None
    reply = vouch.ask(name, cps.effective_tracked_paths())
    assert reply is not None
    return reply.token.generation


def touch(cps: Checkpoints, wanted: int) -> None:
    """Touches a tracked file until the watcher's generation is ``wanted`` (one event each)."""
    while generation(cps) < wanted:
        path = cps.desk_directory / 'Memory.md'
        os.utime(path, ns=(time.time_ns(), time.time_ns()))
    assert generation(cps) == wanted


def test_a_walk_reported_to_a_restarted_watcher_never_hides_an_edit(
    checkpoints: Checkpoints, monkeypatch: pytest.MonkeyPatch
) -> None:
    walks = Walks(monkeypatch)
    first = start_watcher(checkpoints)
    second = None
    try:
        touch(checkpoints, 12)
        vouched_noop(checkpoints, walks)  # the stat cache holds still from here on
        with open_reading(checkpoints.desk_config) as session:
            assert session is not None
            head = session.repo.head()
            assert head is not None
            asked = vouched.Asked.of(session)  # the first watcher's token
            assert asked is not None and asked.reply.token.generation == 12
            before = asked.state(head)
            result, _ = session.scan()  # the walk reads the desk as it is
            assert not result.changed
            first.terminate()
            assert first.wait(15) == 0
            second = start_watcher(checkpoints)
            write(checkpoints.desk_directory, 'notes/day0/n0.md', 'a person, after the restart\n')
            touch(checkpoints, 12)
            asked.report(head, vouched.Answer((), 'unknown', ()), before)
        assert checkpoints.snapshot('after the restart') is not None
        assert newest_files(checkpoints) == desk_files(checkpoints)
        # The new watcher serves as the old one did, and sees the next edit too.
        vouched_noop(checkpoints, walks)
        write(checkpoints.desk_directory, 'notes/day1/n1.md', 'a person, later\n')
        assert checkpoints.snapshot('later') is not None
        assert newest_files(checkpoints) == desk_files(checkpoints)
    finally:
        end(first)
        if second is not None:
            end(second)
