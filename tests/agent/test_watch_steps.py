"""``checkpoints watch``'s edges in the test's own process (``agent/watch.py``): without the
notifier it needs, a capture naming exactly five files, and the notifier's own output kept
off stderr. The watch's main behaviour is in ``test_watch_in_process.py``."""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import pytest
from helpers import rawobjects
from helpers.builders import old_then_new, write
from helpers.faults import kill_until_pending
from helpers.users import run_unprivileged

from trading_checkpoints import Checkpoints
from trading_checkpoints.agent import watch
from trading_checkpoints.errors import CheckpointError
from trading_checkpoints.ops import journal

watchfiles = pytest.importorskip('watchfiles')
pytestmark = pytest.mark.skipif(not sys.platform.startswith('linux'), reason='inotify')


def test_without_watchfiles_the_extra_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, 'watchfiles', None)  # what an uninstalled package gives
    with pytest.raises(CheckpointError) as missing:
        watch._notifier()
    assert str(missing.value) == watch.INSTALL_HINT


def test_a_watchfiles_without_its_notifier_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, 'watchfiles._rust_notify', None)
    with pytest.raises(CheckpointError) as missing:
        watch._notifier()
    assert str(missing.value) == (
        f'watchfiles {watchfiles.VERSION} has no kernel notifier this version can use; '
        "pip install 'trading-checkpoints[watch]' installs one that has"
    )


@contextmanager
def running(
    cps: Checkpoints, quiet: float | None = 0.2
) -> Iterator[tuple[list[str], threading.Thread]]:
    """A watch of ``cps`` in a thread of this process (its default debounce with ``quiet``
    None), once ready: the lines it echoes, and its thread; stopped and joined when the block
    ends."""
    lines: list[str] = []
    stop, ready = threading.Event(), threading.Event()
    debounce = {} if quiet is None else {'quiet': quiet}
    thread = threading.Thread(
        target=watch.watch,
        args=(cps,),
        kwargs={**debounce, 'echo': lines.append, 'ready': ready.set, 'stop': stop},
        daemon=True,
    )
    thread.start()
    try:
        assert ready.wait(30), 'the watch never got ready'
        yield lines, thread
    finally:
        stop.set()
        thread.join(30)


def until(lines: list[str], count: int) -> None:
    """Waits (up to 30 s) until the watch echoed ``count`` lines."""
    deadline = time.monotonic() + 30
    while len(lines) < count:
        assert time.monotonic() < deadline, lines
        time.sleep(0.02)


def watched_lines(cps: Checkpoints, change: Callable[[], object], count: int) -> list[str]:
    """The lines a watch of ``cps`` echoes once ``change()`` ran in it, ``count`` of them."""
    with running(cps) as (lines, _):
        change()
        until(lines, count)
    return lines


def test_a_capture_of_five_files_names_them_all(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'v0\n')
    cps.snapshot('start')

    def five() -> None:
        for number in range(5):
            write(desk, f'notes/n{number}.md', f'{number}\n')

    [line] = watched_lines(cps, five, 1)
    shown = ', '.join(f'notes/n{number}.md' for number in range(5))
    assert line == f'checkpoint {cps.list(1)[0].checkpoint_id}: {shown}'


