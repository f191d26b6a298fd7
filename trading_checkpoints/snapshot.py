"""Taking a snapshot: the desk's tracked files committed if they changed since the newest one."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from . import external
from .commitinfo import SHORT_ID_LENGTH
from .results import SnapshotResult
from .scan import Scan
from .session import Session
from .trees import FileEntry


def take(session: Session, message: str) -> SnapshotResult:
    """Commits the desk if it changed; says what was left out and what changed externally.

    When nothing changed, no checkpoint is made, and the paths the message declares are kept
    as an announcement (see ``external.announce``), so the write that follows is attributed.
    """
    result, cache = session.scan(record=True)
    attribution = external.attribute(session, _LazyFiles(result), session.known_tree(result, cache))
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


class _LazyFiles(Mapping):
    """A scan's files, built only if asked for (an unchanged desk's attribution never does)."""

    def __init__(self, result: Scan) -> None:
        self._result = result

    def __getitem__(self, path: str) -> FileEntry:
        return self._result.files[path]

    def __iter__(self) -> Iterator[str]:
        return iter(self._result.files)

    def __len__(self) -> int:
        return len(self._result.files)
