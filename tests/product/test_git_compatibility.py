"""The shadow repository is plain git: real git reads it, and what real git adds is restorable."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from helpers import ROOT
from helpers.builders import write
from helpers.gitcli import git, needs_git

from trading_checkpoints import Checkpoints


@needs_git
def test_git_fsck_strict_and_log_read_what_we_write(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'v1')
    script = write(desk, 'skills/agent/run.sh', '#!/bin/sh\n')
    script.chmod(0o755)
    os.symlink('../Memory.md', desk / 'notes-link-target')  # untracked, outside the allowlist
    write(desk, 'notes/a.md', 'a')
    os.symlink('a.md', desk / 'notes' / 'link.md')
    first = cps.snapshot('first')
    for i in range(80):  # enough new objects for a pack
        write(desk, f'memory/m{i}.md', f'memory {i}')
    cps.snapshot('many files')
    cps.restore(first)
    repo = cps.repository_directory
    git(repo, 'fsck', '--strict', '--no-dangling')
    log = git(repo, 'log', '--format=%h %s')
    assert log.splitlines()[0] == f'{cps.list()[0].checkpoint_id} restored {first}'
    assert len(log.splitlines()) == len(cps.list(limit=100)) == 3
    listing = git(repo, 'ls-tree', '-r', first)
    assert '100755 blob' in listing and 'skills/agent/run.sh' in listing
    assert '120000 blob' in listing and 'notes/link.md' in listing
    assert git(repo, 'rev-parse', '--abbrev-ref', 'HEAD').strip() == 'main'
    reflog = git(repo, 'reflog', 'show', '--format=%gs', 'main')
    assert f'commit: restored {first}' in reflog.splitlines()[0]


@needs_git
def test_commits_made_by_the_git_cli_are_listed_and_restorable(
    cps: Checkpoints, desk: Path
) -> None:
    write(desk, 'Memory.md', 'ours')
    ours = cps.snapshot('ours')
    repo = cps.repository_directory
    env_args = ['-c', 'user.name=Someone', '-c', 'user.email=someone@example.com']
    write(desk, 'Memory.md', 'made with git')
    write(desk, 'notes/by-git.md', 'git')
    git(repo, f'--work-tree={desk}', 'add', '--', 'Memory.md', 'notes')
    git(repo, *env_args, f'--work-tree={desk}', 'commit', '-q', '-m', 'committed by git')
    theirs = cps.list()[0]
    assert theirs.reason == 'committed by git'
    cps.restore(ours)
    assert (desk / 'Memory.md').read_text() == 'ours'
    assert not (desk / 'notes').exists()
    cps.restore(theirs.checkpoint_id)
    assert (desk / 'notes/by-git.md').read_text() == 'git'
    git(repo, 'fsck', '--strict', '--no-dangling')


@needs_git
def test_git_packed_refs_are_read(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'v1')
    first = cps.snapshot('v1')
    git(cps.repository_directory, 'pack-refs', '--all')
    assert not (cps.repository_directory / 'refs/heads/main').exists()
    assert cps.list()[0].checkpoint_id == first
    write(desk, 'Memory.md', 'v2')
    assert cps.snapshot('v2') is not None
    assert [c.reason for c in cps.list()] == ['v2', 'v1']


def test_works_without_git_and_ignores_user_git_environment(tmp_path: Path) -> None:
    """No git on PATH; GIT_DIR, GIT_WORK_TREE and a hostile global config must not matter."""
    home = tmp_path / 'home'
    home.mkdir()
    hooks = home / 'hooks'
    hooks.mkdir()
    marker = tmp_path / 'hook-ran'
    hook = hooks / 'pre-commit'
    hook.write_text(f'#!/bin/sh\ntouch {marker}\nexit 1\n')
    hook.chmod(0o755)
    (home / '.gitconfig').write_text(
        '[user]\n\tname = Not Us\n\temail = not@us\n\tsigningkey = ABC\n'
        f'[commit]\n\tgpgsign = true\n[core]\n\thooksPath = {hooks}\n'
        '[init]\n\tdefaultBranch = trunk\n'
    )
    decoy = tmp_path / 'decoy.git'
    decoy.mkdir()
    workspace = tmp_path / 'ws'
    desk = workspace / 'desks' / 'main'
    desk.mkdir(parents=True)
    (desk / 'Memory.md').write_text('m')
    script = (
        'from pathlib import Path\n'
        'from trading_checkpoints import Checkpoints\n'
        f'c = Checkpoints(Path({str(workspace / ".checkpoints/main.git")!r}),'
        f' Path({str(desk)!r}))\n'
        'first = c.snapshot("one")\n'
        f'Path({str(desk / "Memory.md")!r}).write_text("m2")\n'
        'c.snapshot("two")\n'
        'c.restore(first)\n'
        'print(len(c.list()))\n'
    )
    env = {
        'PATH': str(tmp_path / 'empty-bin'),
        'HOME': str(home),
        'GIT_DIR': str(decoy),
        'GIT_WORK_TREE': str(tmp_path),
        'PYTHONPATH': str(ROOT),
    }
    done = subprocess.run(
        [sys.executable, '-c', script], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == '3'  # one, two, restored (nothing unsaved to pre-snapshot)
    assert (desk / 'Memory.md').read_text() == 'm'
    assert not marker.exists()
    assert list(decoy.iterdir()) == []
    repo = workspace / '.checkpoints' / 'main.git'
    assert (repo / 'HEAD').read_text() == 'ref: refs/heads/main\n'
    head = (repo / 'refs/heads/main').read_text().strip()
    from dulwich.repo import Repo

    commit = Repo(str(repo))[head.encode()]
    assert commit.author.startswith(b'trading_checkpoints ')
    assert commit.gpgsig is None
