"""As-of lookups in the library: ``checkpoint_at`` and the ``at=`` of show, diff, log and restore,
on checkpoints taken seconds apart."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone, tzinfo
from pathlib import Path

import pytest
from helpers.builders import seconds_apart, write

from trading_checkpoints import Checkpoint, Checkpoints
from trading_checkpoints.errors import (
    BeforeFirstCheckpointError,
    InvalidArgumentError,
    NoCheckpointsError,
)
from trading_checkpoints.ops import asof
from trading_checkpoints.store.commitinfo import CommitInfo


def when(checkpoint: Checkpoint, seconds: float = 0) -> datetime:
    return datetime.fromisoformat(checkpoint.created_at) + timedelta(seconds=seconds)


@pytest.fixture
def three(cps: Checkpoints, desk: Path) -> list[Checkpoint]:
    """v0, v1, v2 of Memory.md, more than a second apart; the desk holds v2."""
    return seconds_apart(cps, desk, 3)


def test_the_checkpoint_at_a_moment_is_the_newest_taken_at_or_before_it(
    cps: Checkpoints, three: list[Checkpoint]
) -> None:
    for number, checkpoint in enumerate(three):
        assert cps.checkpoint_at(when(checkpoint)) == checkpoint  # at its very second
        assert cps.checkpoint_at(when(checkpoint, 0.5)) == checkpoint  # between two
        assert cps.checkpoint_at(when(checkpoint).isoformat()) == checkpoint, number
    assert cps.checkpoint_at(when(three[-1], 3600)) == three[-1]
    assert cps.checkpoint_at('0s') == three[-1]  # a period before now: now


def test_every_written_form_of_a_moment_names_the_same_instant(
    cps: Checkpoints, three: list[Checkpoint]
) -> None:
    middle = when(three[1]).astimezone(timezone.utc)
    forms = [
        middle,
        middle.isoformat(),
        middle.strftime('%Y-%m-%dT%H:%M:%SZ'),
        middle.strftime('%Y-%m-%dT%H:%M:%Sz'),
        middle.astimezone(timezone(timedelta(hours=5, minutes=30))).isoformat(),
        middle.astimezone(timezone(timedelta(hours=-7))),
    ]
    for form in forms:
        assert cps.checkpoint_at(form) == three[1], form


def test_a_period_counts_back_from_now() -> None:
    now = datetime(2025, 3, 14, 14, 30, tzinfo=timezone.utc).timestamp()
    assert asof.moment('2h', now) == datetime(2025, 3, 14, 12, 30, tzinfo=timezone.utc)
    assert asof.moment('3d', now) == datetime(2025, 3, 11, 14, 30, tzinfo=timezone.utc)
    assert asof.moment(' 90M ', now) == datetime(2025, 3, 14, 13, 0, tzinfo=timezone.utc)
    assert asof.moment('1w', now) == datetime(2025, 3, 7, 14, 30, tzinfo=timezone.utc)


def test_a_period_before_now_finds_the_checkpoint_held_then(cps: Checkpoints, desk: Path) -> None:
    first, middle, newest = seconds_apart(cps, desk, 3, step=600)  # 30, 20, 10 minutes ago
    assert cps.checkpoint_at('5m') == newest
    assert cps.checkpoint_at('15m') == middle
    assert cps.checkpoint_at('0.4h') == first
    with pytest.raises(BeforeFirstCheckpointError) as caught:
        cps.checkpoint_at('1h')
    assert caught.value.first == first.checkpoint_id


@pytest.mark.parametrize(
    'given',
    [
        '2025-03-14T14:30:00',
        datetime(2025, 3, 14, 14, 30),
        'yesterday',
        '3',
        '',
        '2h ago',
        '2025-03-14T14:30:00X',  # only a Z (or z) stands for +00:00
        5,
        '1000000d',  # before the year 1
        '99999999999999999999d',
    ],
)
def test_a_moment_that_is_not_one_is_refused_naming_at(given: object, cps: Checkpoints) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        asof.moment(given)  # type: ignore[arg-type]
    assert caught.value.name == 'at'


def test_a_time_without_an_offset_says_to_add_one(cps: Checkpoints) -> None:
    with pytest.raises(InvalidArgumentError, match='has no offset; add one'):
        cps.checkpoint_at('2025-03-14T14:30:00')


def test_a_moment_before_the_first_checkpoint_is_an_error_naming_the_oldest(
    cps: Checkpoints, three: list[Checkpoint]
) -> None:
    before = when(three[0], -1)
    with pytest.raises(BeforeFirstCheckpointError) as caught:
        cps.checkpoint_at(before)
    error = caught.value
    assert error.details() == {
        'at': before.isoformat(timespec='seconds'),
        'first': three[0].checkpoint_id,
        'first_at': three[0].created_at,
    }
    assert f'the oldest, {three[0].checkpoint_id}, was taken at {three[0].created_at}' in str(error)
    for verb in (
        lambda: cps.show(path='Memory.md', at=before),
        lambda: cps.diff(at=before),
        lambda: cps.log(at=before),
        lambda: cps.restore_with_result(at=before, dry_run=True),
    ):
        with pytest.raises(BeforeFirstCheckpointError):
            verb()


def test_after_a_prune_the_error_says_older_ones_were_pruned(
    cps: Checkpoints, three: list[Checkpoint]
) -> None:
    cps.prune(keep=2)
    with pytest.raises(BeforeFirstCheckpointError) as caught:
        cps.checkpoint_at(when(three[0]))
    assert caught.value.first == three[1].checkpoint_id
    assert 'the oldest kept (older ones were pruned)' in str(caught.value)


def test_no_checkpoints_at_all_is_no_checkpoints(cps: Checkpoints) -> None:
    with pytest.raises(NoCheckpointsError):
        cps.checkpoint_at('0s')


def test_show_diff_and_log_read_the_checkpoint_held_at_the_moment(
    cps: Checkpoints, desk: Path, three: list[Checkpoint]
) -> None:
    first, middle, newest = three
    assert cps.show(path='Memory.md', at=when(middle, 0.5)) == b'v1\n'
    assert cps.show(None, 'Memory.md', at=when(first)) == b'v0\n'
    write(desk, 'Memory.md', 'v3 in the desk\n')
    diff = cps.diff(at=when(middle))  # that checkpoint -> the desk now
    assert (diff.from_id, diff.to_id) == (middle.checkpoint_id, None)
    assert '-v1\n+v3 in the desk\n' in (diff.changes[0].patch or '')
    between = cps.diff(to_id=newest.checkpoint_id, at=when(first, 0.5))
    assert (between.from_id, between.to_id) == (first.checkpoint_id, newest.checkpoint_id)
    logged = cps.log(at=when(middle, 0.9))
    assert [entry.checkpoint for entry in logged] == [middle, first]
    assert [entry.checkpoint for entry in cps.log('Memory.md', 1, at=when(newest))] == [newest]


def test_restore_at_a_moment_puts_that_checkpoint_back(
    cps: Checkpoints, desk: Path, three: list[Checkpoint]
) -> None:
    middle = three[1]
    plan = cps.restore_with_result(at=when(middle, 0.5), dry_run=True)
    assert plan.target_id == middle.checkpoint_id and plan.written == ('Memory.md',)
    assert (desk / 'Memory.md').read_text() == 'v2\n'
    before = cps.restore(at=when(middle).isoformat())
    assert (desk / 'Memory.md').read_text() == 'v1\n'
    assert before == three[2].checkpoint_id  # nothing had changed: undo by restoring it


def test_an_id_and_a_moment_together_are_refused(cps: Checkpoints, three: list[Checkpoint]) -> None:
    newest = three[-1]
    for verb in (
        lambda: cps.show(newest.checkpoint_id, 'Memory.md', at='0s'),
        lambda: cps.diff(newest.checkpoint_id, at='0s'),
        lambda: cps.restore_with_result(newest.checkpoint_id, dry_run=True, at='0s'),
    ):
        with pytest.raises(InvalidArgumentError) as caught:
            verb()
        assert caught.value.name == 'at'
    with pytest.raises(InvalidArgumentError) as caught:
        cps.diff()
    assert caught.value.name == 'from_id'


def _commit(number: int, created_at: str) -> CommitInfo:
    sha = f'{number:040x}'
    parent = (f'{number - 1:040x}'.encode(),) if number else ()
    return CommitInfo(sha, b'0' * 40, parent, created_at, f'checkpoint {number}')  # type: ignore[arg-type]


def test_along_a_history_whose_clock_went_back_the_first_at_or_before_wins(
    tmp_path: Path,
) -> None:
    """Newest first: the clock was set back between 1 and 2, so 2 carries an earlier time than
    1. At 10:30 the desk held 2 (taken at 10:20, after 1 was taken at 11:00 by the wrong clock)."""
    history = [
        _commit(2, '2025-03-14T10:20:00+00:00'),
        _commit(1, '2025-03-14T11:00:00+00:00'),
        _commit(0, '2025-03-14T09:00:00+00:00'),
    ]
    assert asof.find(history, '2025-03-14T10:30:00Z', tmp_path).sha == f'{2:040x}'
    assert asof.find(history, '2025-03-14T10:00:00Z', tmp_path).sha == f'{0:040x}'
    with pytest.raises(BeforeFirstCheckpointError):
        asof.find(history, '2025-03-14T08:00:00Z', tmp_path)


class NoOffset(tzinfo):
    """A zone that gives no offset: a datetime in it is as naive as one without a zone."""

    def utcoffset(self, dt: datetime | None) -> None:
        return None

    def dst(self, dt: datetime | None) -> None:
        return None

    def tzname(self, dt: datetime | None) -> None:
        return None


@pytest.mark.parametrize(
    ('given', 'message'),
    [
        (
            datetime(2025, 3, 14, 14, 30),
            f'the time 2025-03-14T14:30:00 has no offset; give it a zone ({asof.FORMS})',
        ),
        (
            datetime(2025, 3, 14, 14, 30, tzinfo=NoOffset()),
            f'the time 2025-03-14T14:30:00 has no offset; give it a zone ({asof.FORMS})',
        ),
        (5, f'at must be {asof.FORMS}; not 5'),
        ('  ', f"at must be {asof.FORMS}; not '  '"),
        (
            ' 1000000d ',
            f"'1000000d' reaches back past the year 1; give a shorter period, or a time "
            f'({asof.FORMS})',
        ),
        (' yesterday ', f"'yesterday' is not a time; write {asof.FORMS}"),
        (
            '2025-03-14T14:30:00 ',
            "the time '2025-03-14T14:30:00' has no offset; add one (+00:00 or Z for UTC, "
            '+01:00, ...), or give a period before now (2h, 3d)',
        ),
    ],
)
def test_a_refused_moment_says_why_and_keeps_what_was_given(given: object, message: str) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        asof.moment(given)  # type: ignore[arg-type]
    assert str(caught.value) == message
    expected = given.isoformat() if isinstance(given, datetime) else given
    assert (caught.value.name, caught.value.value) == ('at', expected)


def test_no_checkpoints_names_the_repository(tmp_path: Path) -> None:
    with pytest.raises(NoCheckpointsError) as caught:
        asof.find([], '0s', tmp_path)
    assert str(caught.value) == f'no checkpoints yet in {tmp_path}'
    assert caught.value.repository == str(tmp_path)
