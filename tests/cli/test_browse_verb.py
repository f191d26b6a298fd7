"""``checkpoints browse`` as the command line runs it: without Textual it says how to install
the extra and exits 1; with it, the verb is listed and documented."""

from __future__ import annotations

import os
from pathlib import Path

from helpers import NO_TEXTUAL, ROOT
from helpers.builders import session_turns
from helpers.cli import checkpoints

from trading_checkpoints import Checkpoints

HINT = "checkpoints browse needs the optional 'ui' extra: pip install 'trading-checkpoints[ui]'"


def test_without_textual_browse_says_how_to_install_it(
    workspace: Path, cps: Checkpoints, desk: Path
) -> None:
    session_turns(cps, desk, 2)
    hidden = {'PYTHONPATH': os.pathsep.join([str(NO_TEXTUAL), str(ROOT)])}
    done = checkpoints('browse', workspace=workspace, env=hidden)
    assert (done.returncode, done.stdout) == (1, ''), done.stderr
    assert done.stderr.splitlines()[0] == f'error: {HINT}'
    # The shadow hides Textual and nothing else: every other verb works.
    assert checkpoints('list', workspace=workspace, env=hidden).returncode == 0


def test_browse_is_a_verb_with_its_keys_in_the_help(workspace: Path) -> None:
    done = checkpoints('browse', '--help', workspace=workspace)
    assert done.returncode == 0
    assert "\n    pip install 'trading-checkpoints[ui]'\n" in done.stdout  # on a line of its own
    assert 'browse' in checkpoints('--help').stdout


def test_browse_on_a_missing_desk_is_the_usual_error(workspace: Path) -> None:
    done = checkpoints('--desk', 'nope', 'browse', workspace=workspace)
    assert done.returncode == 1
    assert 'nope' in done.stderr
