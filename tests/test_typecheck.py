"""The package type-checks: ``mypy trading_checkpoints`` with the project's config
(``[tool.mypy]`` in ``pyproject.toml``) finds no error.

mypy runs in a subprocess with an empty cache, exactly as a person would run it, against the
dulwich, click and mcp that are installed (the versions the rest of the suite runs on).
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

_ERROR = re.compile(r'^(?P<path>[^:\n]+):(?P<line>\d+): error: (?P<message>.*)$', re.MULTILINE)


def _mypy(tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], list[tuple[str, str]]]:
    if importlib.util.find_spec('mypy') is None:
        pytest.fail("mypy is missing: install the test extra (pip install '.[test]')")
    done = subprocess.run(
        [
            sys.executable,
            '-m',
            'mypy',
            '--cache-dir',
            str(tmp_path / 'cache'),
            'trading_checkpoints',
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    # 0: no error, 1: errors found; anything else is mypy failing to run (a config error).
    assert done.returncode in (0, 1), done.stdout + done.stderr
    errors = [
        (match['path'].replace('\\', '/'), f'{match["line"]}: {match["message"]}')
        for match in _ERROR.finditer(done.stdout)
    ]
    return done, errors


def test_mypy_finds_no_errors(tmp_path: Path) -> None:
    done, errors = _mypy(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not errors, '\n'.join(f'{path}:{error}' for path, error in errors)
