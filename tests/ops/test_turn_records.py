"""What a turn leaves in the history (``ops/turns.py``): its generated id, the checkpoint that
marks its start (with a change that slipped in, and the message it was given), the window in
which a turn counts as started, and what a snapshot naming a turn records."""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone
from functools import partial
from pathlib import Path

import pytest
from helpers.builders import old_then_new, write
from helpers.faults import kill_until_pending

from trading_checkpoints import Checkpoints
from trading_checkpoints.ops import snapshot, toolcalls, turns
from trading_checkpoints.ops.prompts import LABEL_PREFIX
from trading_checkpoints.ops.toolcalls import ToolCall
from trading_checkpoints.store import metadata
from trading_checkpoints.store.metadata import Writer
from trading_checkpoints.store.repo import ShadowRepo


def test_a_generated_turn_id_is_its_utc_start_and_six_random_hex_digits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv('TZ', 'Pacific/Kiritimati')  # UTC+14: a local time is another day
    time.tzset()
    try:
        before = datetime.now(timezone.utc).replace(microsecond=0)
        ids = [turns.new_turn_id() for _ in range(20)]
        after = datetime.now(timezone.utc)
    finally:
        monkeypatch.delenv('TZ')
        time.tzset()
    for turn_id in ids:
        found = re.fullmatch(r'turn-(\d{8}T\d{6})-([0-9a-f]{6})', turn_id)
        assert found is not None, turn_id
        stamp = datetime.strptime(found.group(1), '%Y%m%dT%H%M%S').replace(tzinfo=timezone.utc)
        assert before <= stamp <= after
    assert len(set(ids)) > 1  # the random part differs


def test_marking_a_turns_start_records_a_change_that_slipped_in(
    cps: Checkpoints, desk: Path
) -> None:
    """The start is marked by committing the desk: a change made since the newest checkpoint
    is the turn's pre-image, under the message given."""
    write(desk, 'Memory.md', 'v0')
    cps.snapshot('start')
    write(desk, 'Memory.md', 'slipped in')
    message = metadata.compose('before write', 'write_file', ('Memory.md',), 't-1', None)
    marked = turns.mark(cps.desk_config, message)
    assert cps.show(marked, 'Memory.md') == b'slipped in'
    newest = cps.list()[0]
    assert (newest.checkpoint_id, newest.turn, newest.tool) == (marked, 't-1', 'write_file')
    again = turns.mark(cps.desk_config, message)  # nothing changed: the same files again
    assert cps.list()[0].checkpoint_id == again != marked
    assert cps.show(again, 'Memory.md') == b'slipped in'


def test_a_mark_on_an_unchanged_desk_leaves_the_next_snapshot_a_no_op_without_the_lock(
    cps: Checkpoints, desk: Path
) -> None:
    """The mark commits the newest checkpoint's files again and moves the stat cache to it:
    the next snapshot's look finds nothing to do without the lock (a cache left naming the
    checkpoint before would send it under the lock to rewrite the cache), the same for a
    write tool's hooks at a turn's start."""
    write(desk, 'Memory.md', 'v0')
    time.sleep(0.2)  # past the racy window (statcache.RACY_WINDOW_NS): no scan reads it again
    cps.snapshot('start')
    config = cps.desk_config
    message = metadata.compose('before write', 'write_file', ('Memory.md',), 't-1', None)
    marked = turns.mark(config, message)
    assert cps.list()[0].checkpoint_id == marked
    looked = snapshot.look(config, 'noop', announce=False)
    assert looked is not None and looked.answer is not None
    assert looked.answer.checkpoint_id is None
    call = ToolCall('call-1', 'claude:Write', Writer('t-2', 'S'))
    started = toolcalls.before_write(cps, call, 'before Write', ['Memory.md'])
    assert started is not None and cps.list()[0].checkpoint_id == started != marked
    looked = snapshot.look(config, 'noop', announce=False)
    assert looked is not None and looked.answer is not None


def test_a_turn_counts_as_started_within_the_newest_200_checkpoints(
    cps: Checkpoints, desk: Path
) -> None:
    """A snapshot naming a turn on an unchanged desk marks the turn's start again once none of
    the newest 200 checkpoints carries it (the hooks' and the MCP server's window)."""
    write(desk, 'Memory.md', 'v0')
    cps.snapshot('start', turn='t-far')
    cps.snapshot('start', turn='t-near')
    for index in range(199):
        turns.mark(cps.desk_config, f'filler {index}')
    # t-near is the 200th newest checkpoint, t-far the 201st
    assert turns.started(cps.repository_directory, 't-near')
    assert not turns.started(cps.repository_directory, 't-far')
    assert cps.snapshot('again', turn='t-near') is None
    assert turns.snapshot_in_turn(cps, 't-near', 'again') is None
    assert cps.snapshot('again', turn='t-far') is not None  # t-near is the 201st newest now
    marked = turns.snapshot_in_turn(cps, 't-near', 'again', label='begun again')
    assert marked is not None and LABEL_PREFIX + 'begun again' in messages(cps)[marked]


