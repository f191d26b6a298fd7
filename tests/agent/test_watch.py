"""`checkpoints watch` as a separate process: other processes write, it records what changed."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers.builders import write
from helpers.cli import checkpoints as checkpoints_command
from helpers.cli import start
from helpers.hookrun import event, hook, ok
from helpers.processes import python

from trading_checkpoints import Checkpoint
from trading_checkpoints.core import lock
from trading_checkpoints.ops.engine import LOCK, PRIVATE_DIR
from trading_checkpoints.workspace import Workspace

pytest.importorskip('watchfiles')


def listed(workspace: Path) -> list[Checkpoint]:
    return Workspace(workspace).desk('main').list(None)


def wait_for(condition: Callable[[], object], seconds: float = 15) -> object:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f'not within {seconds} s')


def new_checkpoint(workspace: Path, count: int) -> Checkpoint:
    found = wait_for(lambda: len(listed(workspace)) > count and listed(workspace)[0])
    assert isinstance(found, Checkpoint)
    return found


def writer(desk: Path, path: str, text: str) -> None:
    """Another process writes the desk (a script, an editor)."""
    code = (
        'import pathlib, sys\n'
        'target = pathlib.Path(sys.argv[1])\n'
        'target.parent.mkdir(parents=True, exist_ok=True)\n'
        'target.write_text(sys.argv[2])\n'
    )
    assert python(code, str(desk / path), text).returncode == 0


@pytest.fixture
def watching(workspace: Path, desk: Path) -> Iterator[subprocess.Popen]:
    write(desk, 'Memory.md', 'v0\n')
    Workspace(workspace).desk('main').snapshot('start')
    process = start(
        'watch', '--debounce', '0.2', workspace=workspace, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    assert process.stdout.readline().startswith("Watching desk 'main'")
    time.sleep(0.3)  # the kernel watch is set up after the first line
    yield process
    if process.poll() is None:
        process.kill()
        process.wait(10)


@pytest.mark.parametrize('stop', [signal.SIGTERM, signal.SIGINT])
def test_a_write_by_another_process_is_recorded_and_idle_costs_nothing(
    watching: subprocess.Popen, workspace: Path, desk: Path, stop: signal.Signals
) -> None:
    before = len(listed(workspace))
    writer(desk, 'notes/a.md', 'a\n')
    taken = new_checkpoint(workspace, before)
    assert (taken.tool, taken.paths, taken.action) == ('watch', ('notes/a.md',), 'captured')
    assert taken.turn is None and taken.reason == 'changes seen by checkpoints watch'

    # Folders made later are followed; untracked files are not recorded.
    writer(desk, 'memory/deep/down/b.md', 'b\n')
    writer(desk, 'scratch.txt', 'untracked\n')
    taken = new_checkpoint(workspace, before + 1)
    assert taken.paths == ('memory/deep/down/b.md',)

    idle = listed(workspace)
    time.sleep(1.5)
    assert listed(workspace) == idle, 'no checkpoint while nothing changes'

    watching.send_signal(stop)
    assert watching.wait(15) == 0
    assert watching.stdout is not None
    lines = watching.stdout.read().splitlines()
    assert [line.split(': ')[1] for line in lines] == ['notes/a.md', 'memory/deep/down/b.md']


def test_it_waits_for_the_lock_of_every_writer(
    watching: subprocess.Popen, workspace: Path, desk: Path
) -> None:
    before = len(listed(workspace))
    held = workspace / '.checkpoints' / 'main.git' / PRIVATE_DIR / LOCK
    with lock.exclusive(held):  # as a restore holds it while it writes
        writer(desk, 'notes/half.md', 'written while the lock is held\n')
        time.sleep(1.0)
        assert len(listed(workspace)) == before, 'nothing recorded while a writer holds the lock'
    taken = new_checkpoint(workspace, before)
    assert taken.paths == ('notes/half.md',)
    watching.terminate()
    assert watching.wait(15) == 0


def test_an_agents_write_seen_by_watch_stays_the_agents(
    watching: subprocess.Popen, workspace: Path, desk: Path
) -> None:
    """The hooks announce the write; watch records it (credited to the turn), then a person's."""
    ok(hook(event('claude_user_prompt_submit.json', workspace)))
    ok(hook(event('claude_pre_tool_use_write.json', workspace)))  # notes/plan.md
    count = len(listed(workspace))
    write(desk, 'notes/plan.md', '# Plan\n')  # the tool runs
    new_checkpoint(workspace, count)
    ok(hook(event('claude_post_tool_use_write.json', workspace)))
    count = len(listed(workspace))
    writer(desk, 'notes/mine.md', 'a person\n')
    new_checkpoint(workspace, count)

    cps = Workspace(workspace).desk('main')
    [turn] = cps.turns()
    result = cps.restore_turn(turn.turn_id)
    assert result.deleted == ('notes/plan.md',) and result.written == ()
    assert (desk / 'notes/mine.md').read_text() == 'a person\n'
    watching.terminate()
    assert watching.wait(15) == 0


SESSIONS = {
    'A': 'aaaaaaaa-0000-4000-8000-000000000001',
    'B': 'bbbbbbbb-0000-4000-8000-000000000002',
}


