"""Completing a restore that a crash (or another writer) interrupted, from its intent record.

**Decision: roll forward.** The snapshot of the desk as it was before the restore is already
committed when the record is written, so both directions would lose nothing; we complete the
restore because that is what was asked for, and ``restore(before_id)`` undoes it as always.
Any later operation on the repository (snapshot, restore, list, status, ...) that finds a
record completes the restore first, under the repository's lock, and says so (``Recovery``;
the command line prints a ``note:`` line on stderr, with the command that undoes it).

**Ctrl-C** is an interruption like a crash, told as it happens (:func:`interrupted`): a restore
stopped once the desk began to change keeps its record, for the next operation to complete,
and raises :class:`RestoreInterrupted` saying how far it got; one stopped before it changed
anything is abandoned (its record removed) and the interrupt goes on as it came.

Completion is the ordinary restore pipeline (``restore.py``) with the record's entries as its
target: when a planned path holds content that is neither its state before nor its target
(someone wrote it after the crash), the desk as found is snapshotted first; then every planned
path is vetted, journaled, written under the same guards, and the result committed with the
message the interrupted restore would have used. A crash during completion is completed by
the next operation in turn.

The record is untrusted: it is completed only when its commits exist and every entry it names
matches them (the state after is the target's; the state before is the pre-snapshot's, or
absent). Any other record is refused and reported, and the desk is snapshotted as found;
nothing is written. A planned path holding its state before or after is held byte for byte by
those commits; any other content is snapshotted before anything is overwritten.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ..core.ids import short_id
from ..desk.checkout import Plan
from ..errors import (
    CheckpointError,
    CorruptRepositoryError,
    DeskChangedError,
    UnfinishedRestoreError,
)
from . import journal
from .request import Outcome, Request
from .results import Recovery
from .session import LockedSession, ReadSession

# The restore pipeline (``restore.run``); handed in, since ``restore.restore`` calls recover too.
Pipeline = Callable[[LockedSession, Request], Outcome]

log = logging.getLogger('trading_checkpoints')
log.addHandler(logging.NullHandler())  # a library: the application decides what is shown


def recover(
    session: LockedSession, pipeline: Pipeline, *, cause: str | None = None
) -> Recovery | None:
    """Completes the restore whose record is pending, if any, through ``pipeline``."""
    repo = session.repo
    if not journal.pending(repo.path):
        return None
    what = cause or 'an interrupted restore'
    try:
        record = journal.read(repo.path, session.allowlist)
        if record is None:
            return None
        _check_against_repository(session, record)
    except CorruptRepositoryError as error:
        return _salvage(session, str(error))
    request = Request(
        target=record.target.encode(),
        label=record.label,
        overlay={change.path: change.after for change in record.changes},
        message=record.message,
        before_subject=f'desk as found after {what} of {record.label}',
        pids=record.pids,
        expected={change.path: (change.before, change.after) for change in record.changes},
    )
    if session.config.desk.is_dir():
        session.remove_temporaries([change.path for change in record.changes], record.pids)
    try:
        outcome = pipeline(session, request)
    except DeskChangedError as error:
        raise UnfinishedRestoreError(
            f'{what} of {record.label} cannot be completed: {error.path} keeps changing; '
            f'its record is kept ({journal.record_path(repo.path)}), run any command again',
            record=journal.record_path(repo.path),
            path=error.path,
        ) from error
    except CheckpointError as error:
        raise UnfinishedRestoreError(
            f'{what} of {record.label} cannot be completed: {error} (its record is '
            f'{journal.record_path(repo.path)}; fix the cause and run any command again)',
            record=journal.record_path(repo.path),
        ) from error
    journal.finish(repo.path)  # also when the plan was empty: the desk already matched
    result = outcome.result
    short = short_id(record.target)
    before_short = short_id(record.before)
    message = (
        f'completed {what} of {short} '
        f'({len(result.written)} written, {len(result.deleted)} deleted); '
        f'undo with: checkpoints restore {before_short}'
    )
    saved = short_id(outcome.saved)
    if saved:
        message += f'; the desk as found was saved first as {saved}'
    log.warning('%s', message)
    return Recovery(
        label=record.label,
        target_id=short,
        before_id=before_short,
        restored_id=result.restored_id,
        saved_id=saved,
        written=result.written,
        deleted=result.deleted,
        message=message,
        what=what,
    )


class RestoreInterrupted(KeyboardInterrupt):
    """Ctrl-C (``SIGINT``) stopped a restore after it began changing the desk: some planned
    files are restored, others not yet. Its record is kept, so the next operation on the desk,
    of any kind, completes the restore first; ``restore(before_id)`` undoes it then.

    A ``KeyboardInterrupt`` (``except KeyboardInterrupt`` still catches it), not a
    ``CheckpointError``: nothing failed, and the program is being stopped.

    Attributes:
        label: The checkpoint the restore was given.
        target_id: The checkpoint being restored (short id).
        before_id: The snapshot taken just before it (short id): the undo point.
        changed: Planned files written or deleted when it stopped (the last may be part way).
        planned: Files the restore writes or deletes in all.
        completing: Whether it was the completion of an interrupted restore that stopped.
        record: The restore's record, which the next operation completes.
    """

    def __init__(
        self,
        message: str,
        *,
        label: str,
        target_id: str,
        before_id: str,
        changed: int,
        planned: int,
        completing: bool,
        record: object,
    ) -> None:
        super().__init__(message)
        self.label, self.target_id, self.before_id = label, target_id, before_id
        self.changed, self.planned, self.completing = changed, planned, completing
        self.record = str(record)


def interrupted(
    session: LockedSession,
    request: Request,
    the_plan: Plan,
    changed: set[str],
    head: bytes,
    interrupt: KeyboardInterrupt,
) -> None:
    """Ctrl-C between a restore's record and its commit: says how far it got, or abandons it.

    A restore that changed nothing yet (no write or delete begun, no folder made) is
    abandoned: its record is removed and the interrupt goes on as it came, nothing changed.
    Once the desk changed, the record stays for the next operation to complete (roll forward,
    as after a crash) and :class:`RestoreInterrupted` says so. So does the completion of an
    interrupted restore, whatever it did: its record is the interrupted restore's.
    """
    repo = session.repo
    if not journal.pending(repo.path) or isinstance(interrupt, RestoreInterrupted):
        return  # no record written yet, or already told
    completing = request.expected is not None
    if not completing and not changed and not session.desk.folders.created:
        journal.finish(repo.path)
        return
    planned = len(the_plan.write) + len(the_plan.delete)
    what = 'the completion of an interrupted restore' if completing else 'the restore'
    raise RestoreInterrupted(
        f'interrupted: {what} of {request.label} stopped after changing {len(changed)} of '
        f'{planned} files in the desk; its record is kept, and the next operation on the desk '
        f'completes it (undo it then with restore({short_id(head)!r}))',
        label=request.label,
        target_id=short_id(request.target) or '',
        before_id=short_id(head) or '',
        changed=len(changed),
        planned=planned,
        completing=completing,
        record=journal.record_path(repo.path),
    ) from interrupt


def _check_against_repository(session: ReadSession, record: journal.Record) -> None:
    """Refuses a record whose commits are missing or whose entries they do not hold."""
    repo = session.repo
    trees = {}
    for role, sha in (('target', record.target), ('before', record.before)):
        if not repo.contains(sha.encode()):
            raise CorruptRepositoryError(
                f'the restore record names a {role} checkpoint {short_id(sha)} that '
                'this repository does not hold',
                path=journal.record_path(repo.path),
            )
        trees[role] = repo.commit_info(sha.encode()).tree
    target, _ = session.flatten(trees['target'])
    before, _ = session.flatten(trees['before'])
    for change in record.changes:
        held = before.get(change.path)
        if change.after != target.get(change.path) or change.before not in (None, held):
            raise CorruptRepositoryError(
                f'the restore record does not match its checkpoints at {change.path!r}',
                path=journal.record_path(repo.path),
            )


def _salvage(session: LockedSession, problem: str) -> Recovery:
    """A record we refuse: keep the desk exactly as found (snapshotted) and drop the record."""
    saved = None
    if session.config.desk.is_dir():
        saved, _ = session.snapshot('desk as found after an interrupted restore\n')
    journal.finish(session.repo.path)
    head = session.repo.head()
    head_id = short_id(head) if head else ''
    message = (
        f'{problem}; nothing was restored, the desk was left as found and recorded as {head_id}'
    )
    log.warning('%s', message)
    return Recovery(
        label='',
        target_id='',
        before_id=head_id,
        restored_id=None,
        saved_id=short_id(saved),
        written=(),
        deleted=(),
        message=message,
    )
