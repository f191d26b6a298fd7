"""Storage in sight: what a desk's repository takes on disk, and what retention would drop.

Checkpoint stores grow unseen (peers' users found 80 to 300 GB they never saw grow), so
``status`` and the browser show the figure every time. The size is the repository folder's
allocated blocks, as ``du`` counts them, symlinks not followed. What retention would drop is a
dry run of the prune the limits in effect call for (those the desk was opened with, else
those stored with ``prune --save``): nothing is changed, and without limits nothing is read
beyond the folder sizes. The objects' size counts the packs awaiting deletion too.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import InvalidSettingError, UnfinishedRestoreError
from . import retention
from .results import StorageUse
from .session import ReadSession


def measure(session: ReadSession) -> StorageUse:
    """The storage use of the session's repository (see the module notes)."""
    path = session.repo.path
    size, objects = folder_size(path), folder_size(path / 'objects')
    limits = session.config.limits
    try:
        limits = limits if not limits.empty else retention.read_limits(path)
    except InvalidSettingError:  # the writes warn about it; here it only leaves this unknown
        return StorageUse(size, objects, would_drop=None)
    shown = (limits.keep, limits.older_than, limits.max_size)
    if limits.empty:
        return StorageUse(size, objects, *shown)
    try:
        plan = retention.prune(
            session.repo,
            keep=limits.keep,
            older_than=limits.older_than,
            max_bytes=limits.max_size,
            dry_run=True,
        )
    except UnfinishedRestoreError:
        return StorageUse(size, objects, *shown, would_drop=None)
    dropped = plan.pruned_count
    return StorageUse(size, objects, *shown, dropped, plan.bytes_after if dropped else None)


def folder_size(folder: Path) -> int:
    """Bytes a folder and everything below it take on disk (allocated blocks; a symlink is
    counted as itself, never followed)."""
    try:
        total = _allocated(os.lstat(folder))
    except OSError:
        return 0
    for parent, folders, names in os.walk(folder):
        for name in (*folders, *names):
            try:
                total += _allocated(os.lstat(os.path.join(parent, name)))
            except OSError:
                continue
    return total


def _allocated(st: os.stat_result) -> int:
    blocks = getattr(st, 'st_blocks', None)
    return blocks * 512 if blocks is not None else st.st_size


def size_text(size: int) -> str:
    """Bytes as people read them: ``512 B``, ``80.0 KiB``, ``1.2 MiB``, ``3.4 GiB``."""
    amount = float(size)
    for unit in ('B', 'KiB', 'MiB', 'GiB'):
        if amount < 1024 or unit == 'GiB':
            return f'{size} B' if unit == 'B' else f'{amount:.1f} {unit}'
        amount /= 1024
    raise AssertionError('unreachable')


def describe(use: StorageUse) -> str:
    """One line: the size on disk, and what the retention limits would drop now."""
    line = f'{size_text(use.repository_bytes)} on disk'
    limits = [
        f'{name} {value}'
        for name, value in (
            ('keep', use.keep),
            ('older than', use.older_than),
            ('max size', use.max_size),
        )
        if value is not None
    ]
    if not limits:
        return f'{line}; no retention limits (prune --save sets them)'
    rule = f'retention ({", ".join(limits)})'
    if use.would_drop is None:
        return f'{line}; {rule} cannot be applied now'
    if not use.would_drop:
        return f'{line}; {rule} drops nothing now'
    checkpoints = f'{use.would_drop} checkpoint{"" if use.would_drop == 1 else "s"}'
    after = f', objects to about {size_text(use.bytes_after)}' if use.bytes_after else ''
    return f'{line}; {rule} would drop {checkpoints} now{after}'
