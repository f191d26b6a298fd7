"""Would threads make the walk of a 100,000-file desk faster? A stat walk in one thread against
the same walk shared out over 2 and 4 threads (``lstat`` releases the GIL), and ``git status
--porcelain`` on the same files, in one run.

Run by hand from the project root (never as a test):

    python benchmarks/bench_walk_threads.py                 # 100,000 files, 5 repetitions
    python benchmarks/bench_walk_threads.py --files 20000 --reps 7

It builds a folder of 1 KB files in folders of 100 (as ``bench_scale.py`` does), commits it to a
git repository, and times each contender once per repetition, in turn; medians in ms, ratios
against ``git status --porcelain``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

GIT = shutil.which('git')


def build(root: Path, files: int) -> list[str]:
    for index in range(files):
        folder = root / 'memory' / f'part{index // 100:04d}'
        if index % 100 == 0:
            folder.mkdir(parents=True)
        (folder / f'note{index:06d}.md').write_bytes(b'x' * 1024)
    return sorted(str(folder) for folder in (root / 'memory').iterdir())


def stat_folder(folder: str) -> int:
    """One folder's entries, each ``lstat``-ed through the folder's descriptor (as the walk
    does)."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        return len([os.stat(name, dir_fd=fd, follow_symlinks=False) for name in os.listdir(fd)])
    finally:
        os.close(fd)


def walk(folders: list[str], threads: int) -> int:
    if threads == 1:
        return sum(stat_folder(folder) for folder in folders)
    with ThreadPoolExecutor(threads) as pool:
        return sum(pool.map(stat_folder, folders, chunksize=16))


def git(root: Path, *args: str) -> None:
    env = {**os.environ, 'GIT_CONFIG_NOSYSTEM': '1', 'GIT_CONFIG_GLOBAL': os.devnull}
    subprocess.run([GIT or 'git', *args], cwd=root, env=env, check=True, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--files', type=int, default=100_000)
    parser.add_argument('--reps', type=int, default=5)
    args = parser.parse_args()
    if GIT is None:
        raise SystemExit('needs the git CLI')
    with tempfile.TemporaryDirectory(prefix='bench-walk-') as scratch:
        root = Path(scratch)
        folders = build(root, args.files)
        git(root, 'init', '-q')
        git(root, 'add', '-A')
        git(root, '-c', 'user.name=b', '-c', 'user.email=b@b', 'commit', '-qm', 'all')
        contenders: dict[str, Callable[[], object]] = {
            'git status --porcelain': lambda: git(root, 'status', '--porcelain'),
            'stat walk, 1 thread': lambda: walk(folders, 1),
            'stat walk, 2 threads': lambda: walk(folders, 2),
            'stat walk, 4 threads': lambda: walk(folders, 4),
        }
        times: dict[str, list[float]] = {name: [] for name in contenders}
        for _ in range(args.reps):
            for name, run in contenders.items():
                start = time.perf_counter()
                run()
                times[name].append(time.perf_counter() - start)
    medians = {name: statistics.median(values) * 1000 for name, values in times.items()}
    base = medians['git status --porcelain']
    print(f'{args.files} files, {args.reps} repetitions, medians; load {os.getloadavg()[0]:.2f}')
    print(f'{"contender":28} {"ms":>8} {"x git status":>12}')
    for name, value in medians.items():
        print(f'{name:28} {value:8.1f} {value / base:12.2f}')


if __name__ == '__main__':
    main()
