"""Property test (hypothesis, stateful): the desk against an in-memory model.

Random sequences of writes, deletes, chmods, type changes (file <-> folder, file <-> symlink,
folder <-> symlink), snapshots and restores. The model is a dict of the tracked files; after
every step the desk's tracked files equal it, and after ``restore(id)`` they equal the model's
state when ``id`` was taken. Files outside the allowlist (including a nested ``.git`` inside a
tracked folder) never change. ``python -m pytest -m slow tests/product/test_desk_model.py`` runs
longer.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from helpers.builders import put, remove
from helpers.reading import files_of, tracked, untracked
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    invariant,
    multiple,
    rule,
)

from trading_checkpoints import Checkpoints

PATHS = [
    'Memory.md',
    'memory/a.md',
    'memory/b.md',
    'memory/sub/c.md',
    'memory/sub',  # a file or a symlink where a folder was
    'notes/x.md',
    'notes/x.md/inner.md',  # a folder where a file was
    'notes/deep/er/d.md',
    'notes/link',
    'skills/agent/run.sh',
    'skills/agent',  # the whole allowlist entry as one file
]
LINK_TARGETS = [b'a.md', b'../notes', b'/tmp', b'sub/c.md', b'../../outside']
UNTRACKED = {
    'scratch.txt': b'untracked',
    'memory_extra/a.md': b'outside by a prefix',
    'skills/other/b.md': b'a sibling of skills/agent',
    'notes/.git/config': b'a nested repository, never snapshotted',
}

contents = st.binary(max_size=300)


class DeskMachine(RuleBasedStateMachine):
    checkpoints = Bundle('checkpoints')

    def __init__(self) -> None:
        super().__init__()
        self.base = Path(tempfile.mkdtemp(prefix='checkpoints-property-'))
        self.desk = self.base / 'desk'
        self.repo = self.base / 'repo.git'
        for path, data in UNTRACKED.items():
            put(self.desk, path, '-', data)
        self.outside = self.base / 'outside'
        put(self.outside, 'precious.txt', '-', b'never touched')
        self.untracked = untracked(files_of(self.desk))
        self.model: dict[str, tuple[str, bytes]] = {}
        self.states: dict[str, dict[str, tuple[str, bytes]]] = {}

    def teardown(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)

    def cps(self) -> Checkpoints:
        return Checkpoints(self.repo, self.desk)

    def _forget(self, path: str) -> None:
        """The model's side of put()/remove(): what lies at, above or below ``path`` goes."""
        for other in list(self.model):
            if other == path or other.startswith(path + '/') or path.startswith(other + '/'):
                del self.model[other]

    def _blocked(self, path: str) -> bool:
        # The test never deletes the untracked .git inside notes by making notes a file.
        return path in ('notes',)

    @rule(path=st.sampled_from(PATHS), data=contents, executable=st.booleans())
    def write(self, path: str, data: bytes, executable: bool) -> None:
        kind = 'x' if executable else '-'
        put(self.desk, path, kind, data)
        self._forget(path)
        self.model[path] = (kind, data)

    @rule(path=st.sampled_from(PATHS), link=st.sampled_from(LINK_TARGETS))
    def symlink(self, path: str, link: bytes) -> None:
        put(self.desk, path, 'link', link)
        self._forget(path)
        self.model[path] = ('link', link)

    @rule(path=st.sampled_from(PATHS + ['memory', 'notes/deep', 'skills/agent']))
    def delete(self, path: str) -> None:
        full = self.desk / path
        if full.is_dir() and not full.is_symlink():
            for name in UNTRACKED:
                if name.startswith(path + '/'):
                    return  # never delete an untracked file ourselves
        remove(self.desk, path)
        for other in list(self.model):  # remove() takes what is at or below the path only
            if other == path or other.startswith(path + '/'):
                del self.model[other]

    @rule(path=st.sampled_from(PATHS))
    def chmod(self, path: str) -> None:
        entry = self.model.get(path)
        if entry is None or entry[0] == 'link':
            return
        kind = '-' if entry[0] == 'x' else 'x'
        (self.desk / path).chmod(0o755 if kind == 'x' else 0o644)
        self.model[path] = (kind, entry[1])

    @rule(target=checkpoints)
    def snapshot(self):
        checkpoint_id = self.cps().snapshot('step')
        if checkpoint_id is None:
            return multiple()
        self.states[checkpoint_id] = dict(self.model)
        return checkpoint_id

    @rule(checkpoint_id=checkpoints)
    def restore(self, checkpoint_id: str) -> None:
        before = dict(self.model)
        undo = self.cps().restore(checkpoint_id)
        self.model = dict(self.states[checkpoint_id])
        assert tracked(files_of(self.desk)) == self.model
        self.states[undo] = before  # restore(undo) gives back what was there before

    @invariant()
    def desk_matches_the_model(self) -> None:
        now = files_of(self.desk)
        assert tracked(now) == self.model
        assert untracked(now) == self.untracked, 'a file outside the allowlist changed'
        assert files_of(self.outside) == {'precious.txt': ('-', b'never touched')}


DeskMachine.TestCase.settings = settings(
    max_examples=60,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestDeskMachine = DeskMachine.TestCase


@pytest.mark.slow
def test_desk_machine_long() -> None:
    from hypothesis.stateful import run_state_machine_as_test

    run_state_machine_as_test(
        DeskMachine,
        settings=settings(
            max_examples=300,
            stateful_step_count=40,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
