"""The layers hold: the import-linter contracts of ``pyproject.toml`` are kept.

A module that imports a layer above its own (the desk importing the store, an operation
importing the CLI, dulwich or click imported where they do not belong) fails here, with
import-linter's report naming the import chain.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT


def test_import_contracts_are_kept() -> None:
    lint_imports = shutil.which('lint-imports', path=str(Path(sys.executable).parent))
    if lint_imports is None:
        pytest.fail("lint-imports is missing: install the test extra (pip install '.[test]')")
    done = subprocess.run(
        [lint_imports, '--no-cache'],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert 'broken' in done.stdout and ', 0 broken.' in done.stdout


def test_the_top_level_holds_only_the_facade() -> None:
    package = ROOT / 'trading_checkpoints'
    modules = sorted(path.name for path in package.glob('*.py'))
    subpackages = sorted(path.parent.name for path in package.glob('*/__init__.py'))
    assert len(modules) <= 10, modules
    assert {'core', 'store', 'desk', 'ops', 'remote', 'agent', 'cli'} <= set(subpackages)
