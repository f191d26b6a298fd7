"""The restore intent record, and the completion of a restore a crash interrupted.

Before a restore touches the desk it writes (and flushes) ``<repo>/checkpoints/restore-journal``:
the checkpoint being restored, the snapshot taken just before, and for every path it will
change the entry before and after. Once the result is committed the record is removed.

**Decision: roll forward.** The snapshot of the desk as it was before the restore is already
committed when the record is written, so both directions would lose nothing; we complete the
restore because that is what was asked for, and ``restore(before_id)`` undoes it as always.
Any later operation on the repository (snapshot, restore, list, ...) that finds a record
completes the restore first, under the repository's lock, and says so (``Recovery``; the
command line prints a ``note:`` line on stderr). Completion is idempotent: it writes only
paths that do not yet hold their target entry, so a crash during completion is completed by
the next operation in turn. Should a planned path hold content that is neither its state
before nor its target (someone wrote it after the crash), the desk is snapshotted as found
before anything is overwritten, so no byte is ever lost.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import safety, worktree
from .durability import write_atomically
from .errors import CheckpointError, CorruptRepositoryError
from .paths import Allowlist, check_tree_path
from .repo import BLOB_MODES, PRIVATE_DIR, SHORT_ID_LENGTH, SYMLINK_MODE, ShadowRepo

if TYPE_CHECKING:  # pragma: no cover
    from .checkpoints import Checkpoints

RECORD = 'restore-journal'
_FORMAT = 1
_SHA = re.compile(r'[0-9a-f]{40}')

log = logging.getLogger('trading_checkpoints')
log.addHandler(logging.NullHandler())  # a library: the application decides what is shown

Entry = tuple[int, bytes]


@dataclass(frozen=True)
class Change:
    """One path a restore changes: its entry before and after (None: absent)."""

    path: str
    before: Entry | None
    after: Entry | None


@dataclass(frozen=True)
class Record:
    """What an unfinished restore was doing."""

    label: str
    target: str
    before: str
    pids: tuple[int, ...]
    started_at: float
    changes: tuple[Change, ...]


@dataclass(frozen=True)
class Recovery:
    """What the completion of an interrupted restore did.

    Attributes:
        label: The checkpoint id the interrupted restore was given.
        target_id: The checkpoint it restored.
        before_id: The snapshot taken before it started; ``restore(before_id)`` undoes it.
        restored_id: The checkpoint recording the completed restore (None when the crash came
            after it had been recorded).
        saved_id: A snapshot of the desk as found, taken when some planned path held content
            that was neither its old state nor its target; otherwise None.
        written: Paths written by the completion.
        deleted: Paths deleted by the completion.
        message: One line for people.
    """

    label: str
    target_id: str
    before_id: str
    restored_id: str | None
    saved_id: str | None
    written: tuple[str, ...]
    deleted: tuple[str, ...]
    message: str

    def __str__(self) -> str:
        return self.message


def record_path(repository: Path) -> Path:
    return Path(repository) / PRIVATE_DIR / RECORD


def begin(
    repository: Path,
    label: str,
    target: bytes,
    before: bytes,
    the_plan: worktree.Plan,
    current: dict[str, Entry],
    target_files: dict[str, Entry],
    *,
    pids: tuple[int, ...] = (),
) -> Record | None:
    """Writes (and flushes) the intent record; None when the plan changes nothing."""
    if the_plan.empty:
        return None
    changes = tuple(
        Change(path, current.get(path), target_files.get(path))
        for path in sorted(set(the_plan.write) | set(the_plan.delete))
    )
    record = Record(
        label=label,
        target=target.decode(),
        before=before.decode(),
        pids=(*pids, os.getpid()),
        started_at=time.time(),
        changes=changes,
    )
    _write(record_path(repository), record)
    return record


def finish(repository: Path) -> None:
    """Removes the record once the restore's result is committed."""
    try:
        record_path(repository).unlink()
    except FileNotFoundError:
        pass
    except OSError as error:
        raise CheckpointError(
            f'cannot remove the restore record {record_path(repository)}: {error.strerror}'
        ) from error


def pending(repository: Path) -> bool:
    return record_path(repository).is_file()


def _entry_json(entry: Entry | None) -> list[Any] | None:
    return None if entry is None else [entry[0], entry[1].decode()]


def _write(path: Path, record: Record) -> None:
    data = json.dumps(
        {
            'format': _FORMAT,
            'label': record.label,
            'target': record.target,
            'before': record.before,
            'pids': list(record.pids),
            'started_at': record.started_at,
            'changes': [
                [c.path, _entry_json(c.before), _entry_json(c.after)] for c in record.changes
            ],
        },
        separators=(',', ':'),
    ).encode()
    # Flushed, with its folder, before the desk is touched.
    try:
        write_atomically(path, data)
    except CheckpointError as error:
        raise CheckpointError(f'cannot write the restore record: {error}') from error


def _entry(value: Any) -> Entry | None:
    if value is None:
        return None
    mode, sha = value
    if not isinstance(mode, int) or mode not in BLOB_MODES:
        raise ValueError(f'bad mode {mode!r}')
    if not isinstance(sha, str) or not _SHA.fullmatch(sha):
        raise ValueError(f'bad object id {sha!r}')
    return (mode, sha.encode())


