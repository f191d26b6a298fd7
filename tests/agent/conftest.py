"""The MCP servers these tests start keep their handshake answers in a folder of the test run's
own (``XDG_CACHE_HOME``), never in the user's ``~/.cache``: the first server of a worker learns
them from the SDK, the later ones answer from them (see ``agent/mcpstart.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope='session')
def _kept_answers(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp('cache')


@pytest.fixture(autouse=True)
def _answers_folder(_kept_answers: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv('XDG_CACHE_HOME', str(_kept_answers))
    return _kept_answers
