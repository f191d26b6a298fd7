"""The restore intent record: what an unfinished restore was doing.

Before a restore touches the desk it writes (and flushes) ``<repo>/checkpoints/restore-journal``:
the checkpoint being restored, the snapshot taken just before, the message of the commit that
will record the result, and for every path it will change the entry before and after. Once the
result is committed the record is removed. ``recovery.py`` completes a restore whose record a
crash left behind, through the same pipeline as every restore.

The record lives in the repository, so it is untrusted: it is read and written through
``core.repofiles`` (never through a link, only a regular file of at most :data:`MAX_BYTES`),
:func:`read` refuses a record it cannot understand or that names a path outside the tracked
paths, and ``recovery.py`` refuses one that does not match the repository's commits.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core import repofiles
from ..core.paths import Allowlist, check_tree_path
from ..core.repofiles import RepoFile
from ..core.trees import BLOB_MODES
from ..desk.checkout import Plan
from ..errors import CheckpointError, CorruptRepositoryError, FileAccessError
from ..store.repo import PRIVATE_DIR

RECORD = 'restore-journal'
MAX_BYTES = 256 << 20  # about a million changed paths
_FORMAT = 2
_FORMATS = (1, 2)  # 1: written by versions that kept no commit message
_SHA = re.compile(r'[0-9a-f]{40}')

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
    message: str


def record_path(repository: Path) -> Path:
    return record_file(repository).path


def record_file(repository: Path) -> RepoFile:
    return RepoFile(Path(repository), f'{PRIVATE_DIR}/{RECORD}')


def begin(
    repository: Path,
    label: str,
    target: bytes,
    before: bytes,
    the_plan: Plan,
    current: dict[str, Entry],
    target_files: dict[str, Entry],
    message: str,
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
        message=message,
    )
    _write(record_file(repository), record)
    return record


def finish(repository: Path) -> None:
    """Removes the record once the restore's result is committed."""
    try:
        repofiles.remove(record_file(repository))
    except CheckpointError as error:
        path = record_path(repository)
        raise FileAccessError(
            f'cannot remove the restore record {path}: {repofiles.reason(error)}',
            path=path,
            action='delete',
        ) from error


def pending(repository: Path) -> bool:
    return os.path.lexists(os.path.join(repository, PRIVATE_DIR, RECORD))


def _short(error: BaseException) -> str:
    """An error's text cut short: a hostile record must not fill the screen."""
    text = ' '.join(str(error).split())
    return text if len(text) <= 160 else text[:157] + '...'


def _entry_json(entry: Entry | None) -> list[Any] | None:
    return None if entry is None else [entry[0], entry[1].decode()]


def _write(file: RepoFile, record: Record) -> None:
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
            'message': record.message,
        },
        separators=(',', ':'),
    ).encode()
    # Flushed, with its folder, before the desk is touched.
    try:
        repofiles.replace(file, data)
    except CheckpointError as error:
        raise FileAccessError(
            f'cannot write the restore record {file.path}: {repofiles.reason(error)}',
            path=file.path,
            action='write',
        ) from error


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
        raw = repofiles.read(record_file(repository), MAX_BYTES)
    except CheckpointError as error:
        raise CorruptRepositoryError(
            f'cannot read the restore record {path}: {repofiles.reason(error)}', path=path
        ) from error
    if raw is None:
        return None
    try:
        data = json.loads(raw)
        if not isinstance(data, dict) or data.get('format') not in _FORMATS:
            raise ValueError('unknown format')
        changes = []
        for item in data['changes']:
            change_path, before, after = item
            if not isinstance(change_path, str):
                raise ValueError('a path is not a string')
            check_tree_path(change_path, allowlist)
            changes.append(Change(change_path, _entry(before), _entry(after)))
        label = data['label']
        message = data.get('message', f'restored {label}\n')
        if not isinstance(label, str) or not isinstance(message, str):
            raise ValueError('a label or message is not a string')
        for text in (label, message):
            text.encode('utf-8', 'surrogateescape')  # a lone surrogate (JSON allows one): refused
        record = Record(
            label=' '.join(label.split())[:100],
            target=str(data['target']),
            before=str(data['before']),
            pids=tuple(int(pid) for pid in data['pids'])[:64],
            started_at=float(data['started_at']),
            changes=tuple(changes),
            message=message[:65536],
        )
        if not _SHA.fullmatch(record.target) or not _SHA.fullmatch(record.before):
            raise ValueError('bad checkpoint id')
    except (
        ValueError,
        KeyError,
        TypeError,
        AttributeError,
        OverflowError,
        RecursionError,
        CorruptRepositoryError,
    ) as error:
        raise CorruptRepositoryError(
            f'the restore record {path} is unreadable or unsafe ({_short(error)}); the restore '
            'it describes cannot be completed',
            path=path,
        ) from error
    return record
