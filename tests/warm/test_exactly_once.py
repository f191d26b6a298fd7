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
    PROBE,
    client_env,
    gone,
    hook_client,
    reading_stdin,
    receiving,
    run,
    server_pid,
    stopped,
    taken,
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
        [child] = taken(server, client_process.pid)
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
            [reader] = taken(server, process.pid)
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


def test_a_client_gone_before_its_command_started_leaves_nothing_run(
    tmp_path: Path, runtime: Path
) -> None:
    """A client killed while it waits for the child's answer (the child held with SIGSTOP):
    the child, let go, finds its client gone as it takes the streams, and runs nothing."""
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


def probed(runtime: Path, desk: Path, argv: list[str], **popen: object) -> str:
    """Runs ``argv`` (a client) with the probe's file set, until a server of the plain
    client's listens; where the command ran."""
    probe = desk.parent.parent.parent / 'probe'
    probe.unlink(missing_ok=True)
    process = subprocess.Popen(
        argv,
        cwd=desk,
        env=client_env(runtime, TC_WARM_PROBE=str(probe)),
        **popen,  # type: ignore[call-overload]
    )
    process.communicate(timeout=120)
    return probe.read_text().strip() if probe.exists() else ''


QUIET = {'stdin': subprocess.DEVNULL, 'stdout': subprocess.PIPE, 'stderr': subprocess.PIPE}


def probe_served(runtime: Path, desk: Path) -> None:
    """Runs ``list`` through the probe until its server serves it."""
    deadline = time.monotonic() + 60
    while probed(runtime, desk, [*PROBE, 'list'], **QUIET) != 'served':
        assert time.monotonic() < deadline, 'no server'
        time.sleep(0.1)


