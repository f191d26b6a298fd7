"""The hook command run as a harness runs it: a recorded event on stdin, a fresh process.

``event`` reads a recorded event of ``hook_events/`` with the test's folders filled in (and
top-level fields changed); ``hook`` runs ``python -m trading_checkpoints.agent.hooks`` with it
on stdin; ``ok`` checks the answer of an event that went well.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from helpers import HOOK_EVENTS, ROOT
from helpers.processes import environment


@dataclass
class Done:
    code: int
    stdout: str
    stderr: str


def event(name: str, workspace: Path, outside: Path | None = None, **changes: object) -> bytes:
    """A recorded event with the test's folders filled in (and top-level fields changed)."""
    text = (HOOK_EVENTS / name).read_text()
    text = text.replace('${WORKSPACE}', str(workspace))
    text = text.replace('${OUTSIDE}', str(outside or workspace.parent / 'elsewhere'))
    if not changes:
        return text.encode()
    data = json.loads(text)
    data.update(changes)
    return json.dumps(data).encode()


def hook(payload: bytes, *args: str, cwd: Path | None = None, **env: str) -> Done:
    """Runs ``python -m trading_checkpoints.agent.hooks`` as a harness would: event on stdin."""
    done = subprocess.run(
        [sys.executable, '-m', 'trading_checkpoints.agent.hooks', *args],
        input=payload,
        capture_output=True,
        cwd=cwd or ROOT,
        env=environment(env),
        timeout=60,
    )
    return Done(done.returncode, done.stdout.decode(), done.stderr.decode())


def ok(done: Done, stdout: str = '') -> None:
    assert (done.code, done.stdout, done.stderr) == (0, stdout, ''), done
