"""Retention keeps the whole chain of a restore: its pre-snapshot, and every commit between it
and the restored commit, whatever the journal completion inserted.

Each case runs one of the operations that restore (a restore, a partial restore, undo, redo,
``restore_turn``) in a real child process while another writer changes a planned file during
its writes (an audit hook at its first desk write): the restore stops, and its journal
completion commits the desk as found between the pre-snapshot and the restored commit. A
limit of two checkpoints is saved in the repository's config (what ``prune --keep 2 --save``
writes) just before, so the prune that follows the write keeps the two newest, and before
the fix dropped the pre-snapshot: the only copy of the unsaved work the restore overwrote,
whose id the restore had handed out ("undo with ...").
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest
from helpers.builders import checkpoints_in, desk_in, new_workspace, repository_in, write
from helpers.faults import lands_a_desk_file, run_child
from helpers.gitcli import fsck
from helpers.reading import ALLOW, version_of

from trading_checkpoints import Checkpoints
from trading_checkpoints.ops import journal, retention

NAMES = [f'notes/f{i}.md' for i in range(10)]
UNSAVED = b'unsaved work, in no checkpoint'
OTHER = b'written by another agent during the restore'


def _fill(desk: Path, content: str) -> None:
    for name in NAMES:
        write(desk, name, content)


def _restore_old(cps: Checkpoints, ids: dict[str, str]) -> object:
    return cps.restore_with_result(ids['old'])


def _partial_restore(cps: Checkpoints, ids: dict[str, str]) -> object:
    return cps.restore_with_result(ids['old'], paths=['notes'])


def _undo(cps: Checkpoints, ids: dict[str, str]) -> object:
    return cps.undo(force=True)


def _redo(cps: Checkpoints, ids: dict[str, str]) -> object:
    return cps.redo(force=True)


def _restore_turn(cps: Checkpoints, ids: dict[str, str]) -> object:
    # forced: the unsaved work rewrote the files the turn wrote, a conflict it would refuse
    return cps.restore_turn(ids['turn'], force=True)


OPERATIONS = {
    'restore': _restore_old,
    'partial restore': _partial_restore,
    'undo': _undo,
    'redo': _redo,
    'restore_turn': _restore_turn,
}


def _history_for(operation: str, cps: Checkpoints, desk: Path) -> dict[str, str]:
    """The checkpoints the operation works on; the desk then holds unsaved work."""
    ids: dict[str, str] = {}
    _fill(desk, 'old')
    ids['old'] = str(cps.snapshot('old'))
    if operation == 'restore_turn':
        write(desk, 'Memory.md', 'the turn starts from here\n')  # its first guard saves it
        with cps.turn('rewrite the notes') as turn:
            with cps.guard('write_file notes/f0.md'):
                _fill(desk, 'new')
        ids['turn'] = turn.turn_id
        cps.snapshot('after the turn')
    else:
        _fill(desk, 'new')
        ids['new'] = str(cps.snapshot('new'))
    if operation in ('undo', 'redo'):
        cps.restore(ids['old'])  # the step to undo
    if operation == 'redo':
        cps.undo(force=True)  # the step to redo
    for name in NAMES:
        write(desk, name, UNSAVED)
    return ids


def _run_with_another_writer(
    operation: str, repository: Path, desk: Path, ids: dict[str, str], report: Path
) -> None:
    """The operation in a child process; another writer rewrites ``notes/f9.md`` at the
    operation's first desk write. The result is written to ``report`` as JSON."""

    def child() -> None:
        fired: list[bool] = []

        def hook(event: str, args: tuple) -> None:
            if not fired and lands_a_desk_file(event, args):
                fired.append(True)
                with open(desk / 'notes' / 'f9.md', 'wb') as handle:
                    handle.write(OTHER)

        sys.addaudithook(hook)
        result = OPERATIONS[operation](Checkpoints(repository, desk), ids)
        report.write_text(json.dumps({'before': result.before_id, 'recovered': result.recovered}))  # type: ignore[attr-defined]

    outcome = run_child(child)
    assert outcome.error is None, outcome.error


