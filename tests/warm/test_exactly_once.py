"""A command runs once, and ends as it would in-process: the failures that come before the
child starts it make the client run it itself, a signal that ends it ends the client alike, a
signal the client ignores stays ignored, and a child whose client is gone does not go on."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import ROOT
from helpers.hookrun import event as hook_event
from helpers.warm import (
    client_env,
    gone,
    hook_client,
    reading_stdin,
    receiving,
    run,
    server_pid,
    serving,
    stopped,
    waiting,
    workspace_with_history,
)

from trading_checkpoints import Checkpoints
from trading_checkpoints.warm import address, client

pytestmark = pytest.mark.skipif(sys.platform != 'linux', reason='the warm server is Linux-only')
HOOK = [sys.executable, str(ROOT / 'bin' / 'checkpoints-hook'), '--harness', 'claude']


def count(desk: Path) -> int:
    return len(Checkpoints(desk.parent.parent / '.checkpoints' / 'main.git', desk).list(None))


def started(runtime: Path, desk: Path) -> int:
    """The server of the console script, listening; its pid."""
    deadline = time.monotonic() + 60
    while True:
        run(runtime, 'list', cwd=desk)
        folder = runtime / address.FOLDER_NAME
        if list(folder.glob('server-*.sock')):
            return server_pid(runtime)
        assert time.monotonic() < deadline, 'no server'
        time.sleep(0.1)


def test_checkpoints_hook_with_stdin_closed_never_hangs_and_never_runs_twice(
    tmp_path: Path, runtime: Path
) -> None:
    """``checkpoints-hook <&-`` (a harness that closes the hook's stdin) with a server
    listening: each run ends as the same run in-process ends, and takes no more checkpoints."""
    desk = workspace_with_history(tmp_path)
    workspace = desk.parent.parent
    started(runtime, desk)
    shell = 'exec "$@" <&-'
    here = subprocess.run(
        ['sh', '-c', shell, 'sh', *HOOK],
        cwd=workspace,
        env=client_env(runtime, CHECKPOINTS_SERVER='off'),
        capture_output=True,
        timeout=60,
    )
    before = count(desk)
    for _ in range(12):
        done = subprocess.run(
            ['sh', '-c', shell, 'sh', *HOOK],
            cwd=workspace,
            env=client_env(runtime),
            capture_output=True,
            timeout=60,
        )
        assert (done.returncode, done.stdout, done.stderr) == (
            here.returncode,
            here.stdout,
            here.stderr,
        )
    assert count(desk) == before


def test_a_hung_server_is_given_up_before_the_command_starts(
    tmp_path: Path, runtime: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server whose child never answers (held with SIGSTOP): the client gives it up after
    its wait, runs the command itself, once, and removes the socket, so that the next command
    starts a new server; the held child, let go, runs nothing."""
    desk = workspace_with_history(tmp_path)
    server = started(runtime, desk)
    ahead = waiting(server)
    os.kill(ahead, signal.SIGSTOP)
    try:
        before = count(desk)
        began = time.monotonic()
        done = run(runtime, 'snapshot', '-m', 'past a hung server', cwd=desk)
        waited = time.monotonic() - began
        assert done.returncode == 0 and b'Snapshot' in done.stdout, done.stderr
        assert waited >= client.ANSWER_TIMEOUT
        assert count(desk) == before + 1
        assert not list((runtime / address.FOLDER_NAME).glob('server-*.sock')) or (
            server_pid(runtime) != server
        ), 'the hung server is not found again'
    finally:
        os.kill(ahead, signal.SIGCONT)
    assert gone(ahead), 'the held child, let go, found no go and ended'
    assert count(desk) == before + 1
    assert gone(server), 'the hung server saw its socket gone'


def test_a_child_whose_client_is_killed_ends_and_lets_the_server_go_idle(
    tmp_path: Path, runtime: Path
) -> None:
    """SIGKILL to a client whose command waits on its stdin: the command ends with it (as it
    would in-process), and the server, idle, exits in its time."""
    desk = workspace_with_history(tmp_path)
    run(runtime, 'list', cwd=desk, CHECKPOINTS_SERVER_IDLE='3')
    server = server_pid(runtime)
    waiting(server)
    client_process = hook_client(runtime, desk, CHECKPOINTS_SERVER_IDLE='3')
    try:
        deadline = time.monotonic() + 30
        while not serving(server) and time.monotonic() < deadline:
            time.sleep(0.02)
        [child] = serving(server)
        assert reading_stdin(child)
        client_process.kill()
        assert gone(child, timeout=10), 'the command ended with its client'
        assert gone(server, timeout=30), 'and the server went idle'
    finally:
        client_process.kill()
        client_process.communicate()


def ignoring(*signals: signal.Signals) -> Callable[[], None]:
    def prepare() -> None:
        for number in signals:
            signal.signal(number, signal.SIG_IGN)

    return prepare


FORWARDED = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT}


