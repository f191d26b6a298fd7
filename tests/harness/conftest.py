"""The real Claude Code and Gemini CLI (``helpers.harness``): ``harness`` is each in turn, skipped
with the one-line reason where it cannot be installed (no node, npm or registry);
``shared_folder`` holds the scenarios played once per test session (``scenario.shared``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.harness.driver import HARNESSES, Harness
from helpers.harness.install import Missing
from helpers.harness.scenario import shared_root


@pytest.fixture(params=sorted(HARNESSES))
def harness(request: pytest.FixtureRequest) -> Harness:
    chosen = HARNESSES[request.param]
    try:
        chosen.installed()
    except Missing as missing:
        pytest.skip(f'{chosen.name}: {missing}')
    return chosen


@pytest.fixture(scope='session')
def shared_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shared_root(tmp_path_factory)
