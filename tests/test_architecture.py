"""The layers hold: the import-linter contracts of ``pyproject.toml`` are kept.

A module that imports a layer above its own (the desk importing the store, an operation
importing the CLI, dulwich or click imported where they do not belong) fails here, with
import-linter's report naming the import chain. No module is longer than 600 lines, and none
imports another's private (underscore) names.
"""

from __future__ import annotations

import ast
import re
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


# The longest a module of the package may be (lines); a longer one is split by what it does.
MODULE_LINES = 600


def test_no_module_is_longer_than_the_limit() -> None:
    long = {
        path.relative_to(ROOT).as_posix(): lines
        for path in (ROOT / 'trading_checkpoints').rglob('*.py')
        if (lines := len(path.read_text().splitlines())) > MODULE_LINES
    }
    assert long == {}, f'modules over {MODULE_LINES} lines: {long}'


def test_no_module_imports_another_s_private_names() -> None:
    reaching = []
    for path in (ROOT / 'trading_checkpoints').rglob('*.py'):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                private = [a.name for a in node.names if re.fullmatch(r'_[^_].*', a.name)]
                if private:
                    reaching.append(f'{path.relative_to(ROOT)}: {node.module} {private}')
    assert reaching == []
