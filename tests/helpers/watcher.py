"""A `checkpoints watch` of a desk run as its own process, and what the vouch tests read back.

``start_watcher`` runs ``agent.watch.watch`` in a fresh interpreter on a ``Checkpoints`` of
the given tracked paths and size limit, with a capture slow enough (``quiet``) that every
change is left for the test's snapshot to find, and returns once it is ready. ``Walks`` counts
the walks this process makes (``ReadSession.scan``); ``vouched_noop`` snapshots until the
watcher answers without a walk. ``desk_files`` and ``newest_files`` say what the desk holds and
what the newest checkpoint holds, to compare them.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers.processes import environment
from helpers.reading import State, files_of, head_of, tracked, version_of
from trading_checkpoints import Checkpoints
from trading_checkpoints.core.paths import Allowlist
from trading_checkpoints.desk import vouch
from trading_checkpoints.ops import session as sessions

WATCHER = """
import sys
from pathlib import Path
from trading_checkpoints import Checkpoints
from trading_checkpoints.agent.watch import watch
checkpoints = Checkpoints(Path(sys.argv[1]), Path(sys.argv[2]), tuple(sys.argv[4].split(',')),
                          max_file_size=int(sys.argv[5]) if sys.argv[5] else None)
watch(checkpoints, quiet=float(sys.argv[3]), echo=lambda line: None,
      ready=lambda: print('ready', flush=True))
"""


def start_watcher(cps: Checkpoints, quiet: float = 30) -> subprocess.Popen[str]:
    """A watcher process of ``cps``'s desk (its tracked paths and size limit), once ready;
    ``quiet``: how long writes must pause before it captures them."""
    desk, repository = str(cps.desk_directory), str(cps.repository_directory)
    entries = ','.join(cps.effective_tracked_paths())
    limit = cps.desk_config.max_file_size
    process = subprocess.Popen(
        [sys.executable, '-c', WATCHER, repository, desk, str(quiet), entries, str(limit or '')],
        env=environment(),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    assert process.stdout.readline() == 'ready\n'
    return process


def end(process: subprocess.Popen[str]) -> None:
    """Kills a watcher (its capture may be sleeping for the quiet period)."""
    if process.poll() is None:
        process.kill()
    process.wait(15)


def stop(process: subprocess.Popen[str]) -> None:
    """Stops a process (SIGSTOP) and waits until the kernel says it is stopped."""
    process.send_signal(signal.SIGSTOP)
    deadline = time.monotonic() + 15
    status = Path(f'/proc/{process.pid}/stat')
    while status.read_text().rsplit(')', 1)[1].split()[0] not in ('T', 't'):
        assert time.monotonic() < deadline
        time.sleep(0.005)


class Walks:
    """How many times this process walked the desk (``count``: one per scan)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        original = sessions.ReadSession.scan

        def scan(session: sessions.ReadSession, *args: object, **kwargs: object) -> object:
            self.count += 1
            return original(session, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(sessions.ReadSession, 'scan', scan)


def by_watcher(call: Callable[[], object], walks: Walks) -> object:
    """Calls until the watcher answers without a walk; that answer (the walks after a write
    refresh the stat cache's racy entries for a while, and a walk that changed the cache
    cannot vouch; a watcher starting over, under a loaded machine's suite, takes seconds).

    Meanwhile the client waits up to 2 s for each exchange with the watcher: what is checked
    is the answer, not how fast it comes, and on a loaded machine an exchange can miss the
    product's limit every time (the limit itself: tests/agent/test_watch_vouch.py
    ::test_a_killed_or_stopped_watcher_costs_the_timeout_and_a_walk)."""
    limit = vouch.TIMEOUT
    vouch.TIMEOUT = max(limit, 2.0)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            before = walks.count
            answer = call()
            if walks.count == before:
                return answer
            time.sleep(0.02)
    finally:
        vouch.TIMEOUT = limit
    raise AssertionError('the watcher never vouched')


def vouched_noop(cps: Checkpoints, walks: Walks) -> None:
    assert by_watcher(lambda: cps.snapshot('noop'), walks) is None


def desk_files(cps: Checkpoints) -> State:
    """Every tracked file of the desk that a snapshot keeps (not the oversize ones)."""
    found = tracked(files_of(cps.desk_directory), Allowlist(cps.effective_tracked_paths()))
    limit = cps.desk_config.max_file_size or float('inf')
    return {path: value for path, value in found.items() if len(value[1]) <= limit}


def newest_files(cps: Checkpoints) -> State:
    """The tracked files the newest checkpoint holds."""
    repo = cps.repository_directory
    return version_of(repo, head_of(repo), Allowlist(cps.effective_tracked_paths()))
