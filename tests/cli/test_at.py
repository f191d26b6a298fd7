"""``--at TIME`` on show, diff, log and restore, run as a user's shell runs the command, on
checkpoints taken seconds apart."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from helpers.builders import checkpoints_in, seconds_apart, write
from helpers.cli import checkpoints

from trading_checkpoints import Checkpoint, Checkpoints


def moment(checkpoint: Checkpoint, seconds: float = 0) -> str:
    return (datetime.fromisoformat(checkpoint.created_at) + timedelta(seconds=seconds)).isoformat()


@pytest.fixture
def three(cps: Checkpoints, desk: Path) -> list[Checkpoint]:
    return seconds_apart(cps, desk, 3)


def test_show_at_prints_the_file_held_then_and_names_the_checkpoint(
    workspace: Path, three: list[Checkpoint]
) -> None:
    middle = three[1]
    done = checkpoints('show', '--at', moment(middle, 0.5), 'Memory.md', workspace=workspace)
    assert done.returncode == 0, done.stderr
    assert done.stdout == 'v1\n'
    newer = three[2]  # the desk changed after the middle one: when is not recorded
    assert done.stderr == (
        f'note: at {moment(middle, 0.5)} the desk held checkpoint {middle.checkpoint_id}, '
        f'taken {middle.created_at}: version 1\n'
        f'note: the desk changed after it, unrecorded until checkpoint {newer.checkpoint_id} '
        f'({newer.created_at}): it may have differed at {moment(middle, 0.5)}\n'
    )
    shown = checkpoints(
        'show', '--at', moment(three[0]), 'Memory.md', '--json', workspace=workspace
    )
    assert json.loads(shown.stdout)['id'] == three[0].checkpoint_id
    assert json.loads(shown.stdout)['content'] == 'v0\n'


def test_diff_at_compares_that_checkpoint_with_the_desk_now(
    workspace: Path, desk: Path, three: list[Checkpoint]
) -> None:
    write(desk, 'Memory.md', 'v3, not yet recorded\n')
    done = checkpoints('diff', '--at', moment(three[0], 0.9), workspace=workspace)
    assert done.returncode == 0, done.stderr
    assert '-v0\n+v3, not yet recorded\n' in done.stdout
    data = json.loads(
        checkpoints('diff', '--at', moment(three[1]), '--json', workspace=workspace).stdout
    )
    assert (data['from'], data['to']) == (three[1].checkpoint_id, None)
    # An ID given with --at is the other side.
    other = checkpoints(
        'diff', '--at', moment(three[0]), three[1].checkpoint_id, '--json', workspace=workspace
    )
    assert (json.loads(other.stdout)['from'], json.loads(other.stdout)['to']) == (
        three[0].checkpoint_id,
        three[1].checkpoint_id,
    )


def test_log_at_starts_from_the_checkpoint_held_then(
    workspace: Path, three: list[Checkpoint]
) -> None:
    done = checkpoints('log', '--at', moment(three[1], 0.5), '--json', workspace=workspace)
    assert [entry['id'] for entry in json.loads(done.stdout)] == [
        three[1].checkpoint_id,
        three[0].checkpoint_id,
    ]


def test_restore_at_puts_back_what_the_desk_held_then(
    workspace: Path, desk: Path, three: list[Checkpoint]
) -> None:
    dry = checkpoints(
        'restore', '--at', moment(three[0]), '--dry-run', '--json', workspace=workspace
    )
    assert json.loads(dry.stdout)['target_id'] == three[0].checkpoint_id
    assert (desk / 'Memory.md').read_text() == 'v2\n'
    done = checkpoints('restore', '--at', moment(three[0], 0.5), workspace=workspace)
    assert done.returncode == 0, done.stderr
    assert (desk / 'Memory.md').read_text() == 'v0\n'
    assert f'checkpoint {three[0].checkpoint_id}' in done.stderr


def test_a_time_before_the_first_checkpoint_is_a_clear_error(
    workspace: Path, three: list[Checkpoint]
) -> None:
    early = moment(three[0], -60)
    done = checkpoints('show', '--at', early, 'Memory.md', workspace=workspace)
    assert done.returncode == 1 and done.stdout == ''
    assert done.stderr.startswith(f'error: no checkpoint was taken at or before {early}')
    assert f'the oldest, {three[0].checkpoint_id}, was taken at {three[0].created_at}' in (
        done.stderr
    )
    body = json.loads(checkpoints('diff', '--at', early, '--json', workspace=workspace).stderr)
    assert body['type'] == 'BeforeFirstCheckpointError'
    assert body['fields'] == {
        'at': early,
        'first': three[0].checkpoint_id,
        'first_at': three[0].created_at,
    }


@pytest.mark.parametrize(
    ('args', 'message'),
    [
        (['restore', '--at', '0s', 'abcdef1'], 'give a checkpoint ID or --at TIME, not both'),
        (['show', '--at', '0s', 'abcdef1', 'Memory.md'], 'show takes PATH (with --at)'),
        (['show', 'Memory.md'], 'show takes ID and PATH'),
        (['diff', '--at', '0s', 'abcdef1', 'abcdef2'], 'with --at, give one ID at most'),
    ],
)
def test_an_id_and_a_time_together_are_a_usage_error(
    workspace: Path, three: list[Checkpoint], args: list[str], message: str
) -> None:
    done = checkpoints(*args, workspace=workspace)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr


def test_a_time_without_an_offset_is_refused_with_the_forms_it_takes(
    workspace: Path, three: list[Checkpoint]
) -> None:
    done = checkpoints('log', '--at', '2025-03-14T14:30:00', workspace=workspace)
    assert done.returncode == 1
    assert 'has no offset; add one (+00:00 or Z for UTC' in done.stderr


def test_a_period_before_now_is_counted_back_from_now(workspace: Path, desk: Path) -> None:
    first, middle, newest = seconds_apart(checkpoints_in(workspace), desk, 3, step=600)
    done = checkpoints('show', '--at', '15m', 'Memory.md', workspace=workspace)
    assert (done.returncode, done.stdout) == (0, 'v1\n'), done.stderr
    assert f'held checkpoint {middle.checkpoint_id}' in done.stderr
