"""The warm command server's processes, as the tests start and watch them: the console script
run as a harness runs it, its server and the server's children found through ``/proc``.

Each test gets a private runtime folder of its own (the ``runtime`` fixture of
``tests/warm/conftest.py``), so its server is its own.
"""

from __future__ import annotations

import importlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from helpers import ROOT, SCRIPTS
from helpers.builders import write
from helpers.processes import environment
from trading_checkpoints import Checkpoints
from trading_checkpoints.warm import address

# The console script as pip installs it: a script file (its folder first on the import path,
# never the current folder, which would keep the command off the server).
CLIENT = [sys.executable, str(ROOT / 'bin' / 'checkpoints')]
# The same, saying where the command ran (``scripts/warm_probe``; another slot than CLIENT's).
PROBE = [sys.executable, str(SCRIPTS / 'warm_probe')]


def client_env(runtime: Path, **extra: str) -> dict[str, str]:
    return environment({'XDG_RUNTIME_DIR': str(runtime), 'CHECKPOINTS_SERVER_IDLE': '60', **extra})


def run(
    runtime: Path, *args: str, cwd: Path, stdin: bytes = b'', **extra: str
) -> subprocess.CompletedProcess[bytes]:
    """``checkpoints ARGS`` through the console script's entry point (stdin not a terminal)."""
    return subprocess.run(
        [*CLIENT, *args],
        cwd=cwd,
        env=client_env(runtime, **extra),
        input=stdin,
        capture_output=True,
        timeout=120,
    )


def hook_client(
    runtime: Path, cwd: Path, preexec: Callable[[], None] | None = None, **extra: str
) -> subprocess.Popen[bytes]:
    """``checkpoints hook --harness claude`` through the console script's entry point, its
    stdin a pipe left open: the hook reads its event until the end of it, so the command
    blocks there until the test writes or closes it. ``preexec`` runs in the client before it
    starts (what its parent set up: signals ignored...)."""
    return subprocess.Popen(
        [*CLIENT, 'hook', '--harness', 'claude'],
        cwd=cwd,
        env=client_env(runtime, **extra),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=preexec,
    )


def server_pid(runtime: Path, timeout: float = 60) -> int:
    """The pid of the server for this checkout, once it listens (a killed server's lock file
    keeps its pid until the next server takes the lock). Called once a client has started
    one: fails as soon as no process of a server for ``runtime`` is left, rather than at
    ``timeout`` (a server that stopped before it listened never will)."""
    pid = listening(runtime, timeout)
    if pid is None:
        raise AssertionError(f'the server for {runtime} ended before it listened')
    return pid


def listening(runtime: Path, timeout: float = 60) -> int | None:
    """The pid of a server listening in ``runtime`` once one does; None as soon as no process
    of a server for ``runtime`` is left (the one a client started ended without listening)."""
    deadline = time.monotonic() + timeout
    folder = runtime / address.FOLDER_NAME
    while time.monotonic() < deadline:
        for sock in folder.glob('server-*.sock'):
            lock = Path(f'{sock}.lock')
            text = lock.read_text().strip() if lock.exists() else ''
            if text and not gone(int(text), timeout=0):
                return int(text)
        if not server_processes(runtime):
            return None
        time.sleep(0.05)
    raise AssertionError(f'no server listens in {folder}, one still runs')


# What ``client.start_server`` runs: the interpreter told to run the server's ``main``.
SERVER_CODE = b'from trading_checkpoints.warm.server import main'


def server_processes(runtime: Path) -> list[int]:
    """The live processes of the servers started for ``runtime`` and of their children: the
    server's code on their command line, ``runtime`` in the environment they started with."""
    variable = f'XDG_RUNTIME_DIR={runtime}'.encode()
    found = []
    for entry in Path('/proc').iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if SERVER_CODE not in (entry / 'cmdline').read_bytes():
                continue
            if variable not in (entry / 'environ').read_bytes().split(b'\0'):
                continue
        except OSError:
            continue
        if not gone(int(entry.name), timeout=0):
            found.append(int(entry.name))
    return found


def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path('/proc').iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / 'stat').read_text().rsplit(')', 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def serving(server: int) -> list[int]:
    """The server's children running a client's command: each has taken the client's stdin
    (the server's own, and so a waiting child's, is /dev/null)."""
    found = []
    for child in children_of(server):
        try:
            if os.readlink(f'/proc/{child}/fd/0') != os.devnull:
                found.append(child)
        except OSError:
            continue
    return found


def waiting(server: int, timeout: float = 30) -> int:
    """The server's child waiting for the next client (once there is one)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if gone(server, timeout=0):
            raise AssertionError(f'the server {server} ended: no child of it waits')
        busy = serving(server)
        idle = [
            child
            for child in children_of(server)
            if child not in busy and not gone(child, timeout=0)  # an ended one not yet collected
        ]
        if len(idle) == 1:
            return idle[0]
        time.sleep(0.02)
    raise AssertionError(f'no child of the server {server} waits for a client')


def gone(pid: int, timeout: float = 30) -> bool:
    """Whether ``pid`` has ended (exited, or a zombie its parent has yet to reap)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            state = Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()[0]
        except OSError:
            return True
        if state == 'Z':
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)


