"""Fetch and pull: the remote's ``main`` brought in, and the desk's ``main`` fast-forwarded to it.

A history that diverged is an error naming both ends; a remote that is behind (with
checkpoints this desk has since pruned) is up to date. The desk's files are not touched.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from ..core.ids import short_id
from ..errors import CheckpointError, EmptyRemoteError, HistoriesDivergedError
from ..store.repo import BRANCH, ShadowRepo
from .config import Remote
from .heads import ancestors, commits_behind, remember_head, repair_shallow
from .transfer import (
    ZERO,
    Progress,
    TransferResult,
    copy_objects,
    open_local_remote,
    progress_bytes,
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
    client, path = client_for(remote.url)
    if client is None:
        source = open_local_remote(remote, create=False)
        try:
            remote_head = source.refs.read_ref(BRANCH)
            if remote_head is not None and remote_head not in skip:
                if not repo.contains(remote_head):
                    source_path = Path(source.controldir())
                    copy_objects(source, source_path, repo.dulwich_repo, remote_head, progress)
        finally:
            source.close()
        return remote_head
    wanted: list[bytes] = []

    def determine_wants(refs, depth=None):
        sha = refs.get(BRANCH)
        if sha is None or sha == ZERO:
            return []
        wanted.append(sha)
        return [] if sha in skip or repo.contains(sha) else [sha]

    try:
        client.fetch(
            path.encode(),
            _QuietShallow(repo.dulwich_repo, repo.path),
            determine_wants=determine_wants,
            progress=progress_bytes(progress),
        )
    except CheckpointError:
        raise
    except Exception as error:  # noqa: BLE001
        raise transport_error(error, remote, 'fetch from') from error
    return wanted[0] if wanted else None


class _QuietShallow:
    """The fetch target, minus announcing our shallow boundaries to the server.

    dulwich's client sends ``shallow`` lines for a pruned repository, which dulwich's server
    rejects unless a ``deepen`` follows. Our boundaries only hide history older than what
    we have, so the server need not know: the walker simply stops at them.
    """

    def __init__(self, repo, path: Path) -> None:
        self._repo = repo
        self._path = path

    def __getattr__(self, name: str):
        return getattr(self._repo, name)

    def get_graph_walker(self, heads=None):
        from dulwich.object_store import ObjectStoreGraphWalker

        from ..store.storage import read_shallow

        shallow = read_shallow(self._path)
        store = self._repo.object_store
        if heads is None:
            heads = [sha for sha in self._repo.refs.as_dict(b'refs/heads').values() if sha in store]

        def parents(sha: bytes) -> list[bytes]:
            return [] if sha in shallow else list(store[sha].parents)

        return ObjectStoreGraphWalker(heads, parents)


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
    marked = repair_shallow(repo.dulwich_repo, repo.path, remote_head)
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
