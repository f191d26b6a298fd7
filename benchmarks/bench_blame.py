"""``checkpoints blame`` on a long history, against ``git blame`` of the same file in the same run.

    python benchmarks/bench_blame.py [--checkpoints 10000] [--lines 200] [--runs 5] [--keep DIR]

Builds a desk whose Memory.md changes in every checkpoint (agent turns of five writes each:
a line appended while it has fewer than ``--lines``, else one line rewritten or dropped), then
times, as medians of ``--runs`` alternating runs:

- ``checkpoints blame Memory.md --at NEWEST --json`` (a new process, as a person runs it);
- ``git blame --first-parent NEWEST -- Memory.md`` on the same repository (a new process);
- ``Checkpoints.blame`` in this process (its caches warm after the first run).

and prints the ratio of the first two. ``--keep DIR`` builds the workspace in DIR, or times the
one built there before (the build takes minutes). Not a test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from trading_checkpoints import Checkpoints  # noqa: E402


def build(desk: Path, cps: Checkpoints, count: int, most: int) -> str:
    """The history; returns the newest checkpoint's id."""
    rng = random.Random(1)
    lines = ['# Memory']
    newest = ''
    for step in range(count):
        if len(lines) < most:
            lines.append(f'- note {step}: {rng.random():.6f}')
        elif rng.random() < 0.8:
            lines[rng.randrange(1, len(lines))] = f'- rewritten at {step}'
        else:
            del lines[rng.randrange(1, len(lines))]
        (desk / 'Memory.md').write_text('\n'.join(lines) + '\n')
        taken = cps.snapshot(
            f'step {step}', tool='write_file', paths=['Memory.md'], turn=f't-{step // 5}'
        )
        assert taken is not None
        newest = taken
        if step % 1000 == 999:
            print(f'  {step + 1} checkpoints', file=sys.stderr)
    return newest


def median_ms(action: Callable[[], object], runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument('--checkpoints', type=int, default=10_000)
    parser.add_argument('--lines', type=int, default=200)
    parser.add_argument('--runs', type=int, default=5)
    parser.add_argument('--keep', type=Path, metavar='DIR')
    args = parser.parse_args()
    git = shutil.which('git')
    if git is None:
        sys.exit('git is not installed: it is the baseline')
    with tempfile.TemporaryDirectory() as scratch:
        folder = str(args.keep or scratch)
        desk = Path(folder) / 'desks' / 'main'
        repository = Path(folder) / '.checkpoints' / 'main.git'
        cps = Checkpoints(repository, desk)
        if repository.is_dir():
            newest = cps.list(1)[0].checkpoint_id
            print(f'the workspace in {folder}: {len(cps.list(None))} checkpoints')
        else:
            desk.mkdir(parents=True)
            started = time.perf_counter()
            newest = build(desk, cps, args.checkpoints, args.lines)
            print(f'{args.checkpoints} checkpoints built in {time.perf_counter() - started:.0f} s')
        env = {**os.environ, 'PYTHONPATH': str(ROOT), 'CHECKPOINTS_SERVER': 'off'}
        ours_command = [sys.executable, '-m', 'trading_checkpoints', '--workspace', folder]
        ours_command += ['blame', 'Memory.md', '--at', newest, '--json']
        git_command = [git, f'--git-dir={repository}', 'blame', '--first-parent', newest]
        git_command += ['--', 'Memory.md']

        def ours() -> None:
            subprocess.run(ours_command, check=True, capture_output=True, env=env)

        def theirs() -> None:
            subprocess.run(git_command, check=True, capture_output=True)

        ours_samples: list[float] = []
        git_samples: list[float] = []
        for _ in range(args.runs):  # alternating, so both meet the same load
            ours_samples += median_ms(ours, 1)
            git_samples += median_ms(theirs, 1)
        library = median_ms(lambda: cps.blame('Memory.md', newest), args.runs)
        lines = len(cps.blame('Memory.md', newest).lines)
        ours_ms, git_ms = statistics.median(ours_samples), statistics.median(git_samples)
        print(f'Memory.md: {lines} lines at the newest checkpoint')
        print(f'checkpoints blame (process)   {ours_ms:9.1f} ms')
        print(f'git blame --first-parent      {git_ms:9.1f} ms')
        print(f'Checkpoints.blame (in-process) {statistics.median(library):8.1f} ms')
        print(f'ratio checkpoints / git        {ours_ms / git_ms:8.2f}')


if __name__ == '__main__':
    main()