def test_a_shorter_window_asked_for_is_the_one_used(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'v0')
    cps.snapshot('start', turn='t-1')
    turns.mark(cps.desk_config, 'filler')
    assert turns.started(cps.repository_directory, 't-1', lookback=2)
    assert not turns.started(cps.repository_directory, 't-1', lookback=1)
    assert turns.snapshot_in_turn(cps, 't-1', 'again', lookback=2) is None
    marked = turns.snapshot_in_turn(cps, 't-1', 'again', lookback=1, tool='x', session='s-1')
    assert recorded_as(cps, marked) == ('again', 'x', (), 't-1', 's-1')


def test_no_repository_has_no_turn_started(tmp_path: Path) -> None:
    assert not turns.started(tmp_path / 'missing.git', 't-1')
    assert not os.path.exists(tmp_path / 'missing.git')


def test_a_snapshot_in_a_turn_records_its_tool_and_no_label_unless_given(
    cps: Checkpoints, desk: Path
) -> None:
    write(desk, 'Memory.md', 'v0')
    first = turns.snapshot_in_turn(cps, 't-1', 'before write', tool='write_file')
    newest = cps.list()[0]
    assert (newest.checkpoint_id, newest.tool, newest.turn) == (first, 'write_file', 't-1')
    [turn] = cps.turns()
    assert turn.label == ''


def messages(cps: Checkpoints) -> dict[str, str]:
    """Each checkpoint's whole commit message, by its id."""
    repo = ShadowRepo.open(cps.repository_directory)
    assert repo is not None
    try:
        return {info.short_id: info.message for info in repo.history()}
    finally:
        repo.close()


def recorded_as(cps: Checkpoints, checkpoint_id: str | None) -> tuple[object, ...]:
    """What a checkpoint records of the snapshot that took it."""
    assert checkpoint_id is not None
    [found] = [item for item in cps.list(limit=None) if item.checkpoint_id == checkpoint_id]
    meta = metadata.parse(messages(cps)[checkpoint_id])
    return found.reason, found.tool, found.paths, found.turn, meta.session


def test_each_snapshot_of_a_turn_records_what_it_was_given(cps: Checkpoints, desk: Path) -> None:
    """The tool, the paths (one path given as a string is one path), the turn and the session
    are recorded whichever way the snapshot is taken: the turn's start marked on an unchanged
    desk, its first snapshot of a changed desk, and each later one; a blank reason is
    ``snapshot``; a turn without a label has no label line."""
    write(desk, 'Memory.md', 'v0')
    cps.snapshot('start')
    call = partial(turns.snapshot_in_turn, cps, 't-1', session='s-1')
    marked = call('before write', tool='write_file', paths=['notes/a.md'])
    assert recorded_as(cps, marked) == (
        'before write',
        'write_file',
        ('notes/a.md',),
        't-1',
        's-1',
    )
    write(desk, 'notes/a.md', 'a')
    later = call('before edit', tool='edit_file', paths='Memory.md')
    assert recorded_as(cps, later) == ('before edit', 'edit_file', ('Memory.md',), 't-1', 's-1')
    write(desk, 'notes/b.md', 'b')
    with cps.turn() as turn:
        first = turn.snapshot('  ', tool='write_file', paths='notes/b.md')
        assert len(cps.list(limit=None)) == 4  # one checkpoint, not a mark besides
        write(desk, 'notes/c.md', 'c')
        second = turn.snapshot('before c', tool='shell', paths=('notes/c.md', 'notes/d.md'))
        assert turn.snapshot('nothing changed', tool='shell') is None
        assert turn.started and turn.checkpoint_ids == [first, second]
    assert recorded_as(cps, first) == (
        'snapshot',
        'write_file',
        ('notes/b.md',),
        turn.turn_id,
        None,
    )
    assert recorded_as(cps, second) == (
        'before c',
        'shell',
        ('notes/c.md', 'notes/d.md'),
        turn.turn_id,
        None,
    )
    with cps.turn() as unchanged:
        mark = unchanged.snapshot('before write', tool='write_file', paths='notes/e.md')
    assert recorded_as(cps, mark) == (
        'before write',
        'write_file',
        ('notes/e.md',),
        unchanged.turn_id,
        None,
    )
    assert all(LABEL_PREFIX.strip() not in message for message in messages(cps).values())


