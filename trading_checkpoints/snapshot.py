"""Taking a snapshot: the desk's tracked files committed if they changed since the newest one."""

from __future__ import annotations

from . import external
from .commitinfo import SHORT_ID_LENGTH
from .results import SnapshotResult
from .scan import LazyFiles
from .session import Session


def take(session: Session, message: str) -> SnapshotResult:
    """Commits the desk if it changed; says what was left out and what changed externally.

    When nothing changed, no checkpoint is made, and the paths the message declares are kept
    as an announcement (see ``external.announce``), so the write that follows is attributed.
    """
    result, cache = session.scan(record=True)
    attribution = external.attribute(session, LazyFiles(result), session.known_tree(result, cache))
    sha = session.commit(result, cache, message)
    if sha is None:
        external.announce(session.repo, message)
    recovery = session.recovery
    return SnapshotResult(
        checkpoint_id=sha.decode()[:SHORT_ID_LENGTH] if sha else None,
        external=attribution.external,
        basis=attribution.basis,
        skipped=tuple(result.skipped),
        recovered=str(recovery) if recovery else None,
    )
