"""What the turn calls refuse (``ops/turns.py``): each bad argument is an ``InvalidArgumentError``
naming the argument and the value given, with a message that says what was wanted; the
bounds themselves are accepted."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.builders import write

from trading_checkpoints import Checkpoints
from trading_checkpoints.errors import InvalidArgumentError, UnknownTurnError
from trading_checkpoints.ops import turns


@pytest.mark.parametrize('bad', [-1, True, '3', 2.0])
def test_a_limit_of_turns_must_be_a_whole_number_of_at_least_0(
    cps: Checkpoints, desk: Path, bad: object
) -> None:
    write(desk, 'Memory.md', 'v0')
    cps.snapshot('start', turn='t-1')
    with pytest.raises(InvalidArgumentError) as raised:
        cps.turns(limit=bad)  # type: ignore[arg-type]
    assert (raised.value.name, raised.value.value) == ('limit', bad)
    assert str(raised.value) == f'limit must be a whole number of at least 0, not {bad!r}'
    assert cps.turns(limit=0) == []
    assert [turn.turn_id for turn in cps.turns(limit=None)] == ['t-1']


def test_a_turns_reason_must_be_a_string(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'v0')
    with cps.turn('label') as turn:
        with pytest.raises(InvalidArgumentError) as raised:
            turn.snapshot(b'bytes')  # type: ignore[arg-type]
    assert (raised.value.name, raised.value.value) == ('reason', b'bytes')
    assert str(raised.value) == 'reason must be a string, not bytes'
    assert not turn.started


@pytest.mark.parametrize('bad', ['', '  ', 7, None])
def test_a_turn_id_to_look_up_must_be_a_non_empty_string(
    cps: Checkpoints, desk: Path, bad: object
) -> None:
    write(desk, 'Memory.md', 'v0')
    cps.snapshot('start', turn='t-1')
    with pytest.raises(InvalidArgumentError) as raised:
        turns.first_checkpoint(cps, bad)  # type: ignore[arg-type]
    assert (raised.value.name, raised.value.value) == ('turn_id', bad)
    assert str(raised.value) == f'a turn id must be a non-empty string, not {bad!r}'


def test_an_unknown_turn_is_named_with_where_to_find_the_turns(
    cps: Checkpoints, desk: Path
) -> None:
    write(desk, 'Memory.md', 'v0')
    first = cps.snapshot('start', turn='t-1')
    assert turns.first_checkpoint(cps, ' t-1 ') == first
    with pytest.raises(UnknownTurnError) as raised:
        turns.first_checkpoint(cps, 't-2')
    assert raised.value.turn == 't-2'
    assert str(raised.value) == (
        f"no turn 't-2' in {cps.repository_directory} (`checkpoints turns` lists them)"
    )
