"""Completing a restore that a crash (or another writer) interrupted, from its intent record.

**Decision: roll forward.** The snapshot of the desk as it was before the restore is already
committed when the record is written, so both directions would lose nothing; we complete the
restore because that is what was asked for, and ``restore(before_id)`` undoes it as always.
Any later operation on the repository (snapshot, restore, list, ...) that finds a record
completes the restore first, under the repository's lock, and says so (``Recovery``; the
command line prints a ``note:`` line on stderr).

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
    )


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
