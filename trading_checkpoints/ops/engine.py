"""Opening a desk for writing: the lock, the repository's upkeep, and interrupted restores.

Every verb that writes goes through :func:`locked`: it takes the repository's lock (waiting
for another holder up to the timeout), clears what a killed writer left behind, creates the
repository on first use, and completes any restore a crash interrupted before handing over
the session: a :class:`LockedSession`, the only kind that writes. A verb that reads an
existing repository without the lock goes through :func:`reading`, which has such a restore
completed (under the lock) first. What completing one did is told to ``report_to`` (the
facade's ``last_recovery``).
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol

from ..core import lock
from ..core.repofiles import RepoFile
from ..errors import (
    CheckpointError,
    CheckpointWarning,
    CorruptRepositoryError,
    FileAccessError,
    LockWaitWarning,
    NoCheckpointsError,
)
from ..store import leftovers
from ..store.repo import PRIVATE_DIR, ShadowRepo
from ..store.repofolder import head_is_sound, is_initialized, repair_head
from . import journal, recovery, restore, retention, snapshot
from .deskconfig import DeskConfig, check_repository_outside
from .listing import refuse_unfinished_clone
from .results import Recovery, SnapshotResult
from .session import LockedSession, ReadSession, open_reading

LOCK = 'lock'

log = logging.getLogger('trading_checkpoints')


class RecoveryReport(Protocol):
    """Who is told what completing an interrupted restore did (the ``Checkpoints`` facade)."""

    last_recovery: Recovery | None


@contextmanager
def locked(
    config: DeskConfig,
    *,
    light: bool = False,
    report_to: RecoveryReport | None = None,
    cloning: bool = False,
    verb: str = 'write',
) -> Iterator[LockedSession]:
    """A session under the repository's lock, creating the repository on first use.

    A repository whose clone was interrupted is refused (``UnfinishedCloneError``) unless
    ``cloning``: only the clone, run again, may complete it. ``verb`` is written into the lock
    file: a writer waiting for this one more than a second is told what it waits for (a
    :class:`LockWaitWarning`, which the command line prints).

    With ``light`` (a snapshot), when the previous holder let go normally, no restore record
    is pending and ``HEAD`` is sound, the sweep of stale lock files waits until the repository
    first writes a ref or the config (``ShadowRepo.defer_upkeep``): only those writes can be
    blocked by one, and a snapshot that finds nothing changed may write neither.

    ``report_to.last_recovery`` is None until the lock is taken, then says what completing an
    interrupted restore did: when the lock was taken, or during the verb (``session.recovery``).
    """
    if report_to is not None:
        report_to.last_recovery = None
    path = config.repository
    if not cloning:
        refuse_unfinished_clone(path)
    if not is_initialized(path):
        _check_new_repository(config)
    try:
        if not os.path.isdir(os.path.join(path, PRIVATE_DIR)):
            (path / PRIVATE_DIR).mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise FileAccessError(
            f'cannot create the checkpoint repository {path}: {error}', path=path, action='create'
        ) from error
    lock_file = RepoFile(path, f'{PRIVATE_DIR}/{LOCK}')
    with lock.exclusive(
        lock_file, config.lock_timeout, verb=verb, on_wait=_waiting_for(lock_file)
    ) as previous_died:
        repo = None
        if light and not previous_died and not journal.pending(path) and head_is_sound(path):
            repo = ShadowRepo.open(path)
            if repo is not None and config.explicit:
                if repo.tracked_paths() != config.requested.entries:
                    repo.close()
                    repo = None  # the config is written: the full upkeep first
        deferred = repo is not None
        if repo is None:
            leftovers.remove_stale_lock_files(path)
            if previous_died:
                leftovers.remove_crash_leftovers(path)
            repair_head(path)
            repo = ShadowRepo.open(path)
            if repo is None:
                repo = ShadowRepo.create(path, config.requested.entries)
            elif config.explicit and repo.tracked_paths() != config.requested.entries:
                repo.remember_tracked_paths(config.requested.entries)
        try:
            session = LockedSession(config, repo)
        except BaseException:
            repo.close()
            raise
        try:
            if deferred:
                # No restore record was found under the lock: there is nothing to complete.
                repo.defer_upkeep(lambda: leftovers.remove_stale_lock_files(path))
            else:
                session.recovery = recovery.recover(session, restore.run)
            head = repo.head()
            try:
                yield session
            finally:
                if report_to is not None:
                    report_to.last_recovery = session.recovery
            if repo.head() != head:
                _enforce_retention(session)
        finally:
            session.close()


def take_snapshot(
    config: DeskConfig,
    message: str,
    *,
    report_to: RecoveryReport | None = None,
    announce: bool = True,
) -> SnapshotResult:
    """A snapshot with ``message``: looked at without the lock, taken under it only when the
    desk changed or something must be written (see ``snapshot.look``)."""
    earlier = snapshot.look(config, message, announce)
    if earlier is not None and earlier.answer is not None:
        return earlier.answer  # nothing changed (see snapshot.py: sound without the lock)
    with locked(config, light=True, report_to=report_to, verb='snapshot') as session:
        return snapshot.take(session, message, earlier, announce)


def _waiting_for(lock_file: RepoFile) -> Callable[[str], None]:
    """What a writer does once it has waited a second for the lock: a LockWaitWarning."""

    def say(holder: str) -> None:
        warnings.warn(
            LockWaitWarning(
                f'waiting for the checkpoint lock {lock_file}, held by another process ({holder})',
                lock=lock_file.path,
                holder=holder,
            ),
            stacklevel=2,
        )

    return say


def complete_pending(config: DeskConfig, report_to: RecoveryReport) -> None:
    """Completes a restore a crash interrupted, under the lock, before a verb that reads
    without it; ``report_to.last_recovery`` says what that did (None: nothing to complete)."""
    report_to.last_recovery = None
    if journal.pending(config.repository):
        with locked(config, report_to=report_to, verb='recover'):
            pass  # completes the interrupted restore first


@contextmanager
def reading(config: DeskConfig, report_to: RecoveryReport) -> Iterator[ReadSession]:
    """A session without the lock, for verbs that only read an existing repository; an
    interrupted restore is completed first (see :func:`complete_pending`)."""
    complete_pending(config, report_to)
    with open_reading(config) as session:
        if session is None:
            raise NoCheckpointsError(
                f'no checkpoints yet in {config.repository}', repository=config.repository
            )
        yield session


def repository_exists(config: DeskConfig) -> bool:
    """Whether the desk's repository exists (it is opened, not merely looked for)."""
    repo = ShadowRepo.open(config.repository)
    if repo is None:
        return False
    repo.close()
    return True


def require_repository(config: DeskConfig) -> None:
    """Refuses a verb that needs a checkpoint before the first one was taken."""
    if not repository_exists(config):
        raise NoCheckpointsError(
            f'no checkpoints yet in {config.repository}', repository=config.repository
        )


def _check_new_repository(config: DeskConfig) -> None:
    """The checks before a repository is created (or its creation finished)."""
    path = config.repository
    if path.exists() and not path.is_dir():
        raise CorruptRepositoryError(f'the checkpoint repository {path} is not a folder', path=path)
    if path.is_dir() and leftovers.foreign_content(path):
        raise CorruptRepositoryError(
            f'{path} is not a checkpoint repository and is not empty; '
            'refusing to create one inside it',
            path=path,
        )
    check_repository_outside(config, config.requested)  # before creating it (the session
    # checks the tracked paths in effect of an existing one)


def _enforce_retention(session: LockedSession) -> None:
    """After a write, the retention limits hold again; a failure never undoes the write."""
    try:
        retention.enforce(session.repo, session.config.limits)
    except CheckpointError as error:
        message = f'retention limits not applied to {session.repo.path}: {error}'
        log.warning('%s', message)
        warnings.warn(message, CheckpointWarning, stacklevel=4)
