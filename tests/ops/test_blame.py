"""Blame: every line of a file with the checkpoint that introduced it, its time and who wrote it,
on real repositories written as the hooks, a person and ``checkpoints watch`` write them."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from helpers import authors
from helpers.authors import append, hook_write
from helpers.builders import StoreClock, write
from helpers.gitcli import git, needs_git
from hypothesis import given, settings
from hypothesis import strategies as st

from trading_checkpoints import Checkpoints
from trading_checkpoints.errors import InvalidArgumentError, NotInCheckpointError
from trading_checkpoints.ops.blame import Blame, carry


def who(result: Blame) -> list[tuple[str, str | None, str | None, str | None, str]]:
    return [
        (line.origin.author.kind, line.origin.author.turn, line.origin.author.tool,
         line.origin.author.label, line.text)
        for line in result.lines
    ]  # fmt: skip


@pytest.fixture
def four_writers(cps: Checkpoints, desk: Path) -> dict[str, str]:
    return authors.four_writers(cps, desk)


def test_blame_names_two_turns_a_person_and_watch(
    cps: Checkpoints, four_writers: dict[str, str]
) -> None:
    result = cps.blame('Memory.md')
    assert result.path == 'Memory.md' and result.checkpoint_id is None  # the desk now
    assert who(result) == [
        ('unknown', None, None, None, '# Memory'),  # already there at the first checkpoint
        ('agent', 't-1', 'claude:Write', 'add AAPL to the watchlist', '- Watchlist: AAPL'),
        ('agent', 't-2', 'claude:Write', 'set the risk limit', '- Risk limit: 2% per trade'),
        ('outside', None, None, None, '- my own note'),
        ('watch', None, 'watch', None, '- from the nightly job'),
    ]
    order = ['start', 't-1', 't-2', 'person', 'watch']
    assert [line.origin.checkpoint_id for line in result.lines] == [four_writers[k] for k in order]
    times = [line.origin.created_at for line in result.lines]  # when each was recorded
    assert times == [f'2025-03-14T14:{30 + m}:00+00:00' for m in (0, 2, 3, 4, 5)]
    sessions = [line.origin.author.session for line in result.lines]
    assert sessions == [None, 'S1', 'S2', None, None]
    assert {line.origin.state for line in result.lines} == {'checkpoint'}


@needs_git
def test_each_line_s_checkpoint_is_the_first_that_holds_it_as_real_git_reads_them(
    cps: Checkpoints, four_writers: dict[str, str]
) -> None:
    for line in cps.blame('Memory.md').lines:
        checkpoint = line.origin.checkpoint_id
        assert line.text in git(cps.repository_directory, 'show', f'{checkpoint}:Memory.md')
        parents = git(cps.repository_directory, 'log', '-1', '--format=%P', checkpoint).split()
        if parents:
            before = git(cps.repository_directory, 'show', f'{parents[0]}:Memory.md')
            assert line.text not in before.splitlines(), line


def test_at_blames_an_older_version(cps: Checkpoints, four_writers: dict[str, str]) -> None:
    older = cps.blame('Memory.md', four_writers['t-2'])
    assert older.checkpoint_id == four_writers['t-2']
    assert [line.text for line in older.lines] == [
        '# Memory',
        '- Watchlist: AAPL',
        '- Risk limit: 2% per trade',
    ]
    assert [line.origin.author.turn for line in older.lines] == [None, 't-1', 't-2']
    at_time = cps.blame('Memory.md', at='2025-03-14T14:34:30+00:00')  # the person's checkpoint
    assert at_time.checkpoint_id == four_writers['person']
    assert [line.origin.author.kind for line in at_time.lines][-1] == 'outside'
    assert len(at_time.lines) == 4


def test_a_restore_undo_or_redo_introduces_no_line(
    cps: Checkpoints, desk: Path, four_writers: dict[str, str]
) -> None:
    before = who(cps.blame('Memory.md'))
    origins = [line.origin.checkpoint_id for line in cps.blame('Memory.md').lines]
    cps.restore(four_writers['start'])  # every line but the first is gone
    assert [line.text for line in cps.blame('Memory.md').lines] == ['# Memory']
    cps.undo()  # and back: each keeps the checkpoint and the writer it had
    again = cps.blame('Memory.md')
    assert who(again) == before
    assert [line.origin.checkpoint_id for line in again.lines] == origins
    cps.restore(four_writers['t-2'])  # an older version put back: its lines' origins too
    older = cps.blame('Memory.md')
    assert [line.origin.checkpoint_id for line in older.lines] == origins[:3]


def test_a_person_s_edit_before_the_turn_s_write_was_recorded_leaves_the_lines_uncertain(
    cps: Checkpoints, desk: Path
) -> None:
    write(desk, 'Memory.md', '# Memory\n')
    cps.snapshot('start')
    hook_write(cps, 't-1', 'add AAPL', 'S1', '- Watchlist: AAPL')
    append(desk, '- my own note')  # after the seal, before any checkpoint holds either
    cps.snapshot('a manual snapshot')
    kinds = [
        (line.origin.author.kind, line.origin.author.turn) for line in cps.blame('Memory.md').lines
    ]
    assert kinds == [('unknown', None), ('uncertain', 't-1'), ('uncertain', 't-1')]


def test_the_desk_s_lines_not_in_a_checkpoint_yet(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', '# Memory\n')
    cps.snapshot('start')
    hook_write(cps, 't-1', 'add AAPL', 'S1', '- Watchlist: AAPL')  # sealed, not checkpointed
    append(desk, '- my own note')  # then a person's, not recorded anywhere yet
    lines = cps.blame('Memory.md').lines
    assert [(line.origin.state, line.origin.author.kind) for line in lines] == [
        ('checkpoint', 'unknown'),
        ('seal', 'agent'),
        ('desk', 'outside'),
    ]
    assert lines[1].origin.author.turn == 't-1' and lines[1].origin.checkpoint_id is not None
    assert lines[2].origin.checkpoint_id is None and lines[2].origin.created_at is None


def test_a_tool_s_declared_write_outside_any_turn_is_the_agent_s(
    cps: Checkpoints, desk: Path
) -> None:
    write(desk, 'Memory.md', '# Memory\n')
    cps.snapshot('before write_file Memory.md', tool='write_file', paths=['Memory.md'])
    append(desk, '- written by the tool')
    cps.snapshot('before write_file notes/a.md', tool='write_file', paths=['notes/a.md'])
    append(desk, '- not declared: someone else')
    cps.snapshot('later')
    authors = [line.origin.author for line in cps.blame('Memory.md').lines]
    assert [(a.kind, a.tool, a.turn) for a in authors] == [
        ('unknown', None, None),
        ('agent', 'write_file', None),
        ('outside', None, None),
    ]


def test_a_missing_file_a_folder_and_a_binary_file_are_clear_errors(
    cps: Checkpoints, desk: Path
) -> None:
    write(desk, 'Memory.md', '# Memory\n')
    write(desk, 'notes/chart.png', b'\x89PNG\0\0')
    first = cps.snapshot('start')
    with pytest.raises(NotInCheckpointError, match="holds no file 'notes/plan.md'"):
        cps.blame('notes/plan.md', first)
    with pytest.raises(NotInCheckpointError, match="the desk holds no file 'notes'"):
        cps.blame('notes')
    with pytest.raises(InvalidArgumentError, match='binary file'):
        cps.blame('notes/chart.png')
    (desk / 'Memory.md').unlink()
    with pytest.raises(NotInCheckpointError, match="the desk holds no file 'Memory.md'"):
        cps.blame('Memory.md')
    assert cps.blame('Memory.md', first).lines[0].text == '# Memory'


@needs_git
def test_with_unique_lines_and_no_restores_each_line_s_checkpoint_is_git_blame_s(
    cps: Checkpoints, desk: Path
) -> None:
    """git blame is the oracle on a linear history of edits to lines that never repeat."""
    rng = random.Random(7)
    lines: list[str] = []
    fresh = iter(range(10**6))
    for step in range(60):
        for _ in range(rng.randint(1, 3)):
            where = rng.randint(0, len(lines))
            action = rng.choice(['insert', 'insert', 'delete', 'replace'])
            if action == 'insert' or not lines:
                lines.insert(where, f'line {next(fresh)}')
            elif action == 'delete':
                del lines[min(where, len(lines) - 1)]
            else:
                lines[min(where, len(lines) - 1)] = f'line {next(fresh)}'
        write(desk, 'Memory.md', ''.join(line + '\n' for line in lines))
        cps.snapshot(f'step {step}')
    ours = [
        line.origin.checkpoint_id
        for line in cps.blame('Memory.md', cps.list(1)[0].checkpoint_id).lines
    ]
    porcelain = git(
        cps.repository_directory, 'blame', '--first-parent', '-s', '-l', 'HEAD', '--', 'Memory.md'
    )
    theirs = [row.split()[0].lstrip('^')[:7] for row in porcelain.splitlines()]
    assert ours == theirs


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from('abcdef'), max_size=30),
    st.lists(st.sampled_from('abcdef'), max_size=30),
)
def test_carry_keeps_each_kept_line_s_mark_in_order_and_marks_the_rest_new(
    old: list[str], new: list[str]
) -> None:
    old_lines = [line.encode() for line in old]
    new_lines = [line.encode() for line in new]
    marks = list(range(len(old)))  # each old line its own origin
    carried = carry(old_lines, marks, new_lines, -1)
    assert len(carried) == len(new)
    kept = [(index, mark) for index, mark in enumerate(carried) if mark != -1]
    # The kept lines are old lines of the same text, in the order they were in.
    assert [mark for _, mark in kept] == sorted(mark for _, mark in kept)
    assert len({mark for _, mark in kept}) == len(kept)
    assert all(old[mark] == new[index] for index, mark in kept)
    # As many are kept as the longest common subsequence difflib finds between the middles
    # keeps: at least every line the two share at both ends.
    shared = 0
    while shared < min(len(old), len(new)) and old[shared] == new[shared]:
        shared += 1
    assert all(carried[i] == i for i in range(shared))


def test_at_a_moment_after_the_agent_s_sealed_write_blames_that_write(
    cps: Checkpoints, desk: Path
) -> None:
    with StoreClock(authors.START) as clock:
        write(desk, 'Memory.md', '# Memory\n')
        cps.snapshot('start')
        clock.at += 60
        hook_write(cps, 't-1', 'add AAPL', 'S1', '- Watchlist: AAPL')  # sealed, not checkpointed
        clock.at += 60
        append(desk, '- a person, later')
    held = cps.held_at('2025-03-14T14:31:30Z')
    assert held.sealed
    lines = cps.blame('Memory.md', at='2025-03-14T14:31:30Z').lines
    assert [line.text for line in lines] == ['# Memory', '- Watchlist: AAPL']
    assert (lines[1].origin.state, lines[1].origin.author.kind) == ('seal', 'agent')
    assert lines[1].origin.author.turn == 't-1'
    assert lines[1].origin.checkpoint_id == held.checkpoint.checkpoint_id