def test_a_command_with_a_terminal_for_a_stream_runs_in_process(
    tmp_path: Path, runtime: Path
) -> None:
    """stdout or stderr a terminal (stdin a file): only the terminal's own processes may use
    it as such (job control, its size, a prompt), so the command runs in-process."""
    import pty

    desk = workspace_with_history(tmp_path)
    assert probed(runtime, desk, [*PROBE, 'list'], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while (
        probed(runtime, desk, [*PROBE, 'list'], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
        != 'served'
    ):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    for stream in ('stdout', 'stderr'):
        main, terminal = pty.openpty()
        try:
            where = probed(
                runtime, desk, [*PROBE, 'list'], stdin=subprocess.DEVNULL, **{stream: terminal}
            )
        finally:
            os.close(terminal)
            os.close(main)
        assert where == 'in-process', stream


@pytest.mark.parametrize(
    'args', [('push', 'nowhere'), ('pull', 'nowhere'), ('clone', '/nonexistent/repo.git')]
)
def test_the_remote_verbs_run_in_process(
    tmp_path: Path, runtime: Path, args: tuple[str, ...]
) -> None:
    """A remote verb may run ssh or a credential helper that prompts on the controlling
    terminal, which the server's child has not."""
    desk = workspace_with_history(tmp_path)
    probe_served(runtime, desk)
    assert probed(runtime, desk, [*PROBE, *args], **QUIET) == 'in-process'


def test_a_client_whose_import_path_holds_its_folder_runs_in_process(
    tmp_path: Path, runtime: Path
) -> None:
    """``python -c`` puts the current folder first on the import path: what the client would
    import depends on where it runs, which a server's imports made elsewhere cannot follow."""
    desk = workspace_with_history(tmp_path)
    code = (
        'import atexit, sys\n'
        'atexit.register(lambda: print("in-process" if "trading_checkpoints.warm.command" '
        'in sys.modules else "served", file=sys.stderr))\n'
        'from trading_checkpoints.warm.client import main\n'
        'main()\n'
    )
    for _ in range(3):
        done = subprocess.run(
            [sys.executable, '-c', code, 'list'],
            cwd=desk,
            env=client_env(runtime),
            input=b'',
            capture_output=True,
            timeout=120,
        )
        assert done.returncode == 0 and done.stderr.splitlines()[-1] == b'in-process'
        time.sleep(0.3)
    assert not list((runtime / address.FOLDER_NAME).glob('server-*')), 'no server either'


@pytest.mark.skipif(os.geteuid() != 0, reason='needs root to run a client with other groups')
def test_a_client_under_other_credentials_is_served_by_a_server_of_its_own(
    tmp_path: Path, runtime: Path
) -> None:
    """A client with other supplementary groups is refused by the plain client's server, and
    starts a server in its own context, which serves it."""
    desk = workspace_with_history(tmp_path)
    probe_served(runtime, desk)
    other = ['setpriv', '--groups', '65534']
    deadline = time.monotonic() + 60
    while probed(runtime, desk, [*other, *PROBE, 'list'], **QUIET) != 'served':
        assert time.monotonic() < deadline, 'no server of its own'
        time.sleep(0.1)
    assert len(list((runtime / address.FOLDER_NAME).glob('server-*.sock'))) == 2


def test_a_client_that_hangs_up_before_its_command_starts_leaves_nothing_run(
    tmp_path: Path, runtime: Path
) -> None:
    """A client (this test's process, alive: the child can read it) sends a hook event's
    command with its streams and hangs up before the child reads it (the child stopped
    meanwhile): the child takes the streams, finds no one to tell it starts, and runs nothing
    (no checkpoint, though the desk has changed); the server goes on serving on the same
    socket."""
    import socket as sockets
    import struct

    from trading_checkpoints.core import private
    from trading_checkpoints.warm import wire

    desk = workspace_with_history(tmp_path)
    workspace = desk.parent.parent
    started(runtime, desk)
    [path] = (runtime / address.FOLDER_NAME).glob('server-*.sock')
    server = server_pid(runtime)
    before = count(desk)
    (tmp_path / 'event').write_bytes(hook_event('claude_pre_tool_use_write.json', workspace))
    files = [
        os.open(tmp_path / 'event', os.O_RDONLY),
        os.open(tmp_path / 'out', os.O_WRONLY | os.O_CREAT, 0o600),
        os.open(tmp_path / 'err', os.O_WRONLY | os.O_CREAT, 0o600),
    ]
    streams, token = sockets.socketpair(sockets.AF_UNIX, sockets.SOCK_DGRAM)
    streams.sendmsg(
        [wire.STREAMS], [(sockets.SOL_SOCKET, sockets.SCM_RIGHTS, struct.pack('3i', *files))]
    )
    ahead = waiting(server)
    # Stopped until the client has hung up: else the hang-up may come once the child is set to
    # end with its client (SIGKILL), and the child never finds out it has no one to tell.
    os.kill(ahead, signal.SIGSTOP)
    try:
        assert stopped(ahead)
        connection = private.connect(str(path), 5)
        request = wire.encode(
            ['checkpoints-hook'], ['hook', '--harness', 'claude'], [sys.stdin] * 3
        )
        connection.sendmsg(
            [request],
            [(sockets.SOL_SOCKET, sockets.SCM_RIGHTS, struct.pack('i', token.fileno()))],
        )
        connection.close()
    finally:
        os.kill(ahead, signal.SIGCONT)
    try:
        assert gone(ahead), 'the child ended'
        assert not client.take_back(token), 'it had taken the streams'
        assert count(desk) == before, 'nothing ran'
        assert (tmp_path / 'out').read_bytes() == b'' and (tmp_path / 'err').read_bytes() == b''
    finally:
        for fd in files:
            os.close(fd)
        streams.close()
        token.close()
    assert run(runtime, 'list', cwd=desk).returncode == 0
    assert server_pid(runtime) == server, 'the same server, its socket kept'
    assert [sock.name for sock in (runtime / address.FOLDER_NAME).glob('server-*.sock')] == [
        path.name
    ]
