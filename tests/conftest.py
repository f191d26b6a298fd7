"""Shared fixtures: a real workspace in a temp folder, with its desk, repository and Checkpoints.

The fixtures are built from ``helpers.builders``; what tests share besides fixtures is in
``helpers`` (see its docstring).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers.builders import desk_in, new_workspace, repository_in

from trading_checkpoints import Checkpoints


@pytest.fixture(autouse=True)
def _credential_store(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """The developer's own CHECKPOINTS_* settings never reach a test (nor its child processes),
    and remote credentials go to a file of the test's own, never to the user's home."""
    for name in [name for name in os.environ if name.startswith('CHECKPOINTS_')]:
        monkeypatch.delenv(name)
    store = tmp_path_factory.mktemp('credentials') / 'credentials'
    monkeypatch.setenv('CHECKPOINTS_CREDENTIALS', str(store))
    return store


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return new_workspace(tmp_path)


@pytest.fixture
def desk(workspace: Path) -> Path:
    return desk_in(workspace)


@pytest.fixture
def repo_dir(workspace: Path) -> Path:
    return repository_in(workspace)


@pytest.fixture
def cps(repo_dir: Path, desk: Path) -> Checkpoints:
    return Checkpoints(repo_dir, desk)
