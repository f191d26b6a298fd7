"""Clone: a remote's checkpoints brought into a new repository, then its first checkout.

A clone marks itself unfinished in the private folder (``cloning``, see ``ops.listing``)
before the repository's ``HEAD`` exists, and removes the mark last; so a clone killed at any
point leaves either no repository or a marked one. Every other verb refuses a marked
repository (``UnfinishedCloneError``: it may hold none or part of the remote's checkpoints),
and a new clone over it resumes rather than refuses. A repository that holds no checkpoint
at all is cloned into as well: there is nothing to lose.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..core.durability import fsync_folder, write_atomically
from ..core.ids import short_id
from ..errors import (
    CorruptRepositoryError,
    EmptyRemoteError,
    FileAccessError,
    RepositoryExistsError,
)
from ..ops import engine, journal
from ..ops.deskconfig import DeskConfig
from ..ops.listing import clone_marker
from ..ops.session import OUTSIDE, LockedSession
from ..store.repo import ShadowRepo, is_initialized
from ..store.transport import repair_shallow
from .config import Remote, add_remote, check_name, list_remotes
from .heads import remember_head
from .pull import fetch_head
from .transfer import Progress, TransferResult
from .urls import client_for


def clone(
    config: DeskConfig,
    url: str,
    *,
    name: str = 'origin',
    restore: bool = True,
    progress: Progress | None = None,
):  # -> (TransferResult, restored paths or None)
    """Brings a remote's checkpoints into a new repository for a desk.

    The repository must not exist yet (or be empty, or be an unfinished clone, which is
    resumed). When ``restore`` is true and the desk has no tracked files, the newest checkpoint
    is written into it through the restore pipeline, without adding commits.
    """
    repository = Path(config.repository)
    marker = clone_marker(repository)
    unfinished = os.path.lexists(marker)
    if is_initialized(repository) and not unfinished and _holds_checkpoints(repository):
        raise RepositoryExistsError(
            f'the desk already has a checkpoint repository ({repository}); clone onto a new '
            'desk, or add the URL as a remote and pull',
            repository=repository,
        )
    remote = Remote(name, url.strip())
    check_name(name)
    client_for(remote.url)
    created = not repository.exists()
    mark_folder_made = not marker.parent.exists()
    try:
        if not unfinished:
            _mark(marker)
        with engine.locked(config, cloning=True, verb='clone') as session:
            repo = session.repo
            remote_head = fetch_head(repo, remote, progress)
            if remote_head is None:
                raise EmptyRemoteError(
                    f'the remote {remote.display_url} has no checkpoints (no branch main)',
                    remote=remote.name,
                )
            marked = repair_shallow(repo, remote_head)
            if repo.head() is None:
                repo.update_branch(None, remote_head, f'clone: from {remote.display_url}')
            remember_head(repo, remote_head)
            if not any(r.name == name for r in list_remotes(repo.path)):
                add_remote(repo.path, name, remote.url)
            written = None
            if restore:
                written = _first_checkout(session)
            marker.unlink()
    except BaseException:
        # Removed unless the desk was being written: then its journal lets a new clone (or
        # any command) finish the checkout. A repository that was there before keeps the mark
        # once it holds checkpoints of the remote; without any it is as it was.
        if created and not journal.pending(repository):
            import shutil

            shutil.rmtree(repository, ignore_errors=True)
        elif not unfinished and not _holds_checkpoints(repository):
            marker.unlink(missing_ok=True)
            if mark_folder_made:
                try:
                    marker.parent.rmdir()  # only while empty: the folder the mark needed
                except OSError:
                    pass
        raise
    result = TransferResult(
        name,
        remote.display_url,
        None,
        short_id(remote_head),
        False,
        tuple(short_id(s) or '' for s in marked),
    )
    return result, written


def _mark(marker: Path) -> None:
    """Marks the clone unfinished, flushed, before anything of the repository is created."""
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise FileAccessError(
            f'cannot create the checkpoint repository {marker.parent.parent}: {error.strerror}',
            path=marker.parent.parent,
            action='create',
        ) from error
    write_atomically(marker, b'')
    fsync_folder(marker.parent.parent)


def _holds_checkpoints(repository: Path) -> bool:
    repo = ShadowRepo.open(repository)
    if repo is None:
        return False
    try:
        return repo.head() is not None
    finally:
        repo.close()


def _first_checkout(session: LockedSession) -> tuple[str, ...] | None:
    """Writes the newest checkpoint into a desk with no tracked files; None if it has some."""
    from ..ops.request import Request
    from ..ops.restore import run

    head = session.repo.head()
    assert head is not None
    config = session.config
    config.desk.mkdir(parents=True, exist_ok=True)
    result, _ = session.scan()
    if result.files:
        return None
    hint = (
        'if the desk was created with other tracked paths, clone with them '
        '(`clone --track PATH ...` or tracked_paths=...)'
    )
    skipped: list[tuple[str, str]] = []
    session.flatten(session.repo.commit_info(head).tree, skipped)
    outside = [path for path, why in skipped if why == OUTSIDE]
    if outside:  # a restore would leave them out: a new desk would miss them unnoticed
        raise CorruptRepositoryError(
            f'the checkpoint holds {outside[0]!r}, which is outside the tracked paths '
            f'{", ".join(session.allowlist.entries)}; {hint}',
            path=session.repo.path,
        )
    request = Request(head, short_id(head), record_before=False)
    try:
        outcome = run(session, request)
    except CorruptRepositoryError as error:
        raise CorruptRepositoryError(f'{error}; {hint}', path=error.path) from error
    return outcome.result.written
