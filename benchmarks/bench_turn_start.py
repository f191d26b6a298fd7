"""A write tool's hooks, before and after a change: a turn's start, a later write, or a seal.

``--hook before_write`` (the default): each turn's first write tool call on an unchanged desk
(``toolcalls.before_write`` with a new turn id) checks the desk and commits the newest
checkpoint's files again as the turn's start. ``--hook later_write``: the hook before a write
tool later in one turn (the turn begun by a first write; each timed call's seal, and its write
of a new file, not timed). ``--hook after_write``: the seal once the tool wrote a new file
(``toolcalls.after_write``; its hook before, and the write, are not timed). ``--hook
announce``: the hook before a write tool later in one turn on a desk equal to the newest
checkpoint and sealed there (as after a shell command, or a tool that wrote nothing): nothing
to checkpoint, the write is announced (each timed call's seal, of an unchanged desk, not
timed). ``--hook read_only_shell``: both hooks of a shell command that changes nothing
(``toolcalls.before_shell`` and ``after_shell``, timed together), later in one turn: the
commonest shell command (``ls``, ``cat``, ``git status``).
This script times that call in-process on a desk of N tracked 1 KB files in folders of 100,
for two checkouts alternated round by round (each round a new process per checkout, 40 calls,
the median of the last 35), and prints each checkout's median over the rounds and their ratio.
Run by hand from the project root (never as a test):

    git archive main | tar -x -C /tmp/before
    python benchmarks/bench_turn_start.py --before /tmp/before --sizes 200 10000 --rounds 5
    python benchmarks/bench_turn_start.py --before /tmp/before --hook after_write
    python benchmarks/bench_turn_start.py --before /tmp/before --hook later_write
    python benchmarks/bench_turn_start.py --before /tmp/before --hook announce
    python benchmarks/bench_turn_start.py --before /tmp/before --hook read_only_shell
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CALLS, WARM = 40, 5
ROUND = """
import statistics, sys, tempfile, time
from pathlib import Path
from trading_checkpoints import Checkpoints
from trading_checkpoints.ops import toolcalls
from trading_checkpoints.ops.toolcalls import ToolCall
from trading_checkpoints.store.metadata import Writer
files, calls, warm = (int(value) for value in sys.argv[1:4])
hook = sys.argv[4]
root = Path(tempfile.mkdtemp(prefix='turn-start-'))
desk = root / 'workspace/desks/main'
for index in range(files):
    path = desk / 'memory' / f'd{index // 100}' / f'f{index}.md'
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('x' * 1000 + str(index))
checkpoints = Checkpoints(root / 'workspace/.checkpoints/main.git', desk)
checkpoints.snapshot('start')
time.sleep(0.2)  # past the stat cache's racy window: the desk is settled
checkpoints.snapshot('settled')
times = []
in_one_turn = hook in ('later_write', 'announce', 'read_only_shell')
if in_one_turn:  # the turn begun
    call = ToolCall('call-first', 'claude:Write', Writer('turn-later', 'S'))
    toolcalls.before_write(checkpoints, call, 'before Write', ['memory/new/first.md'])
    toolcalls.after_write(checkpoints.desk_config, call, ['memory/new/first.md'])
for number in range(calls):
    turn = 'turn-later' if in_one_turn else f'turn-{number}'
    call = ToolCall(f'call-{number}', 'claude:Write', Writer(turn, 'S'))
    path = f'memory/new/{number}.md'
    if hook == 'after_write':
        toolcalls.before_write(checkpoints, call, 'before Write', [path])
        (desk / path).parent.mkdir(parents=True, exist_ok=True)
        (desk / path).write_text(f'written by call {number}')
    began = time.perf_counter()
    if hook == 'after_write':
        toolcalls.after_write(checkpoints.desk_config, call, [path])
    elif hook == 'read_only_shell':
        shell = ToolCall(f'shell-{number}', 'claude:Bash', Writer(turn, 'S'))
        toolcalls.before_shell(checkpoints.desk_config, shell, 'before Bash: ls')
        toolcalls.after_shell(checkpoints.desk_config, shell, 'after Bash: ls')
    else:
        toolcalls.before_write(checkpoints, call, 'before Write', [path])
    times.append(time.perf_counter() - began)
    if hook == 'later_write':
        (desk / path).parent.mkdir(parents=True, exist_ok=True)
        (desk / path).write_text(f'written by call {number}')
        toolcalls.after_write(checkpoints.desk_config, call, [path])
    elif hook == 'announce':  # the tool wrote nothing: the seal names the newest checkpoint
        toolcalls.after_write(checkpoints.desk_config, call, [path])
print(statistics.median(times[warm:]) * 1000)
"""


def one_round(checkout: Path, files: int, hook: str) -> float:
    env = dict(os.environ, PYTHONPATH=str(checkout), PYTHONDONTWRITEBYTECODE='1')
    argv = [sys.executable, '-c', ROUND, str(files), str(CALLS), str(WARM), hook]
    # Run in the checkout: ``-c`` puts the current folder first on the import path, ahead of
    # PYTHONPATH, so a run from another checkout would time that one's code.
    done = subprocess.run(argv, env=env, cwd=checkout, check=True, capture_output=True, text=True)
    out = done.stdout
    return float(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--before', type=Path, required=True, help='the other checkout')
    parser.add_argument('--sizes', type=int, nargs='+', default=[200, 10000])
    parser.add_argument('--rounds', type=int, default=5)
    parser.add_argument(
        '--hook',
        choices=['before_write', 'later_write', 'after_write', 'announce', 'read_only_shell'],
        default='before_write',
    )
    args = parser.parse_args()
    print(f'load average at the start: {os.getloadavg()}')
    for files in args.sizes:
        found: dict[str, list[float]] = {'before': [], 'after': []}
        for _ in range(args.rounds):
            found['before'].append(one_round(args.before, files, args.hook))
            found['after'].append(one_round(ROOT, files, args.hook))
        before, after = (statistics.median(found[name]) for name in ('before', 'after'))
        ratio = after / before
        print(
            f'{args.hook}, {files} files: before {before:.1f} ms, after {after:.1f} ms, '
            f'x {ratio:.2f}'
        )
    print(f'load average at the end: {os.getloadavg()}')


if __name__ == '__main__':
    main()
