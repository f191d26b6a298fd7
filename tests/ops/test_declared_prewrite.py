"""The checkpoint before a write tool, once its turn has begun, walks only the folders of the
tool's paths (``toolcalls.before_write``, ``declared.narrowable`` and ``declared.since``): what
the tool writes is in it as it was; a person's edit elsewhere waits for the next walk of the
whole desk, as made outside the agent; the turn's first write, a path through a link and a file
of two names walk the whole desk. Driven in the test's process on a real desk and repository."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers.builders import settled_declared_desk, write

from trading_checkpoints import CheckpointError, Checkpoints
from trading_checkpoints.desk import scan as scans
from trading_checkpoints.ops import calls, declared, toolcalls
from trading_checkpoints.ops.toolcalls import ToolCall
from trading_checkpoints.store.metadata import Writer

ONE, TWO = Writer('t-1', 'S1'), Writer('t-2', 'S2')
TOOL = 'claude:Write'


@pytest.fixture
def cps(workspace: Path, desk: Path) -> Checkpoints:
    return settled_declared_desk(workspace, desk)


def write_call(cps: Checkpoints, desk: Path, call_id: str, writer: Writer, path: str) -> None:
    """A write tool's two hooks around its write of ``path``."""
    call = ToolCall(call_id, TOOL, writer)
    toolcalls.before_write(cps, call, f'before Write {path}', [path])
    write(desk, path, f'{path} by {call_id}\n')
    toolcalls.after_write(cps.desk_config, call, [path])


def whole_walks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the walks of the whole desk from now on (a narrowed scan walks folders only)."""
    count: list[int] = []
    whole = scans.walk

    def counted(*args: object, **kwargs: object) -> object:
        count.append(1)
        return whole(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(scans, 'walk', counted)
    return count


def newest(cps: Checkpoints, path: str) -> bytes:
    """``path`` as the newest checkpoint holds it."""
    return cps.show(cps.list(1)[0].checkpoint_id, path)


def test_a_later_write_holds_its_file_as_it_was_and_leaves_a_persons_edit_elsewhere(
    cps: Checkpoints, desk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_call(cps, desk, 'toolu_1', ONE, 'notes/first.md')  # the turn's start
    write(desk, 'notes/target.md', 'the person wrote this first\n')
    write(desk, 'memory/people.md', 'Ann\nBob, added by a person\n')
    walks = whole_walks(monkeypatch)
    call = ToolCall('toolu_2', TOOL, ONE)
    assert toolcalls.before_write(cps, call, 'before Write notes/target.md', ['notes/target.md'])
    assert walks == []
    assert newest(cps, 'notes/target.md') == b'the person wrote this first\n'
    assert newest(cps, 'memory/people.md') == b'Ann\n'  # not walked: left for the next whole walk
    write(desk, 'notes/target.md', 'by the agent\n')
    toolcalls.after_write(cps.desk_config, call, ['notes/target.md'])
    assert walks == []  # the seal's walk is narrowed too
    status = cps.status()
    assert (status.basis, status.external) == ('sealed', ('memory/people.md',))
    assert cps.snapshot('a walk of the whole desk') is not None
    assert newest(cps, 'memory/people.md') == b'Ann\nBob, added by a person\n'


def test_the_turns_first_write_walks_the_whole_desk(
    cps: Checkpoints, desk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(desk, 'memory/people.md', 'Ann\nBob, added by a person\n')
    walks = whole_walks(monkeypatch)
    toolcalls.before_write(cps, ToolCall('toolu_1', TOOL, ONE), 'before', ['notes/new.md'])
    assert walks == [1]
    assert newest(cps, 'memory/people.md') == b'Ann\nBob, added by a person\n'


@pytest.mark.parametrize('kind', ['link to the file', 'link on the way', 'second name'])
def test_a_write_that_may_land_elsewhere_walks_the_whole_desk(
    cps: Checkpoints, desk: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """A write through a link, or to a file with another name, changes a file in a folder the
    narrowed walk would skip: its content before the write must be in the checkpoint."""
    write_call(cps, desk, 'toolu_1', ONE, 'notes/first.md')
    if kind == 'link to the file':
        os.symlink('../memory/people.md', desk / 'notes' / 'people.md')
        path = 'notes/people.md'
    elif kind == 'link on the way':
        os.symlink('memory', desk / 'notes' / 'linked')
        path = 'notes/linked/people.md'
    else:
        os.link(desk / 'memory' / 'people.md', desk / 'notes' / 'people.md')
        path = 'notes/people.md'
    write(desk, 'memory/people.md', 'Ann\nBob, added by a person\n')
    walks = whole_walks(monkeypatch)
    toolcalls.before_write(cps, ToolCall('toolu_2', TOOL, ONE), 'before', [path])
    assert walks == [1]
    assert newest(cps, 'memory/people.md') == b'Ann\nBob, added by a person\n'


def test_another_sessions_sealed_write_is_in_the_checkpoint(
    cps: Checkpoints, desk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_call(cps, desk, 'toolu_1', ONE, 'notes/first.md')
    write_call(cps, desk, 'toolu_2', TWO, 'memory/two.md')  # sealed on the newest checkpoint
    walks = whole_walks(monkeypatch)
    write(desk, 'notes/first.md', 'changed by a person\n')  # so that a checkpoint is made
    toolcalls.before_write(cps, ToolCall('toolu_3', TOOL, ONE), 'before', ['notes/first.md'])
    assert walks == []
    assert newest(cps, 'memory/two.md') == b'memory/two.md by toolu_2\n'
    assert newest(cps, 'notes/first.md') == b'changed by a person\n'


def test_a_narrowed_checkpoint_keeps_the_calls_on_record(
    cps: Checkpoints, desk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What an ended call wrote outside the walked folders is not in a narrowed checkpoint:
    the call stays on record, to explain that write to the next walk of the whole desk."""
    write_call(cps, desk, 'toolu_1', ONE, 'notes/first.md')
    write_call(cps, desk, 'toolu_2', ONE, 'memory/second.md')
    on_record = set(calls.load(cps.repository_directory))
    assert {'toolu_1', 'toolu_2'} <= on_record
    write(desk, 'notes/first.md', 'changed by a person\n')
    walks = whole_walks(monkeypatch)
    toolcalls.before_write(cps, ToolCall('toolu_3', TOOL, ONE), 'before', ['notes/first.md'])
    assert walks == []
    assert on_record <= set(calls.load(cps.repository_directory))


