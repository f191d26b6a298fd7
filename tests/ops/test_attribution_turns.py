"""Which turn a checkpoint credits with the changes it holds, when the newest checkpoint, the
seal and the announcement name different turns, or a declaration names none.

The writer of the changes beyond the newest checkpoint is the turn the current announcement
or seal names, else the one the newest checkpoint was taken in (when it was taken before an
agent's write). A no-op snapshot declaring the same paths as the write already announced
writes no announcement when it names no turn (it keeps the writer it found), and a new one
when it names another turn. Each test reads the ``Checkpoint-Wrote-By`` record of the
checkpoint that follows. Every step runs in this process (where mutation testing sees the
calls), with the library's snapshot and seal as the hooks drive them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from dulwich.repo import Repo
from helpers.builders import write
from helpers.reading import seal_id_of, seal_of

from trading_checkpoints import Checkpoints
from trading_checkpoints.store import metadata


def _record(repo_dir: Path) -> metadata.Written | None:
    """Who the newest checkpoint says wrote its changes."""
    with Repo(str(repo_dir)) as repo:
        return metadata.written(repo[repo.refs[b'refs/heads/main']].message.decode())


def _seal(repo_dir: Path) -> bytes | None:
    """The newest seal's id (an announcement's, kept beside the seal ref, when current)."""
    return seal_id_of(repo_dir)


def _checkpoints_in_turns(cps: Checkpoints, desk: Path, *turns: str, path: str) -> None:
    """A checkpoint taken in each turn in order (a turn's first snapshot always makes one),
    the desk changed before each; the last one declares ``path``."""
    write(desk, 'Memory.md', 'start\n')
    assert cps.snapshot('start') is not None
    for turn in turns:
        write(desk, 'Memory.md', f'changed before {turn}\n')
        assert cps.snapshot(f'before write {path}', paths=[path], turn=turn) is not None


def test_a_seal_over_another_turns_announcement_credits_that_turn(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    """The newest checkpoint was taken in turn a-1; turn b-1 announced its write over it and
    sealed: the seal names b-1, which wrote the file."""
    _checkpoints_in_turns(cps, desk, 'b-1', 'a-1', path='notes/a.md')
    assert cps.snapshot('before write notes/b.md', paths=['notes/b.md'], turn='b-1') is None
    write(desk, 'notes/b.md', 'written by b-1\n')
    cps.seal()
    assert cps.snapshot('after') is not None
    record = _record(repo_dir)
    assert record is not None
    assert (record.writer.turn, record.paths) == ('b-1', frozenset({'notes/b.md'}))


def test_a_seal_naming_no_turn_leaves_the_newest_checkpoints_turn(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    """A seal made over no announcement names no turn: the write it holds is the turn's the
    newest checkpoint was taken in, and what changed after the seal is nobody's."""
    _checkpoints_in_turns(cps, desk, 'a-1', path='notes/a.md')
    write(desk, 'notes/a.md', 'written by a-1\n')
    cps.seal()
    write(desk, 'notes/x.md', 'a person\n')
    assert cps.snapshot('after') is not None
    record = _record(repo_dir)
    assert record is not None
    assert (record.writer.turn, record.paths) == ('a-1', frozenset({'notes/a.md'}))


@pytest.mark.parametrize('session', [None, 'session-1'], ids=['no-session', 'session-only'])
def test_a_declaration_outside_any_turn_keeps_the_checkpoints_turn(
    cps: Checkpoints, desk: Path, repo_dir: Path, session: str | None
) -> None:
    """The same paths declared again outside any turn (naming a session or not): nothing is
    announced, and the write that follows stays the turn's the newest checkpoint was taken
    in."""
    _checkpoints_in_turns(cps, desk, 'a-1', path='notes/a.md')
    assert cps.snapshot('before write notes/a.md', paths=['notes/a.md'], session=session) is None
    assert _seal(repo_dir) is None, 'an announcement was written'
    write(desk, 'notes/a.md', 'written by a-1\n')
    assert cps.snapshot('after') is not None
    record = _record(repo_dir)
    assert record is not None
    assert (record.writer.turn, record.paths) == ('a-1', frozenset({'notes/a.md'}))


@pytest.mark.parametrize('session', [None, 'session-1'], ids=['no-session', 'session-only'])
def test_a_declaration_outside_any_turn_keeps_the_announced_turn(
    cps: Checkpoints, desk: Path, repo_dir: Path, session: str | None
) -> None:
    """Turn a-1 announced its write; the same paths declared outside any turn (naming a
    session or not) change nothing: the announcement (and its turn) stays."""
    _checkpoints_in_turns(cps, desk, 'a-1', path='notes/a.md')
    assert cps.snapshot('before write notes/b.md', paths=['notes/b.md'], turn='a-1') is None
    announced = _seal(repo_dir)
    assert announced is not None
    assert cps.snapshot('before write notes/b.md', paths=['notes/b.md'], session=session) is None
    assert _seal(repo_dir) == announced, 'the announcement was replaced'
    write(desk, 'notes/b.md', 'written by a-1\n')
    assert cps.snapshot('after') is not None
    record = _record(repo_dir)
    assert record is not None
    assert (record.writer.turn, record.paths) == ('a-1', frozenset({'notes/b.md'}))


def test_the_same_paths_declared_in_another_turn_are_announced_for_it(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    """Turn b-1, under way, declares the paths the newest checkpoint (turn a-1, no session)
    declared: b-1's write is announced, and credited to b-1."""
    _checkpoints_in_turns(cps, desk, 'b-1', 'a-1', path='notes/a.md')
    assert cps.snapshot('before write notes/a.md', paths=['notes/a.md'], turn='b-1') is None
    seal = seal_of(repo_dir)
    assert seal is not None
    message = seal.message
    assert metadata.action_of(message) == 'announce'
    assert metadata.writer_of(message) == metadata.Writer('b-1')
    write(desk, 'notes/a.md', 'written by b-1\n')
    assert cps.snapshot('after') is not None
    record = _record(repo_dir)
    assert record is not None
    assert (record.writer.turn, record.paths) == ('b-1', frozenset({'notes/a.md'}))


def test_the_same_paths_declared_again_in_the_same_turn_announce_nothing(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    """The turn's declaration (turn a-1, no session) is already the newest checkpoint's: no
    announcement is written, and the write stays a-1's."""
    _checkpoints_in_turns(cps, desk, 'a-1', path='notes/a.md')
    assert cps.snapshot('before write notes/a.md', paths=['notes/a.md'], turn='a-1') is None
    assert _seal(repo_dir) is None, 'an announcement was written'
    write(desk, 'notes/a.md', 'written by a-1\n')
    assert cps.snapshot('after') is not None
    record = _record(repo_dir)
    assert record is not None
    assert (record.writer.turn, record.paths) == ('a-1', frozenset({'notes/a.md'}))


@pytest.mark.parametrize(
    'session, credited',
    [(None, {'notes/a.md', 'notes/x.md'}), ('session-1', {'notes/a.md'})],
    ids=['no-session', 'session'],
)
def test_a_checkpoint_in_the_same_turn_without_a_session_credits_it_every_change(
    cps: Checkpoints, desk: Path, repo_dir: Path, session: str | None, credited: set[str]
) -> None:
    """A library or MCP turn names no session, and its tool calls may run at once, each
    sealing when it is done: a checkpoint taken in that turn credits the turn with what
    changed since, a write of its other call after the seal included. A turn that names its
    session is credited with what the seal holds only."""
    _checkpoints_in_turns(cps, desk, 'a-1', path='notes/a.md')
    write(desk, 'notes/a.md', 'written by a-1\n')
    cps.seal()
    write(desk, 'notes/x.md', 'written after the seal\n')
    new_id = cps.snapshot(
        'before write notes/y.md', paths=['notes/y.md'], turn='a-1', session=session
    )
    assert new_id is not None
    record = _record(repo_dir)
    assert record is not None
    assert (record.writer.turn, set(record.paths)) == ('a-1', credited)
