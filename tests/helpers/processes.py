"""Child processes started by the tests: their environment, and Python code run fresh.

A child imports the package from this checkout (``PYTHONPATH``) and never colours its output.
The developer's own ``CHECKPOINTS_*`` settings never reach it: the autouse fixture of
``tests/conftest.py`` removes them from the test's environment, so what a test sets itself
(its own credential file, remote credentials given through the environment) goes through.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping

from helpers import ROOT, TESTS


def environment(
    extra: Mapping[str, str | None] | None = None, *, with_helpers: bool = False
) -> dict[str, str]:
    """The test's environment for a child: this checkout importable, ``NO_COLOR`` set.

    ``extra`` adds variables; a value of None removes one. ``with_helpers`` also makes
    ``helpers`` importable, for code that arms an audit hook from ``helpers.faults``.
    """
    env = dict(os.environ)
    paths = [str(ROOT), str(TESTS)] if with_helpers else [str(ROOT)]
    env.update({'PYTHONPATH': os.pathsep.join(paths), 'NO_COLOR': '1'})
    for name, value in (extra or {}).items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def python(
    code: str,
    *argv: str,
    env: Mapping[str, str | None] | None = None,
    with_helpers: bool = False,
    stdin: str | bytes | None = None,
    text: bool = True,
    check: bool = False,
    timeout: float = 120,
    cwd: os.PathLike[str] | str | None = None,
) -> subprocess.CompletedProcess:
    """``python -c CODE ARGV...`` in a fresh interpreter, its output captured.

    ``stdin`` is its input (text, or bytes with ``text=False``); without it, stdin is empty.
    """
    return subprocess.run(
        [sys.executable, '-c', code, *argv],
        cwd=cwd,
        env=environment(env, with_helpers=with_helpers),
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=text,
        timeout=timeout,
        check=check,
    )


def start_deleting(folder: os.PathLike[str] | str, names: list[str]) -> subprocess.Popen:
    """A second process that deletes ``names`` in ``folder``, one by one, while the test
    goes on (it lists the folder meanwhile); poll it to know when it is done."""
    code = (
        'import os, sys\n'
        'for name in sys.argv[2:]:\n'
        '    os.unlink(os.path.join(sys.argv[1], name))\n'
    )
    return subprocess.Popen([sys.executable, '-c', code, os.fspath(folder), *names])


# Holds a repository's lock as a restore does (the verb written beside the pid in the lock
# file) for the given seconds; says ``held`` once it holds it.
_HOLD_LOCK = (
    'import sys, time\n'
    'from pathlib import Path\n'
    'from trading_checkpoints.core.lock import exclusive\n'
    'from trading_checkpoints.core.repofiles import RepoFile\n'
    'with exclusive(RepoFile(Path(sys.argv[1]), "checkpoints/lock"), verb="restore"):\n'
    '    print("held", flush=True)\n'
    '    time.sleep(float(sys.argv[2]))\n'
)


def lock_holder(repository: os.PathLike[str], seconds: float) -> subprocess.Popen[str]:
    """Another process holding ``repository``'s lock as a restore does, from when this returns
    for ``seconds``; the caller kills and waits for it."""
    holder = subprocess.Popen(
        [sys.executable, '-c', _HOLD_LOCK, os.fspath(repository), str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
        env=environment(),
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == 'held'
    return holder
