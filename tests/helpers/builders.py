"""Workspaces, desks and repositories for the tests, and the writers that fill a desk.

The standard layout is the one ``Workspace`` uses: a workspace folder holding
``desks/<name>/`` and ``.checkpoints/<name>.git``. ``checkpoints_in`` opens a ``Checkpoints``
on a desk of that layout; the fixtures of ``tests/conftest.py`` are built from these.
"""

from __future__ import annotations

import os
import random
import shutil
import time
from pathlib import Path
from typing import Any

from helpers.reading import files_of, tracked
from trading_checkpoints import Checkpoint, Checkpoints
from trading_checkpoints.store import repo as store_repo


def new_workspace(root: Path, desk: str = 'main') -> Path:
    """``root`` made a workspace with one empty desk; returns ``root``."""
    desk_in(root, desk).mkdir(parents=True)
    return root


def desk_in(workspace: Path, name: str = 'main') -> Path:
    """Where the desk ``name`` of a workspace lives (``desks/<name>``)."""
    return workspace / 'desks' / name


def repository_in(workspace: Path, name: str = 'main') -> Path:
    """Where the shadow repository of the desk ``name`` lives (``.checkpoints/<name>.git``)."""
    return workspace / '.checkpoints' / f'{name}.git'


def checkpoints_in(workspace: Path, name: str = 'main', **options: Any) -> Checkpoints:
    """A ``Checkpoints`` on the desk ``name`` of a workspace (``options`` go to it as given)."""
    return Checkpoints(repository_in(workspace, name), desk_in(workspace, name), **options)


def secret_file(root: Path, content: bytes) -> Path:
    """A credentials-like file outside every desk and repository (``<root>/outside/...``),
    for tests that plant links to it and check it never changes nor shows."""
    folder = mkdirs(root / 'outside')
    path = folder / 'git-credentials'
    path.write_bytes(content)
    return path


def mkdirs(folder: Path) -> Path:
    """The folder, made with its parents if missing."""
    folder.mkdir(parents=True, exist_ok=True)
    return folder


# -- desks ---------------------------------------------------------------------------------


def write(desk: Path, path: str, content: str | bytes = 'x') -> Path:
    """A file at ``path`` under the desk, its folders made; text or bytes."""
    target = desk / path
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        target.write_bytes(content)
    else:
        target.write_text(content)
    return target


def put(desk: Path, path: str, kind: str, data: bytes) -> None:
    """An entry of a kind ('-' a file, 'x' an executable, 'link' a symlink to ``data``) at
    ``path``, replacing whatever is there or in the way above it."""
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


def session_turns(cps: Checkpoints, desk: Path, turns: int, start: int = 0) -> list[str]:
    """An agent's turns on a desk, each one appending to Memory.md, rewriting one of five
    notes and taking a checkpoint; returns their ids, oldest first."""
    ids = []
    for turn in range(start, start + turns):
        with open(desk / 'Memory.md', 'a') as handle:
            handle.write(f'- turn {turn}: remembered something\n')
        write(desk, f'notes/turn-{turn % 5}.md', f'note rewritten at turn {turn}\n')
        checkpoint_id = cps.snapshot(f'turn {turn}')
        assert checkpoint_id is not None
        ids.append(checkpoint_id)
    return ids


class StoreClock:
    """The clock the store stamps commits and reflog entries with (``store.repo``'s ``time``),
    set by the test while the ``with`` block runs, so checkpoints carry chosen times without
    waiting for them: assign ``at`` (seconds since the epoch) to move it."""

    def __init__(self, at: float) -> None:
        self.at = at

    def time(self) -> float:
        return self.at

    def __enter__(self) -> StoreClock:
        store_repo.time = self  # type: ignore[assignment]
        return self

    def __exit__(self, *_: object) -> None:
        store_repo.time = time


def seconds_apart(cps: Checkpoints, desk: Path, count: int = 3, step: int = 2) -> list[Checkpoint]:
    """``count`` checkpoints of Memory.md (``v0``, ``v1``, ...) stamped ``step`` seconds apart,
    the newest ``step`` seconds before now (commit times count whole seconds); oldest first."""
    taken = []
    with StoreClock(int(time.time()) - step * count) as clock:
        for number in range(count):
            write(desk, 'Memory.md', f'v{number}\n')
            assert cps.snapshot(f'version {number}') is not None
            taken.append(cps.list(1)[0])
            clock.at += step
    return taken


def old_then_new(cps: Checkpoints, desk: Path) -> str:
    """Two checkpoints of ten notes, ``old`` then ``new`` (each file differs): a restore of the
    first, the id returned, writes ten files, time enough to interrupt it."""
    for index in range(10):
        write(desk, f'notes/n{index}.md', 'old\n')
    old = cps.snapshot('old')
    for index in range(10):
        write(desk, f'notes/n{index}.md', 'new\n')
    assert old is not None and cps.snapshot('new') is not None
    return old


def settled_declared_desk(workspace: Path, desk: Path) -> Checkpoints:
    """A desk of three tracked files checkpointed, its stat cache written a second after its
    files: no cached stat is racy, so a scan takes an unwalked file from the cache (a racy one
    is read again, by every scan). For the narrowed walks of a write tool's hooks."""
    write(desk, 'Memory.md', 'v0\n')
    write(desk, 'memory/people.md', 'Ann\n')
    write(desk, 'notes/old.md', 'old\n')
    cps = Checkpoints.open(workspace / '.checkpoints' / 'main.git', desk)
    cps.snapshot('start')
    time.sleep(1.05 - time.time() % 1)
    assert cps.snapshot('the stat cache written again') is None
    return cps
