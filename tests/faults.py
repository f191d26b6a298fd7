"""Helpers for the fault-injection, stress and hostile-input tests: desks, versions, fsck, kills.

Nothing here is a mock: children are real processes (``os.fork`` of the test process, or
``sys.executable`` running the command line) killed with a real SIGKILL, and the repository is
checked with the real git when it is installed.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from trading_checkpoints.core.paths import TRACKED_PATHS, Allowlist
from trading_checkpoints.core.trees import SYMLINK_MODE
from trading_checkpoints.store.repo import ShadowRepo

ROOT = Path(__file__).resolve().parent.parent
GIT = shutil.which('git')
ALLOW = Allowlist(TRACKED_PATHS)

State = dict[str, tuple[str, bytes]]  # path -> ('-' | 'x' | 'link', bytes)


def files_of(folder: Path) -> State:
    """Every file and symlink under a folder (folders themselves are not compared)."""
    out: State = {}
    root = os.fspath(folder)
    for current, folders, names in os.walk(root):
        for name in folders + names:
            full = os.path.join(current, name)
            rel = os.path.relpath(full, root).replace(os.sep, '/')
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ('link', os.fsencode(os.readlink(full)))
            elif stat.S_ISREG(st.st_mode):
                with open(full, 'rb') as handle:
                    out[rel] = ('x' if st.st_mode & 0o100 else '-', handle.read())
    return out


def is_tracked(path: str, allow: Allowlist = ALLOW) -> bool:
    """Covered by the allowlist and not inside a nested repository (never snapshotted)."""
    return allow.covers(path) and '.git' not in path.split('/')


def tracked(state: State, allow: Allowlist = ALLOW) -> State:
    return {path: value for path, value in state.items() if is_tracked(path, allow)}


def untracked(state: State, allow: Allowlist = ALLOW) -> State:
    return {path: value for path, value in state.items() if not is_tracked(path, allow)}


def version_of(repo_dir: Path, sha: str, allow: Allowlist = ALLOW) -> State:
    """The tracked files a checkpoint holds, read straight from the repository."""
    repo = ShadowRepo.open(repo_dir)
    assert repo is not None
    try:
        full = repo.resolve(sha)
        files, _ = repo.flatten_tree(repo.commit_info(full).tree, allow)
        out: State = {}
        for path, (mode, blob) in files.items():
            kind = 'link' if mode == SYMLINK_MODE else ('x' if mode & 0o100 else '-')
            out[path] = (kind, repo.read_blob(blob))
        return out
    finally:
        repo.close()


def history(repo_dir: Path) -> list[str]:
    """Full ids newest first along first parents, asserting the history is linear."""
    repo = ShadowRepo.open(repo_dir)
    if repo is None:
        return []
    try:
        out = []
        for info in repo.history():
            assert len(info.parents) <= 1, f'merge commit {info.sha} in the history'
            out.append(info.sha)
        return out
    finally:
        repo.close()


def fsck(repo_dir: Path, strict_clean: bool = True) -> str:
    """Runs ``git fsck --strict``; fails on any error. Returns its output ('' without git)."""
    if GIT is None or not (repo_dir / 'HEAD').exists():
        return ''
    env = {
        'PATH': os.environ.get('PATH', ''),
        'HOME': str(repo_dir),
        'GIT_CONFIG_NOSYSTEM': '1',
        'GIT_CONFIG_GLOBAL': os.devnull,
    }
    done = subprocess.run(
        [GIT, f'--git-dir={repo_dir}', 'fsck', '--strict', '--no-progress'],
        capture_output=True,
        text=True,
        env=env,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f'git fsck failed:\n{output}'
    bad = [
        line
        for line in output.splitlines()
        if not line.startswith(('dangling', 'notice'))
        and (strict_clean or not line.startswith('bad sha1 file'))
    ]
    assert not bad, f'git fsck complained:\n{output}'
    return output


# -- desks ---------------------------------------------------------------------------------


def put(desk: Path, path: str, kind: str, data: bytes) -> None:
    full = desk / path
    remove(desk, path)
    parts = path.split('/')
    for depth in range(1, len(parts)):  # a file or link in the way of a folder goes
        above = desk.joinpath(*parts[:depth])
        if above.is_symlink() or above.is_file():
            above.unlink()
    full.parent.mkdir(parents=True, exist_ok=True)
    if kind == 'link':
        os.symlink(os.fsdecode(data), full)
    else:
        full.write_bytes(data)
        full.chmod(0o755 if kind == 'x' else 0o644)


def remove(desk: Path, path: str) -> None:
    full = desk / path
    if full.is_symlink() or full.is_file():
        full.unlink()
    elif full.is_dir():
        shutil.rmtree(full)


def seed_desk(desk: Path, rng: random.Random, files: int = 40) -> None:
    desk.mkdir(parents=True, exist_ok=True)
    put(desk, 'Memory.md', '-', b'# memory\n')
    for i in range(files):
        folder = rng.choice(['memory', 'notes', 'notes/deep/er', 'skills/agent'])
        put(desk, f'{folder}/f{i}.md', '-', rng.randbytes(rng.randint(0, 3000)))
    put(desk, 'skills/agent/run.sh', 'x', b'#!/bin/sh\necho hi\n')
    put(desk, 'notes/link', 'link', b'deep/er')
    put(desk, 'scratch.txt', '-', b'untracked, never touched')
    put(desk, 'memory_extra/keep.md', '-', b'outside the allowlist')
    put(desk, 'skills/other/keep.md', '-', b'outside the allowlist too')


def mutate(desk: Path, rng: random.Random, count: int) -> None:
    """Random edits of tracked files: writes, deletes, chmods, type changes, symlinks."""
    for _ in range(count):
        current = sorted(tracked(files_of(desk)))
        roll = rng.random()
        folder = rng.choice(['memory', 'notes', 'notes/deep', 'skills/agent'])
        if roll < 0.35 or not current:
            data = rng.randbytes(rng.randint(0, 4000))
            put(desk, f'{folder}/n{rng.randrange(1000)}.md', '-', data)
        elif roll < 0.6:
            path = rng.choice(current)
            put(desk, path, '-', rng.randbytes(rng.randint(0, 4000)))
        elif roll < 0.7:
            remove(desk, rng.choice(current))
        elif roll < 0.78:
            path = rng.choice(current)
            if not (desk / path).is_symlink():
                (desk / path).chmod(0o755 if rng.random() < 0.5 else 0o644)
        elif roll < 0.86:  # a file becomes a folder
            path = rng.choice(current)
            put(desk, f'{path}/inside.md', '-', b'was a file')
        elif roll < 0.93:  # a folder becomes a file
            folders = sorted({p.rsplit('/', 1)[0] for p in current if p.count('/') >= 2})
            if folders:
                put(desk, rng.choice(folders), '-', b'was a folder')
        else:
            target = rng.choice([b'../x', b'f1.md', b'/tmp'])
            put(desk, f'{folder}/l{rng.randrange(100)}', 'link', target)


# -- killing -------------------------------------------------------------------------------

_MUTATING = {
    'os.rename',
    'os.remove',
    'os.rmdir',
    'os.mkdir',
    'os.symlink',
    'os.chmod',
    'os.truncate',
    'os.link',
}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _is_mutation(event: str, args: tuple) -> bool:
    if event in _MUTATING:
        return True
    if event == 'open' and len(args) >= 3:
        mode, flags = args[1], args[2]
        if isinstance(mode, str):
            return any(c in mode for c in 'wax+')
        return isinstance(flags, int) and bool(flags & _WRITE_FLAGS)
    return False


def lands_a_desk_file(event: str, args: tuple, suffix: str = '.md') -> bool:
    """Whether an audit event is a restore putting a file (named ``*<suffix>``) at its name:
    a temporary file renamed into place, or the file opened to be rewritten or created in
    place (by its bare name, through its folder's descriptor)."""
    if event == 'os.rename':
        return '.checkpoint-' in os.fsdecode(args[0])
    if event != 'open' or len(args) < 3 or not isinstance(args[0], (str, bytes)):
        return False
    name, flags = os.fsdecode(args[0]), args[2]
    return (
        isinstance(flags, int)
        and bool(flags & (os.O_WRONLY | os.O_RDWR))
        and '/' not in name
        and '.checkpoint-' not in name
        and name.endswith(suffix)
    )


def kill_self_at(event_number: int) -> None:
    """In a child: SIGKILL this process just before its Nth file-system mutation."""
    seen = [0]

    def hook(event: str, args: tuple) -> None:
        if _is_mutation(event, args):
            seen[0] += 1
            if seen[0] >= event_number:
                os.kill(os.getpid(), signal.SIGKILL)

    sys.addaudithook(hook)


def count_mutations() -> list[int]:
    seen = [0]

    def hook(event: str, args: tuple) -> None:
        if _is_mutation(event, args):
            seen[0] += 1

    sys.addaudithook(hook)
    return seen


@dataclass
class ChildOutcome:
    killed: bool
    error: str | None
    mutations: int = 0
    seconds: float = 0.0


def run_child(
    action, *, kill_at: int | None = None, kill_after: float | None = None
) -> ChildOutcome:
    """Runs ``action()`` in a forked child, killing it with SIGKILL at a chosen moment."""
    read_end, write_end = os.pipe()
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 0
        try:
            os.close(read_end)
            counter = count_mutations() if kill_at is None else None
            if kill_at is not None:
                kill_self_at(kill_at)
            action()
            report = f'ok {counter[0] if counter else 0}'
        except BaseException as error:  # noqa: BLE001 - reported to the parent
            report = f'error {type(error).__name__}: {error}'
            code = 1
        try:
            os.write(write_end, report.encode()[:4000])
        finally:
            os._exit(code)
    os.close(write_end)
    if kill_after is not None:
        deadline = started + kill_after
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.perf_counter() >= deadline:
                os.kill(pid, signal.SIGKILL)
                _, status = os.waitpid(pid, 0)
                break
            time.sleep(0.0005)
    else:
        _, status = os.waitpid(pid, 0)
    seconds = time.perf_counter() - started
    with os.fdopen(read_end, 'rb') as pipe:
        report = pipe.read().decode(errors='replace')
    if os.WIFSIGNALED(status):
        assert os.WTERMSIG(status) == signal.SIGKILL
        return ChildOutcome(killed=True, error=None, seconds=seconds)
    if report.startswith('ok'):
        return ChildOutcome(
            killed=False, error=None, mutations=int(report.split()[1]), seconds=seconds
        )
    return ChildOutcome(killed=False, error=report or f'exit status {status}', seconds=seconds)


@dataclass
class Tally:
    trials: int = 0
    killed: int = 0
    completed: int = 0
    recoveries: int = 0
    restores: int = 0
    snapshots: int = 0
    checked_versions: int = 0
    bytes_lost: int = 0
    notes: list[str] = field(default_factory=list)
