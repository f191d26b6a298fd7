"""A dry run computes the run's decision: where the run refuses, its dry run refuses too, with the
same error kind and fields (so the same exit status and hint), its message saying it would; and
where the run goes ahead, the dry run's plan is what the run then does."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.builders import write
from helpers.cli import checkpoints
from helpers.reading import tree_of

from trading_checkpoints import Checkpoints
from trading_checkpoints.errors import (
    ExternalChangesError,
    TurnConflictError,
    UnfinishedRestoreError,
    UntrackedInTheWayError,
)
from trading_checkpoints.ops.engine import PRIVATE_DIR

Verb = Callable[[bool], object]  # the verb, dry (True) or not


def persons_edit_over_a_sealed_write(cps: Checkpoints, desk: Path) -> Verb:
    write(desk, 'Memory.md', 'v0\n')
    start = cps.snapshot('start')
    with cps.guard('write_file notes/plan.md'):
        write(desk, 'notes/plan.md', 'SELL\n')
    write(desk, 'Memory.md', 'a person wrote this\n')
    return lambda dry: cps.restore(start, dry_run=dry, on_external='refuse')


def two_turns_wrote_one_file(cps: Checkpoints, desk: Path) -> Verb:
    write(desk, 'Memory.md', 'v0\n')
    for turn, text in (('msg_1', 'v1\n'), ('msg_2', 'v2\n')):
        with cps.turn(turn, message_id=turn), cps.guard('write_file Memory.md'):
            write(desk, 'Memory.md', text)
    return lambda dry: cps.restore_turn('msg_1', dry_run=dry)


def persons_edit_over_the_step_undone(cps: Checkpoints, desk: Path) -> Verb:
    write(desk, 'Memory.md', 'v0\n')
    cps.snapshot('before write_file Memory.md', paths=['Memory.md'])
    write(desk, 'Memory.md', 'the agent wrote this\n')
    cps.seal()
    write(desk, 'Memory.md', 'and a person changed it\n')
    return lambda dry: cps.undo(dry_run=dry)


def agent_wrote_since_the_undo(cps: Checkpoints, desk: Path) -> Verb:
    write(desk, 'Memory.md', 'v0\n')
    cps.snapshot('v0')
    write(desk, 'Memory.md', 'v1\n')
    cps.snapshot('v1')
    cps.undo()
    cps.snapshot('before write_file Memory.md', paths=['Memory.md'])  # no change: announced
    write(desk, 'Memory.md', 'the agent wrote again\n')
    return lambda dry: cps.redo(dry_run=dry)


def untracked_file_in_the_way(cps: Checkpoints, desk: Path) -> Verb:
    write(desk, 'skills/agent/tool.md', 'a skill\n')
    start = cps.snapshot('start')
    (desk / 'skills' / 'agent' / 'tool.md').unlink()
    (desk / 'skills' / 'agent').rmdir()
    (desk / 'skills').rmdir()
    write(desk, 'skills', 'an untracked file where the folder was\n')
    return lambda dry: cps.restore(start, dry_run=dry)


def restore_record_pending(cps: Checkpoints, desk: Path) -> Verb:
    for number in range(3):
        write(desk, 'Memory.md', f'v{number}\n')
        cps.snapshot(f'v{number}')
    (cps.repository_directory / PRIVATE_DIR / 'restore-journal.part').write_text('{}')
    return lambda dry: cps.prune(keep=1, dry_run=dry)


CASES = {
    'restore --refuse-external': (persons_edit_over_a_sealed_write, ExternalChangesError),
    'restore-turn over a later turn': (two_turns_wrote_one_file, TurnConflictError),
    'undo over a person': (persons_edit_over_the_step_undone, ExternalChangesError),
    'redo over the agent': (agent_wrote_since_the_undo, ExternalChangesError),
    'restore through an untracked file': (untracked_file_in_the_way, UntrackedInTheWayError),
    'prune under a restore record': (restore_record_pending, UnfinishedRestoreError),
}


@pytest.mark.parametrize('case', list(CASES))
def test_the_dry_run_refuses_where_the_run_does_with_the_same_kind_and_fields(
    cps: Checkpoints, desk: Path, case: str
) -> None:
    build, kind = CASES[case]
    verb = build(cps, desk)
    before, history = tree_of(desk), cps.list(None)
    with pytest.raises(kind) as planned:
        verb(True)
    with pytest.raises(kind) as refused:
        verb(False)
    assert type(planned.value) is type(refused.value)
    assert planned.value.details() == refused.value.details()
    assert str(planned.value).startswith('would refuse'), planned.value
    assert 'would refuse' not in str(refused.value)
    assert str(planned.value).replace('would refuse to', 'refusing to', 1).replace(
        'would refuse: ', '', 1
    ) == str(refused.value), 'the same refusal, worded for a dry run'
    assert tree_of(desk) == before and cps.list(None) == history, 'nothing was changed'


def test_the_redo_over_the_agent_s_own_changes_names_force_only(
    cps: Checkpoints, desk: Path
) -> None:
    verb = agent_wrote_since_the_undo(cps, desk)
    with pytest.raises(ExternalChangesError) as refused:
        verb(False)
    assert refused.value.overrides == ('overwrite',)
    with pytest.raises(ExternalChangesError) as conflict:
        persons_edit_over_the_step_undone(cps, desk)(False)
    assert conflict.value.overrides == ('overwrite', 'keep')


def test_where_the_run_goes_ahead_the_dry_run_s_plan_is_what_it_does(
    cps: Checkpoints, desk: Path
) -> None:
    two_turns_wrote_one_file(cps, desk)
    for options in ({'force': True}, {'on_external': 'keep'}):
        plan = cps.restore_turn('msg_1', dry_run=True, **options)  # type: ignore[arg-type]
        done = cps.restore_turn('msg_1', **options)  # type: ignore[arg-type]
        fields = ('written', 'deleted', 'created', 'external', 'kept', 'attribution')
        assert [getattr(plan, f) for f in fields] == [getattr(done, f) for f in fields], options
        cps.restore(done.before_id)


@pytest.mark.parametrize(
    ('build', 'args', 'hint'),
    [
        (
            two_turns_wrote_one_file,
            ['restore-turn', 'msg_1'],
            'hint: restore-turn --keep-external leaves them as they are; restore-turn --force '
            'puts them back as before the turn (what it overwrites is kept in the pre-snapshot)',
        ),
        (
            agent_wrote_since_the_undo,
            ['redo'],
            'hint: redo --force puts the undone version back (what it overwrites is kept in '
            'the pre-snapshot)',
        ),
        (
            persons_edit_over_the_step_undone,
            ['undo'],
            'hint: undo --keep-external leaves those files as they are; undo --force puts the '
            'older version back (what it overwrites is kept in the pre-snapshot)',
        ),
    ],
)
def test_the_command_line_s_dry_run_exits_as_the_run_with_the_same_hint(
    cps: Checkpoints, desk: Path, build: Callable[..., Verb], args: list[str], hint: str
) -> None:
    build(cps, desk)
    planned = checkpoints(*args, '--dry-run', cwd=desk)
    refused = checkpoints(*args, cwd=desk)
    assert planned.returncode == refused.returncode == 1
    assert planned.stdout == refused.stdout == ''
    plan_error, plan_hint = planned.stderr.splitlines()
    error, run_hint = refused.stderr.splitlines()
    assert plan_error.startswith('error: would refuse to') and error.startswith(
        'error: refusing to'
    )
    assert plan_error.replace('would refuse to', 'refusing to', 1) == error
    assert plan_hint == run_hint == hint
    assert 'without --refuse-external' not in hint
