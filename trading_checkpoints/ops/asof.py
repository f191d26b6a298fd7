"""As-of lookups: the checkpoint a desk held at a moment ("what did the memory say at 14:30?").

A moment is ISO 8601 with a UTC offset (``2025-03-14T14:30:00+01:00``, or ``Z`` for UTC), an
aware ``datetime``, or a period before now (``45s``, ``90m``, ``2h``, ``3d``, ``1w``). The
checkpoint *at* a moment is the first one along the branch's first parents, newest first,
taken at or before it: the state the desk was recorded in at that moment, even where clocks
disagree and an older checkpoint carries a later time. A moment before the oldest checkpoint
kept is an error (``BeforeFirstCheckpointError``), never the oldest one chosen silently; a
time without an offset is refused, as its meaning would depend on the machine reading it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from pathlib import Path

from ..errors import BeforeFirstCheckpointError, InvalidArgumentError, NoCheckpointsError
from ..store.commitinfo import CommitInfo
from .retention import parse_duration

Moment = str | datetime
"""What ``at=`` takes: ISO 8601 text with an offset, a period before now, or an aware datetime."""

_PERIOD = re.compile(r'\s*\d+(?:\.\d+)?\s*[smhdw]\s*', re.IGNORECASE)
FORMS = (
    'ISO 8601 with an offset (2025-03-14T14:30:00+01:00, or Z for UTC), or a period before '
    'now (90m, 2h, 3d)'
)


def moment(at: Moment, now: float | None = None) -> datetime:
    """The moment ``at`` names, as an aware datetime; ``now`` (seconds since the epoch) is what
    a period counts back from."""
    if isinstance(at, datetime):
        if at.tzinfo is None or at.utcoffset() is None:
            raise InvalidArgumentError(
                f'the time {at.isoformat()} has no offset; give it a zone ({FORMS})',
                name='at',
                value=at.isoformat(),
            )
        return at
    if not isinstance(at, str) or not at.strip():
        raise InvalidArgumentError(f'at must be {FORMS}; not {at!r}', name='at', value=at)
    text = at.strip()
    if _PERIOD.fullmatch(text):
        now = time.time() if now is None else now
        return datetime.fromtimestamp(now, timezone.utc) - timedelta(seconds=parse_duration(text))
    try:
        found = datetime.fromisoformat(text[:-1] + '+00:00' if text[-1:] in 'zZ' else text)
    except ValueError:
        raise InvalidArgumentError(
            f'{text!r} is not a time; write {FORMS}', name='at', value=at
        ) from None
    if found.tzinfo is None:
        raise InvalidArgumentError(
            f'the time {text!r} has no offset; add one (+00:00 or Z for UTC, +01:00, ...), or '
            'give a period before now (2h, 3d)',
            name='at',
            value=at,
        )
    return found


def find(commits: Iterable[CommitInfo], at: Moment, repository: Path) -> CommitInfo:
    """The first of ``commits`` (newest first, one branch) taken at or before ``at``."""
    return find_with_next(commits, moment(at), repository)[0]


def find_with_next(
    commits: Iterable[CommitInfo], when: datetime, repository: Path
) -> tuple[CommitInfo, CommitInfo | None]:
    """The first of ``commits`` (newest first, one branch) taken at or before ``when``, and
    the one taken after it (None: it is the newest)."""
    oldest: CommitInfo | None = None
    for info in commits:
        if datetime.fromisoformat(info.created_at) <= when:
            return info, oldest
        oldest = info
    if oldest is None:
        raise NoCheckpointsError(
            f'no checkpoints yet in {repository}',
            repository=repository,
        )
    pruned = ' kept (older ones were pruned)' if oldest.parents else ''
    shown = when.isoformat(timespec='seconds')
    raise BeforeFirstCheckpointError(
        f'no checkpoint was taken at or before {shown}: the oldest{pruned}, '
        f'{oldest.short_id}, was taken at {oldest.created_at}',
        at=shown,
        first=oldest.short_id,
        first_at=oldest.created_at,
    )
