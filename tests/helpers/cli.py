"""Runs the real ``checkpoints`` command in a subprocess, as a user's shell would.

Every test that runs the command line as a separate process goes through here: ``checkpoints``
runs it to completion and captures its output, ``start`` leaves it running (to be killed, or to
talk to a pseudo-terminal), ``shell`` runs a pasted command line with ``checkpoints`` on the
PATH. The environment is ``helpers.processes.environment``'s.
"""

from __future__ import annotations

import atexit
import functools
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from helpers.processes import environment

Env = Mapping[str, str | None]


def command(*args: str) -> list[str]:
    """The argument list of ``checkpoints ARGS...`` run by this interpreter."""
    return [sys.executable, '-m', 'trading_checkpoints', *args]


def _in(workspace: Path | None) -> list[str]:
    return [] if workspace is None else ['--workspace', str(workspace)]


def checkpoints(
    *args: str,
    workspace: Path | None = None,
    cwd: Path | None = None,
    env: Env | None = None,
    stdin: str | bytes | None = None,
    text: bool = True,
    timeout: float = 120,
    stdout: Any = subprocess.PIPE,
    stderr: Any = subprocess.PIPE,
) -> subprocess.CompletedProcess:
    """``checkpoints [--workspace WORKSPACE] ARGS...`` run from ``cwd`` (stdin is not a terminal).

    ``stdin`` is its input (text, or bytes with ``text=False``); without it, stdin is empty.
    Its output is captured unless ``stdout``/``stderr`` name somewhere else (a terminal).
    """
    return subprocess.run(
        command(*_in(workspace), *args),
        cwd=cwd,
        env=environment(env),
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        stdout=stdout,
        stderr=stderr,
        text=text,
        timeout=timeout,
        check=False,
    )


def start(
    *args: str,
    workspace: Path | None = None,
    cwd: Path | None = None,
    env: Env | None = None,
    **streams: Any,
) -> subprocess.Popen:
    """``checkpoints [--workspace WORKSPACE] ARGS...`` started and left running; ``streams``
    are Popen's (stdin, stdout, stderr, text). Its stdin is empty unless given."""
    streams.setdefault('stdin', subprocess.DEVNULL)
    return subprocess.Popen(
        command(*_in(workspace), *args), cwd=cwd, env=environment(env), **streams
    )


@functools.cache
def _bin_dir() -> Path:
    """A folder holding a ``checkpoints`` script that runs this checkout's command."""
    folder = Path(tempfile.mkdtemp(prefix='checkpoints-bin-'))
    atexit.register(shutil.rmtree, folder, True)
    shim = folder / 'checkpoints'
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m trading_checkpoints "$@"\n')
    shim.chmod(0o755)
    return folder


def shell(command: str, *, cwd: Path, env: Env | None = None) -> subprocess.CompletedProcess[str]:
    """A command line pasted into a shell (/bin/sh), with ``checkpoints`` on the PATH."""
    bin_dir = _bin_dir()
    full = environment(env)
    full['PATH'] = f'{bin_dir}{os.pathsep}{full.get("PATH", "")}'
    return subprocess.run(
        ['/bin/sh', '-c', command],
        cwd=cwd,
        env=full,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
