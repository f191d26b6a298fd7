"""``checkpoints browse`` in a real terminal: tmux runs the command as a person would, the test
reads the screen tmux shows, moves to a checkpoint, opens its diff, undoes and redoes with
``u`` and ``U`` (checking the desk's file each time), quits with ``q`` and checks the exit
status. Marked slow (``python -m pytest -m slow tests/product/test_browse_terminal.py``);
skipped where tmux or Textual is missing."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers import ROOT
from helpers.builders import seconds_apart, session_turns

from trading_checkpoints import Checkpoints

pytest.importorskip('textual', reason="Textual is not installed (pip install '.[ui]')")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which('tmux') is None, reason='tmux is not installed'),
]


class Terminal:
    """A tmux server of the test's own (its own socket, no user configuration), 120 x 32,
    running one command."""

    def __init__(self) -> None:
        self.socket = f'tc-browse-{uuid.uuid4().hex[:8]}'

    def tmux(self, *args: str) -> str:
        done = subprocess.run(
            ['tmux', '-L', self.socket, '-f', os.devnull, *args],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def start(self, command: str, cwd: Path) -> None:
        self.tmux('new-session', '-d', '-x', '120', '-y', '32', '-c', str(cwd), command)

    def screen(self) -> str:
        return self.tmux('capture-pane', '-p')

    def keys(self, *keys: str) -> None:
        self.tmux('send-keys', *keys)

    def wait(self, seen: Callable[[str], bool], what: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if seen(screen):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f'{what} never showed; the screen:\n{screen}')
            time.sleep(0.2)

    def stop(self) -> None:
        subprocess.run(['tmux', '-L', self.socket, 'kill-server'], capture_output=True)


@pytest.fixture
def terminal() -> Iterator[Terminal]:
    opened = Terminal()
    yield opened
    opened.stop()


def browse(terminal: Terminal, desk: Path, status: Path, *args: str) -> None:
    """Starts ``checkpoints browse ARGS`` in the terminal, from the desk; its exit status goes
    to ``status``."""
    program = shlex.join([sys.executable, '-m', 'trading_checkpoints', 'browse', *args])
    command = (
        # COLUMNS and LINES (pytest sets them) would override the terminal's own size.
        f'env -u COLUMNS -u LINES PYTHONPATH={shlex.quote(str(ROOT))} TERM=xterm-256color '
        'CHECKPOINTS_SERVER=off '
        f'{program}; echo $? > {shlex.quote(str(status))}; sleep 600'
    )
    terminal.start(command, desk)


def newest_note(screen: str) -> str:
    """The text of the newest notification of a restore, undo or redo (the lowest one)."""
    joined = ' '.join(screen.replace('▌', ' ').split())
    return joined.rsplit('the desk holds', 1)[-1] if 'the desk holds' in joined else ''


def exit_status(terminal: Terminal, status: Path) -> str:
    deadline = time.monotonic() + 30
    while not status.exists() or not status.read_text().strip():
        assert time.monotonic() < deadline, f'browse did not exit:\n{terminal.screen()}'
        time.sleep(0.1)
    return status.read_text().strip()


def test_u_and_shift_u_undo_and_redo_in_a_real_terminal(
    tmp_path: Path, cps: Checkpoints, desk: Path, terminal: Terminal
) -> None:
    for number in (1, 2, 3):
        (desk / 'Memory.md').write_text(f'v{number}\n')
        cps.snapshot(f'v{number}')
    newest = cps.list(1)[0].checkpoint_id
    status = tmp_path / 'status'
    browse(terminal, desk, status)
    terminal.wait(lambda s: newest in s and 'U Redo' in s, 'the timeline and the keys')
    for key, question, memory, back in (
        ('u', 'Undo the last step?', 'v2\n', 'U redoes it'),
        ('U', 'Redo the last undo?', 'v3\n', 'u undoes it'),
        ('u', 'Undo the last step?', 'v2\n', 'U redoes it'),
    ):
        terminal.keys(key)
        terminal.wait(lambda s, q=question: q in s and 'y: go ahead' in s, f'the plan of {key}')
        terminal.keys('y')
        terminal.wait(
            lambda s, m=memory, b=back: (
                (desk / 'Memory.md').read_text() == m and f'({b})' in newest_note(s)
            ),  # the key that takes this step back
            f'the desk and the note after {key}',
        )
    terminal.keys('q')
    assert exit_status(terminal, status) == '0'


def test_browse_in_tmux_shows_the_timeline_and_a_diff_and_q_exits_0(
    tmp_path: Path, workspace: Path, cps: Checkpoints, desk: Path, terminal: Terminal
) -> None:
    ids = session_turns(cps, desk, 3)
    status = tmp_path / 'status'
    browse(terminal, desk, status)
    screen = terminal.wait(lambda s: ids[0] in s and 'q Quit' in s, 'the timeline')
    assert max(len(line) for line in screen.splitlines()) > 100, 'the app sees 120 columns'
    lines = screen.splitlines()
    order = [next(i for i, line in enumerate(lines) if line.startswith(c)) for c in ids[::-1]]
    assert order == sorted(order), 'newest first'
    assert 'turn 2' in screen
    terminal.keys('j')  # the checkpoint before the newest: turn 1
    terminal.wait(lambda s: f'checkpoint {ids[1]}' in s, 'the second checkpoint selected')
    terminal.keys('Enter')
    screen = terminal.wait(lambda s: '+- turn 1: remembered something' in s, 'its diff')
    assert f'{ids[0]} -> {ids[1]}' in screen
    assert '+note rewritten at turn 1' in screen
    terminal.keys('q')
    assert exit_status(terminal, status) == '0'


def test_at_starts_on_the_checkpoint_the_desk_held_then(
    tmp_path: Path, cps: Checkpoints, desk: Path, terminal: Terminal
) -> None:
    first, middle, newest = seconds_apart(cps, desk, 3, step=600)
    status = tmp_path / 'status'
    browse(terminal, desk, status, '--at', '15m')  # between the middle one and the newest
    shown = f'checkpoint {middle.checkpoint_id}'
    terminal.wait(lambda s: 'q Quit' in s and shown in s, 'the middle checkpoint selected')
    terminal.keys('q')
    assert exit_status(terminal, status) == '0'
