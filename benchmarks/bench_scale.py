"""A desk of 100,000 tracked files against the git CLI, in the same run.

Run by hand from the project root (never as a test):

    python benchmarks/bench_scale.py                       # 100,000 files, 7 repetitions
    python benchmarks/bench_scale.py --files 20000 --reps 5 --json out.json
    python benchmarks/bench_scale.py --profile noop        # cProfile of one no-op snapshot
    python benchmarks/bench_scale.py --watch               # also with `checkpoints watch` running

It builds two identical desks in a temporary folder (``bench_speed.build_desk``: 1 KB files in
folders of 100 under ``memory/``, ``Memory.md``, 200 untracked files) and times, in this
process, the library's verbs against the git commands that do the same work on the other desk:

| row | ours | git |
|---|---|---|
| first snapshot | ``snapshot()`` into a new repository | ``init --bare``, ``add -A``, ``commit`` |
| no-op snapshot | ``snapshot()`` of the unchanged desk | ``status --porcelain`` |
| one-change snapshot | ``Memory.md`` rewritten, ``snapshot()`` | the same, ``add -A``, ``commit`` |
| status | ``status()`` of the unchanged desk | ``status --porcelain`` |
| ... + watch | the no-op, ``status`` and one-change rows again, ``checkpoints watch`` running on
  our desk (``--watch``) | the same, in the same rounds |

"fresh" rows make a new ``Checkpoints`` for each call and first empty the process's memos (as a
new process finds them: the stat cache is read from disk); "open" rows keep one object. The
contenders alternate within each repetition; every figure is a median in milliseconds, and the
stat floor (a Python ``scandir`` + ``lstat`` walk of the same files) is given for reference.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from bench_speed import (
    GIT,
    GitDesk,
    build_desk,
    content,
    forget_memos,
    median_ms,
    remove_tree,
    settle,
    stat_floor,
    timed,
    timed_twice,
)

from trading_checkpoints import Checkpoints

TARGETS = {  # ratio -> upper bound
    'first snapshot / git': 0.8,
    'no-op snapshot (fresh) / git status': 1.0,
    'one-change snapshot (fresh) / git': 1.0,
    'status (fresh) / git status': 1.0,
    'no-op snapshot (fresh, watch) / git status': 1.0,
    'status (fresh, watch) / git status': 1.0,
    'one-change snapshot (fresh, watch) / git': 1.0,
}

WATCHER = """
import sys
from pathlib import Path
from trading_checkpoints import Checkpoints
from trading_checkpoints.agent.watch import watch
# A long quiet period: its own captures would otherwise take the one-change rows' changes.
watch(Checkpoints(Path(sys.argv[1]), Path(sys.argv[2])), quiet=600, echo=lambda line: None,
      ready=lambda: print('ready', flush=True))
"""


class Git(GitDesk):
    """The git CLI on the other desk, its automatic maintenance off (a ``gc --auto`` left
    running in the background would load the machine for the measurements after it)."""

    def __init__(self, repo: Path, desk: Path, home: Path) -> None:
        super().__init__(repo, desk, home)
        self.env.update(
            GIT_CONFIG_COUNT='2',
            GIT_CONFIG_KEY_0='gc.auto',
            GIT_CONFIG_VALUE_0='0',
            GIT_CONFIG_KEY_1='maintenance.auto',
            GIT_CONFIG_VALUE_1='false',
        )

    def commit_all(self, message: str) -> None:
        """``git add -A && git commit`` (the first and one-change snapshot reference)."""
        self.run('add', '-A')
        self.run('commit', '-q', '--no-verify', '-m', message)

    def status(self) -> None:
        self.run('status', '--porcelain', '--untracked-files=all')


class Scene:
    """The two desks, the repositories and the contenders' commands."""

    def __init__(self, base: Path, files: int) -> None:
        self.ours_desk = base / 'ours' / 'desks' / 'main'
        self.ours_repo = base / 'ours' / '.checkpoints' / 'main.git'
        self.git_desk = base / 'git' / 'desks' / 'main'
        git_repo = base / 'git' / '.checkpoints' / 'git.git'
        build_desk(self.ours_desk, files)
        build_desk(self.git_desk, files)
        git_repo.parent.mkdir(parents=True)
        self.git = Git(git_repo, self.git_desk, base)
        self.version = 0

    def fresh(self) -> Checkpoints:
        forget_memos()
        return Checkpoints(self.ours_repo, self.ours_desk)

    def first_ours(self) -> float:
        if self.ours_repo.exists():
            remove_tree(self.ours_repo)
        cps = self.fresh()
        return timed(lambda: cps.snapshot('first'))

    def first_git(self) -> float:
        if self.git.repo.exists():
            remove_tree(self.git.repo)
        return timed(lambda: (self.git.init(), self.git.commit_all('first')))

    def rewrite(self, desk: Path) -> None:
        self.version += 1
        (desk / 'Memory.md').write_bytes(b'# Memory\n' + content(-1, self.version))
        settle()


