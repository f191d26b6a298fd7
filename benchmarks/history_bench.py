"""Timings of the history verbs on a desk of N files with a history of M checkpoints.

    python benchmarks/history_bench.py [--files 2000] [--checkpoints 200]

Prints the median of a few runs per verb, in milliseconds. Not a test: numbers depend on the
machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from trading_checkpoints import Checkpoints  # noqa: E402


def timed(label: str, action: Callable[[], object], runs: int = 5) -> None:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        samples.append((time.perf_counter() - start) * 1000)
    print(f'{label:<40} {statistics.median(samples):8.1f} ms')


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument('--files', type=int, default=2000)
    parser.add_argument('--checkpoints', type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        desk = Path(folder) / 'desk'
        notes = desk / 'notes'
        for index in range(args.files):
            path = notes / f'd{index % 40}' / f'f{index}.md'
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f'file {index}\n' * 20)
        cps = Checkpoints(Path(folder) / 'repo.git', desk)
        first = cps.snapshot('initial')
        assert first
        for step in range(args.checkpoints):
            target = notes / f'd{step % 40}' / f'f{step}.md'
            cps.snapshot(f'before write {step}', paths=[str(target.relative_to(desk))])
            target.write_text(f'rewritten at step {step}\n')
        cps.snapshot('final')
        print(f'{args.files} files, {args.checkpoints + 2} checkpoints')
        timed('status', cps.status)
        timed('diff first -> desk (with patches)', lambda: cps.diff(first))
        timed('diff first -> desk (no patches)', lambda: cps.diff(first, patches=False))
        timed('log (20 newest)', lambda: cps.log())
        timed('log notes/d0 (whole history)', lambda: cps.log('notes/d0', limit=10**6))
        timed('show', lambda: cps.show(first, 'notes/d0/f0.md'))
        timed('restore dry run to first', lambda: cps.restore(first, dry_run=True))

        def undo_redo() -> None:
            cps.undo()
            cps.redo()

        timed('undo + redo', undo_redo)
        timed('partial restore (one folder)', lambda: cps.restore(first, paths=['notes/d1']))


if __name__ == '__main__':
    main()