def test_a_snapshot_marking_a_turns_start_says_so(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'v0')
    cps.snapshot('start')
    result = cps.snapshot_with_result('before write', turn='t-1')
    assert result.checkpoint_id is not None and result.turn_start is True
    write(desk, 'Memory.md', 'v1')
    result = cps.snapshot_with_result('before write', turn='t-2')
    assert result.checkpoint_id is not None and result.turn_start is False


@pytest.mark.parametrize(('size', 'kept'), [(200, 200), (201, 199), (300, 199)])
def test_a_turns_label_is_one_line_of_at_most_200_characters(
    cps: Checkpoints, desk: Path, size: int, kept: int
) -> None:
    write(desk, 'Memory.md', 'v0')
    label = 'x' * (size - 1) + 'y'
    with cps.turn(label) as turn:
        turn.snapshot('before write')
    [found] = cps.turns()
    assert found.label == (label if kept == size else label[:kept] + '…')


class Turnstile:
    """Stands in for a turn's lock: counts the callers that reached it, and runs ``between``
    when the first of them lets go."""

    def __init__(self, between: Callable[[], object]) -> None:
        self.lock = threading.Lock()
        self.reached = 0
        self.released = 0
        self.between = between

    def __enter__(self) -> Turnstile:
        self.reached += 1
        self.lock.acquire()
        return self

    def __exit__(self, *_: object) -> None:
        self.released += 1
        if self.released == 1:
            self.between()
        self.lock.release()


def test_parallel_snapshots_of_a_turn_each_record_what_they_were_given(
    cps: Checkpoints, desk: Path
) -> None:
    """Two tool calls of one turn snapshot at once: one marks the turn's start, the other,
    which waited for it, snapshots the write made meanwhile; each records its own reason,
    tool and paths."""
    write(desk, 'Memory.md', 'v0')
    cps.snapshot('start')
    with cps.turn('parallel') as turn:
        turnstile = Turnstile(lambda: write(desk, 'notes/between.md', 'written meanwhile'))
        turn._lock = turnstile  # type: ignore[assignment]
        calls = [
            ('before a', 'write_file', 'notes/a.md'),
            ('before b', 'edit_file', 'notes/b.md'),
        ]
        threads = [
            threading.Thread(target=turn.snapshot, args=(reason,), kwargs={'tool': t, 'paths': p})
            for reason, t, p in calls
        ]
        with turnstile.lock:  # both calls pass the turn's first check before either goes on
            for thread in threads:
                thread.start()
            deadline = time.monotonic() + 10
            while turnstile.reached < 2:
                assert time.monotonic() < deadline
                time.sleep(0.001)
        for thread in threads:
            thread.join(10)
    recorded = {recorded_as(cps, checkpoint) for checkpoint in turn.checkpoint_ids}
    assert recorded == {(r, t, (p,), turn.turn_id, None) for r, t, p in calls}


def test_a_turn_reopened_under_a_recorded_id_marks_its_start_with_what_it_was_given(
    cps: Checkpoints, desk: Path
) -> None:
    """A turn opened again under a message id the history already holds takes its first
    snapshot anew; on an unchanged desk that marks its start, with the tool and paths given."""
    write(desk, 'Memory.md', 'v0')
    with cps.turn(message_id='msg_1') as turn:
        turn.snapshot('first time')
    with cps.turn(message_id='msg_1') as again:
        marked = again.snapshot('again', tool='write_file', paths='notes/a.md')
    assert recorded_as(cps, marked) == ('again', 'write_file', ('notes/a.md',), 'msg_1', None)


def test_a_turns_first_snapshot_reports_the_interrupted_restore_it_completed(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    """A turn's first snapshot is taken as any snapshot is: a restore a crash interrupted is
    completed first and told in ``last_recovery``; the start is marked on the restored desk."""
    old = old_then_new(cps, desk)
    kill_until_pending(repo_dir, partial(cps.restore, old))
    with cps.turn('tidy the notes', message_id='t-1') as turn:
        marked = turn.snapshot('before write')
    recovery = cps.last_recovery
    assert recovery is not None and recovery.target_id == old[:7]
    newest = cps.list()[0]
    assert (newest.checkpoint_id, newest.turn) == (marked, 't-1')
    assert {cps.show(marked, f'notes/n{index}.md') for index in range(10)} == {b'old\n'}
