"""What a snapshot of an unchanged desk leaves behind (nothing: not a byte of the repository
changes), and what one changed file costs (its blob, the trees on its path, the commit)."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

from helpers.builders import write
from helpers.gitcli import git

from trading_checkpoints import Checkpoints
from trading_checkpoints.desk import statcache


def settle() -> None:
    time.sleep(statcache.RACY_WINDOW_NS / 1e9 * 2)  # written well before the next snapshot


def repository_files(repo: Path) -> dict[str, tuple[int, int, str]]:
    found = {}
    for folder, _, names in os.walk(repo):
        for name in names:
            path = Path(folder, name)
            info = path.lstat()
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            found[str(path.relative_to(repo))] = (info.st_size, info.st_mtime_ns, digest)
    return found


def objects(repo: Path) -> dict[str, str]:
    listing = git(
        repo, 'cat-file', '--batch-all-objects', '--batch-check=%(objectname) %(objecttype)'
    )
    return dict(line.split() for line in listing.splitlines())


def test_a_no_op_writes_nothing_and_a_change_adds_only_the_trees_on_its_path(
    repo_dir: Path, desk: Path
) -> None:
    for path in ('Memory.md', 'notes/a/x.md', 'notes/b/y.md', 'memory/z.md', 'skills/agent/s.md'):
        write(desk, path, f'{path}\n')
    settle()
    assert Checkpoints(repo_dir, desk).snapshot('first') is not None
    assert Checkpoints(repo_dir, desk).snapshot('settles the cache') is None
    before = repository_files(repo_dir)
    assert Checkpoints(repo_dir, desk).snapshot('no-op') is None
    assert repository_files(repo_dir) == before, 'a no-op snapshot changed the repository'

    known = objects(repo_dir)
    write(desk, 'notes/a/x.md', 'changed\n')
    settle()
    assert Checkpoints(repo_dir, desk).snapshot('one change') is not None
    added = {sha: kind for sha, kind in objects(repo_dir).items() if sha not in known}
    assert sorted(added.values()) == ['blob', 'commit', 'tree', 'tree', 'tree'], added
    head = git(repo_dir, 'rev-parse', 'HEAD').strip()
    on_path = {git(repo_dir, 'rev-parse', f'{head}:{p}').strip() for p in ('', 'notes', 'notes/a')}
    assert {sha for sha, kind in added.items() if kind == 'tree'} == on_path
