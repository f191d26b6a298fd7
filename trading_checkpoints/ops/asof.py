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
from contextlib import closing
from datetime import datetime, timedelta, timezone
from pathlib import Path

from ..errors import BeforeFirstCheckpointError, InvalidArgumentError, NoCheckpointsError
from ..store.commitinfo import CommitInfo
from .listing import walk
from .results import Checkpoint, checkpoint_from
from .retention import parse_duration
from .session import ReadSession

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
        try:
            return datetime.fromtimestamp(now, timezone.utc) - timedelta(
                seconds=parse_duration(text)
            )
        except (OverflowError, ValueError):  # before the year 1: no calendar holds it
            raise InvalidArgumentError(
                f'{text!r} reaches back past the year 1; give a shorter period, or a time '
                f'({FORMS})',
                name='at',
                value=at,
            ) from None
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
    when = moment(at)
    oldest: CommitInfo | None = None
    for info in commits:
        if datetime.fromisoformat(info.created_at) <= when:
            return info
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


def checkpoint_at(repository: Path, at: Moment) -> Checkpoint:
    """The checkpoint a desk's repository held at ``at`` (see the module notes)."""
    with closing(walk(repository)) as commits:
        return checkpoint_from(find(commits, at, Path(repository)))


def chosen(session: ReadSession, checkpoint_id: str | None, at: Moment | None) -> str | None:
    """The id a verb acts on: ``checkpoint_id``, or the full id of the checkpoint at ``at``
    (one of the two, not both)."""
    if at is None:
        return checkpoint_id
    if checkpoint_id is not None:
        raise InvalidArgumentError(
            f'give a checkpoint id or a time, not both (id {checkpoint_id!r}, at {at!r})',
            name='at',
            value=at if isinstance(at, str) else at.isoformat(),
        )
    return find(session.repo.history(), at, session.repo.path).sha


def named(session: ReadSession, checkpoint_id: str | None, at: Moment | None, name: str) -> str:
    """:func:`chosen`, for a verb that needs a checkpoint: an id (argument ``name``) or a
    time."""
    found = chosen(session, checkpoint_id, at)
    if found is None:
        raise InvalidArgumentError(
            f'give {name} (a checkpoint id) or at (a time)', name=name, value=None
        )
    return found
