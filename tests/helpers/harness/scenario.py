"""What the harness scenarios share: the README's layout, one run shared by the tests that check
it, and the product's own answers (``list``, ``turns``, ``status``) and real git's.

The layout is the README's: ``project/workspace/desks/<desk>``, each desk with tracked files
and a checkpoint the person took (so an empty checkpoint the agent adds shows). ``shared``
plays a scenario once per test session, whichever pytest-xdist worker asks first (a lock
file; the others wait and read its record), so several tests can each assert one thing about
one harness run; a test that changes the folders works on a copy (``copied``).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from helpers.cli import checkpoints
from helpers.gitcli import git
from helpers.reading import files_of, tracked

DESK_FILES = {
    'Memory.md': '# Memory\n',
    'notes/old.md': 'old line\n',
    'notes/gone.md': 'to be deleted\n',
}


@dataclass(frozen=True)
class Layout:
    """A project holding ``workspace/desks/...``, and a HOME for the harness, under ``root``."""

    root: Path

    @property
    def project(self) -> Path:
        return self.root / 'project'

    @property
    def workspace(self) -> Path:
        return self.project / 'workspace'

    @property
    def home(self) -> Path:
        return self.root / 'home'

    def desk(self, name: str = 'main') -> Path:
        return self.workspace / 'desks' / name

    def repository(self, name: str = 'main') -> Path:
        return self.workspace / '.checkpoints' / f'{name}.git'

    def start(self, where: str) -> Path:
        """Where a harness starts: ``project`` (holding ./workspace), ``workspace`` or ``desk``."""
        return {'project': self.project, 'workspace': self.workspace, 'desk': self.desk()}[where]


def make_layout(root: Path, desks: Mapping[str, Mapping[str, str]] | None = None) -> Layout:
    """The README's layout under ``root``: each desk with its files and a person's checkpoint."""
    layout = Layout(root)
    layout.home.mkdir(parents=True)
    for name, files in (desks or {'main': DESK_FILES}).items():
        for path, text in files.items():
            target = layout.desk(name) / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        done = cli(layout, 'snapshot', '-m', 'the person starts', desk=name)
        assert done.returncode == 0, done.stderr
    return layout


def cli(layout: Layout, *args: str, desk: str = 'main') -> Any:
    """``checkpoints --workspace W --desk DESK ARGS`` run from the layout's root."""
    return checkpoints(*args, '--desk', desk, workspace=layout.workspace, cwd=layout.root)


def cli_json(layout: Layout, *args: str, desk: str = 'main') -> Any:
    done = cli(layout, *args, '--json', desk=desk)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def turns(layout: Layout, desk: str = 'main') -> list[dict[str, Any]]:
    return cli_json(layout, 'turns', '-n', '0', desk=desk)


def listing(layout: Layout, desk: str = 'main') -> list[dict[str, Any]]:
    return cli_json(layout, 'list', '-n', '0', desk=desk)


def desk_texts(layout: Layout, desk: str = 'main') -> dict[str, str]:
    """The desk's tracked files and their text."""
    return {path: data.decode() for path, (_, data) in tracked(files_of(layout.desk(desk))).items()}


def turn_files(layout: Layout, turn: str, desk: str = 'main') -> set[str]:
    """The files ``restore-turn TURN`` would put back (the files the product credits to the
    turn), as its dry run says."""
    plan = cli_json(layout, 'restore-turn', turn, '--dry-run', desk=desk)
    return set(plan['written']) | set(plan['deleted'])


def git_messages(repository: Path) -> str:
    """Every commit message of every ref of a repository, as real git prints them."""
    return git(repository, 'log', '--all', '--format=%B')


def empty_commits(repository: Path) -> list[str]:
    """The subjects of the commits (real git) whose tree is their parent's: checkpoints that
    hold no change."""
    lines = git(repository, 'log', '--all', '--format=%H %T %P %s').splitlines()
    trees = {line.split()[0]: line.split()[1] for line in lines}
    empty = []
    for line in lines:
        _, tree, *rest = line.split(' ', 3)
        parent, subject = (rest + [''])[:2]
        if trees.get(parent) == tree:
            empty.append(subject)
    return empty


def versions_of(repository: Path, path: str) -> list[str]:
    """The contents ``path`` had in any commit of a repository (real git)."""
    seen = []
    for commit in git(repository, 'rev-list', '--all').split():
        listed = git(repository, 'ls-tree', commit, '--', path)
        if listed.strip():
            text = git(repository, 'show', f'{commit}:{path}')
            if text not in seen:
                seen.append(text)
    return seen


# -- one run, shared ------------------------------------------------------------------------


def shared_root(factory: pytest.TempPathFactory) -> Path:
    """A folder every pytest-xdist worker of this test session sees."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get('PYTEST_XDIST_WORKER') else base


def shared(root: Path, key: str, play: Callable[[Path], dict[str, Any]]) -> tuple[Path, dict]:
    """``play(folder)`` run once in this test session for ``key``: the folder and its record.

    The first test to ask plays it; the others wait and read its record. A scenario that could
    not be played skips (a harness missing) or fails (anything else) every test that asks.
    """
    folder, record = root / f'harness-{key}', root / f'harness-{key}.json'
    with open(root / f'harness-{key}.lock', 'a') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not record.exists():
            folder.mkdir()
            try:
                result: dict[str, Any] = {'played': play(folder)}
            except pytest.skip.Exception as skip:
                result = {'skip': str(skip.msg)}
            except Exception:
                result = {'error': traceback.format_exc()}
            record.write_text(json.dumps(result))
        result = json.loads(record.read_text())
    if 'skip' in result:
        pytest.skip(result['skip'])
    if 'error' in result:
        pytest.fail(f'the scenario {key} could not be played:\n{result["error"]}')
    return folder, result['played']


def copied(folder: Path, into: Path) -> Path:
    """A copy of a played scenario's folder, for a test that changes it."""
    target = into / folder.name
    shutil.copytree(folder, target, symlinks=True)
    return target
