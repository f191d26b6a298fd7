"""Runs the real ``checkpoints`` command in a subprocess, as a user's shell would."""

from __future__ import annotations

import atexit
import functools
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """A clean environment: no CHECKPOINTS_* variables from the caller, no colour."""
    env = {k: v for k, v in os.environ.items() if not k.startswith('CHECKPOINTS_')}
    env.update({'PYTHONPATH': str(ROOT), 'NO_COLOR': '1'})
    env.update(extra or {})
    return env


def checkpoints(
    *args: str, cwd: Path, env: dict[str, str] | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``checkpoints ARGS...`` run from ``cwd`` (stdin is not a terminal)."""
    return subprocess.run(
        [sys.executable, '-m', 'trading_checkpoints', *args],
        cwd=cwd,
        env=environment(env),
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
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


def shell(
    command: str, *, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
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