def read(repository: Path, allowlist: Allowlist) -> Record | None:
    """The record left by an unfinished restore, or None.

    Raises:
        CorruptRepositoryError: The record exists but cannot be understood, or names a path
            we must never write.
    """
    path = record_path(repository)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise CorruptRepositoryError(f'cannot read the restore record {path}: {error}') from error
    try:
        data = json.loads(raw)
        if data.get('format') != _FORMAT:
            raise ValueError(f'unknown format {data.get("format")!r}')
        changes = []
        for item in data['changes']:
            change_path, before, after = item
            if not isinstance(change_path, str):
                raise ValueError('a path is not a string')
            check_tree_path(change_path, allowlist)
            changes.append(Change(change_path, _entry(before), _entry(after)))
        record = Record(
            label=str(data['label'])[:100],
            target=str(data['target']),
            before=str(data['before']),
            pids=tuple(int(pid) for pid in data['pids']),
            started_at=float(data['started_at']),
            changes=tuple(changes),
        )
        if not _SHA.fullmatch(record.target) or not _SHA.fullmatch(record.before):
            raise ValueError('bad checkpoint id')
    except (ValueError, KeyError, TypeError, AttributeError, CorruptRepositoryError) as error:
        raise CorruptRepositoryError(
            f'the restore record {path} is unreadable or unsafe ({error}); the restore it '
            'describes cannot be completed'
        ) from error
    return record


def recover(cps: Checkpoints, repo: ShadowRepo, *, cause: str | None = None) -> Recovery | None:
    """Completes the restore a crash interrupted, if any; the caller holds the lock.

    ``cause`` names why the restore stopped when it was not a crash (another writer changed
    a planned file during it); it only changes the messages.
    """
    what = cause or 'an interrupted restore'
    path = record_path(repo.path)
    if not path.is_file():
        return None
    allowlist = cps._allowlist(repo)
    try:
        record = read(repo.path, allowlist)
    except CorruptRepositoryError as error:
        return _salvage(cps, repo, allowlist, str(error))
    if record is None:
        return None
    desk = cps.desk_directory
    desk.mkdir(parents=True, exist_ok=True)
    root = os.fspath(desk)
    for change in record.changes:  # half-written temporary files of the killed writers
        if not worktree._parents_are_folders(root, change.path):
            continue  # never reach through a symlink
        full = os.path.join(root, change.path)
        for pid in record.pids:
            try:
                os.unlink(worktree.temporary_name(full, pid))
            except OSError:
                pass
    cache = cps._load_cache(repo, allowlist)
    scan = cps._scan(repo, allowlist, cache)
    foreign = [c.path for c in record.changes if scan.files.get(c.path) not in (c.before, c.after)]
    saved: bytes | None = None
    if foreign:
        saved = cps._commit_scan(
            repo,
            scan,
            cache,
            allowlist,
            f'desk as found after {what} of {record.label}\n',
        )
    target = {c.path: c.after for c in record.changes if c.after is not None}
    the_plan = worktree.Plan(
        write=sorted(p for p, entry in target.items() if scan.files.get(p) != entry),
        delete=sorted(c.path for c in record.changes if c.after is None),
    )
    safety.refuse_skipped_in_the_way(the_plan.write, scan.skipped)
    try:
        read_blob = safety.vet_blobs(the_plan.write, target, repo.read_blob, SYMLINK_MODE)
        worktree.check_plan(desk, allowlist, the_plan, scan.files)
    except CheckpointError as error:
        raise CheckpointError(
            f'{what} of {record.label} cannot be completed: {error} (its record is {path})'
        ) from error
    if the_plan.write or any(p in scan.files for p in the_plan.delete):
        # Name ourselves in the record, so our own leftovers are found if we are killed too.
        _write(
            path,
            Record(
                record.label,
                record.target,
                record.before,
                (*record.pids, os.getpid()),
                record.started_at,
                record.changes,
            ),
        )
    try:
        worktree.apply(desk, allowlist, the_plan, target, read_blob, durable=cps._durable)
    except CheckpointError as error:
        raise CheckpointError(
            f'{what} of {record.label} cannot be completed: {error} '
            f'(its record is {path}; fix the cause and run any command again)'
        ) from error
    deleted = tuple(p for p in the_plan.delete if p in scan.files)
    cache = cps._load_cache(repo, allowlist)
    after = cps._scan(repo, allowlist, cache)
    restored = cps._commit_scan(repo, after, cache, allowlist, f'restored {record.label}\n')
    finish(repo.path)
    short = record.target[:SHORT_ID_LENGTH]
    before_short = record.before[:SHORT_ID_LENGTH]
    message = (
        f'completed {what} of {short} '
        f'({len(the_plan.write)} written, {len(deleted)} deleted); '
        f'undo with: checkpoints restore {before_short}'
    )
    if saved:
        message += f'; the desk as found was saved first as {saved.decode()[:SHORT_ID_LENGTH]}'
    log.warning('%s', message)
    return Recovery(
        label=record.label,
        target_id=short,
        before_id=before_short,
        restored_id=restored.decode()[:SHORT_ID_LENGTH] if restored else None,
        saved_id=saved.decode()[:SHORT_ID_LENGTH] if saved else None,
        written=tuple(the_plan.write),
        deleted=deleted,
        message=message,
    )


def _salvage(cps: Checkpoints, repo: ShadowRepo, allowlist: Allowlist, problem: str) -> Recovery:
    """An unreadable record: keep the desk exactly as found (snapshotted) and drop the record."""
    cache = cps._load_cache(repo, allowlist)
    scan = cps._scan(repo, allowlist, cache)
    saved = cps._commit_scan(
        repo, scan, cache, allowlist, 'desk as found after an interrupted restore\n'
    )
    finish(repo.path)
    head = repo.head()
    head_id = head.decode()[:SHORT_ID_LENGTH] if head else ''
    message = f'{problem}; the desk was left as found and recorded as {head_id}'
    log.warning('%s', message)
    return Recovery(
        label='',
        target_id='',
        before_id=head_id,
        restored_id=None,
        saved_id=saved.decode()[:SHORT_ID_LENGTH] if saved else None,
        written=(),
        deleted=(),
        message=message,
    )
