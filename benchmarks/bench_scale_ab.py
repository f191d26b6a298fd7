"""Two installations on one 100,000-file desk, interleaved: a before/after from one run.

``bench_scale.py`` measures one installation in-process; under a load that comes and goes its
ratios against git move more between runs than a change does. This script alternates the two
installations (and ``git status --porcelain``) round by round on the same desk and repository,
each round a new process per installation timing a fresh no-op snapshot, a fresh ``status`` and a
fresh one-change snapshot (the middle of three calls each). Run by hand (never as a test):

    git archive main | tar -x -C /tmp/before
    python -m venv /tmp/venv-before && /tmp/venv-before/bin/pip install /tmp/before
    python benchmarks/bench_scale_ab.py /tmp/venv-before/bin/python --rounds 7

The second interpreter is this one (``sys.executable``) unless ``--after`` names another.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
VERBS = ('noop', 'status', 'change')


def child(desk: Path, repo: Path) -> None:
    """Prints the middle of three timings of each verb, with fresh objects and memos."""
    sys.path.insert(0, str(HERE))
    import bench_speed

    from trading_checkpoints import Checkpoints

    out = {}
    for verb in VERBS:
        times = []
        for _ in range(3):
            if verb == 'change':
                body = bench_speed.content(-1, time.time_ns() % 1_000_000)
                (desk / 'Memory.md').write_bytes(b'# Memory\n' + body)
                bench_speed.settle()
            bench_speed.forget_memos()
            cps = Checkpoints(repo, desk)
            start = time.perf_counter()
            cps.status() if verb == 'status' else cps.snapshot(verb)
            times.append(time.perf_counter() - start)
        out[verb] = sorted(times)[1]
    print(json.dumps(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('before', help='the interpreter of the installation to compare against')
    parser.add_argument('--after', default=sys.executable)
    parser.add_argument('--rounds', type=int, default=7)
    parser.add_argument('--files', type=int, default=100_000)
    parser.add_argument('--child', nargs=2, type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    sys.path.insert(0, str(HERE))
    from bench_speed import build_desk, git_env

    with tempfile.TemporaryDirectory(prefix='bench-ab-', ignore_cleanup_errors=True) as scratch:
        base = Path(scratch)
        desk, repo, tree = base / 'desk', base / 'repo.git', base / 'git'
        build_desk(desk, args.files)
        shutil.copytree(desk, tree)
        env = {**git_env(base), 'GIT_CONFIG_COUNT': '1'}
        env.update(GIT_CONFIG_KEY_0='gc.auto', GIT_CONFIG_VALUE_0='0')
        for argv in (['init', '-q'], ['add', '-A'], ['commit', '-qm', 'first']):
            subprocess.run(['git', *argv], cwd=tree, env=env, check=True)
        first = 'from trading_checkpoints import Checkpoints as C; import sys; '
        first += 'C(sys.argv[1], sys.argv[2]).snapshot("first")'
        subprocess.run([args.after, '-c', first, str(repo), str(desk)], check=True)
        pythons = {'before': args.before, 'after': args.after}
        samples: dict[str, dict[str, list[float]]] = {k: {v: [] for v in VERBS} for k in pythons}
        git: list[float] = []
        me = str(Path(__file__).resolve())
        for _ in range(args.rounds):
            for name, python in pythons.items():
                run = [python, me, 'x', '--child', str(desk), str(repo)]
                found = json.loads(subprocess.run(run, capture_output=True, check=True).stdout)
                for verb, value in found.items():
                    samples[name][verb].append(value)
                status = ['git', 'status', '--porcelain']
                subprocess.run(status, cwd=tree, env=env, capture_output=True)
                start = time.perf_counter()
                subprocess.run(status, cwd=tree, env=env, capture_output=True)
                git.append(time.perf_counter() - start)
        floor = statistics.median(git)
        print(f'{args.files} files, {args.rounds} rounds; load average {os.getloadavg()[0]:.2f}')
        print(f'git status --porcelain: {floor * 1000:.1f} ms')
        for verb in VERBS:
            before = statistics.median(samples['before'][verb])
            after = statistics.median(samples['after'][verb])
            line = f'{verb:8} before {before * 1000:7.1f} ms  after {after * 1000:7.1f} ms'
            if verb != 'change':  # against git status; a change is a commit, not a status
                line += f'  ({before / floor:.2f} and {after / floor:.2f} x git status)'
            print(f'{line}  after/before {after / before:.2f}')


if __name__ == '__main__':
    main()
