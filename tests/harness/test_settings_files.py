"""Which settings files each harness reads its hooks from, started in a folder P of a git
repository R (``R/parent/P``): a recording hook in every candidate, one prompt, and the list of
those that ran. (``hook install`` must write where the harness reads.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.gitcli import needs_git
from helpers.harness.capture import RECORDER, recorded
from helpers.harness.driver import GEMINI, Harness, prepare_home, run
from helpers.harness.install import Missing

pytestmark = pytest.mark.harness

# name -> the settings file, relative to the test's folder (HOME is home/)
CANDIDATES = {
    'home': 'home/{dot}/settings.json',
    'repository': 'R/{dot}/settings.json',
    'repository-local': 'R/{dot}/settings.local.json',
    'parent': 'R/parent/{dot}/settings.json',
    'started-in': 'R/parent/P/{dot}/settings.json',
    'started-in-local': 'R/parent/P/{dot}/settings.local.json',
    'below': 'R/parent/P/sub/{dot}/settings.json',
}
READ = {
    # Claude Code: ~/.claude, the folder it starts in, and the repository's local settings.
    'claude': {'home', 'started-in', 'started-in-local', 'repository-local'},
    # Gemini CLI: ~/.gemini and the folder it starts in (only .gemini/settings.json).
    'gemini': {'home', 'started-in'},
}
PROMPT_EVENT = {'claude': 'UserPromptSubmit', 'gemini': 'BeforeAgent'}


def plant(harness: Harness, root: Path) -> None:
    """A recording hook for the prompt event in every candidate file (HOME's kept as it is)."""
    dot = f'.{harness.name}'
    for name, relative in CANDIDATES.items():
        path = root / relative.format(dot=dot)
        log = root / 'logs' / name
        log.mkdir(parents=True)
        hook = {'type': 'command', 'command': f'{sys.executable} {RECORDER} {log}'}
        data = json.loads(path.read_text()) if path.exists() else {}
        data['hooks'] = {PROMPT_EVENT[harness.name]: [{'hooks': [hook]}]}
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data))


@needs_git
def test_the_settings_files_a_harness_reads(harness: Harness, tmp_path: Path):
    started_in = tmp_path / 'R' / 'parent' / 'P'
    (started_in / 'sub').mkdir(parents=True)
    subprocess.run(['git', 'init', '-q', str(tmp_path / 'R')], check=True)
    prepare_home(tmp_path / 'home', [started_in])
    plant(harness, tmp_path)
    done = run(harness, started_in, tmp_path / 'home', 'hello', ['hi'])
    assert done.code == 0, done
    ran = {name for name in CANDIDATES if recorded(tmp_path / 'logs' / name)}
    assert ran == READ[harness.name]


def test_gemini_refuses_an_untrusted_folder(tmp_path: Path):
    try:
        GEMINI.installed()
    except Missing as missing:
        pytest.skip(f'gemini: {missing}')
    started_in = tmp_path / 'P'
    started_in.mkdir()
    prepare_home(tmp_path / 'home')  # trusting nothing
    plant(GEMINI, tmp_path)
    done = run(GEMINI, started_in, tmp_path / 'home', 'hello', ['hi'])
    assert done.code != 0 and 'trusted' in done.stderr, done
    assert done.requests == []
