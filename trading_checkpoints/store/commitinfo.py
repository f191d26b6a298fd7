"""What the library needs of one commit, as read from the store (or its on-disk memo)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from ..core.ids import CommitId, ShortId, commit_id, short_id


@dataclass(frozen=True)
class CommitInfo:
    """One commit: its id, tree, parents, time (ISO 8601 with offset) and message."""

    sha: CommitId
    tree: bytes
    parents: tuple[bytes, ...]
    created_at: str
    message: str

    @property
    def short_id(self) -> ShortId:
        return short_id(self.sha)

    @property
    def subject(self) -> str:
        return self.message.split('\n', 1)[0].strip()


def iso_time(timestamp: int, offset_seconds: int) -> str:
    """A commit's time in ISO 8601 with its offset. A commit another tool wrote may hold any
    numbers: an offset of a day or more is shown as UTC, and a time outside the years 1 to
    9999 as the nearest end of that range (in UTC)."""
    try:
        zone = timezone(timedelta(seconds=offset_seconds))
    except (ValueError, OverflowError):
        zone = timezone.utc
    try:
        return datetime.fromtimestamp(timestamp, zone).isoformat()
    except (ValueError, OverflowError, OSError):
        edge = datetime.max if timestamp > 0 else datetime.min
        return edge.replace(tzinfo=timezone.utc).isoformat()


_HEX = re.compile(rb'[0-9a-f]{40}')
_WHEN = re.compile(rb'.* (\d{1,12}) ([+-])(\d\d)(\d\d)')


def parse_commit(sha: bytes, raw: bytes) -> CommitInfo:
    """What the library needs of a commit's raw bytes (``ValueError`` when they are not one)."""
    head, separator, message = raw.partition(b'\n\n')
    if not separator and not raw.endswith(b'\n'):
        head, message = raw, b''
    tree = None
    parents: list[bytes] = []
    when = None
    for line in head.split(b'\n'):
        if line.startswith(b' '):
            continue  # a continuation line (gpgsig, mergetag)
        key, _, value = line.partition(b' ')
        if key == b'tree' and tree is None and _HEX.fullmatch(value):
            tree = value
        elif key == b'parent' and _HEX.fullmatch(value):
            parents.append(value)
        elif key == b'committer':
            when = _WHEN.fullmatch(value)
    if tree is None or when is None:
        raise ValueError('not a commit')
    offset = (int(when.group(3)) * 60 + int(when.group(4))) * 60
    if when.group(2) == b'-':
        offset = -offset
    created_at = iso_time(int(when.group(1)), offset)
    return CommitInfo(
        sha=commit_id(sha),
        tree=tree,
        parents=tuple(parents),
        created_at=created_at,
        message=message.decode('utf-8', 'replace'),
    )


def from_commit(sha: bytes, commit: Any) -> CommitInfo:
    """What the library needs of a parsed commit (dulwich's ``Commit``) whose id is ``sha``."""
    return CommitInfo(
        sha=commit_id(sha),
        tree=commit.tree,
        parents=tuple(commit.parents),
        created_at=iso_time(commit.commit_time, commit.commit_timezone),
        message=commit.message.decode('utf-8', 'replace'),
    )
