"""What durability costs: snapshot and restore timings with fsync on (the default) and off.

    python benchmarks/bench_durability.py [--files 1000] [--repeat 15]

For each setting it builds a desk of N small files, then times (median of ``--repeat``):
  - a snapshot after editing 1 file (the common case: an agent's write tool),
  - a snapshot after editing 100 files (objects go into one pack),
  - a restore that rewrites 10 files, and one that rewrites 100 files.
The figures depend on the disk: on tmpfs fsync is free, on a laptop SSD it costs ~1 ms, on a
network or VM disk a few ms per flush.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from trading_checkpoints import Checkpoints  # noqa: E402


def _desk(root: Path, files: int) -> Path:
    desk = root / 'desk'
    for i in range(files):
        path = desk / 'notes' / f'd{i % 20}' / f'f{i}.md'
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'file {i}\n' * 20)
    return desk


def _edit(desk: Path, count: int, tag: str) -> None:
    for i in range(count):
        (desk / 'notes' / f'd{i % 20}' / f'f{i}.md').write_text(f'{tag} {i}\n' * 20)


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def measure(durable: bool, files: int, repeat: int) -> dict[str, float]:
    root = Path(tempfile.mkdtemp(prefix='bench-durability-', dir=os.environ.get('BENCH_DIR')))
    try:
        desk = _desk(root, files)
        cps = Checkpoints(root / 'repo.git', desk, durable=durable)
        cps.snapshot('start')
        out: dict[str, list[float]] = {}
        for edits in (1, 100):
            samples = []
            for r in range(repeat):
                _edit(desk, edits, f'e{edits}r{r}')
                started = time.perf_counter()
                assert cps.snapshot('edit') is not None
                samples.append(time.perf_counter() - started)
            out[f'snapshot after {edits} edit(s)'] = samples
        for changed in (10, 100):
            _edit(desk, changed, 'base')
            base = cps.snapshot('base')
            _edit(desk, changed, 'other')
            other = cps.snapshot('other')
            samples = []
            for r in range(repeat):
                started = time.perf_counter()
                cps.restore(base if r % 2 == 0 else other)
                samples.append(time.perf_counter() - started)
            out[f'restore of {changed} files'] = samples
        return {name: _median_ms(values) for name, values in out.items()}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--files', type=int, default=1000)
    parser.add_argument('--repeat', type=int, default=15)
    args = parser.parse_args()
    on = measure(True, args.files, args.repeat)
    off = measure(False, args.files, args.repeat)
    print(
        f'desk of {args.files} files, median of {args.repeat} runs, '
        f'folder {os.environ.get("BENCH_DIR") or tempfile.gettempdir()}'
    )
    print(f'{"operation":32} {"fsync on":>10} {"fsync off":>10} {"cost":>10}')
    for name in on:
        print(f'{name:32} {on[name]:8.1f}ms {off[name]:8.1f}ms {on[name] - off[name]:+8.1f}ms')


if __name__ == '__main__':
    main()