def test_the_notifier_says_nothing_on_stderr(
    cps: Checkpoints, desk: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    write(desk, 'Memory.md', 'v0\n')
    cps.snapshot('start')
    capfd.readouterr()
    watched_lines(cps, lambda: write(desk, 'Memory.md', 'v1\n'), 1)
    assert capfd.readouterr().err == ''


def test_writes_closer_than_the_debounce_make_one_checkpoint(cps: Checkpoints, desk: Path) -> None:
    """Two writes 0.6 s apart with the default 1 s debounce: one checkpoint of both, taken
    once the second settled."""
    write(desk, 'Memory.md', 'v0\n')
    cps.snapshot('start')
    with running(cps, quiet=1.0) as (lines, _):
        write(desk, 'notes/a.md', 'a\n')
        time.sleep(0.6)  # past the watch's step (0.2 s), within the debounce
        write(desk, 'notes/b.md', 'b\n')
        until(lines, 1)
    assert lines == [f'checkpoint {cps.list(1)[0].checkpoint_id}: notes/a.md, notes/b.md']


def test_the_watch_goes_on_after_each_checkpoint(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'v0\n')
    cps.snapshot('start')
    with running(cps) as (lines, thread):
        for number in range(3):
            write(desk, f'notes/n{number}.md', f'{number}\n')
            until(lines, number + 1)
            assert thread.is_alive(), 'the watch ended after a checkpoint'
    assert [line.split(': ')[1] for line in lines] == ['notes/n0.md', 'notes/n1.md', 'notes/n2.md']


def test_writes_that_never_pause_are_taken_after_ten_debounces(
    cps: Checkpoints, desk: Path
) -> None:
    """A file rewritten every 50 ms for 4 s under a 0.2 s debounce: a checkpoint is taken
    while the writes go on (at the latest 2 s after the first), not only once they stop."""
    write(desk, 'Memory.md', 'v0\n')
    cps.snapshot('start')
    with running(cps) as (lines, _):
        end = time.monotonic() + 4
        number = 0
        while time.monotonic() < end:
            write(desk, 'notes/log.md', f'{number}\n')
            number += 1
            time.sleep(0.05)
        taken_while_writing = list(lines)
    assert taken_while_writing, 'nothing taken while the writes went on'


def test_a_capture_completing_an_interrupted_restore_says_so(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    """The watch's capture completes a restore a crash interrupted, as every writer does, and
    says so to the library's caller (``last_recovery``)."""
    old = old_then_new(cps, desk)
    kill_until_pending(repo_dir, partial(cps.restore, old))
    watch.capture(cps)
    recovery = cps.last_recovery
    assert recovery is not None and recovery.target_id == old[:7]
    assert not journal.pending(repo_dir)
    assert {(desk / f'notes/n{index}.md').read_text() for index in range(10)} == {'old\n'}


def watched_as_its_user(base: Path) -> list[str]:
    """A watch, by the user running this, of a desk in ``base`` holding a folder (untracked)
    that user may not read: the lines it echoes for a tracked file written."""
    os.environ['XDG_RUNTIME_DIR'] = str(base)  # the watcher's socket: this user's folder
    desk = base / 'desk'
    write(desk, 'notes/a.md', 'a\n')
    (desk / 'scratch' / 'closed').mkdir(0o000, parents=True)
    cps = Checkpoints(base / 'repo.git', desk)
    cps.snapshot('start')
    with running(cps) as (lines, _):
        write(desk, 'notes/b.md', 'b\n')
        until(lines, 1)
    return lines


def test_a_folder_the_watch_may_not_read_is_passed_over(cps: Checkpoints, desk: Path) -> None:
    """Root reads every folder: the watch runs as user nobody then (a child of this process)."""
    watched_lines(cps, lambda: write(desk, 'notes/a.md', 'a\n'), 1)  # imports what it needs
    lines = run_unprivileged(watched_as_its_user)
    assert re.fullmatch(r"\['checkpoint [0-9a-f]{7,}: notes/b.md'\]", lines), lines


def test_a_checkpoint_changing_no_file_says_so(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    """The newest checkpoint, written by another git tool, holds an empty folder, which no
    checkpoint of the desk holds: the watch's first capture drops it and changes no file."""
    write(desk, 'Memory.md', 'v0\n')
    cps.snapshot('start')
    held = rawobjects.tree(
        repo_dir,
        (rawobjects.BLOB, b'Memory.md', rawobjects.blob(repo_dir, b'v0\n')),
        (rawobjects.TREE, b'empty', rawobjects.tree(repo_dir)),
    )
    by_another_tool = rawobjects.commit(repo_dir, held)
    (repo_dir / 'refs' / 'heads' / 'main').write_text(f'{by_another_tool}\n')
    [line] = watched_lines(cps, lambda: None, 1)
    newest = cps.list(1)[0]
    assert line == f'checkpoint {newest.checkpoint_id}: no file changed'
    assert (newest.paths, newest.files_changed) == ((), 0)


def test_the_default_debounce_is_one_second(cps: Checkpoints, desk: Path) -> None:
    """A write is taken once a second passed without another (the library's default, as the
    command line's), never sooner; a debounce of two seconds could not take it within two. A
    loaded machine may delay a capture: up to three writes are timed, one within two seconds
    is enough."""
    write(desk, 'Memory.md', 'v0\n')
    cps.snapshot('start')
    taken: list[float] = []
    with running(cps, quiet=None) as (lines, _):
        for number in range(3):
            start = time.monotonic()
            write(desk, f'notes/n{number}.md', f'{number}\n')
            until(lines, number + 1)
            taken.append(time.monotonic() - start)
            if taken[-1] < 2:
                break
    assert 1 <= min(taken) < 2, taken


@pytest.mark.slow
def test_writes_that_never_pause_are_taken_ten_debounces_after_the_first(
    cps: Checkpoints, desk: Path
) -> None:
    """A file rewritten every 50 ms under a 1.5 s debounce: the first checkpoint comes ten
    debounces (15 s) after the first write, never sooner, and before eleven (the notifier hands
    over the first write within its step of 0.2 s or two, and the capture takes a moment: well
    within the 1.5 s between ten debounces and eleven). A loaded machine may delay a capture: up
    to three runs of writes are timed, one within 16.5 s is enough."""
    quiet = 1.5
    write(desk, 'Memory.md', 'v0\n')
    cps.snapshot('start')
    taken: list[float] = []
    with running(cps, quiet=quiet) as (lines, _):
        for attempt in range(3):
            time.sleep(3 * quiet)  # the writes of the run before taken, if any
            seen = len(lines)
            start = time.monotonic()
            number = 0
            while len(lines) == seen:
                assert time.monotonic() < start + 60, 'nothing taken'
                write(desk, 'notes/log.md', f'{attempt} {number}\n')
                number += 1
                time.sleep(0.05)
            taken.append(time.monotonic() - start)
            if taken[-1] < 11 * quiet:
                break
    assert 10 * quiet <= min(taken) < 11 * quiet, taken
