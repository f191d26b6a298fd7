"""Storage benchmark: how big a desk's shadow repository gets, next to ``git gc --aggressive``.

Plays an agent session of N snapshots (default 1,000) on a desk of F notes (default 1,000):
every turn appends a line to Memory.md; about half the turns also rewrite a line of one note,
one in ten adds a note, one in twenty edits a file under memory/. Each turn is one
``Checkpoints.snapshot``, so the automatic packing runs exactly as it does for an agent.

Along the run, every ``--sample-every`` snapshots (default 25), it copies the shadow repository
as the snapshots left it, runs ``git gc --aggressive --prune=now`` on the copy, and records both
sizes: the table of these samples (and their min / median / max ratio) is the storage "as left"
figure, since a single measurement at the end may fall just after a packing or just before one.
Each snapshot is timed on its own (the sampling is not timed); the median is reported.

Then it measures, side by side:

- the shadow repository as the snapshots left it (auto-packed),
- the same after ``Checkpoints.prune()`` with no limits (which only consolidates),
- a copy of the original history after ``git gc --aggressive --prune=now`` (needs git).

Sizes are of ``objects/`` (packs, indexes and loose objects), in allocated bytes (what ``du``
reports) and in file bytes. The ratio target is <= 1.3x git's at every sampled point.

    python benchmarks/bench_storage.py                    # 1,000 snapshots, 1,000 notes
    python benchmarks/bench_storage.py -n 300 -f 200      # quicker
    python benchmarks/bench_storage.py --sample-every 0   # no sampling along the run
    python benchmarks/bench_storage.py --json

Finally it prunes to ``--prune-keep`` checkpoints (default 100) and reports the prune figures.
"""

from __future__ import annotations

import argparse
import json
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from trading_checkpoints import Checkpoints  # noqa: E402
from trading_checkpoints.store import storage  # noqa: E402
from trading_checkpoints.store.pack import folder as packfolder  # noqa: E402


def file_bytes(repository: Path) -> int:
    total = 0
    for folder, _, names in os.walk(repository / 'objects'):
        total += sum(os.lstat(os.path.join(folder, name)).st_size for name in names)
    return total


def measure(repository: Path) -> dict[str, int]:
    return {
        'du_bytes': storage.objects_size(repository),
        'file_bytes': file_bytes(repository),
        'packs': storage.pack_count(repository),
        'loose': storage.loose_count(repository),
    }


def make_desk(desk: Path, files: int, rng: random.Random) -> None:
    (desk / 'notes').mkdir(parents=True)
    (desk / 'memory').mkdir()
    for index in range(files):
        lines = [f'# Note {index}\n', '\n']
        lines += [
            f'- observation {j}: price {rng.uniform(10, 500):.2f} on venue {rng.randint(1, 9)}\n'
            for j in range(rng.randint(8, 30))
        ]
        (desk / 'notes' / f'note-{index:04d}.md').write_text(''.join(lines))
    for name in ('positions.md', 'strategy.md', 'risk.md'):
        (desk / 'memory' / name).write_text(f'# {name}\n' + 'initial line\n' * 20)
    (desk / 'Memory.md').write_text('# Memory\n\n')


GIT = shutil.which('git')
GIT_ENV = {**os.environ, 'GIT_CONFIG_NOSYSTEM': '1', 'GIT_CONFIG_GLOBAL': os.devnull}


def git_gc(repository: Path) -> float:
    """``git gc --aggressive --prune=now`` on ``repository``; returns the seconds it took."""
    assert GIT is not None
    started = time.perf_counter()
    subprocess.run(
        [GIT, '--git-dir', str(repository), 'gc', '--aggressive', '--prune=now', '-q'],
        check=True,
        env=GIT_ENV,
    )
    return time.perf_counter() - started


def settle() -> None:
    """Waits for the background deletion of replaced packs (done within milliseconds)."""
    wait = getattr(packfolder, 'wait_for_removals', None)
    if wait is not None:
        wait()


def sample(repository: Path, scratch: Path, snapshots: int) -> dict[str, float]:
    """The repository as the snapshots left it, next to git gc --aggressive of a copy of it."""
    settle()
    ours = measure(repository)
    row: dict[str, float] = {
        'snapshots': snapshots,
        'du_bytes': ours['du_bytes'],
        'packs': ours['packs'],
        'loose': ours['loose'],
    }
    if GIT:
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.copytree(repository, scratch)
        git_gc(scratch)
        row['git_du_bytes'] = storage.objects_size(scratch)
        row['ratio'] = round(ours['du_bytes'] / row['git_du_bytes'], 3)
        shutil.rmtree(scratch, ignore_errors=True)
    return row


