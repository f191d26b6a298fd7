"""What the library needs of one commit, as read from the store (or its on-disk memo)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

SHORT_ID_LENGTH = 7


@dataclass(frozen=True)
class CommitInfo:
    """One commit: its id, tree, parents, time (ISO 8601 with offset) and message."""

    sha: str
    tree: bytes
    parents: tuple[bytes, ...]
    created_at: str
    message: str

    @property
    def short_id(self) -> str:
        return self.sha[:SHORT_ID_LENGTH]

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


def from_commit(sha: bytes, commit: Any) -> CommitInfo:
    """What the library needs of a parsed commit (dulwich's ``Commit``) whose id is ``sha``."""
    return CommitInfo(
        sha=sha.decode(),
        tree=commit.tree,
        parents=tuple(commit.parents),
        created_at=iso_time(commit.commit_time, commit.commit_timezone),
        message=commit.message.decode('utf-8', 'replace'),
    )
