"""This checkout as users run it, for the benchmarks that time whole processes
(``bench_cold.py``, ``bench_harness.py``, ``profile_hooks.py``).

- ``make_venv``: the checkout installed (``pip install '.[mcp,watch]'``, not editable, so nothing
  is imported from the source tree) into a virtualenv of its own;
- ``build_workspace``: a workspace whose desk ``main`` holds N tracked 1 KB files, in folders of
  100 under ``memory/``, and one checkpoint of them;
- ``git_repository``, ``git_env``: a git work tree holding the same files, and git isolated from
  the user's configuration;
- ``timed_process``: one command as a new process, started the way a harness starts a hook (stdin
  from a file, output captured, no terminal): its wall time in seconds.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GIT = shutil.which('git')
EXTRAS = '[mcp,watch]'


def make_venv(folder: Path, source: Path = ROOT) -> Path:
    """The virtualenv's bin folder, with the checkout ``source`` installed into it (once)."""
    bin_dir = folder / 'bin'
    if not (bin_dir / 'checkpoints').exists():
        subprocess.run([sys.executable, '-m', 'venv', str(folder)], check=True)
        subprocess.run(
            [str(bin_dir / 'python'), '-m', 'pip', 'install', '-q', f'{source}{EXTRAS}'],
            check=True,
        )
    return bin_dir


def build_workspace(root: Path, files: int, bin_dir: Path) -> Path:
    """The desk ``main`` of a new workspace at ``root``, with ``files`` tracked files and
    ``Memory.md``, snapshotted once by the installation in ``bin_dir``."""
    desk = root / 'desks' / 'main'
    for index in range(files):
        path = desk / 'memory' / f'part{index // 100:03d}' / f'note{index:05d}.md'
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes((f'note {index}\n'.encode() * 128)[:1024])
    (desk / 'Memory.md').write_text('# Memory\n')
    run = subprocess.run(
        [str(bin_dir / 'checkpoints'), '--workspace', str(root), 'snapshot', '-m', 'first'],
        capture_output=True,
        check=True,
    )
    assert b'Snapshot' in run.stdout, run.stdout
    return desk


def git_repository(desk: Path, folder: Path) -> Path:
    """A git work tree holding the desk's tracked files, committed."""
    assert GIT is not None, 'git is needed'
    shutil.copytree(desk, folder)
    env = git_env(folder)
    for args in (['init', '-q'], ['add', '-A'], ['commit', '-qm', 'first']):
        subprocess.run([GIT, *args], cwd=folder, env=env, check=True)
    return folder


def git_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith('GIT_')}
    env.update(
        HOME=str(home),
        GIT_CONFIG_NOSYSTEM='1',
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_AUTHOR_NAME='bench',
        GIT_AUTHOR_EMAIL='bench@example.com',
        GIT_COMMITTER_NAME='bench',
        GIT_COMMITTER_EMAIL='bench@example.com',
    )
    return env


def timed_process(argv: list[str], cwd: Path, stdin: Path | None, env: dict[str, str]) -> float:
    with open(stdin or os.devnull, 'rb') as source:
        start = time.perf_counter()
        done = subprocess.run(argv, cwd=cwd, stdin=source, capture_output=True, env=env)
        elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f'{argv} failed ({done.returncode}): {done.stderr.decode()[-500:]}')
    return elapsed