def ignored_by(pid: int) -> set[int]:
    """The signals process ``pid`` ignores (``SigIgn`` in its status)."""
    status = Path(f'/proc/{pid}/status').read_text()
    bits = int(status.split('SigIgn:')[1].split()[0], 16)
    return {number + 1 for number in range(64) if bits >> number & 1}


def signalled(
    runtime: Path, desk: Path, signum: int, served: bool, keep: tuple[signal.Signals, ...]
) -> tuple[int, bytes, bytes, int]:
    """``checkpoints hook`` started with the signals ``keep`` ignored, blocked on its stdin,
    sent ``signum``, then given its event: its status, output, and the checkpoints taken."""
    workspace = desk.parent.parent
    extra = {} if served else {'CHECKPOINTS_SERVER': 'off'}
    before = count(desk)
    process = hook_client(runtime, workspace, ignoring(*keep), **extra)
    try:
        reader = process.pid
        if served:
            server = server_pid(runtime)
            deadline = time.monotonic() + 30
            while not serving(server) and time.monotonic() < deadline:
                time.sleep(0.02)
            [reader] = serving(server)
        assert reading_stdin(reader)
        if served:  # the client goes on ignoring what it ignored, and so does the command
            kept = set(keep)
            assert ignored_by(process.pid) & FORWARDED == kept
            assert ignored_by(reader) & FORWARDED == kept
        process.send_signal(signum)
        time.sleep(0.3)  # the signal acts (or not) before the event comes
        try:
            out, err = process.communicate(
                hook_event('claude_pre_tool_use_write.json', workspace), 60
            )
        except BrokenPipeError:
            out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return process.returncode, out, err, count(desk) - before


@pytest.mark.parametrize(
    'name, signum, ignored',
    [
        ('SIGTERM', signal.SIGTERM, ()),
        ('SIGHUP', signal.SIGHUP, ()),
        ('SIGQUIT', signal.SIGQUIT, ()),
        ('SIGHUP under nohup', signal.SIGHUP, (signal.SIGHUP,)),
        ('SIGINT in a background job', signal.SIGINT, (signal.SIGINT, signal.SIGQUIT)),
        ('SIGQUIT in a background job', signal.SIGQUIT, (signal.SIGINT, signal.SIGQUIT)),
    ],
)
def test_a_signal_mid_command_ends_it_as_in_process(
    tmp_path: Path, runtime: Path, name: str, signum: int, ignored: tuple[signal.Signals, ...]
) -> None:
    """A signal that ends the command ends the client by the same signal (a shell sees
    128+N); one the client ignores (``nohup``, a background job) leaves the command to
    complete, as in-process."""
    here_desk = workspace_with_history(tmp_path / 'here')
    there_desk = workspace_with_history(tmp_path / 'there')
    started(runtime, there_desk)
    here = signalled(runtime, here_desk, signum, served=False, keep=ignored)
    there = signalled(runtime, there_desk, signum, served=True, keep=ignored)
    assert there == here
    if ignored and signum in ignored:
        assert here[0] == 0 and here[3] == 1, 'the command completed'
    else:
        assert here[0] == -signum, 'the signal ended it'


def test_a_client_gone_before_it_said_go_leaves_nothing_run(tmp_path: Path, runtime: Path) -> None:
    """A client killed while it waits for the child's answer (the child held with SIGSTOP):
    the child, let go, finds no one to say go and runs nothing."""
    desk = workspace_with_history(tmp_path)
    workspace = desk.parent.parent
    server = started(runtime, desk)
    ahead = waiting(server)
    before = count(desk)
    os.kill(ahead, signal.SIGSTOP)
    process = hook_client(runtime, workspace)
    try:
        assert process.stdin is not None
        process.stdin.write(hook_event('claude_pre_tool_use_write.json', workspace))
        process.stdin.close()
        process.stdin = None
        assert stopped(ahead)
        assert receiving(process.pid)
        process.kill()
        process.wait(timeout=30)
    finally:
        os.kill(ahead, signal.SIGCONT)
        process.communicate()
    assert gone(ahead)
    assert count(desk) == before
