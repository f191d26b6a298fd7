"""The warm server's start, with the real processes: what it keeps of the client that started
it, the slot's start lock, the private folder it listens in, and how it goes on when its
parent's view of a child comes late."""

from __future__ import annotations

import fcntl
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import SCRIPTS
from helpers.processes import environment
from helpers.warm import (
    CLIENT,
    client_env,
    gone,
    listening,
    run,
    server_pid,
    stopped,
    waiting,
    workspace_with_history,
)

from trading_checkpoints.warm import address

pytestmark = pytest.mark.skipif(sys.platform != 'linux', reason='the warm server is Linux-only')

HIGH = 70_000  # a descriptor past 65536: its client raised its limit


def can_raise_the_descriptor_limit() -> bool:
    """Whether a process may raise its descriptor limit past ``HIGH`` (a hard limit that high,
    or the capability to raise it: root in a container may lack it)."""
    code = f'import resource; resource.setrlimit(resource.RLIMIT_NOFILE, ({HIGH + 1}, {HIGH + 1}))'
    return subprocess.run([sys.executable, '-c', code], capture_output=True).returncode == 0


@pytest.mark.parametrize('number', [3, HIGH])
def test_the_server_holds_nothing_its_client_was_left(
    tmp_path: Path, runtime: Path, number: int
) -> None:
    """A harness may start a hook with a pipe of its own left open in it, and wait for that
    pipe's end: the server the hook's client starts keeps none of it, whatever its number (at
    3, or past 65536 when a limit was raised), so the pipe ends with the client; its standard
    streams are /dev/null."""
    if number > 2**16 and not can_raise_the_descriptor_limit():
        pytest.skip(f'a descriptor numbered {number} needs a limit above it, which cannot be set')
    desk = workspace_with_history(tmp_path)
    reader, writer = os.pipe()

    def left_open() -> None:  # in the client, before it starts
        if number >= resource.getrlimit(resource.RLIMIT_NOFILE)[0]:
            resource.setrlimit(resource.RLIMIT_NOFILE, (number + 1, number + 1))
        os.dup2(writer, number)

    try:
        done = subprocess.run(
            [*CLIENT, 'list'],
            cwd=desk,
            env=client_env(runtime),
            input=b'',
            capture_output=True,
            timeout=120,
            close_fds=False,
            preexec_fn=left_open,
        )
        assert done.returncode == 0, done.stderr
        server = server_pid(runtime)
        ahead = waiting(server)
        os.close(writer)
        os.set_blocking(reader, False)
        assert os.read(reader, 1) == b'', 'no process holds the pipe: it ended'
        for pid in (server, ahead):
            streams = [os.readlink(f'/proc/{pid}/fd/{fd}') for fd in (0, 1, 2)]
            assert streams == [os.devnull] * 3, (pid, streams)
    finally:
        os.close(reader)
        try:
            os.close(writer)
        except OSError:
            pass