def test_writes_of_two_sessions_seen_by_watch_stay_each_turns(
    watching: subprocess.Popen, workspace: Path, desk: Path
) -> None:
    """Two sessions each announce a write; the watch records both writes in one checkpoint;
    each session's restore-turn reverts its own write and only it."""

    def fields(who: str) -> dict[str, object]:
        path = str(desk / f'notes/{who}.md')
        return {
            'session_id': SESSIONS[who],
            'tool_input': {'file_path': path, 'content': f'{who}\n'},
            'tool_use_id': f'toolu_{who}',
        }

    for who, session in SESSIONS.items():
        prompt = event('claude_user_prompt_submit.json', workspace, session_id=session, prompt=who)
        ok(hook(prompt))
    for who in SESSIONS:
        ok(hook(event('claude_pre_tool_use_write.json', workspace, **fields(who))))
    count = len(listed(workspace))
    for who in SESSIONS:
        write(desk, f'notes/{who}.md', f'{who}\n')  # both tools run
    assert new_checkpoint(workspace, count).paths == ('notes/A.md', 'notes/B.md')
    for who in SESSIONS:
        done = {'filePath': str(desk / f'notes/{who}.md'), 'success': True}
        ok(
            hook(
                event(
                    'claude_post_tool_use_write.json', workspace, tool_response=done, **fields(who)
                )
            )
        )
    cps = Workspace(workspace).desk('main')
    turns = {turn.label: turn.turn_id for turn in cps.turns()}
    for who in SESSIONS:
        assert cps.restore_turn(turns[who]).deleted == (f'notes/{who}.md',)
    watching.terminate()
    assert watching.wait(15) == 0


def test_without_the_extra_it_says_how_to_install_it(workspace: Path, desk: Path) -> None:
    code = (
        'import sys; sys.modules["watchfiles"] = None\n'  # an environment without it
        'from trading_checkpoints.cli import main\n'
        f'sys.argv = ["checkpoints", "--workspace", {str(workspace)!r}, "watch"]\n'
        'main()\n'
    )
    done = python(code, timeout=60)
    assert done.returncode == 1
    assert "pip install 'trading-checkpoints[watch]'" in done.stderr


def started(workspace: Path, *args: str) -> subprocess.Popen:
    """`checkpoints watch ARGS` once its kernel watch is in place (its first line)."""
    process = start('watch', *args, workspace=workspace, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    assert process.stdout.readline().startswith("Watching desk 'main'")
    return process


@pytest.mark.parametrize('stop', [signal.SIGTERM, signal.SIGINT])
def test_it_stops_within_a_second_of_a_signal_whatever_the_debounce(
    workspace: Path, desk: Path, stop: signal.Signals
) -> None:
    """With 30 s of debounce and a change waiting for it, SIGTERM or SIGINT ends the watch at
    once (exit 0); the change waits for the next snapshot, which records it."""
    write(desk, 'Memory.md', 'v0\n')
    Workspace(workspace).desk('main').snapshot('start')
    process = started(workspace, '--debounce', '30')
    try:
        time.sleep(0.5)
        writer(desk, 'notes/waiting.md', 'waits for the debounce\n')
        time.sleep(0.5)
        sent = time.monotonic()
        process.send_signal(stop)
        assert process.wait(10) == 0
        took = time.monotonic() - sent
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
    assert took < 5, f'{took:.1f} s: the debounce of 30 s was waited out'
    assert [c.tool for c in listed(workspace)] == [None]
    assert Workspace(workspace).desk('main').snapshot('after') is not None


def test_a_second_watch_of_the_desk_is_refused_naming_the_first(
    watching: subprocess.Popen, workspace: Path, desk: Path
) -> None:
    second = checkpoints_command('watch', workspace=workspace, timeout=60)
    assert second.returncode == 1 and second.stdout == ''
    assert second.stderr.startswith('error: checkpoints watch already runs on the desk ')
    assert f'(pid {watching.pid} on ' in second.stderr
    # The first watch goes on recording.
    before = len(listed(workspace))
    writer(desk, 'notes/after.md', 'after the refusal\n')
    assert new_checkpoint(workspace, before).paths == ('notes/after.md',)
    watching.terminate()
    assert watching.wait(15) == 0
    third = started(workspace, '--debounce', '0.2')  # once it stopped, a new one starts
    third.terminate()
    assert third.wait(15) == 0


def test_no_checkpoint_until_something_changed(workspace: Path, desk: Path) -> None:
    """On a desk that holds no tracked file and was never recorded, the watch records nothing
    at its start, nor for a file made and removed within the debounce; the first real change
    is the first checkpoint, and every line it prints names what changed."""
    write(desk, 'scratch.txt', 'untracked\n')
    process = started(workspace, '--debounce', '0.3')
    try:
        time.sleep(0.3)
        writer(desk, 'notes/brief.md', 'made...\n')
        (desk / 'notes/brief.md').unlink()
        time.sleep(1.5)
        assert listed(workspace) == []
        writer(desk, 'notes/first.md', 'the first change\n')
        taken = new_checkpoint(workspace, 0)
        assert taken.paths == ('notes/first.md',)
        process.terminate()
        assert process.wait(15) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
    assert process.stdout is not None
    lines = process.stdout.read().splitlines()
    assert lines == [f'checkpoint {taken.checkpoint_id}: notes/first.md']
