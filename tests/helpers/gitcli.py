"""The real git binary, run on a shadow repository isolated from the user's configuration."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

GIT = shutil.which('git')
needs_git = pytest.mark.skipif(GIT is None, reason='the git binary is not installed')


def _isolated(home: Path) -> dict[str, str]:
    """No system or global git config, no user's home: only the repository's own config."""
    return {
        'PATH': os.environ.get('PATH', ''),
        'HOME': str(home),
        'GIT_CONFIG_NOSYSTEM': '1',
        'GIT_CONFIG_GLOBAL': os.devnull,
    }


def git(repo: Path, *args: str) -> str:
    """Runs the real git on a shadow repository; fails on a non-zero exit. Returns stdout."""
    return subprocess.run(
        [GIT or 'git', f'--git-dir={repo}', *args],
        check=True,
        capture_output=True,
        text=True,
        env=_isolated(repo),
    ).stdout


def fsck(repo_dir: Path, strict_clean: bool = True) -> str:
    """Runs ``git fsck --full --strict``; fails on any error. Returns its output ('' without
    git)."""
    if GIT is None or not (repo_dir / 'HEAD').exists():
        return ''
    done = subprocess.run(
        [GIT, f'--git-dir={repo_dir}', 'fsck', '--full', '--strict', '--no-progress'],
        capture_output=True,
        text=True,
        env=_isolated(repo_dir),
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f'git fsck failed:\n{output}'
    bad = [
        line
        for line in output.splitlines()
        if not line.startswith(('dangling', 'notice'))
        and (strict_clean or not line.startswith('bad sha1 file'))
    ]
    assert not bad, f'git fsck complained:\n{output}'
    return output
