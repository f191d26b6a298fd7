"""Checkpoint ids: the full commit id, the short id people see, and the one way to shorten.

Inside the store a commit is named by its 40 hex digits as bytes (what dulwich takes). What
the library hands out is text: a :data:`CommitId` where the full id is meant (a restore
record, a trailer), a :data:`ShortId` where people read it (``checkpoints list``, the
results). Both are plain ``str`` at run time; the types say which one a value is.
"""

from __future__ import annotations

from typing import NewType, overload

CommitId = NewType('CommitId', str)
"""A commit's full id: 40 lowercase hex digits."""

ShortId = NewType('ShortId', str)
"""A commit id cut to :data:`SHORT_ID_LENGTH` digits, as shown to people and accepted back."""

SHORT_ID_LENGTH = 7


def commit_id(sha: bytes | str) -> CommitId:
    """The full id ``sha`` (as the store's bytes or as text) as text."""
    return CommitId(sha.decode('ascii') if isinstance(sha, bytes) else sha)


@overload
def short_id(sha: bytes | str) -> ShortId: ...
@overload
def short_id(sha: None) -> None: ...
def short_id(sha: bytes | str | None) -> ShortId | None:
    """The short id of a full one (as the store's bytes or as text); None for None."""
    if sha is None:
        return None
    return ShortId(commit_id(sha)[:SHORT_ID_LENGTH])