def workspace_with_history(tmp_path: Path) -> Path:
    desk = tmp_path / 'ws' / 'desks' / 'main'
    checkpoints = Checkpoints(tmp_path / 'ws' / '.checkpoints' / 'main.git', desk)
    write(desk, 'Memory.md', '# Memory\n')
    checkpoints.snapshot('first')
    write(desk, 'notes/plan.md', 'Buy MSFT below 400.\n')
    checkpoints.snapshot('second')
    write(desk, 'notes/plan.md', 'SELL EVERYTHING\n')
    return desk


def reading_stdin(pid: int, timeout: float = 60) -> bool:
    """Whether ``pid`` is blocked reading its stdin (``read(0, ...)`` in /proc/PID/syscall)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if reads_stdin(pid):
            return True
        time.sleep(0.02)
    return False


def reads_stdin(pid: int) -> bool:
    """Whether ``pid`` is blocked reading its stdin now."""
    try:
        fields = Path(f'/proc/{pid}/syscall').read_text().split()
    except OSError:
        fields = []
    return fields[:2] == ['0', '0x0']


def taken(server: int, client: int, timeout: float = 30) -> list[int]:
    """The server's children running a client's command (``serving``), once there are any;
    what there are as soon as the client ``client`` runs its command itself instead (it reads
    its own stdin) or the server has ended, rather than at ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = serving(server)
        if found or gone(server, timeout=0) or reads_stdin(client):
            return found
        time.sleep(0.02)
    return serving(server)


def forwarding(pid: int, timeout: float = 60) -> bool:
    """Whether the client ``pid`` forwards SIGTERM (it installs that once the child took the
    command; a Python process does not catch SIGTERM by itself)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = Path(f'/proc/{pid}/status').read_text()
        caught = int(status.split('SigCgt:')[1].split()[0], 16)
        if caught & (1 << (signal.SIGTERM - 1)):
            return True
        time.sleep(0.02)
    return False


# recvfrom, recvmsg, poll, ppoll (x86_64): the first field of /proc/PID/syscall
RECEIVING = ('45', '47', '7', '271')


def receiving(pid: int, timeout: float = 60) -> bool:
    """Whether ``pid`` is blocked reading (or polling) a socket: the client waiting for the
    child."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            fields = Path(f'/proc/{pid}/syscall').read_text().split()
        except OSError:
            fields = []
        if fields[:1] and fields[0] in RECEIVING:
            return True
        time.sleep(0.02)
    return False


def stopped(pid: int, timeout: float = 30) -> bool:
    """Whether ``pid`` is stopped (SIGSTOP has taken effect)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()[0]
        if state == 'T':
            return True
        time.sleep(0.02)
    return False


def copied(site: Path, *packages: str) -> Path:
    """``site``, a folder holding copies of ``packages`` (click, dulwich), each file dated long
    ago (a server keeps away from modules changed moments ago: it serves once they settle, by
    their change time, two seconds on); click's ``echo`` marks what it prints (``[copy] ``),
    so output tells which click ran."""
    for name in packages:
        module = importlib.import_module(name)
        shutil.copytree(Path(str(module.__file__)).parent, site / name)
    if 'click' in packages:
        utils = site / 'click' / 'utils.py'
        text = utils.read_text().replace('def echo(', 'def _echo(', 1)
        utils.write_text(
            text + '\n\ndef echo(message=None, *args, **kwargs):\n'
            '    if isinstance(message, str):\n'
            "        message = '[copy] ' + message\n"
            '    return _echo(message, *args, **kwargs)\n'
        )
    age(site)
    return site


def age(folder: Path, seconds: float = 60) -> None:
    """Dates ``folder`` and everything in it ``seconds`` back."""
    old = time.time() - seconds
    for path in (folder, *folder.rglob('*')):
        os.utime(path, (old, old))


@contextmanager
def within(seconds: float, what: str) -> Iterator[None]:
    """Fails the test when the block has not ended after ``seconds`` (SIGALRM interrupts a
    call that blocks), rather than letting it hang the run; again each second after, should
    the clean-up the failure runs block too."""

    def late(signum: int, frame: object) -> None:
        raise AssertionError(f'{what} still blocked after {seconds} s')

    previous = signal.signal(signal.SIGALRM, late)
    signal.setitimer(signal.ITIMER_REAL, seconds, 1.0)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
