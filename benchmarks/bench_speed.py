"""Speed of snapshot, restore and list, side by side with the git binary and a stat-walk floor.

Run by hand from the project root (never as a test):

    python benchmarks/bench_speed.py            # 200 and 10,000 files, 7 repetitions
    python benchmarks/bench_speed.py --quick    # 3 repetitions
    python benchmarks/bench_speed.py --sizes 200 --reps 5 --json out.json

For each desk size it builds, in temporary folders, identical desks for us and for git: ``N``
tracked 1 KB files in folders of 100 under ``memory/``, plus ``Memory.md`` and ~200 untracked
files. Every figure is the median of the repetitions, in milliseconds. "open" reuses one
``Checkpoints`` object; "fresh" makes a new one for every operation and first empties the
process's memos (parsed configs, commits and trees read; outside the timing), so that
everything, the stat cache included, comes from disk as in a new process. The git side does
what the seed and today's shadow-git agents do: ``add -A -- <tracked paths>``, ``diff --cached
--quiet``, ``commit``; a restore is that snapshot, then ``restore --source=ID --staged
--worktree -- .`` and a commit. git runs isolated from the user's config (no system or global
config, fixed identity); with its default ``core.fsync`` it flushes nothing in these commands
(no ``fsync`` call under ``strace``), while our snapshots and restores flush by default
(``durable``), so the restore is also timed with ``durable=False``, for reference (no target):
that skips the flushes of the desk files and the branch's folder, the largest part; the intent
record, a pack that replaces the tail and the ref files (dulwich's) are flushed still.

Everything here runs in this process. Cold commands, as users and harnesses start them (the
console script of a fresh virtualenv against its own ``python -c pass``), are
``bench_cold.py``'s.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from trading_checkpoints import TRACKED_PATHS, Checkpoints  # noqa: E402

# The process's memos, per module; the same script also measures older versions (run it from
# their checkout), which kept some of them elsewhere, so missing ones are skipped.
MEMOS = {  # module -> the memos a new process finds empty after its imports
    'store.repo': ['_COMMITS', '_TREES'],
    'store.config.reader': ['_LOADED'],
    'store.pack.plan': ['_RECENT'],
    'core.paths': ['_component_problem'],  # an lru_cache: cleared with cache_clear
    'ops.deskconfig': ['_ALLOWLISTS', '_REMEMBERED'],
}

GIT = shutil.which('git')
KB = 1024
UNTRACKED = 200
FOLDER_SIZE = 100

TARGETS = {  # (ratio name, size) -> upper bound
    ('noop/floor', 200): 1.5,
    ('noop/floor', 10000): 1.5,
    ('noop/git', 200): 0.3,
    ('change/git', 200): 0.5,
    ('change/git', 10000): 1.5,
    ('restore/git', 200): 0.8,
    ('restore/git', 10000): 0.8,
    ('first/git', 200): 1.0,
    ('first/git', 10000): 1.0,
    ('list/git', 200): 1.5,
    ('list/git', 10000): 1.5,
}


def forget_memos() -> None:
    """Empties the process's memos (parsed configs, commits and trees read, allowlists), as a
    new process would find them after its imports. A memo this table names that the package
    no longer has is an error: a renamed module must not leave a memo full unseen."""
    for module_name, names in MEMOS.items():
        module = importlib.import_module(f'trading_checkpoints.{module_name}')
        for name in names:
            memo = getattr(module, name, None)
            empty = getattr(memo, 'cache_clear', None) or getattr(memo, 'clear', None)
            if empty is None:
                raise SystemExit(f'trading_checkpoints.{module_name}.{name} is no memo')
            empty()


def fresh(repo: Path, desk: Path, *, durable: bool = True) -> Checkpoints:
    """A new ``Checkpoints`` that also finds the process's memos empty: everything comes from
    disk."""
    forget_memos()
    return Checkpoints(repo, desk, durable=durable)


def timed_twice_fresh(repo: Path, desk: Path, call: Callable[[Checkpoints], object]) -> float:
    """Like ``timed_twice`` for a new object each time: the memos are emptied before each
    call, outside the timing (that is the harness's work); making the object is timed."""
    forget_memos()
    call(Checkpoints(repo, desk))
    forget_memos()
    return timed(lambda: call(Checkpoints(repo, desk)))


def git_env(home: Path) -> dict[str, str]:
    return {
        'PATH': os.environ.get('PATH', ''),
        'HOME': str(home),
        'LANG': 'C',
        'GIT_CONFIG_NOSYSTEM': '1',
        'GIT_CONFIG_GLOBAL': os.devnull,
        'GIT_AUTHOR_NAME': 'bench',
        'GIT_AUTHOR_EMAIL': 'bench@example.invalid',
        'GIT_COMMITTER_NAME': 'bench',
        'GIT_COMMITTER_EMAIL': 'bench@example.invalid',
        'GIT_TERMINAL_PROMPT': '0',
    }


def content(index: int, version: int = 0) -> bytes:
    head = f'file {index} version {version}\n'.encode()
    return head + b'x' * (KB - len(head) - 1) + b'\n'


def tracked_files(count: int) -> list[str]:
    return [f'memory/d{i // FOLDER_SIZE:03d}/f{i % FOLDER_SIZE:03d}.md' for i in range(count)]


def build_desk(desk: Path, count: int) -> None:
    """``count`` tracked 1 KB files in folders of 100, Memory.md, and ~200 untracked files."""
    for path in tracked_files(count):
        target = desk / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content(int(path[8:11]) * FOLDER_SIZE + int(path[13:16])))
    (desk / 'Memory.md').write_bytes(b'# Memory\n' + content(-1))
    for i in range(UNTRACKED):
        target = desk / 'scratch' / f'd{i // FOLDER_SIZE}' / f'u{i:03d}.csv'
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content(10_000_000 + i))


