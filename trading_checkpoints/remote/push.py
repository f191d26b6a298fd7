"""Push: the desk's ``main`` to the remote's ``main``, fast-forward only.

- A history that diverged is an error naming both ends.
- A pruned (shallow) history pushed to an empty remote would leave it holding commits whose
  parents it lacks: git cannot read such a repository, although dulwich reports success. For
  a remote on a path or ``file://`` the push marks the remote shallow too, so it stays
  readable; over http or ssh (where the remote's ``shallow`` file cannot be written) the push
  is refused before anything is sent, with an explanation.
- A prune may drop the checkpoint a remote is at (see :mod:`.heads`). When the prune also
  dropped checkpoints that were never pushed, the kept history has a gap the remote cannot
  fill: a path or ``file://`` remote takes the push, is marked shallow at the oldest kept
  checkpoint and keeps its older history reachable under ``refs/checkpoints/pruned/<id>``; over
  http or ssh (where the remote cannot be marked shallow, and would then fail every clone) the
  push is refused before anything is sent.
"""

from __future__ import annotations

from ..core.ids import short_id
from ..errors import (
    CheckpointError,
    HistoriesDivergedError,
    NoCheckpointsError,
    PrunedHistoryError,
    RemoteError,
    RemoteMovedError,
)
from ..ops import engine
from ..ops.deskconfig import DeskConfig
from ..store.repo import BRANCH, ShadowRepo
from ..store.transport import ZERO, copy_objects, pack_for_push, repair_shallow
from .config import Remote, get_remote
from .heads import ancestors, known_heads, remember_head, shallow_parents
from .transfer import (
    Progress,
    TransferResult,
    open_local_remote,
    progress_bytes,
    progress_text,
    transport_error,
)
from .urls import client_for, scrub

PRUNED_REF_PREFIX = b'refs/checkpoints/pruned/'


def push(
    config: DeskConfig,
    name: str | None,
    progress: Progress | None = None,
    *,
    create_parents: bool = False,
) -> TransferResult:
    """Pushes ``main`` to the remote's ``main``, fast-forward only.

    A path remote that does not exist yet is created, inside a folder that must exist unless
    ``create_parents`` (see ``transfer.open_local_remote``).

    The desk's lock is held only while reading the repository: the remote's refs are asked
    for first, then (locked) the push is checked and its pack built in memory, then
    (unlocked, so snapshots go on) the pack is sent. The remote's branch moves only if it
    still is where it was when checked.
    """
    remote = get_remote(config.repository, name)
    connection = client_for(remote.url)
    if connection is None:
        with engine.locked(config, verb='push') as session:
            head = _head_to_push(session.repo)
            return _push_local(session.repo, remote, head, progress, create_parents)
    try:
        remote_head = connection.refs().get(BRANCH)
    except CheckpointError:
        raise
    except Exception as error:  # noqa: BLE001 - dulwich transport errors vary by transport
        raise transport_error(error, remote, 'push to') from error
    with engine.locked(config, verb='push') as session:
        repo = session.repo
        head = _head_to_push(repo)
        _check_push(repo, remote, head, remote_head, local=False)
        if remote_head == head:
            return TransferResult(
                remote.name, remote.display_url, short_id(head), short_id(head), True
            )
        remember_head(repo, head)
        have = {remote_head} if remote_head is not None and repo.contains(remote_head) else set()
        pack = pack_for_push(repo, have, {head}, progress_text(progress))  # read whole, locked

    def check(current: bytes | None) -> None:
        if current not in (None, ZERO) and current != remote_head:
            raise RemoteMovedError(
                f'the remote {remote.name} moved while pushing (now {short_id(current)}); '
                'pull and push again',
                remote=remote.name,
                remote_head=short_id(current),
            )

    try:
        status = connection.send_branch(BRANCH, head, check, pack, progress_bytes(progress))
    except CheckpointError:
        raise
    except Exception as error:  # noqa: BLE001
        raise transport_error(error, remote, 'push to') from error
    if status:
        raise RemoteError(
            f'the remote {remote.name} refused the push: {scrub(str(status), remote.url)}',
            remote=remote.name,
        )
    return TransferResult(
        remote.name, remote.display_url, short_id(remote_head), short_id(head), False
    )