def fresh_call(scene: Scene, call: Callable[[Checkpoints], object]) -> float:
    """One call on a new object with the memos emptied (outside the timing)."""
    cps = scene.fresh()
    return timed(lambda: call(cps))


def measure(scene: Scene, reps: int) -> dict[str, float]:
    samples: dict[str, list[float]] = {}

    def add(name: str, value: float) -> None:
        samples.setdefault(name, []).append(value)

    for _ in range(max(3, reps // 2)):
        add('first snapshot, ours', scene.first_ours())
        add('first snapshot, git', scene.first_git())
    stat_floor(scene.ours_desk)
    open_cps = scene.fresh()
    assert open_cps.snapshot('settle') is None
    for _ in range(reps):
        add('stat floor', timed_twice(lambda: stat_floor(scene.ours_desk)))
        add('no-op snapshot, ours fresh', fresh_call(scene, lambda c: c.snapshot('noop')))
        add('no-op snapshot, ours open', timed_twice(lambda: open_cps.snapshot('noop')))
        add('git status --porcelain', timed_twice(scene.git.status))
        add('status, ours fresh', fresh_call(scene, lambda c: c.status()))
        add('status, ours open', timed_twice(open_cps.status))
    for _ in range(reps):
        scene.rewrite(scene.ours_desk)
        add('one-change snapshot, ours fresh', fresh_call(scene, lambda c: c.snapshot('one')))
        scene.rewrite(scene.ours_desk)
        add('one-change snapshot, ours open', timed(lambda: open_cps.snapshot('one')))
        scene.rewrite(scene.git_desk)
        add('one-change snapshot, git', timed(lambda: scene.git.commit_all('one')))
    return {name: median_ms(values) for name, values in samples.items()}


def measure_watching(scene: Scene, reps: int) -> dict[str, float]:
    """The no-op, status and one-change rows with ``checkpoints watch`` running on our desk
    (its answer replaces the walk while nothing tracked changed), git in the same rounds."""
    samples: dict[str, list[float]] = {}

    def add(name: str, value: float) -> None:
        samples.setdefault(name, []).append(value)

    watcher = subprocess.Popen(
        [sys.executable, '-c', WATCHER, str(scene.ours_repo), str(scene.ours_desk)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert watcher.stdout is not None and watcher.stdout.readline() == 'ready\n'
        for _ in range(3):  # the first walks, and tells the watcher the desk is clean
            scene.fresh().snapshot('settle')
            settle()
        for _ in range(reps):
            add('no-op snapshot, ours fresh + watch', fresh_call(scene, lambda c: c.snapshot('n')))
            add('git status --porcelain (watch rounds)', timed_twice(scene.git.status))
            add('status, ours fresh + watch', fresh_call(scene, lambda c: c.status()))
        for _ in range(reps):
            scene.rewrite(scene.ours_desk)
            one = fresh_call(scene, lambda c: c.snapshot('1'))
            add('one-change snapshot, ours fresh + watch', one)
            scene.rewrite(scene.git_desk)
            add('one-change snapshot, git (watch rounds)', timed(lambda: scene.git.commit_all('1')))
    finally:
        watcher.kill()
        watcher.wait()
    return {name: median_ms(values) for name, values in samples.items()}


def ratios(medians: dict[str, float]) -> dict[str, float]:
    status = medians['git status --porcelain']
    found = {
        'first snapshot / git': medians['first snapshot, ours'] / medians['first snapshot, git'],
        'no-op snapshot (fresh) / git status': medians['no-op snapshot, ours fresh'] / status,
        'no-op snapshot (open) / git status': medians['no-op snapshot, ours open'] / status,
        'no-op snapshot (fresh) / stat floor': medians['no-op snapshot, ours fresh']
        / medians['stat floor'],
        'one-change snapshot (fresh) / git': medians['one-change snapshot, ours fresh']
        / medians['one-change snapshot, git'],
        'one-change snapshot (open) / git': medians['one-change snapshot, ours open']
        / medians['one-change snapshot, git'],
        'status (fresh) / git status': medians['status, ours fresh'] / status,
        'status (open) / git status': medians['status, ours open'] / status,
    }
    if 'no-op snapshot, ours fresh + watch' in medians:
        status = medians['git status --porcelain (watch rounds)']
        commit = medians['one-change snapshot, git (watch rounds)']
        found['no-op snapshot (fresh, watch) / git status'] = (
            medians['no-op snapshot, ours fresh + watch'] / status
        )
        found['status (fresh, watch) / git status'] = medians['status, ours fresh + watch'] / status
        found['one-change snapshot (fresh, watch) / git'] = (
            medians['one-change snapshot, ours fresh + watch'] / commit
        )
    return found


def profile(scene: Scene, what: str) -> None:
    """Prints the cProfile of one call of ``what`` (first, noop, change, status)."""
    if what != 'first':
        scene.fresh().snapshot('first')
        settle()
    if what == 'change':
        scene.rewrite(scene.ours_desk)
    if what == 'first' and scene.ours_repo.exists():
        remove_tree(scene.ours_repo)
    cps = scene.fresh()
    call = {
        'first': lambda: cps.snapshot('first'),
        'noop': lambda: cps.snapshot('noop'),
        'change': lambda: cps.snapshot('one'),
        'status': cps.status,
    }[what]
    profiler = cProfile.Profile()
    profiler.runcall(call)
    pstats.Stats(profiler).sort_stats('cumulative').print_stats(25)
    pstats.Stats(profiler).sort_stats('tottime').print_stats(15)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--files', type=int, default=100_000)
    parser.add_argument('--reps', type=int, default=7)
    parser.add_argument('--json', type=Path, help='also write the medians and ratios here')
    parser.add_argument('--profile', choices=['first', 'noop', 'change', 'status'])
    parser.add_argument(
        '--watch', action='store_true', help='also the rows with checkpoints watch running'
    )
    args = parser.parse_args()
    if GIT is None:
        raise SystemExit('bench_scale needs the git binary')
    with tempfile.TemporaryDirectory(prefix='bench-scale-', ignore_cleanup_errors=True) as scratch:
        scene = Scene(Path(scratch), args.files)
        if args.profile:
            profile(scene, args.profile)
            return
        medians = measure(scene, args.reps)
        if args.watch:
            medians.update(measure_watching(scene, args.reps))
        report(args.files, args.reps, medians, args.json)


def report(files: int, reps: int, medians: dict[str, float], to: Path | None) -> None:
    found = ratios(medians)
    print(f'{files} tracked files, {reps} repetitions, medians (ms); python', end=' ')
    print(f'{sys.version.split()[0]}; load average {os.getloadavg()[0]:.2f} (1 min)')
    for name, value in medians.items():
        print(f'{name:40} {value:10.1f}')
    for name, value in found.items():
        target = TARGETS.get(name)
        verdict = '' if target is None else ('met' if value <= target else f'MISSED (<= {target})')
        print(f'{name:40} {value:10.3f} {verdict}')
    if to is not None:
        to.write_text(json.dumps({'medians_ms': medians, 'ratios': found}, indent=2))


if __name__ == '__main__':
    main()
