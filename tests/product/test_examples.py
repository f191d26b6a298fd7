"""Every example in examples/ runs to completion as a real process (each checks its own claims)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT
from helpers.processes import environment

EXAMPLES = sorted((ROOT / 'examples').glob('*.py'))


def test_the_examples_are_found() -> None:
    names = {path.name for path in EXAMPLES}
    assert {'agent_session.py', 'agent_loop.py', 'multi_desk.py'} <= names


@pytest.mark.parametrize('example', EXAMPLES, ids=[path.stem for path in EXAMPLES])
def test_example_runs(example: Path, tmp_path: Path) -> None:
    workspace = tmp_path / 'workspace'
    done = subprocess.run(
        [sys.executable, str(example), str(workspace)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        env=environment(),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip(), 'an example narrates what it does'
    assert 'Traceback' not in done.stderr
    assert (workspace / '.checkpoints').is_dir(), 'it worked in the workspace it was given'
