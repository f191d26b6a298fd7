"""Where each hook event's time goes: the hook command under cProfile and strace, per event kind,
in-process and on the command server.

Run by hand from the project root (never as a test); needs strace and git:

    python benchmarks/profile_hooks.py                        # 200 files, 4 rounds, top 12
    python benchmarks/profile_hooks.py --venv /tmp/hc --files 200 --rounds 6 --top 20

It installs this checkout into a fresh virtualenv (``installed.py``) and plays the turn of
``bench_harness.py``'s hook rows (its ``STEPS``: the captured Claude Code events, the same
changes on the desk) on two alike workspaces, one with ``CHECKPOINTS_SERVER=off``, one served.
The first round warms up; then the rounds take turns between the two tools, so neither
disturbs the other's figures:

- **strace** (``-f``; rounds 1, 3, ...): the ``fsync``, ``fdatasync``, rename and ``openat``
  calls (the opens split by where: the shadow repository, the desk, Python's modules, other),
  and all system calls. In-process, the hook command runs under strace; served, the client
  runs under strace and a second strace is attached to the server and its waiting child (the
  child that takes the event, and the one forked after it), so both sides are counted.
- **cProfile** (rounds 2, 4, ...): in-process, the hook command runs under ``cProfile``;
  served, the command is run as the server's child runs it, after the server's own
  ``preload()``, in a process of its own (the real child cannot be profiled from outside).
  Printed: the calls of the functions in ``COUNTED`` (repository opens, history walks, pack
  appends, commits made, parsers), per event, and the top functions by cumulative time.
- **git**: the commits each event adds to the shadow repository (``git rev-list --all
  --count`` before and after).

Figures are per event: the median over the rounds of a count, the mean of a time.
"""

from __future__ import annotations

import argparse
import os
import pstats
import re
import shutil
import signal
import statistics
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path

from bench_harness import STEPS, HookProject, event_file, new_hook_project, template
from installed import GIT, make_venv

STRACE = shutil.which('strace')
TRACED = 'fsync,fdatasync,rename,renameat,renameat2,openat,open'
# What a profile counts: a label, and the functions (file name ending, function name) it sums.
COUNTED = {
    'ShadowRepo objects made (repository opens)': [('store/repo.py', '__init__')],
    'dulwich repositories opened': [('store/dulwichrepo.py', 'open_dulwich')],
    'repository configs parsed': [('store/config/reader.py', 'parse')],
    'history walks (turns.started)': [('ops/turns.py', 'started')],
    # repo.history is a generator (cProfile counts each step): its _shallow call, once a walk
    'history walks (repo.history)': [('store/repo.py', '_shallow')],
    'commits read (commit_info)': [('store/repo.py', 'commit_info')],
    'commits made (make_commit)': [('store/repo.py', 'make_commit')],
    'pack appends (append_objects)': [('store/pack/append.py', 'append_objects')],
    'locks taken (engine.locked)': [('ops/engine.py', 'locked')],
    'calls record loads (calls.load)': [('ops/calls.py', 'load')],
    'atomic writes (write_atomically)': [('core/durability.py', 'write_atomically')],
    # The flushes themselves run partly in a thread pool, which cProfile does not see: strace
    # counts them; these are the rounds the main thread asks for.
    'flush rounds asked (core/durability fsync_*)': [
        ('core/durability.py', name)
        for name in ('fsync_folder', 'fsync_folders', 'fsync_path', 'fsync_fds')
    ],
    'argparse parses': [('argparse.py', 'parse_known_args')],
    'click contexts': [('click/core.py', 'make_context')],
}
IMPORTS = ('<frozen importlib._bootstrap>', '_find_and_load')
HIDDEN = ('<frozen importlib', '<built-in method builtins.exec>')  # not shown in the top lists
SERVED_PROFILE = """\
import cProfile, sys
from trading_checkpoints.warm.preload import preload
from trading_checkpoints.warm.command import run
preload()  # as the server does before it forks the child that takes an event
args = ['hook', *sys.argv[2:]]
sys.argv = ['checkpoints', *args]
profile = cProfile.Profile()
profile.enable()
status = run(args)
profile.disable()
profile.dump_stats(OUT)
sys.exit(status)
"""
# In-process, the hook script ends with ``os._exit`` once the atexit handlers ran
# (``command.run_to_end``): ``python -m cProfile`` would never write its output, so the profile
# is written by an atexit handler.
IN_PROCESS_PROFILE = """\
import atexit, cProfile, os, runpy, sys
script = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path[0] = os.path.dirname(script)  # as ``python SCRIPT`` sets it
profile = cProfile.Profile()
def dump():
    profile.disable()
    profile.dump_stats(OUT)
atexit.register(dump)
profile.enable()
runpy.run_path(script, run_name='__main__')
"""


