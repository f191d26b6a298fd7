"""The MCP servers these tests start keep their handshake answers in a folder of the test run's
own (``XDG_CACHE_HOME``), never in the user's ``~/.cache``: the first server of a worker learns
them from the SDK, the later ones answer from them (see ``agent/mcpstart.py``). The hook setup
verbs' tests share the README's layout and a home of their own (``project``, ``home``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.builders import write


@pytest.fixture(scope='session')
def _kept_answers(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp('cache')


@pytest.fixture(autouse=True)
def _answers_folder(_kept_answers: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv('XDG_CACHE_HOME', str(_kept_answers))
    return _kept_answers


@pytest.fixture
def home(tmp_path: Path) -> dict[str, str]:
    """A home of the test's own (the user's settings never read or written), where Gemini CLI
    trusts the test's folders."""
    write(tmp_path, 'home/.gemini/trustedFolders.json', json.dumps({str(tmp_path): 'TRUST_FOLDER'}))
    return {'HOME': str(tmp_path / 'home')}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The README's layout: ``project/workspace/desks/main``, the agent started in ``project``."""
    folder = tmp_path / 'project'
    (folder / 'workspace' / 'desks' / 'main').mkdir(parents=True)
    return folder
