"""What the library needs of one commit, as read from the store (or its on-disk memo)."""

from __future__ import annotations

from dataclasses import dataclass

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