class Recorder:
    """The figures of one event kind in one mode, over the rounds."""

    def __init__(self) -> None:
        self.syscalls: list[Counter[str]] = []
        self.commits: list[int] = []
        self.profiles: list[Path] = []


def commit_count(repository: Path) -> int:
    assert GIT is not None
    done = subprocess.run(
        [GIT, '--git-dir', str(repository), 'rev-list', '--all', '--count'],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(done.stdout)


def counted_syscalls(trace: Path, project: HookProject) -> Counter[str]:
    """The traced calls of an strace output file, the opens split by where they open."""
    counts: Counter[str] = Counter()
    call = re.compile(r'^(?:\[pid\s+)?(?:\d+\]?\s+)?(\w+)\((.*)')
    repository = str(project.folder / 'workspace' / '.checkpoints')
    desk = str(project.desk)
    for line in trace.read_text(errors='replace').splitlines():
        found = call.match(line)
        if found is None:
            continue
        name, rest = found.groups()
        counts['all system calls'] += 1
        if name not in TRACED.split(','):
            continue
        if name.startswith('rename'):
            name = 'rename*'
        if name in ('openat', 'open'):
            path = rest.split('"')[1] if '"' in rest else ''
            if path.startswith(repository):
                name = 'openat: shadow repository'
            elif path.startswith(desk):
                name = 'openat: desk'
            elif '/lib/python' in path or path.endswith(('.py', '.pyc', '.so')):
                name = 'openat: Python modules'
            else:
                name = 'openat: other'
        counts[name] += 1
    return counts


def server_pids(run: Path) -> list[int]:
    """The command server's pid (from its lock file) and its children's."""
    locks = list((run / 'trading-checkpoints').glob('server-*.sock.lock'))
    if len(locks) != 1:
        raise SystemExit(f'expected one command server, found {len(locks)} lock files')
    server = int(locks[0].read_text().split()[0])
    children = Path(f'/proc/{server}/task/{server}/children').read_text().split()
    return [server, *map(int, children)]


def traced_served(argv: list[str], project: HookProject, stdin: Path, out: Path) -> None:
    """The event sent to the server, both sides under strace (the client's, then the
    server's lines appended to ``out``)."""
    assert STRACE is not None
    pids = server_pids(project.folder.parents[1] / 'run')
    side = out.with_suffix('.server')
    attach = [STRACE, '-f', '-e', 'trace=all', '-o', str(side)]
    for pid in pids:
        attach += ['-p', str(pid)]
    tracer = subprocess.Popen(attach, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not all(traced_by(pid, tracer.pid) for pid in pids):
        if time.monotonic() > deadline or tracer.poll() is not None:
            raise SystemExit('strace could not attach to the command server')
        time.sleep(0.05)
    run_traced(argv, project, stdin, out)
    time.sleep(0.3)  # the child's last calls after the client has its answer
    tracer.send_signal(signal.SIGINT)
    tracer.wait(30)
    with open(out, 'a') as whole:
        whole.write(side.read_text(errors='replace'))


def traced_by(pid: int, tracer: int) -> bool:
    """Whether ``tracer`` traces ``pid`` (or ``pid`` has ended: a child that just finished)."""
    try:
        status = Path(f'/proc/{pid}/status').read_text()
    except OSError:
        return True
    return f'TracerPid:\t{tracer}\n' in status


def run_traced(argv: list[str], project: HookProject, stdin: Path, out: Path) -> None:
    assert STRACE is not None
    run([STRACE, '-f', '-e', 'trace=all', '-o', str(out), *argv], project, stdin)


def run(argv: list[str], project: HookProject, stdin: Path) -> None:
    with open(stdin, 'rb') as source:
        done = subprocess.run(
            argv, cwd=project.folder, stdin=source, capture_output=True, env=project.env
        )
    if done.returncode != 0:
        raise SystemExit(f'{argv} failed ({done.returncode}): {done.stderr.decode()[-800:]}')


def profiled_argv(project: HookProject, out: Path) -> list[str]:
    python, script, *args = project.argv
    if project.server:
        code = SERVED_PROFILE.replace('OUT', repr(str(out)))
        return [python, '-c', code, script, *args]
    code = IN_PROCESS_PROFILE.replace('OUT', repr(str(out)))
    return [python, '-c', code, script, *args]


def play(
    projects: list[HookProject], rounds: int, scratch: Path
) -> dict[tuple[str, bool], Recorder]:
    figures: dict[tuple[str, bool], Recorder] = {}
    for number in range(rounds + 1):
        tool = 'none' if number == 0 else ('strace' if number % 2 else 'cprofile')
        for at, step in enumerate(STEPS):
            for project in projects:
                if step.tool is not None:
                    step.tool(project.desk, number)
                stdin = event_file(step, project, number, scratch)
                if step.row is None or tool == 'none':
                    run(project.argv, project, stdin)
                    continue
                recorder = figures.setdefault((step.row, project.server), Recorder())
                repository = project.folder / 'workspace' / '.checkpoints' / 'main.git'
                before = commit_count(repository)
                out = scratch / f'{number}-{at}-{project.server}'
                if tool == 'strace' and project.server:
                    traced_served(project.argv, project, stdin, out)
                elif tool == 'strace':
                    run_traced(project.argv, project, stdin, out)
                else:
                    run(profiled_argv(project, out), project, stdin)
                recorder.commits.append(commit_count(repository) - before)
                if tool == 'strace':
                    recorder.syscalls.append(counted_syscalls(out, project))
                else:
                    recorder.profiles.append(out)
        print(f'  round {number} of {rounds} ({tool}) done', flush=True)
    return figures


def counted_calls(stats: pstats.Stats, runs: int) -> dict[str, float]:
    found: dict[str, float] = {}
    table = stats.stats  # type: ignore[attr-defined]
    for label, functions in COUNTED.items():
        total = 0
        for (filename, _, name), (_, calls, *_rest) in table.items():
            if any(filename.endswith(end) and name == want for end, want in functions):
                total += calls
        found[label] = total / runs
    return found


def callers_of(stats: pstats.Stats, runs: int) -> dict[str, str]:
    """For each counted function called in these runs (the system calls' wrappers excepted),
    who calls it and how often per event."""
    table = stats.stats  # type: ignore[attr-defined]
    found = {}
    for label, functions in COUNTED.items():
        callers: Counter[str] = Counter()
        for (filename, _, name), (_, _, _, _, by) in table.items():
            if filename == '~' or not any(
                filename.endswith(end) and name == want for end, want in functions
            ):
                continue
            for (where, line, caller), figures in by.items():
                short = where.split('trading_checkpoints/')[-1].split('site-packages/')[-1]
                callers[f'{short}:{line}({caller})'] += figures[1]
        if callers:
            found[label] = ', '.join(f'{c} {n / runs:g}' for c, n in callers.most_common())
    return found


def top_functions(
    stats: pstats.Stats, runs: int, top: int, by_own: bool
) -> list[tuple[float, float, str]]:
    """The ``top`` functions by cumulative (or own) time: (cumulative ms, own ms, name) per
    event, the import machinery left out."""
    table = stats.stats  # type: ignore[attr-defined]
    rows = []
    for (filename, line, name), (_, _, own, cumulative, _) in table.items():
        if filename.startswith(HIDDEN) or name.startswith(HIDDEN):
            continue
        where = filename.split('site-packages/')[-1].split('lib/python3')[-1]
        label = f'{where}:{line}({name})' if filename != '~' else name
        rows.append((cumulative / runs * 1000, own / runs * 1000, label))
    rows.sort(key=lambda row: row[1] if by_own else row[0], reverse=True)
    return rows[:top]


def import_ms(stats: pstats.Stats, runs: int) -> float:
    table = stats.stats  # type: ignore[attr-defined]
    return (
        sum(
            cumulative
            for (filename, _, name), (_, _, _, cumulative, _) in table.items()
            if (filename, name) == IMPORTS
        )
        / runs
        * 1000
    )


def report(figures: dict[tuple[str, bool], Recorder], top: int) -> None:
    summary = []
    for (row, served), recorder in figures.items():
        mode = 'served' if served else 'in-process'
        print(f'\n### {row}, {mode}')
        commits = statistics.median(recorder.commits)
        print(f'commits reachable in the shadow repository, change: {commits:+g}')
        syscalls: dict[str, float] = {}
        if recorder.syscalls:
            names = sorted(set().union(*recorder.syscalls))
            syscalls = {n: statistics.median(c[n] for c in recorder.syscalls) for n in names}
            counts = ', '.join(f'{name} {value:g}' for name, value in syscalls.items())
            print(f'strace (median of {len(recorder.syscalls)}): {counts}')
        calls: dict[str, float] = {}
        profiled = 0.0
        if recorder.profiles:
            runs = len(recorder.profiles)
            stats = pstats.Stats(*map(str, recorder.profiles))
            profiled = stats.total_tt / runs * 1000  # type: ignore[attr-defined]
            print(f'cProfile (mean of {runs}): {profiled:.1f} ms profiled, ', end='')
            print(f'{import_ms(stats, runs):.1f} ms of it importing')
            calls = counted_calls(stats, runs)
            print('calls: ' + ', '.join(f'{k} {v:g}' for k, v in calls.items()))
            for label, callers in callers_of(stats, runs).items():
                print(f'  {label} called from: {callers}')
            for by_own in (False, True):
                print(
                    f'{"cumulative ms":>13} {"own ms":>7}  by {"own" if by_own else "cumulative"}'
                )
                for cumulative, own, name in top_functions(stats, runs, top, by_own):
                    print(f'{cumulative:13.1f} {own:7.1f}  {name}')
        summary.append((row, mode, profiled, commits, syscalls, calls))
    print_summary(summary)


SUMMARY = (  # column, where its figure comes from
    ('fsync', 'fsync'),
    ('fdatasync', 'fdatasync'),
    ('renames', 'rename*'),
    ('opens: repo', 'openat: shadow repository'),
    ('ShadowRepo', 'ShadowRepo objects made (repository opens)'),
    ('dulwich', 'dulwich repositories opened'),
    ('started()', 'history walks (turns.started)'),
    ('history()', 'history walks (repo.history)'),
    ('commits read', 'commits read (commit_info)'),
    ('appends', 'pack appends (append_objects)'),
    ('made', 'commits made (make_commit)'),
    ('locks', 'locks taken (engine.locked)'),
)


def print_summary(
    summary: list[tuple[str, str, float, float, dict[str, float], dict[str, float]]],
) -> None:
    print(
        '\n| event | mode | ms profiled | commits +/- | ' + ' | '.join(c for c, _ in SUMMARY) + ' |'
    )
    print('|---' * (4 + len(SUMMARY)) + '|')
    for row, mode, profiled, commits, syscalls, calls in summary:
        figures = [syscalls.get(key, calls.get(key, 0)) for _, key in SUMMARY]
        cells = ' | '.join(f'{value:g}' for value in figures)
        print(f'| {row} | {mode} | {profiled:.1f} | {commits:+g} | {cells} |')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--venv', type=Path, help='virtualenv to use (created if missing)')
    parser.add_argument('--files', type=int, default=200)
    parser.add_argument('--rounds', type=int, default=4)
    parser.add_argument('--top', type=int, default=12)
    args = parser.parse_args()
    if STRACE is None or GIT is None:
        raise SystemExit('strace and git are needed')
    with tempfile.TemporaryDirectory(prefix='profile-hooks-') as scratch:
        base = Path(scratch)
        (base / 'run').mkdir(mode=0o700)
        bin_dir = make_venv(args.venv or base / 'venv')
        workspace = template(base / 'template', args.files, bin_dir)
        projects = [
            new_hook_project('', bin_dir, server, workspace, base / f'p-{server}', base)
            for server in (False, True)
        ]
        figures = play(projects, args.rounds, base)
        print(f'\n{args.files} files; load average {os.getloadavg()[0]:.2f}')
        report(figures, args.top)


if __name__ == '__main__':
    main()
