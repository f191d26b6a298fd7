"""How to put 100 small files' new bytes into a desk: the file-system calls alone.

Each way rewrites the same 100 existing files (1,000 bytes each, in 5 folders, opened relative
to their folder's descriptor as the restore does), without a flush and with the two ways of
flushing a restore can use, each issued from 16 threads: ``fsync`` per file, or
``fdatasync`` (the data and size only, not the times). ``os.sync()`` runs before every sample
so each starts with nothing else waiting to be written.

    python benchmarks/bench_writes.py [--reps 7] [--dir /path/on/the/desk/file/system]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

FILES, FOLDERS, SIZE = 100, 5, 1000
WAYS = {
    'in place (write over, cut the tail)': 'in-place',
    'O_TRUNC, then write': 'truncate',
    'temporary file + rename': 'rename',
    'unlink + create': 'unlink',
}


def setup(base: str) -> None:
    for i in range(FILES):
        folder = os.path.join(base, f'd{i % FOLDERS}')
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, f'f{i}.md'), 'wb') as handle:
            handle.write(os.urandom(SIZE))


def one_run(base: str, way: str, flush: str, pool: ThreadPoolExecutor) -> float:
    folders = [os.open(os.path.join(base, f'd{j}'), os.O_RDONLY) for j in range(FOLDERS)]
    data = os.urandom(SIZE)
    opened: list[tuple[int, int, str]] = []
    started = time.perf_counter()
    for i in range(FILES):
        folder, name = folders[i % FOLDERS], f'f{i}.md'
        if way == 'in-place':
            fd = os.open(name, os.O_WRONLY | os.O_NOFOLLOW, dir_fd=folder)
            size = os.fstat(fd).st_size
            os.pwrite(fd, data, 0)
            if size > len(data):
                os.ftruncate(fd, len(data))
        elif way == 'truncate':
            fd = os.open(name, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW, dir_fd=folder)
            os.write(fd, data)
        elif way == 'rename':
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
            fd = os.open(f'.{name}.tmp', flags, 0o666, dir_fd=folder)
            os.write(fd, data)
        else:
            os.unlink(name, dir_fd=folder)
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
            fd = os.open(name, flags, 0o666, dir_fd=folder)
            os.write(fd, data)
        opened.append((fd, folder, name))
    if flush in ('fsync', 'fdatasync'):
        call = os.fsync if flush == 'fsync' else os.fdatasync
        list(pool.map(call, [fd for fd, _, _ in opened]))
    for fd, folder, name in opened:
        os.close(fd)
        if way == 'rename':
            os.replace(f'.{name}.tmp', name, src_dir_fd=folder, dst_dir_fd=folder)
    if flush != 'none' and way in ('rename', 'unlink'):
        list(pool.map(os.fsync, folders))  # the new names
    elapsed = time.perf_counter() - started
    for folder in folders:
        os.close(folder)
    return elapsed * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--reps', type=int, default=7)
    parser.add_argument('--dir', default=None, help='where to make the files (default: tmp)')
    args = parser.parse_args()
    flushes = ['none', 'fsync'] + (['fdatasync'] if hasattr(os, 'fdatasync') else [])
    samples: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory(dir=args.dir) as base, ThreadPoolExecutor(16) as pool:
        setup(base)
        for _ in range(args.reps):  # interleaved, so load from elsewhere falls on all alike
            for way in WAYS.values():
                for flush in flushes:
                    os.sync()
                    samples.setdefault((way, flush), []).append(one_run(base, way, flush, pool))
    print(f'{FILES} files of {SIZE} bytes, {args.reps} repetitions, medians in ms')
    print('| way | ' + ' | '.join(f'flush: {flush}' for flush in flushes) + ' |')
    print('|---|' + '---:|' * len(flushes))
    for label, way in WAYS.items():
        cells = [f'{statistics.median(samples[(way, flush)]):.2f}' for flush in flushes]
        print(f'| {label} | ' + ' | '.join(cells) + ' |')


if __name__ == '__main__':
    main()