def play(
    cps: Checkpoints,
    desk: Path,
    snapshots: int,
    rng: random.Random,
    times: list[float] | None = None,
    after: Callable[[int], None] | None = None,
) -> float:
    """Plays ``snapshots`` turns; ``times`` receives each snapshot's seconds, ``after(n)`` runs
    (untimed) after the n-th snapshot."""
    notes = sorted((desk / 'notes').iterdir())
    total = 0.0
    for turn in range(snapshots):
        with open(desk / 'Memory.md', 'a') as handle:
            handle.write(
                f'- turn {turn}: checked {rng.choice(["AAPL", "MSFT", "ES", "NQ"])} '
                f'at {rng.uniform(10, 500):.2f}; {rng.choice(["hold", "trim", "add"])}\n'
            )
        roll = rng.random()
        if roll < 0.5:
            note = rng.choice(notes)
            lines = note.read_text().splitlines(keepends=True)
            lines[rng.randrange(2, len(lines))] = f'- revised at turn {turn}: {rng.random():.4f}\n'
            note.write_text(''.join(lines))
        elif roll < 0.6:
            note = desk / 'notes' / f'new-{turn:05d}.md'
            note.write_text(f'# New note {turn}\n' + f'- fact {rng.random():.6f}\n' * 12)
            notes.append(note)
        elif roll < 0.65:
            memory = desk / 'memory' / rng.choice(['positions.md', 'strategy.md', 'risk.md'])
            with open(memory, 'a') as handle:
                handle.write(f'turn {turn}: {rng.random():.6f}\n')
        started = time.perf_counter()
        cps.snapshot(f'turn {turn}')
        seconds = time.perf_counter() - started
        total += seconds
        if times is not None:
            times.append(seconds)
        if after is not None:
            after(turn + 1)
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('-n', '--snapshots', type=int, default=1000)
    parser.add_argument('-f', '--files', type=int, default=1000)
    parser.add_argument('--seed', type=int, default=7)
    parser.add_argument(
        '--sample-every',
        type=int,
        default=25,
        help='compare with git gc --aggressive every this many snapshots (0: only at the end)',
    )
    parser.add_argument('--json', action='store_true')
    parser.add_argument('--keep', type=Path, help='keep the workspace in this folder')
    parser.add_argument(
        '--prune-keep',
        type=int,
        default=100,
        help='finally prune to this many checkpoints and report it (0: skip)',
    )
    args = parser.parse_args()

    rng = random.Random(args.seed)
    root = Path(tempfile.mkdtemp(prefix='bench-storage-')) if args.keep is None else args.keep
    root.mkdir(parents=True, exist_ok=True)
    desk, repository = root / 'desks' / 'main', root / '.checkpoints' / 'main.git'
    make_desk(desk, args.files, rng)
    cps = Checkpoints(repository, desk)
    times: list[float] = []
    samples: list[dict[str, float]] = []

    def after(done: int) -> None:
        if args.sample_every and (done % args.sample_every == 0 or done == args.snapshots):
            samples.append(sample(repository, root / 'sample.git', done))

    seconds = play(cps, desk, args.snapshots, rng, times, after)
    settle()
    result: dict[str, object] = {
        'snapshots': args.snapshots,
        'files': args.files,
        'memory_md_bytes': (desk / 'Memory.md').stat().st_size,
        'tracked_bytes': sum(p.stat().st_size for p in desk.rglob('*') if p.is_file()),
        'snapshot_seconds': round(seconds, 2),
        'snapshot_ms': {
            'median': round(statistics.median(times) * 1000, 2),
            'mean': round(statistics.fmean(times) * 1000, 2),
            'p90': round(sorted(times)[int(len(times) * 0.9)] * 1000, 2),
            'max': round(max(times) * 1000, 2),
        },
        'auto': measure(repository),
    }
    ratios = [row['ratio'] for row in samples if 'ratio' in row]
    if samples:
        result['samples'] = samples
    if ratios:
        result['as_left_ratio'] = {
            'min': min(ratios),
            'median': round(statistics.median(ratios), 3),
            'max': max(ratios),
            'points': len(ratios),
        }
    reference = root / 'git-gc.git'
    shutil.copytree(repository, reference)
    started = time.perf_counter()
    cps.prune()
    result['consolidate_seconds'] = round(time.perf_counter() - started, 2)
    result['consolidated'] = measure(repository)
    git = GIT
    if git:
        result['git_gc_seconds'] = round(git_gc(reference), 2)
        result['git_gc_aggressive'] = measure(reference)
        for name in ('auto', 'consolidated'):
            for unit in ('du_bytes', 'file_bytes'):
                ratio = result[name][unit] / result['git_gc_aggressive'][unit]  # type: ignore[index]
                result[f'ratio_{name}_{unit}'] = round(ratio, 3)
    if args.prune_keep:
        started = time.perf_counter()
        pruned = cps.prune(keep=args.prune_keep)
        result['prune'] = {
            'keep': args.prune_keep,
            'seconds': round(time.perf_counter() - started, 2),
            'checkpoints_before': pruned.checkpoints_before,
            'checkpoints_after': pruned.checkpoints_after,
            'bytes_before': pruned.bytes_before,
            'bytes_after': pruned.bytes_after,
        }
        if git:
            subprocess.run(
                [git, '--git-dir', str(repository), 'fsck', '--strict'],
                check=True,
                capture_output=True,
            )
            result['prune']['git_fsck'] = 'clean'  # type: ignore[index]
    if args.keep is None:
        shutil.rmtree(root, ignore_errors=True)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(
        f'{args.snapshots} snapshots of a {args.files}-note desk in {seconds:.1f} s '
        f'(Memory.md grew to {result["memory_md_bytes"]:,} bytes; '
        f'tracked files {result["tracked_bytes"]:,} bytes)'
    )
    ms = result['snapshot_ms']
    print(
        f'per snapshot: median {ms["median"]} ms, mean {ms["mean"]} ms, '  # type: ignore[index]
        f'p90 {ms["p90"]} ms, max {ms["max"]} ms'  # type: ignore[index]
    )
    if samples:
        print(
            f'{"snapshots":>9}{"ours du":>12}{"git gc du":>12}{"ratio":>7}{"packs":>7}{"loose":>7}'
        )
        for row in samples:
            print(
                f'{row["snapshots"]:>9}{row["du_bytes"]:>12,}{row.get("git_du_bytes", 0):>12,}'
                f'{row.get("ratio", 0):>7.3f}{row["packs"]:>7}{row["loose"]:>7}'
            )
    if 'as_left_ratio' in result:
        r = result['as_left_ratio']
        print(
            f'as left, ratio to git gc --aggressive over {r["points"]} points: '  # type: ignore[index]
            f'min {r["min"]}x, median {r["median"]}x, max {r["max"]}x'  # type: ignore[index]
        )
    print(f'{"":24}{"du bytes":>12}{"file bytes":>12}{"packs":>7}{"loose":>7}')
    rows = [
        ('shadow repo (auto)', 'auto'),
        ('after prune() (1 pack)', 'consolidated'),
        ('git gc --aggressive', 'git_gc_aggressive'),
    ]
    for label, key in rows:
        if key in result:
            m = result[key]
            print(
                f'{label:24}{m["du_bytes"]:>12,}{m["file_bytes"]:>12,}{m["packs"]:>7}'  # type: ignore[index]
                f'{m["loose"]:>7}'
            )  # type: ignore[index]
    if 'git_gc_aggressive' in result:
        print(
            f'ratio to git gc --aggressive: auto {result["ratio_auto_du_bytes"]}x (du), '
            f'{result["ratio_auto_file_bytes"]}x (file); consolidated '
            f'{result["ratio_consolidated_du_bytes"]}x (du), '
            f'{result["ratio_consolidated_file_bytes"]}x (file)'
        )
        print(f'consolidate {result["consolidate_seconds"]} s; git gc {result["git_gc_seconds"]} s')
    if 'prune' in result:
        p = result['prune']
        print(
            f'prune --keep {p["keep"]}: checkpoints {p["checkpoints_before"]} -> '  # type: ignore[index]
            f'{p["checkpoints_after"]}, objects {p["bytes_before"]:,} -> '  # type: ignore[index]
            f'{p["bytes_after"]:,} bytes in {p["seconds"]} s'  # type: ignore[index]
            f'{" (git fsck --strict clean)" if p.get("git_fsck") else ""}'
        )  # type: ignore[union-attr]


if __name__ == '__main__':
    main()
