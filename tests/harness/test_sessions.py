"""Two sessions of one harness on one desk, their work overlapping: while session A's shell
command runs (held on a FIFO), session B writes a file through its hooked write tool.

Each session's turn must hold its own file only, and rewinding one must keep the other's.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from helpers.harness.driver import Harness, Session, install_hooks, prepare_home, run
from helpers.harness.scenario import (
    DESK_FILES,
    Layout,
    cli,
    copied,
    desk_texts,
    make_layout,
    shared,
    turn_files,
    turns,
)

pytestmark = pytest.mark.harness

A, B = 'session A writes a.md', 'session B writes b.md'
START = 120  # seconds for A's command to start


def held_open(fifo: Path, session: Session) -> int:
    """Waits until ``session``'s command opens ``fifo`` to read (the hooks before it are done)
    and holds it there: the command goes on once the returned descriptor is closed."""
    deadline = time.monotonic() + START
    while True:
        try:
            return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as error:
            if error.errno != errno.ENXIO:  # ENXIO: nobody reads it yet
                raise
        if session.process.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f'session A never ran its command:\n{session.kill()}')
        time.sleep(0.05)


def _play(harness: Harness, folder: Path) -> dict[str, Any]:
    layout = make_layout(folder)
    start = layout.workspace
    prepare_home(layout.home, [start])
    assert install_hooks(harness, start, layout.home).returncode == 0
    fifos = Path(tempfile.mkdtemp(prefix='fifo-'))  # not in the folder a test copies
    fifo = fifos / 'go'
    os.mkfifo(fifo)
    held = f'cat {fifo} > /dev/null; echo A > desks/main/notes/a.md'
    a = Session(harness, start, layout.home, A, [[harness.shell(held)], 'done'])
    try:
        writer = held_open(fifo, a)
        try:
            b_write = harness.write(layout.desk() / 'notes' / 'b.md', 'B\n')
            b = run(harness, start, layout.home, B, [[b_write], 'done'])
        finally:
            os.close(writer)  # A's command goes on
        done_a = a.wait()
    finally:
        a.kill()
        shutil.rmtree(fifos, ignore_errors=True)
    assert b.code == 0 and done_a.code == 0, f'{b}\n{done_a}'
    assert desk_texts(layout) == {**DESK_FILES, 'notes/a.md': 'A\n', 'notes/b.md': 'B\n'}
    return {}


@pytest.fixture
def played(harness: Harness, shared_folder: Path) -> Layout:
    folder, _ = shared(shared_folder, f'sessions-{harness.name}', lambda f: _play(harness, f))
    return Layout(folder)


def turn_of(layout: Layout, label: str) -> str:
    found = [turn['turn_id'] for turn in turns(layout) if turn['label'] == label]
    assert len(found) == 1, turns(layout)
    return found[0]


def test_each_turn_holds_its_own_sessions_file(played: Layout):
    assert turn_files(played, turn_of(played, A)) == {'notes/a.md'}
    assert turn_files(played, turn_of(played, B)) == {'notes/b.md'}


def test_restore_turn_of_one_session_keeps_the_others_file(played: Layout, tmp_path: Path):
    layout = Layout(copied(played.root, tmp_path))
    done = cli(layout, 'restore-turn', turn_of(layout, A))
    assert done.returncode == 0, done.stderr
    assert desk_texts(layout) == {**DESK_FILES, 'notes/b.md': 'B\n'}


def test_restore_turn_of_the_other_session_takes_back_its_file(played: Layout, tmp_path: Path):
    layout = Layout(copied(played.root, tmp_path))
    done = cli(layout, 'restore-turn', turn_of(layout, B))
    assert done.returncode == 0, done.stderr
    assert desk_texts(layout) == {**DESK_FILES, 'notes/a.md': 'A\n'}
