"""Listing checkpoints cheaply: the branch's commits without opening the repository.

``checkpoints list`` runs in a new process, so what it imports is most of what it costs. This
module reads the branch file, the shallow boundary and the commits (from the commit memo, or
loose objects; see ``commitmemo``) without dulwich; only when something is not there in that
plain form (packed refs, a packed commit the memo lacks) does it open the repository the usual
way. The config is vetted first, as for every verb. Every file is read through the store's
``gitfiles`` and ``commitmemo`` (``core.repofiles``: never through a link, only regular files).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..errors import (
    CorruptRepositoryError,
    FileAccessError,
    InvalidArgumentError,
    UnfinishedCloneError,
)
from ..store import config as repo_config
from ..store import gitfiles
from ..store.commitinfo import CommitInfo
from ..store.commitmemo import CommitReader
from ..store.repofolder import BRANCH, is_initialized
from .results import Checkpoint, checkpoint_from

_HEX = re.compile(rb'[0-9a-f]{40}')


def check_limit(limit: object) -> None:
    """Refuses a ``limit`` of checkpoints to list that is not a whole number of at least 0."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise InvalidArgumentError(
            f'limit must be a whole number of at least 0 or None, not {limit!r}',
            name='limit',
            value=limit,
        )


CLONING = 'cloning'  # in the private folder from before a clone creates ``HEAD`` until it ends


def journal_pending(repository: Path) -> bool:
    """Whether a restore left its intent record (the full library must complete it first)."""
    return os.path.lexists(os.path.join(repository, 'checkpoints', 'restore-journal'))


def clone_marker(repository: Path) -> Path:
    """The file that marks a clone into ``repository`` as unfinished."""
    return Path(repository) / 'checkpoints' / CLONING


def refuse_unfinished_clone(repository: Path) -> None:
    """Refuses a repository whose clone was interrupted (see ``remote/clone.py``): it may
    hold none or only part of the remote's checkpoints, and only the clone may finish it."""
    if os.path.lexists(clone_marker(repository)):
        raise UnfinishedCloneError(
            f'the checkpoint repository {repository} is an unfinished clone (it was '
            'interrupted); run the same clone again to complete it',
            repository=repository,
        )


def list_checkpoints(repository: Path, limit: int | None) -> list[Checkpoint]:
    """The newest ``limit`` checkpoints (None: all), newest first; [] without a repository."""
    repository = Path(repository)
    refuse_unfinished_clone(repository)
    if not is_initialized(repository):
        if repository.exists() and not repository.is_dir():
            raise CorruptRepositoryError(
                f'the checkpoint repository {repository} is not a folder', path=repository
            )
        return []
    repo_config.load(repository, missing_ok=True)  # refuses a hostile config, as every verb
    head = _plain_head(repository)
    if head is None:
        return _through_the_repository(repository, limit)
    shallow = gitfiles.read_shallow(repository)
    reader = CommitReader(repository)
    found: list[Checkpoint] = []
    sha: bytes | None = head
    while sha is not None and (limit is None or len(found) < limit):
        info = reader.find(sha)
        if info is None:
            return _through_the_repository(repository, limit)
        found.append(checkpoint_from(info))
        sha = _next(info, shallow)
    return found


def _next(info: CommitInfo, shallow: set[bytes]) -> bytes | None:
    if info.sha.encode() in shallow or not info.parents:
        return None
    return info.parents[0]


def _plain_head(repository: Path) -> bytes | None:
    """The branch from its file when it holds one commit id, else None (the repository's
    reader then says what is wrong); a link or a FIFO there is refused."""
    try:
        data = gitfiles.read_ref_file(repository, BRANCH.decode())
    except FileAccessError:
        return None
    if data is not None and len(data) == 41 and data[40:] == b'\n':
        if _HEX.fullmatch(data[:40]):
            return data[:40]
    return None


def _through_the_repository(repository: Path, limit: int | None) -> list[Checkpoint]:
    from ..store.repo import ShadowRepo

    repo = ShadowRepo.open(repository)
    if repo is None:
        return []
    try:
        return [checkpoint_from(info) for info in repo.history(limit)]
    finally:
        repo.close()


class Lister:
    """``list`` alone, for a command that needs nothing else of a desk (see ``Checkpoints``)."""

    last_recovery = None

    def __init__(self, repository: Path) -> None:
        self.repository = Path(repository)

    def list(self, limit: int | None = 20) -> list[Checkpoint]:
        return list_checkpoints(self.repository, limit)
