"""How the server's child ends a command, as the interpreter ends a process: an interrupt that
reaches the command, an error it lets out, a final flush that fails. Each runs in a child
forked from this process (as the server's child is forked from the server), its stdout and
stderr files of the test's; the ends a real interpreter gives are the measure."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from trading_checkpoints.warm import child, command, wire

pytestmark = pytest.mark.skipif(sys.platform != 'linux', reason='the warm server is Linux-only')

HOOK_MODULE = 'trading_checkpoints.agent.hooks.process'
BUFFERED = wire.Stream('utf-8', 'strict', False, False, True)


def forked(tmp_path: Path, action: Callable[[], int], closed: str = '') -> tuple[int, bytes]:
    """Runs ``action`` in a forked child whose stdout and stderr are files (or, for the one
    ``closed`` names, a pipe whose reader is gone), set up as a client's buffered streams; the
    child's wait status and what it wrote on stderr."""
    reading, writing = os.pipe()
    os.close(reading)
    pid = os.fork()
    if pid == 0:
        try:
            for number, name in ((1, 'stdout'), (2, 'stderr')):
                flags = os.O_WRONLY | os.O_CREAT
                os.dup2(
                    writing if name == closed else os.open(tmp_path / name, flags, 0o600), number
                )
            sys.stdout, sys.stderr = child._stream(1, BUFFERED), child._stream(2, BUFFERED)
            os._exit(action())
        except BaseException:  # noqa: BLE001 - anything else the child let out: status 99
            os._exit(99)
    os.close(writing)
    _, status = os.waitpid(pid, 0)
    err = tmp_path / 'stderr'
    return status, err.read_bytes() if err.exists() else b''


def when_imported(name: str, then: Callable[[], None]) -> None:
    """Calls ``then`` as module ``name`` is imported (from now on, in this process): a point
    inside the command, before it reaches anything that handles errors."""
    sys.modules.pop(name, None)

    def hook(event: str, args: tuple[object, ...]) -> None:
        if event == 'import' and args[0] == name:
            then()

    sys.addaudithook(hook)


def test_an_interrupt_the_command_lets_out_ends_the_child_by_sigint(tmp_path: Path) -> None:
    """SIGINT that lands where the command does not handle it: the traceback printed, then
    the child ends by SIGINT, as an interpreter ends on an uncaught ``KeyboardInterrupt``."""

    def interrupted() -> int:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        when_imported(HOOK_MODULE, lambda: os.kill(os.getpid(), signal.SIGINT))
        return 100 + command.run_to_end(['hook', '--harness', 'claude'])

    status, err = forked(tmp_path, interrupted)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGINT, status
    assert err.startswith(b'Traceback') and err.endswith(b'KeyboardInterrupt\n'), err


def test_an_error_the_command_lets_out_is_printed_and_ends_it_with_status_1(
    tmp_path: Path,
) -> None:
    def failing() -> None:
        raise RuntimeError('a bug in the command')

    def run() -> int:
        when_imported(HOOK_MODULE, failing)
        return command.run_to_end(['hook', '--harness', 'claude'])

    status, err = forked(tmp_path, run)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 1, status
    assert err.startswith(b'Traceback') and err.endswith(b'RuntimeError: a bug in the command\n')


@pytest.mark.parametrize('stream', ['stdout', 'stderr'])
def test_a_final_flush_that_fails_ends_with_status_120_as_python_does(
    tmp_path: Path, stream: str
) -> None:
    """Output left in a buffered stream whose pipe's reader is gone: the flush at the end
    fails, and the child ends as an interpreter started so ends (status 120; stdout's failure
    reported in the same words)."""
    reading, writing = os.pipe()
    os.close(reading)
    python = subprocess.run(
        [sys.executable, '-c', f'import sys; sys.{stream}.write("x")'],
        stdout=writing if stream == 'stdout' else subprocess.DEVNULL,
        stderr=writing if stream == 'stderr' else subprocess.PIPE,
        env={k: v for k, v in os.environ.items() if k != 'PYTHONUNBUFFERED'},  # buffered
    )
    os.close(writing)

    def run() -> int:
        getattr(sys, stream).write('x')
        return command.finish(0)

    status, err = forked(tmp_path, run, closed=stream)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == python.returncode == 120
    if stream == 'stdout':
        assert err == python.stderr
