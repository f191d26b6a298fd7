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
from collections.abc import Generator
from contextlib import closing
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.ids import CommitId, commit_id
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

if TYPE_CHECKING:
    from ..store.repo import ShadowRepo

Commits = Generator[CommitInfo, None, None]

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
    with closing(walk(repository)) as commits:
        return [checkpoint_from(info) for info in islice(commits, limit)]


@dataclass(frozen=True)
class Page:
    """A run of checkpoints, newest first, as :func:`page` lists them.

    Attributes:
        checkpoints: The checkpoints.
        ids: The full id of each, in the same order.
        next: The full id of the checkpoint after the last one (where the next page starts);
            None when the last one is the oldest.
    """

    checkpoints: tuple[Checkpoint, ...]
    ids: tuple[CommitId, ...]
    next: CommitId | None


def page(repository: Path, limit: int, start: str | None = None) -> Page:
    """At most ``limit`` checkpoints from the one whose full id is ``start`` (default: the
    newest) back; a history of any length is listed a page at a time, each page reading only
    its own commits."""
    first = None
    if start is not None:
        if not isinstance(start, str) or not _HEX.fullmatch(start.encode()):
            raise InvalidArgumentError(
                f'a page starts at a full checkpoint id (40 hex digits), not {start!r}',
                name='start',
                value=start,
            )
        first = start.encode()
    shallow = gitfiles.read_shallow(Path(repository))
    with closing(walk(repository, first)) as commits:
        infos = list(islice(commits, limit))
    following = _next(infos[-1], shallow) if infos and len(infos) == limit else None
    return Page(
        tuple(checkpoint_from(info) for info in infos),
        tuple(info.sha for info in infos),
        None if following is None else commit_id(following),
    )


def walk(repository: Path, start: bytes | None = None) -> Commits:
    """The branch's commits from ``start`` (default: its head) back along first parents, to the
    root or the shallow boundary; nothing without a repository. The repository is checked (an
    unfinished clone, a hostile config) before this returns.

    The commit memo and loose objects are read first; the repository is opened (once) only for
    a commit they lack, or for a branch whose ref is packed. Close the iterator (``closing``)
    when stopping early, so an opened repository is closed at once.
    """
    repository = Path(repository)
    refuse_unfinished_clone(repository)
    if not is_initialized(repository):
        if repository.exists() and not repository.is_dir():
            raise CorruptRepositoryError(
                f'the checkpoint repository {repository} is not a folder', path=repository
            )
        return _none()
    repo_config.load(repository, missing_ok=True)  # refuses a hostile config, as every verb
    return _commits(repository, start)


def _none() -> Commits:
    yield from ()


def _commits(repository: Path, start: bytes | None) -> Commits:
    opened: ShadowRepo | None = None
    try:
        sha = start if start is not None else _plain_head(repository)
        if sha is None:
            opened = _open(repository)
            sha = None if opened is None else opened.head()
        shallow = gitfiles.read_shallow(repository)
        reader = CommitReader(repository)
        while sha is not None:
            info = reader.find(sha)
            if info is None:
                opened = opened or _open(repository)
                if opened is None:
                    return
                info = opened.commit_info(sha)
            yield info
            sha = _next(info, shallow)
    finally:
        if opened is not None:
            opened.close()


def _open(repository: Path) -> ShadowRepo | None:
    from ..store.repo import ShadowRepo  # dulwich: only when the plain files do not suffice

    return ShadowRepo.open(repository)


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


class Lister:
    """``list`` alone, for a command that needs nothing else of a desk (see ``Checkpoints``)."""

    last_recovery = None

    def __init__(self, repository: Path) -> None:
        self.repository = Path(repository)

    def list(self, limit: int | None = 20) -> list[Checkpoint]:
        return list_checkpoints(self.repository, limit)
