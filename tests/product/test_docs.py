"""The manual builds: ``mkdocs build --strict`` fails on a broken link, a missing anchor or a
page left out of the navigation, so a page moved or renamed without its links fails here."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_manual_builds_with_warnings_as_errors(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, '-m', 'mkdocs', 'build', '--strict', '--site-dir', str(tmp_path)],
        cwd=ROOT,
        env={**os.environ, 'NO_MKDOCS_2_WARNING': '1'},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / 'index.html').is_file()
    assert (tmp_path / 'agents' / 'index.html').is_file()


def test_every_page_is_in_the_navigation() -> None:
    config = (ROOT / 'mkdocs.yml').read_text()
    for page in (ROOT / 'docs').glob('*.md'):
        assert f': {page.name}\n' in config, f'{page.name} is not in mkdocs.yml nav'
