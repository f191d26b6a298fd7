"""The warm server in a pid namespace of its own, as in a container: the namespace's first
process is served like any other, and a process of an outer namespace (which the server's
``/proc`` cannot show: its peer pid reads 0) runs nothing.

The namespace is made with ``unshare --pid --fork --mount-proc`` (root); its first process is a
shell that starts the server through a first command, then runs what the test says.
"""

from __future__ import annotations

import array
import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import ROOT
from helpers.warm import PROBE, client_env, server_processes, workspace_with_history

from trading_checkpoints import Checkpoints
from trading_checkpoints.warm import address, wire

pytestmark = [
    pytest.mark.skipif(sys.platform != 'linux', reason='pid namespaces (Linux)'),
    pytest.mark.skipif(os.geteuid() != 0, reason='needs root to make a pid namespace'),
    pytest.mark.skipif(shutil.which('unshare') is None, reason='needs util-linux unshare'),
]


def in_a_namespace(
    runtime: Path, desk: Path, probe: Path, then: str, **popen: object
) -> subprocess.Popen[bytes]:
    """A shell as the first process of a new pid namespace: ``checkpoints list`` (which starts
    the server), a wait until the server listens, then the shell command ``then``."""
    command = shlex.join([*PROBE, 'list'])
    listening = shlex.quote(str(runtime / address.FOLDER_NAME)) + '/server-*.sock'
    script = (
        f'{command} >/dev/null && until [ -S "$(echo {listening})" ]; do sleep 0.05; done && {then}'
    )
    env = client_env(runtime, PYTHONPATH=str(ROOT), TC_WARM_PROBE=str(probe))
    return subprocess.Popen(
        ['unshare', '--pid', '--fork', '--mount-proc', 'sh', '-c', script],
        cwd=desk,
        env=env,
        **popen,  # type: ignore[arg-type]
    )


def ended(runtime: Path) -> None:
    """Waits for the namespace's processes to end with its first one; removes the lock files,
    whose pids are the namespace's own (the ``runtime`` fixture would signal them here)."""
    deadline = time.monotonic() + 30
    while server_processes(runtime) and time.monotonic() < deadline:
        time.sleep(0.05)
    for lock in (runtime / address.FOLDER_NAME).glob('*.lock'):
        lock.unlink()


def test_a_namespaces_first_process_is_served(tmp_path: Path, runtime: Path) -> None:
    """A container's entry script that ``exec``s its last command makes that command the
    namespace's pid 1: it is served by the server an earlier command started."""
    desk = workspace_with_history(tmp_path)
    probe = tmp_path / 'probe'
    last = f'exec {shlex.join([*PROBE, "list"])}'
    try:
        inner = in_a_namespace(runtime, desk, probe, last, stdout=subprocess.PIPE)
        out, _ = inner.communicate(timeout=120)
    finally:
        ended(runtime)
    assert inner.returncode == 0
    assert b'second' in out
    assert probe.read_text().split() == ['in-process', 'served']


def test_a_process_of_an_outer_namespace_runs_nothing(tmp_path: Path, runtime: Path) -> None:
    """This test's process, outside the server's namespace, sends a whole request with its
    streams: the server's child closes on it before reading anything (as on another user's
    process), and nothing runs."""
    desk = workspace_with_history(tmp_path)
    repository = desk.parent.parent / '.checkpoints' / 'main.git'
    before = len(Checkpoints(repository, desk).list(None))
    probe = tmp_path / 'probe'
    inner = in_a_namespace(
        runtime,
        desk,
        probe,
        'echo listening; exec cat',
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert inner.stdout is not None and inner.stdout.readline() == b'listening\n'
        [path] = (runtime / address.FOLDER_NAME).glob('server-*.sock')
        command = ['--workspace', str(desk.parent.parent), 'snapshot', '-m', 'outer']
        request = wire.encode(['checkpoints'], command, [None, None, None])
        reading, writing = os.pipe()
        held, token = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        with held, token, socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            rights = (socket.SOL_SOCKET, socket.SCM_RIGHTS)
            held.sendmsg([wire.STREAMS], [(*rights, array.array('i', [reading, writing, writing]))])
            os.close(reading)
            os.close(writing)
            connection.settimeout(30)
            connection.connect(str(path))
            answer = b''
            try:
                connection.sendmsg([request], [(*rights, array.array('i', [token.fileno()]))])
                while chunk := connection.recv(65536):
                    answer += chunk
            except (BrokenPipeError, ConnectionResetError):
                pass  # closed on before it could say anything
    finally:
        inner.communicate(b'', timeout=60)
        ended(runtime)
    assert answer == b'', 'nothing answered: no refusal, no run'
    assert len(Checkpoints(repository, desk).list(None)) == before