def test_a_server_of_the_slot_already_starting_keeps_another_from_listening(
    tmp_path: Path, runtime: Path
) -> None:
    """A server of the same slot still starting (it holds ``<manifest>.start``, whichever
    version of the code it runs) keeps the next one from starting: that one ends without
    listening, and the commands run in-process meanwhile; the lock free, the next client's
    server listens."""
    desk = workspace_with_history(tmp_path)
    run(runtime, 'list', cwd=desk)
    first = server_pid(runtime)
    waiting(first)
    os.kill(first, signal.SIGTERM)
    assert gone(first)
    folder = runtime / address.FOLDER_NAME
    [manifest] = folder.glob('server-*.files')
    holder = os.open(f'{manifest}.start', os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
        done = run(runtime, 'list', cwd=desk)
        assert done.returncode == 0 and b'second' in done.stdout, done.stderr
        assert listening(runtime) is None, 'the second server ended without listening'
    finally:
        os.close(holder)
    run(runtime, 'list', cwd=desk)
    assert server_pid(runtime) != first


def test_a_server_started_after_its_folder_went_makes_it_again(
    tmp_path: Path, runtime: Path
) -> None:
    """The private folder removed between the client's look and its server's start: the
    server makes it again (private) and listens there."""
    done = subprocess.run(
        [sys.executable, str(SCRIPTS / 'warm_starter')],
        env=client_env(runtime),
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    server_pid(runtime)
    assert (runtime / address.FOLDER_NAME).stat().st_mode & 0o077 == 0


def test_a_server_that_hears_of_a_client_after_its_command_ended_goes_on(
    tmp_path: Path, runtime: Path
) -> None:
    """The server held (SIGSTOP) while its waiting child takes a client and the command runs
    to its end: let go, it hears of the client and of the child's end at once, and serves the
    next command."""
    desk = workspace_with_history(tmp_path)
    run(runtime, 'list', cwd=desk)
    server = server_pid(runtime)
    ahead = waiting(server)
    here = run(runtime, 'list', cwd=desk, CHECKPOINTS_SERVER='off')
    os.kill(server, signal.SIGSTOP)
    try:
        assert stopped(server)
        done = run(runtime, 'list', cwd=desk)
        assert (done.returncode, done.stdout, done.stderr) == (
            here.returncode,
            here.stdout,
            here.stderr,
        )
        assert gone(ahead), 'the child ran the command and ended'
    finally:
        os.kill(server, signal.SIGCONT)
    next_one = waiting(server)
    assert next_one != ahead
    done = run(runtime, 'list', cwd=desk)
    assert done.returncode == 0, done.stderr
    assert gone(next_one), 'the next child took the next client'
    assert not gone(server, timeout=0), 'the server goes on'


# A subreaper (as systemd --user or a container's init is): the server its client starts is
# its child once the client ends. It stops the server with SIGTERM once it listens (in the
# folder argv[1]), and prints the exit status of the first of its children to end.
SUBREAPER = """
import ctypes, os, signal, subprocess, sys, time
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
subprocess.run(sys.argv[2:], input=b'', capture_output=True, check=True)
code = b'from trading_checkpoints.warm.server import main'
deadline = time.monotonic() + 60
stopped = False
while True:
    pid, status = os.waitpid(-1, os.WNOHANG)
    if pid:
        print(os.waitstatus_to_exitcode(status))
        break
    found = [p for p in os.listdir('/proc') if p.isdigit() and p != str(os.getpid())]
    mine = [int(p) for p in found if _parent(p) == os.getpid() and _runs(p, code)]
    waits = mine and any(_parent(p) == mine[0] for p in found)  # its waiting child forked
    if not stopped and waits and _listening(mine[0]):
        os.kill(mine[0], signal.SIGTERM)
        stopped = True
    assert time.monotonic() < deadline, 'no server ended'
    time.sleep(0.05)
"""
HELPERS = """
import os, stat, sys
def _parent(pid):
    try:
        with open(f'/proc/{pid}/stat') as f:
            return int(f.read().rsplit(')', 1)[1].split()[1])
    except OSError:
        return None
def _runs(pid, code):
    try:
        with open(f'/proc/{pid}/cmdline', 'rb') as f:
            return code in f.read()
    except OSError:
        return False
def _listening(pid):
    folder = sys.argv[1]
    for name in os.listdir(folder):
        if name.endswith('.sock.lock'):
            with open(os.path.join(folder, name)) as f:
                held = f.read().strip() == str(pid)
            if held and stat.S_ISSOCK(os.lstat(os.path.join(folder, name[:-5])).st_mode):
                return True
    return False
"""


def collected(runtime: Path, desk: Path) -> tuple[int, bytes, bytes]:
    """``checkpoints list`` run under a subreaper (``SUBREAPER``): its status, and what it
    printed (how the server it started ended) and said."""
    folder = str(runtime / address.FOLDER_NAME)
    done = subprocess.run(
        [sys.executable, '-c', HELPERS + SUBREAPER, folder, *CLIENT, 'list'],
        cwd=desk,
        env=client_env(runtime),
        capture_output=True,
        timeout=120,
    )
    return done.returncode, done.stdout, done.stderr


def test_a_server_stopped_by_sigterm_exits_0_to_whoever_collects_it(
    tmp_path: Path, runtime: Path
) -> None:
    """SIGTERM is how a server is stopped: a clean end, status 0, for the process that
    collects it (init, or a subreaper that reports its children's failures)."""
    desk = workspace_with_history(tmp_path)
    status, out, err = collected(runtime, desk)
    assert (status, out) == (0, b'0\n'), err


def test_a_server_that_cannot_listen_goes_quietly(tmp_path: Path, runtime: Path) -> None:
    """Something else at its socket's path (a folder, which it does not remove): the server
    goes without listening, and without an error (status 0); the commands ran meanwhile."""
    desk = workspace_with_history(tmp_path)
    run(runtime, 'list', cwd=desk)
    first = server_pid(runtime)
    waiting(first)
    folder = runtime / address.FOLDER_NAME
    [sock] = folder.glob('server-*.sock')
    os.kill(first, signal.SIGTERM)
    assert gone(first)
    sock.mkdir()
    for manifest in folder.glob('server-*.files'):
        manifest.unlink()  # so that the client starts a server
    status, out, err = collected(runtime, desk)
    assert (status, out) == (0, b'0\n'), err
    assert sock.is_dir()


# ``close_inherited`` where ``/proc`` cannot be listed (a system without it): descriptors 3 and
# 300 left open, the listing refused; prints which of 0, 1, 2, 3 and 300 are still open.
CLOSED_WITHOUT_PROC = """\
import os
from trading_checkpoints.warm import server
os.dup2(os.open(os.devnull, os.O_RDONLY), 300)
listdir = os.listdir
def refused(path='.'):
    if str(path).startswith('/proc'):
        raise FileNotFoundError(2, 'No such file or directory', str(path))
    return listdir(path)
os.listdir = refused
server.close_inherited()
def is_open(fd):
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True
print([fd for fd in (0, 1, 2, 3, 300) if is_open(fd)])
"""


def test_without_proc_the_server_closes_every_descriptor_below_the_limit() -> None:
    done = subprocess.run(
        [sys.executable, '-c', CLOSED_WITHOUT_PROC],
        env=environment(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (0, '[0, 1, 2]\n'), done.stderr