def hundred_paths(count: int) -> list[str]:
    """100 tracked files spread over every folder (the worst case for tree rebuilding)."""
    paths = tracked_files(count)
    step = max(1, len(paths) // 100)
    return paths[::step][:100]


def change_hundred(desk: Path, count: int, version: int) -> None:
    for path in hundred_paths(count):
        (desk / path).write_bytes(content(version * 7, version))


def settle() -> None:
    """Lets just-written files age past the stat cache's racy window, as between agent writes."""
    time.sleep(0.06)


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def timed(function: Callable[[], object]) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def timed_twice(function: Callable[[], object]) -> float:
    function()
    return timed(function)


# -- the floor ---------------------------------------------------------------------------------


def stat_floor(desk: Path) -> int:
    """os.scandir + lstat of every tracked path: the least a snapshot must do."""
    count = 0
    root = os.fspath(desk)
    pending = []
    for entry in TRACKED_PATHS:
        full = os.path.join(root, entry)
        try:
            st = os.lstat(full)
        except FileNotFoundError:
            continue
        if os.path.isdir(full) and not os.path.islink(full):
            pending.append(full)
        else:
            count += st.st_size > -1
    while pending:
        with os.scandir(pending.pop()) as entries:
            for child in entries:
                st = child.stat(follow_symlinks=False)
                if child.is_dir(follow_symlinks=False):
                    pending.append(child.path)
                else:
                    count += st.st_size > -1
    return count


# -- git the way the seed does it ----------------------------------------------------------


def remove_tree(path: Path) -> None:
    """Removes a folder that a background git process (auto maintenance) may still be writing."""
    for _ in range(50):
        shutil.rmtree(path, ignore_errors=True)
        if not path.exists():
            return
        time.sleep(0.1)
    shutil.rmtree(path)


class GitDesk:
    def __init__(self, repo: Path, desk: Path, home: Path) -> None:
        self.repo, self.desk, self.env = repo, desk, git_env(home)

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(
            [GIT or 'git', f'--git-dir={self.repo}', f'--work-tree={self.desk}', *args],
            env=self.env,
            cwd=self.desk,
            capture_output=True,
            check=check,
        )

    def init(self) -> None:
        subprocess.run(
            [GIT or 'git', 'init', '-q', '--bare', str(self.repo)],
            env=self.env,
            check=True,
            capture_output=True,
        )

    def snapshot(self, message: str) -> bool:
        paths = [p for p in TRACKED_PATHS if os.path.lexists(self.desk / p)]
        self.run('add', '-A', '--', *paths)
        if self.run('diff', '--cached', '--quiet', check=False).returncode == 0:
            return False
        self.run('commit', '-q', '--no-verify', '-m', message)
        return True

    def head(self) -> str:
        return self.run('rev-parse', 'HEAD').stdout.decode().strip()

    def restore(self, sha: str) -> None:
        self.snapshot(f'before restoring {sha}')
        self.run('restore', f'--source={sha}', '--staged', '--worktree', '--', '.')
        self.run('commit', '-q', '--no-verify', '--allow-empty', '-m', f'restored {sha}')

    def log(self) -> None:
        self.run('log', '-20', '--format=%h %cI %s')


# -- the measurements ----------------------------------------------------------------------


def bench_size(count: int, reps: int, base: Path) -> dict[str, float]:
    results: dict[str, float] = {}
    work = base / f'n{count}'
    ours_ws, git_ws = work / 'ours', work / 'git'
    ours_desk, git_desk = ours_ws / 'desks' / 'main', git_ws / 'desks' / 'main'
    ours_repo, git_repo = ours_ws / '.checkpoints' / 'main.git', git_ws / '.checkpoints' / 'git.git'
    build_desk(ours_desk, count)
    build_desk(git_desk, count)
    git_repo.parent.mkdir(parents=True)
    gd = GitDesk(git_repo, git_desk, work)
    settle()

    # Every comparison interleaves its contenders within each repetition, so that load from
    # other processes on the machine falls on all of them alike.
    stat_floor(ours_desk)  # warm the dentry cache, as every other operation finds it

    # First snapshot: a new repository each time (its creation counts, for git too).
    samples, git_samples = [], []
    for _ in range(reps):
        if ours_repo.exists():
            remove_tree(ours_repo)
        samples.append(timed(lambda: fresh(ours_repo, ours_desk).snapshot('first')))
        if git_repo.exists():
            remove_tree(git_repo)
        git_samples.append(timed(lambda: (gd.init(), gd.snapshot('first'))))
    results['first ours'] = median_ms(samples)
    results['first git'] = median_ms(git_samples)
    settle()

    # No-op snapshot, against the floor and against git.
    kept = fresh(ours_repo, ours_desk)
    assert kept.snapshot('settle') is None
    assert not gd.snapshot('settle')
    # Each sample is the second of two back-to-back calls, so that no contender is measured
    # right after another one's process start or cache traffic.
    floor, noop_open, noop_fresh, noop_git = [], [], [], []
    for i in range(reps * 5):
        floor.append(timed_twice(lambda: stat_floor(ours_desk)))
        noop_open.append(timed_twice(lambda: kept.snapshot('noop')))
        noop_fresh.append(timed_twice_fresh(ours_repo, ours_desk, lambda c: c.snapshot('noop')))
        if i < reps * 2:
            noop_git.append(timed_twice(lambda: gd.snapshot('noop')))
    results['floor'] = median_ms(floor)
    results['noop open'] = median_ms(noop_open)
    results['noop fresh'] = median_ms(noop_fresh)
    results['noop git'] = median_ms(noop_git)

    # One change (Memory.md rewritten) per snapshot.
    version = [0]

    def rewrite_memory(desk: Path) -> None:
        version[0] += 1
        (desk / 'Memory.md').write_bytes(b'# Memory\n' + content(-1, version[0]))

    change_open, change_fresh, change_git = [], [], []
    for _ in range(reps):
        for samples, make in (
            (change_open, lambda: kept),
            (change_fresh, lambda: fresh(ours_repo, ours_desk)),
        ):
            rewrite_memory(ours_desk)
            settle()
            cps = make()
            samples.append(timed(lambda: cps.snapshot('one change')))  # noqa: B023
            assert kept.snapshot('check') is None
        rewrite_memory(git_desk)
        settle()
        change_git.append(timed(lambda: gd.snapshot('one change')))
    results['change open'] = median_ms(change_open)
    results['change fresh'] = median_ms(change_fresh)
    results['change git'] = median_ms(change_git)

    # Restore 100 files away and back, each with its pre-snapshot.
    a_ours = kept.snapshot('A') or kept.list(1)[0].checkpoint_id
    change_hundred(ours_desk, count, 1)
    settle()
    b_ours = kept.snapshot('B')
    assert b_ours is not None
    gd.snapshot('A')
    a_git = gd.head()
    change_hundred(git_desk, count, 1)
    settle()
    gd.snapshot('B')
    b_git = gd.head()
    restore_open, restore_fresh, restore_git = [], [], []
    unflushed_open, unflushed_fresh = [], []
    unflushed = Checkpoints(ours_repo, ours_desk, durable=False)
    for _ in range(reps):
        for samples, make in (
            (restore_open, lambda: kept),
            (restore_fresh, lambda: fresh(ours_repo, ours_desk)),
            (unflushed_open, lambda: unflushed),
            (unflushed_fresh, lambda: fresh(ours_repo, ours_desk, durable=False)),
        ):
            for target, git_target in ((a_ours, a_git), (b_ours, b_git)):
                cps = make()
                samples.append(timed(lambda: cps.restore(target)))  # noqa: B023
                settle()
                if samples is restore_open:
                    restore_git.append(timed(lambda: gd.restore(git_target)))  # noqa: B023
                    settle()
    results['restore open'] = median_ms(restore_open)
    results['restore fresh'] = median_ms(restore_fresh)
    results['restore git'] = median_ms(restore_git)
    results['restore unflushed open'] = median_ms(unflushed_open)
    results['restore unflushed fresh'] = median_ms(unflushed_fresh)
    assert kept.snapshot('after restores') is None
    assert (ours_desk / hundred_paths(count)[0]).read_bytes() == content(7, 1)

    # list(20) against git log -20 (both histories are longer than 20 by now).
    assert len(kept.list(20)) == 20
    list_open, list_fresh, list_git = [], [], []
    for _ in range(reps * 3):
        list_open.append(timed_twice(lambda: kept.list(20)))
        list_fresh.append(timed_twice_fresh(ours_repo, ours_desk, lambda c: c.list(20)))
        list_git.append(timed_twice(gd.log))
    results['list open'] = median_ms(list_open)
    results['list fresh'] = median_ms(list_fresh)
    results['list git'] = median_ms(list_git)

    remove_tree(work)
    return results


ROWS = [
    # label, ours-open key, ours-fresh key, reference key, ratio name
    ('first snapshot', 'first ours', 'first ours', 'first git', 'first/git'),
    ('no-op snapshot vs git', 'noop open', 'noop fresh', 'noop git', 'noop/git'),
    ('no-op snapshot vs stat floor', 'noop open', 'noop fresh', 'floor', 'noop/floor'),
    ('one-change snapshot', 'change open', 'change fresh', 'change git', 'change/git'),
    (
        'restore 100 files (+pre-snapshot)',
        'restore open',
        'restore fresh',
        'restore git',
        'restore/git',
    ),
    (
        'the same restore, `durable=False` (desk files not flushed; git flushes none)',
        'restore unflushed open',
        'restore unflushed fresh',
        'restore git',
        'unflushed restore/git',
    ),
    ('list(20) vs git log -20', 'list open', 'list fresh', 'list git', 'list/git'),
]


def table(all_results: dict[int, dict[str, float]]) -> str:
    lines = [
        '| files | operation | ours open ms | ours fresh ms | reference ms | ratio open | '
        'ratio fresh | target | met |',
        '|---:|---|---:|---:|---:|---:|---:|---:|:---:|',
    ]
    for count, results in all_results.items():
        for label, open_key, fresh_key, ref_key, ratio in ROWS:
            ref = results[ref_key]
            r_open, r_fresh = results[open_key] / ref, results[fresh_key] / ref
            target = TARGETS.get((ratio, count))
            met = '' if target is None else ('yes' if max(r_open, r_fresh) <= target else 'NO')
            lines.append(
                f'| {count:,} | {label} | {results[open_key]:.2f} | {results[fresh_key]:.2f} | '
                f'{ref:.2f} | {r_open:.2f} | {r_fresh:.2f} | '
                f'{"-" if target is None else f"<= {target:g}"} | {met} |'
            )
    return '\n'.join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--quick', action='store_true', help='3 repetitions instead of 7')
    parser.add_argument('--reps', type=int, help='repetitions of each measurement')
    parser.add_argument('--sizes', type=int, nargs='+', default=[200, 10_000])
    parser.add_argument('--json', type=Path, help='also write the raw medians here')
    args = parser.parse_args()
    if GIT is None:
        sys.exit('the git binary is needed for the comparison')
    reps = args.reps or (3 if args.quick else 7)
    git_version = subprocess.run([GIT, '--version'], capture_output=True, text=True).stdout.strip()
    print(
        f'python {sys.version.split()[0]}, {git_version}, {os.cpu_count()} cores, '
        f'{reps} repetitions, medians'
    )
    all_results = {}
    with tempfile.TemporaryDirectory(prefix='bench_speed_') as base:
        for count in args.sizes:
            all_results[count] = bench_size(count, reps, Path(base))
    print(table(all_results))
    if args.json:
        args.json.write_text(json.dumps(all_results, indent=2))


if __name__ == '__main__':
    main()