def _head_to_push(repo: ShadowRepo) -> bytes:
    head = repo.head()
    if head is None:
        raise NoCheckpointsError(
            'nothing to push: this desk has no checkpoints yet', repository=repo.path
        )
    return head


def _check_push(
    repo: ShadowRepo, remote: Remote, head: bytes, remote_head: bytes | None, local: bool
) -> bool:
    """Refuses a push that is not a fast-forward or would leave the remote unreadable.

    Returns whether the push goes over a gap: the remote is at a checkpoint this desk pushed
    (or pulled) once and pruned since, with others after it that were never pushed.
    """
    from ..store.storage import read_shallow

    if remote_head is None or remote_head == head:
        if remote_head is None and read_shallow(repo.path) and not local:
            raise PrunedHistoryError(
                f"this desk's history was pruned, and the remote {remote.name} "
                f'({remote.display_url}) is empty: it would receive checkpoints whose parents '
                'it lacks, which git cannot read. Push to a path or file:// remote (it is then '
                'marked shallow like this desk), or push before pruning',
                remote=remote.name,
            )
        return False
    if remote_head in set(ancestors(repo, head)) or remote_head in shallow_parents(repo):
        return False
    if remote_head in known_heads(repo):
        # Pruned here since it was pushed, so an ancestor of the branch; but the checkpoints
        # between it and the oldest kept one were pruned too, without being pushed: they
        # exist nowhere, and the remote would hold a history with a gap.
        if local:
            return True  # the push marks the remote shallow, so it stays readable
        raise PrunedHistoryError(
            f'the remote {remote.name} ({remote.display_url}) is at {short_id(remote_head)}, a '
            'checkpoint this desk has pruned together with later ones that were never pushed: '
            'the remote would receive checkpoints whose parent it lacks and could no longer '
            'be cloned (a server cannot be told to treat them as a shallow boundary). Nothing '
            'was pushed; the remote keeps its history. Push to a path or file:// remote (it '
            'is marked shallow and keeps its older history), and push before pruning',
            remote=remote.name,
            remote_head=short_id(remote_head),
        )
    raise HistoriesDivergedError(
        f'the remote {remote.name} ({remote.display_url}) is at {short_id(remote_head)}, which '
        "is not in this desk's history: the histories diverged (or the remote is older than "
        'the oldest kept checkpoint and was not pushed from here); nothing was pushed. If the '
        'remote is only ahead, a pull brings its checkpoints here and the push is not needed; '
        'otherwise nothing joins the two: clone the remote onto another desk to keep both, '
        'and push this desk to a new remote',
        remote=remote.name,
        remote_head=short_id(remote_head),
        head=short_id(head),
    )


def _push_local(
    repo: ShadowRepo,
    remote: Remote,
    head: bytes,
    progress: Progress | None = None,
    create_parents: bool = False,
) -> TransferResult:
    """Push to a repository on a path: objects copied directly, ref moved by compare-and-swap."""
    target = open_local_remote(remote, create=True, create_parents=create_parents)
    try:
        remote_head = target.read_ref(BRANCH)
        if remote_head == head:
            return TransferResult(
                remote.name, remote.display_url, short_id(head), short_id(head), True
            )
        over_gap = _check_push(repo, remote, head, remote_head, local=True)
        remember_head(repo, head)
        copy_objects(repo, target, head, progress_text(progress))
        marked = repair_shallow(target, head)
        if over_gap and remote_head is not None:
            # The remote's older history stays reachable (and so survives a gc there).
            target.add_ref(PRUNED_REF_PREFIX + remote_head, remote_head)
        if remote_head is None:
            done = target.add_ref(BRANCH, head, message=b'push: from trading_checkpoints')
        else:
            done = target.move_ref(
                BRANCH, remote_head, head, message=b'push: from trading_checkpoints'
            )
        if not done:
            raise RemoteMovedError(
                f'the remote {remote.name} moved while pushing; try again', remote=remote.name
            )
        # A remote whose HEAD names a branch that does not exist (``master``) gets ``main``.
        target.point_head_at(BRANCH)
    finally:
        target.close()
    return TransferResult(
        remote.name,
        remote.display_url,
        short_id(remote_head),
        short_id(head),
        False,
        tuple(short_id(s) or '' for s in marked),
    )
