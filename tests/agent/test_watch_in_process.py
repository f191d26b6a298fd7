"""``checkpoints watch`` run in the test's own process (``agent/watch.py``): in a thread, told
to stop through its event, or in the main thread, stopped by a real signal. The tests that run
it as its own process are in ``test_watch.py``."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers.builders import write

from trading_checkpoints import Checkpoints
from trading_checkpoints.agent import watch
from trading_checkpoints.errors import LockTimeoutError, MissingDeskError

pytest.importorskip('watchfiles')
pytestmark = pytest.mark.skipif(not sys.platform.startswith('linux'), reason='inotify')


class Watching:
    """A watch of ``cps``'s desk in a thread, ready once started; each line it echoes kept."""

    def __init__(self, cps: Checkpoints, quiet: float) -> None:
        self.lines: list[str] = []
        self.stop = threading.Event()
        self.ready = threading.Event()
        self.error: BaseException | None = None

        def run() -> None:
            try:
                watch.watch(
                    cps, quiet=quiet, echo=self.lines.append, ready=self.ready.set, stop=self.stop
                )
            except BaseException as error:
                self.error = error
                self.ready.set()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        assert self.ready.wait(30), 'the watch never got ready'
        assert self.error is None, self.error

    def until(self, count: int) -> list[str]:
        """The lines, once there are ``count`` of them."""
        deadline = time.monotonic() + 30
        while len(self.lines) < count:
            assert time.monotonic() < deadline, self.lines
            time.sleep(0.02)
        return self.lines

    def end(self) -> None:
        self.stop.set()
        self.thread.join(30)
        assert not self.thread.is_alive()
        assert self.error is None, self.error


@pytest.fixture
def watching(cps: Checkpoints) -> Iterator[Callable[..., Watching]]:
    started: list[Watching] = []

    def start(quiet: float = 0.2) -> Watching:
        started.append(Watching(cps, quiet))
        return started[-1]

    yield start
    for each in started:
        each.stop.set()
        each.thread.join(30)


def test_what_changed_before_it_began_is_recorded_then_each_write(
    cps: Checkpoints, desk: Path, watching: Callable[..., Watching]
) -> None:
    write(desk, 'Memory.md', 'v0\n')
    write(desk, 'notes/kept.md', 'a folder there before the watch\n')
    cps.snapshot('start')
    write(desk, 'Memory.md', 'v1 before the watch\n')
    watched = watching()
    [first] = cps.list(1)
    assert watched.lines == [f'checkpoint {first.checkpoint_id}: Memory.md']
    assert (first.reason, first.tool, first.action) == (watch.SUBJECT, watch.TOOL, 'captured')
    write(desk, 'notes/a.md', 'a\n')  # in a folder already watched: its own event only
    [_, line] = watched.until(2)
    [second] = cps.list(1)
    assert line == f'checkpoint {second.checkpoint_id}: notes/a.md'
    watched.end()
    assert (desk / 'notes/a.md').read_text() == 'a\n'


def test_a_capture_of_many_files_names_the_first_five(
    cps: Checkpoints, desk: Path, watching: Callable[..., Watching]
) -> None:
    write(desk, 'Memory.md', 'v0\n')
    cps.snapshot('start')
    for number in range(6):
        write(desk, f'notes/n{number}.md', f'{number}\n')
    watched = watching()
    [newest] = cps.list(1)
    shown = ', '.join(f'notes/n{number}.md' for number in range(5))
    assert watched.lines == [f'checkpoint {newest.checkpoint_id}: {shown} ...']
    (desk / 'notes').rename(desk / 'elsewhere')  # untracked now: the five are gone
    for number in range(6):
        (desk / 'elsewhere' / f'n{number}.md').unlink()
    write(desk, 'Memory.md', 'v1\n')
    watched.until(2)
    watched.end()


def test_it_makes_no_first_checkpoint_of_a_desk_holding_nothing(
    cps: Checkpoints, desk: Path, watching: Callable[..., Watching]
) -> None:
    write(desk, 'scratch/draft.md', 'untracked\n')
    watched = watching()
    assert watched.lines == [] and cps.list(None) == []
    write(desk, 'Memory.md', 'v0\n')
    [line] = watched.until(1)
    [first] = cps.list(None)
    assert line == f'checkpoint {first.checkpoint_id}: Memory.md'
    watched.end()


def test_a_second_watch_of_the_desk_is_refused_naming_the_first(
    cps: Checkpoints, desk: Path, watching: Callable[..., Watching]
) -> None:
    write(desk, 'Memory.md', 'v0\n')
    cps.snapshot('start')
    first = watching()
    with pytest.raises(LockTimeoutError) as refused:
        watch.watch(cps, quiet=0.2, echo=lambda line: None)
    assert str(refused.value) == (
        f'checkpoints watch already runs on the desk {desk} (another thread); stop it first'
    )
    assert refused.value.lock.endswith(f'/{watch.WATCH_LOCK}') and refused.value.timeout == 0
    assert refused.value.holder == 'another thread'
    first.end()
    again = watching()  # once it stopped, a new one starts
    again.end()


def test_a_missing_desk_is_said(cps: Checkpoints, desk: Path) -> None:
    desk.rmdir()
    with pytest.raises(MissingDeskError) as missing:
        watch.watch(cps, echo=lambda line: None)
    assert str(missing.value) == f'no desk folder {desk} to watch'
    assert missing.value.desk == str(desk)


@pytest.mark.parametrize('stop', [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_it_and_the_handlers_come_back(
    cps: Checkpoints, desk: Path, stop: signal.Signals
) -> None:
    """In the main thread, as ``checkpoints watch`` runs it: the signal sets the stop, the
    watch returns, and the handlers before it are in place again."""
    write(desk, 'Memory.md', 'v0\n')
    cps.snapshot('start')
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    watch.watch(cps, quiet=30, echo=lambda line: None, ready=lambda: os.kill(os.getpid(), stop))
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before
