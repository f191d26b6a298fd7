"""Shared fixtures: a real workspace in a temp folder and helpers to read a desk back."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from trading_checkpoints import Checkpoints

GIT = shutil.which('git')
needs_git = pytest.mark.skipif(GIT is None, reason='the git binary is not installed')


@pytest.fixture(autouse=True)
def _credential_store(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """Remote credentials go to a file of the test's own, never to the user's home."""
    store = tmp_path_factory.mktemp('credentials') / 'credentials'
    monkeypatch.setenv('CHECKPOINTS_CREDENTIALS', str(store))
    return store


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / 'desks' / 'main').mkdir(parents=True)
    return tmp_path


@pytest.fixture
def desk(workspace: Path) -> Path:
    return workspace / 'desks' / 'main'


@pytest.fixture
def repo_dir(workspace: Path) -> Path:
    return workspace / '.checkpoints' / 'main.git'


@pytest.fixture
def cps(repo_dir: Path, desk: Path) -> Checkpoints:
    return Checkpoints(repo_dir, desk)


def write(desk: Path, path: str, content: str | bytes = 'x') -> Path:
    target = desk / path
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        target.write_bytes(content)
    else:
        target.write_text(content)
    return target


def tree_of(folder: Path) -> dict[str, object]:
    """Everything under a folder: files as bytes, symlinks as ('link', target), folders as 'dir'."""
    out: dict[str, object] = {}
    for current, folders, files in os.walk(folder):
        for name in folders + files:
            full = Path(current) / name
            rel = full.relative_to(folder).as_posix()
            if full.is_symlink():
                out[rel] = ('link', os.readlink(full))
            elif full.is_dir():
                out[rel] = 'dir'
            else:
                mode = 'x' if os.access(full, os.X_OK) else '-'
                out[rel] = (mode, full.read_bytes())
    return out


def git(repo: Path, *args: str) -> str:
    """Runs the real git on a shadow repository, isolated from the user's config."""
    env = {
        'PATH': os.environ.get('PATH', ''),
        'HOME': str(repo),
        'GIT_CONFIG_NOSYSTEM': '1',
        'GIT_CONFIG_GLOBAL': os.devnull,
    }
    return subprocess.run(
        [GIT or 'git', f'--git-dir={repo}', *args],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    ).stdout
