"""Clone: a remote's checkpoints brought into a new repository, then its first checkout.

A clone marks itself unfinished in the private folder (``cloning``) until it is done, so a new
clone over it resumes rather than refuses.
"""

from __future__ import annotations

from pathlib import Path

from ..core.durability import write_atomically
from ..core.ids import short_id
from ..errors import CorruptRepositoryError, EmptyRemoteError, RepositoryExistsError
from ..ops import engine, journal
from ..ops.deskconfig import DeskConfig
from ..ops.session import OUTSIDE, LockedSession
from ..store.repo import PRIVATE_DIR, is_initialized
from ..store.transport import repair_shallow
from .config import Remote, add_remote, check_name, list_remotes
from .heads import remember_head
from .pull import fetch_head
from .transfer import Progress, TransferResult
from .urls import client_for

CLONING = 'cloning'  # in the private folder while a clone is unfinished


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
    marker = repository / PRIVATE_DIR / CLONING
    if is_initialized(repository) and not marker.exists():
        raise RepositoryExistsError(
            f'the desk already has a checkpoint repository ({repository}); clone onto a new '
            'desk, or add the URL as a remote and pull',
            repository=repository,
        )
    remote = Remote(name, url.strip())
    check_name(name)
    client_for(remote.url)
    created = not repository.exists()
    try:
        with engine.locked(config) as session:
            repo = session.repo
            write_atomically(marker, b'')
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
        # any command) finish the checkout.
        if created and not journal.pending(repository):
            import shutil

            shutil.rmtree(repository, ignore_errors=True)
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
