"""What `checkpoints watch` costs while nothing changes: its CPU time over an idle window.

Run by hand from the project root (never as a test; Linux, it reads /proc):

    python benchmarks/bench_watch_idle.py                      # 30 s windows, 3 rounds
    python benchmarks/bench_watch_idle.py --seconds 10 --rounds 5 --debounce 0.2 1 --files 2000

For each ``--debounce`` value it builds a workspace whose desk holds ``--files`` tracked files
(one checkpoint of them), starts ``checkpoints watch`` from this checkout as a separate
process, waits for its ready line and two more seconds, then reads the process's user and
system CPU time (``/proc/<pid>/stat``, utime + stime) at the start and the end of each idle
window. It prints the median CPU milliseconds per window, per second and as a share of one
core, and checks that no checkpoint was taken while idle. ``sleep`` is measured the same way
as the floor of the method (the clock ticks are 10 ms).
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TICKS = os.sysconf('SC_CLK_TCK')


def cpu_ms(pid: int) -> float:
    """User + system CPU time of a process so far, in milliseconds."""
    fields = Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / TICKS  # utime, stime


def build_workspace(root: Path, files: int) -> None:
    desk = root / 'desks' / 'main'
    for index in range(files):
        path = desk / 'memory' / f'part{index // 100:03d}' / f'note{index:05d}.md'
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'note {index}\n')
    (desk / 'Memory.md').write_text('# Memory\n')
    checkpoints(root, 'snapshot', '-m', 'first')


def checkpoints(root: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, '-m', 'trading_checkpoints', '--workspace', str(root), *args],
        capture_output=True,
        text=True,
        check=True,
        env=environment(),
    )
    return done.stdout


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith('CHECKPOINTS_')}
    env['PYTHONPATH'] = str(ROOT)
    return env


def idle_windows(argv: list[str], seconds: float, rounds: int, ready: str | None) -> list[float]:
    process = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=environment()
    )
    try:
        if ready is not None:
            assert process.stdout is not None
            line = process.stdout.readline()
            if not line.startswith(ready):
                raise SystemExit(f'{argv}: {line!r}')
        time.sleep(2)  # past the start-up
        used = []
        for _ in range(rounds):
            before = cpu_ms(process.pid)
            time.sleep(seconds)
            used.append(cpu_ms(process.pid) - before)
        return used
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(30)
        if ready is not None and code != 0:
            raise SystemExit(f'watch exited {code} on SIGTERM')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--seconds', type=float, default=30.0, help='length of an idle window')
    parser.add_argument('--rounds', type=int, default=3)
    parser.add_argument('--files', type=int, default=200)
    parser.add_argument('--debounce', type=float, nargs='+', default=[1.0])
    args = parser.parse_args()

    print(
        f'{args.files} tracked files, {args.rounds} idle windows of {args.seconds:g} s, '
        f'CPU time of the process (utime + stime), medians'
    )
    print(f'{"process":30} {"ms / window":>12} {"ms / s":>8} {"% of a core":>12}')
    floor = idle_windows(
        ['sleep', str(args.seconds * (args.rounds + 1) + 5)], args.seconds, args.rounds, None
    )
    rows = [("sleep (the method's floor)", floor)]
    for debounce in args.debounce:
        with tempfile.TemporaryDirectory(prefix='bench-watch-') as scratch:
            root = Path(scratch)
            build_workspace(root, args.files)
            before = checkpoints(root, 'list', '-n', '0')
            argv = [
                sys.executable,
                '-m',
                'trading_checkpoints',
                '--workspace',
                str(root),
                'watch',
                '--debounce',
                str(debounce),
            ]
            used = idle_windows(argv, args.seconds, args.rounds, 'Watching desk')
            if checkpoints(root, 'list', '-n', '0') != before:
                raise SystemExit('a checkpoint was taken while nothing changed')
        rows.append((f'watch --debounce {debounce:g}', used))
    for name, used in rows:
        median = statistics.median(used)
        per_second = median / args.seconds
        print(f'{name:30} {median:12.1f} {per_second:8.2f} {per_second / 10:12.3f}')


if __name__ == '__main__':
    main()
