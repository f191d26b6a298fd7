"""Fetch and pull: the remote's ``main`` brought in, and the desk's ``main`` fast-forwarded to it.

A history that diverged is an error naming both ends; a remote that is behind (with
checkpoints this desk has since pruned) is up to date. The desk's files are not touched.
"""

from __future__ import annotations

from collections.abc import Collection

from ..core.ids import short_id
from ..errors import CheckpointError, EmptyRemoteError, HistoriesDivergedError, NoCheckpointsError
from ..ops import engine
from ..ops.deskconfig import DeskConfig
from ..store.repo import BRANCH, ShadowRepo
from ..store.transport import copy_objects, repair_shallow
from .config import Remote, get_remote
from .heads import ancestors, commits_behind, remember_head
from .transfer import (
    Progress,
    TransferResult,
    open_local_remote,
    progress_bytes,
    progress_text,
    transport_error,
)
from .urls import client_for


def fetch_head(
    repo: ShadowRepo,
    remote: Remote,
    progress: Progress | None = None,
    skip: Collection[bytes] = (),
) -> bytes | None:
    """Fetches the remote's ``main`` (objects only) and returns its sha, or None if empty.

    Nothing is fetched when the remote's head is in ``skip`` (known to be behind).
    """
    connection = client_for(remote.url)
    if connection is None:
        source = open_local_remote(remote, create=False)
        try:
            remote_head = source.read_ref(BRANCH)
            if remote_head is not None and remote_head not in skip:
                if not repo.contains(remote_head):
                    copy_objects(source, repo, remote_head, progress_text(progress))
        finally:
            source.close()
        return remote_head

    def needed(sha: bytes) -> bool:
        return not (sha in skip or repo.contains(sha))

    try:
        return connection.fetch_branch(repo, BRANCH, needed, progress_bytes(progress))
    except CheckpointError:
        raise
    except Exception as error:  # noqa: BLE001
        raise transport_error(error, remote, 'fetch from') from error


def pull_desk(
    config: DeskConfig,
    name: str | None,
    progress: Progress | None,
    report_to: engine.RecoveryReport | None = None,
) -> TransferResult:
    """Pulls into a desk's repository under its lock (``name``: the remote; None, the only
    one); a desk without a repository is told to clone instead."""
    if not engine.repository_exists(config):
        raise NoCheckpointsError(
            f'no checkpoint repository at {config.repository}; use clone instead',
            repository=config.repository,
        )
    with engine.locked(config, report_to=report_to, verb='pull') as session:
        return pull(session.repo, get_remote(session.repo.path, name), progress)


def pull(repo: ShadowRepo, remote: Remote, progress: Progress | None = None) -> TransferResult:
    """Fast-forwards ``main`` to the remote's. Runs under the lock. The desk is not touched."""
    head = repo.head()
    behind = commits_behind(repo) if head is not None else set()
    remote_head = fetch_head(repo, remote, progress, skip=behind)
    if remote_head is None:
        raise EmptyRemoteError(
            f'the remote {remote.name} ({remote.display_url}) has no checkpoints',
            remote=remote.name,
        )
    if remote_head == head or remote_head in behind:
        # Up to date, or behind with checkpoints this desk has since pruned: nothing to bring.
        return TransferResult(remote.name, remote.display_url, short_id(head), short_id(head), True)
    marked = repair_shallow(repo, remote_head)
    if head is not None:
        incoming = _walk_to(repo, remote_head, head)
        if not incoming:
            if head is not None and remote_head in set(ancestors(repo, head)):
                return TransferResult(
                    remote.name, remote.display_url, short_id(head), short_id(head), True
                )
            raise HistoriesDivergedError(
                f'the remote {remote.name} ({remote.display_url}) is at {short_id(remote_head)} '
                f'and this desk at {short_id(head)}: the histories diverged, and nothing joins '
                'the two; nothing was changed (clone the remote onto another desk to keep both, '
                'and push this desk to a new remote)',
                remote=remote.name,
                remote_head=short_id(remote_head),
                head=short_id(head),
            )
    repo.update_branch(head, remote_head, f'pull: fast-forward from {remote.name}')
    remember_head(repo, remote_head)
    return TransferResult(
        remote.name,
        remote.display_url,
        short_id(head),
        short_id(remote_head),
        False,
        tuple(short_id(s) or '' for s in marked),
    )


def _walk_to(repo: ShadowRepo, start: bytes, goal: bytes) -> bool:
    """Whether ``goal`` is a first-parent ancestor of ``start`` (within what we have)."""
    from ..store.storage import read_shallow

    shallow = read_shallow(repo.path)
    sha: bytes | None = start
    while sha is not None:
        if sha == goal:
            return True
        if sha in shallow or not repo.contains(sha):
            return False
        parents = repo.commit_info(sha).parents
        sha = parents[0] if parents else None
    return False