@pytest.mark.parametrize('operation', list(OPERATIONS))
def test_a_completed_restore_keeps_its_pre_snapshot_under_a_count_limit(
    tmp_path: Path, operation: str
) -> None:
    workspace = new_workspace(tmp_path / 'ws')
    desk, repository = desk_in(workspace), repository_in(workspace)
    cps = checkpoints_in(workspace)
    ids = _history_for(operation, cps, desk)
    retention.write_limits(repository, retention.Limits(keep=2))  # prune --keep 2 --save
    report = tmp_path / 'result.json'
    _run_with_another_writer(operation, repository, desk, ids, report)
    result = json.loads(report.read_text())
    assert result['recovered'] and 'was changed by another writer' in result['recovered']

    kept = cps.list(100)
    reasons = [c.reason for c in kept]
    assert any(reason.startswith('desk as found') for reason in reasons), reasons
    # The undo point handed out is still there, and holds the unsaved work.
    before = result['before']
    assert before in [c.checkpoint_id for c in kept], (before, reasons)
    held = version_of(repository, before)
    assert all(held[name][1] == UNSAVED for name in NAMES)
    # And the other writer's bytes are in the desk-as-found commit.
    found = next(c for c in kept if c.reason.startswith('desk as found'))
    assert version_of(repository, found.checkpoint_id)['notes/f9.md'][1] == OTHER
    fsck(repository)
    cps.restore(before)  # the restore is undone: the unsaved work is back
    assert all((desk / name).read_bytes() == UNSAVED for name in NAMES)


def test_the_chain_is_kept_by_an_explicit_prune_too(tmp_path: Path) -> None:
    """``prune(keep=1)`` right after a completed restore keeps the restored commit, the
    desk-as-found commit and the pre-snapshot: three, never fewer."""
    workspace = new_workspace(tmp_path / 'ws')
    desk, repository = desk_in(workspace), repository_in(workspace)
    cps = checkpoints_in(workspace)
    ids = _history_for('restore', cps, desk)
    report = tmp_path / 'result.json'
    _run_with_another_writer('restore', repository, desk, ids, report)
    before = json.loads(report.read_text())['before']
    result = cps.prune(keep=1)
    assert result.checkpoints_after == 3
    assert [c.checkpoint_id for c in cps.list()][-1] == before
    assert not any(kept.startswith(before) for kept in result.pruned)


def test_a_restore_killed_after_its_commit_keeps_its_chain(tmp_path: Path) -> None:
    """Found by the kill-point sweep: a restore killed after committing the restored state and
    before removing its record, then a file edited by another writer, then any operation:
    the completion commits the desk as found and the restored state again, on top of the
    first restored commit. A prune to one checkpoint kept the new restored commit and the desk
    as found, and dropped the pre-snapshot the completion named as the undo point."""
    workspace = new_workspace(tmp_path / 'ws')
    desk, repository = desk_in(workspace), repository_in(workspace)
    cps = checkpoints_in(workspace)
    ids = _history_for('restore', cps, desk)

    def restore_killed_before_removing_its_record() -> None:
        def hook(event: str, args: tuple) -> None:
            if event == 'os.remove' and 'restore-journal' in str(args[0]):
                os.kill(os.getpid(), signal.SIGKILL)

        sys.addaudithook(hook)
        Checkpoints(repository, desk).restore(ids['old'])

    assert run_child(restore_killed_before_removing_its_record).killed
    record = journal.read(repository, ALLOW)
    assert record is not None
    write(desk, record.changes[0].path, OTHER.decode())
    result = Checkpoints(repository, desk).snapshot_with_result('the next operation')
    assert result.recovered and 'saved first' in result.recovered
    cps.prune(keep=1)
    kept = [c.checkpoint_id for c in cps.list()]
    assert any(record.before.startswith(sha) for sha in kept), kept
    assert all(version_of(repository, record.before)[n][1] == UNSAVED for n in NAMES)
    fsck(repository)