def test_narrowable_paths(desk: Path) -> None:
    write(desk, 'notes/a.md', 'a\n')
    (desk / 'memory').mkdir()
    assert declared.narrowable(desk, ['notes/a.md', 'notes/new/b.md', 'memory/c.md'])
    assert not declared.narrowable(desk, [])
    assert not declared.narrowable(desk, ['notes/../memory/c.md'])  # not a desk path
    assert not declared.narrowable(desk, ['notes'])  # a folder
    assert not declared.narrowable(desk, ['notes/a.md/b.md'])  # a file on the way
    os.symlink('a.md', desk / 'notes' / 'link.md')
    assert not declared.narrowable(desk, ['notes/a.md', 'notes/link.md'])
    assert not declared.narrowable(desk, ['notes/new.md', 'notes/link.md'])  # each path looked at
    os.symlink('../memory', desk / 'notes' / 'folder')
    assert not declared.narrowable(desk, ['notes/folder/new.md'])
    os.link(desk / 'notes' / 'a.md', desk / 'memory' / 'a.md')
    assert not declared.narrowable(desk, ['memory/a.md'])


def test_a_turn_begun_when_looked_at_but_not_under_the_lock_walks_the_whole_desk(
    cps: Checkpoints, desk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The turn's start is asked again under the lock (a prune may have taken its checkpoint
    meanwhile): a write found to be the turn's first after all is the turn's start, of the
    whole desk."""
    write(desk, 'memory/people.md', 'Ann\nBob, added by a person\n')
    monkeypatch.setattr(toolcalls, '_begun', lambda config, turn: True)
    walks = whole_walks(monkeypatch)
    toolcalls.before_write(cps, ToolCall('toolu_1', TOOL, ONE), 'before', ['notes/new.md'])
    assert walks == [1]
    assert newest(cps, 'memory/people.md') == b'Ann\nBob, added by a person\n'


def test_a_turn_that_cannot_be_read_without_the_lock_is_looked_at_whole(
    cps: Checkpoints, desk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whether the turn has begun is read without the lock; when the repository refuses that
    read, the write looks at the whole desk (without the lock, as a turn's first write does),
    and its checkpoint holds a person's edit elsewhere."""
    write_call(cps, desk, 'toolu_1', ONE, 'notes/first.md')
    write(desk, 'memory/people.md', 'Ann\nBob, added by a person\n')

    def refused(config: object) -> object:
        raise CheckpointError('refused for the test')

    monkeypatch.setattr(toolcalls, 'open_reading', refused)
    walks = whole_walks(monkeypatch)
    toolcalls.before_write(cps, ToolCall('toolu_2', TOOL, ONE), 'before', ['notes/first.md'])
    assert walks == [1]
    assert newest(cps, 'memory/people.md') == b'Ann\nBob, added by a person\n'
