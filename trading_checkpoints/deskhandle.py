"""What every verb of ``Checkpoints`` starts from: the desk's configuration and its sessions."""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from .core import lock
from .core.paths import TRACKED_PATHS
from .desk import safety
from .errors import CheckpointError
from .ops import engine, journal
from .ops.recovery import restore_or_complete
from .ops.restore import Request
from .ops.results import Recovery, RestoreResult
from .ops.session import DeskConfig, Session, allowlist_of, open_reading
from .store.repo import ShadowRepo


class DeskHandle:
    """One desk and its repository, described without touching the disk.

    Attributes:
        repository_directory: The bare git directory that holds the snapshots.
        desk_directory: The desk folder whose tracked files are snapshotted.
        tracked_paths: The tracked paths as given; when left at the default, the paths
            remembered by an existing repository are used instead, so the library and the
            command line always agree on what a repository tracks.
        desk_config: All of the above, and the options, as the engine takes them.
        last_recovery: What the last verb did to complete an interrupted restore, if anything.
    """

    def __init__(
        self,
        repository_directory: Path,
        desk_directory: Path,
        tracked_paths: Sequence[str] = TRACKED_PATHS,
        *,
        max_file_size: int | None = None,
        durable: bool = True,
        atomic_writes: bool | None = None,
        lock_timeout: float = lock.DEFAULT_TIMEOUT,
    ) -> None:
        """Describes the repository without touching the disk.

        Args:
            repository_directory: The bare git directory that holds the snapshots.
            desk_directory: The desk folder.
            tracked_paths: The allowlist.
            max_file_size: Files larger than this many bytes are left out of snapshots and
                reported (``SnapshotResult.skipped``); 0 means no limit. None (the default)
                uses the repository's ``checkpoints.maxFileSize`` config, else 100 MiB.
            durable: Flush objects, refs and restored files to the disk in an order that
                survives a power cut (see the README); on by default.
            atomic_writes: Restore every file through a temporary file renamed into place,
                so a reader of the desk never sees a file half rewritten; slower. None (the
                default) uses the repository's ``checkpoints.atomicWrites`` config, else
                off: files are rewritten in place (see the README, "Restores write in place").
            lock_timeout: Seconds to wait for another process holding the desk's lock.

        Raises:
            CheckpointError: A folder is not a path, or an option is not usable.
        """
        self.repository_directory = _folder(repository_directory, 'repository_directory')
        self.desk_directory = _folder(desk_directory, 'desk_directory')
        if isinstance(tracked_paths, str):
            tracked_paths = (tracked_paths,)
        self.tracked_paths = tuple(tracked_paths)
        requested = allowlist_of(self.tracked_paths)
        self.desk_config = DeskConfig(
            repository=self.repository_directory,
            desk=self.desk_directory,
            requested=requested,
            explicit=requested != allowlist_of(TRACKED_PATHS),
            max_file_size=(
                None if max_file_size is None else safety.check_max_file_size(max_file_size)
            ),
            durable=bool(durable),
            atomic_writes=None if atomic_writes is None else bool(atomic_writes),
            lock_timeout=_timeout(lock_timeout),
        )
        self.last_recovery: Recovery | None = None

    def __repr__(self) -> str:
        return (
            f'{type(self).__name__}({str(self.repository_directory)!r}, '
            f'{str(self.desk_directory)!r}, tracked_paths={self.tracked_paths!r})'
        )

    @contextmanager
    def _locked(self, *, light: bool = False) -> Iterator[Session]:
        """A session under the lock; what it completed of an interrupted restore is kept in
        ``last_recovery``. ``light``: see ``engine.locked``."""
        self.last_recovery = None
        with engine.locked(self.desk_config, light=light) as session:
            self.last_recovery = session.recovery
            try:
                yield session
            finally:
                self.last_recovery = session.recovery

    @contextmanager
    def _reading(self) -> Iterator[Session]:
        """A session without the lock, for verbs that only read an existing repository."""
        self._complete_pending_restore()
        with open_reading(self.desk_config) as session:
            if session is None:
                raise CheckpointError(f'no checkpoints yet in {self.repository_directory}')
            yield session

    def _restore(self, session: Session, request: Request) -> RestoreResult:
        result = restore_or_complete(session, request)
        if session.recovery is not None and result.recovered is None:
            return replace(result, recovered=str(session.recovery))
        return result

    def _complete_pending_restore(self) -> None:
        self.last_recovery = None
        if journal.pending(self.repository_directory):
            with self._locked():
                pass  # completes the interrupted restore first

    def _require_repository(self) -> None:
        repo = ShadowRepo.open(self.repository_directory)
        if repo is None:
            raise CheckpointError(f'no checkpoints yet in {self.repository_directory}')
        repo.close()

    def _check_desk(self, must_exist: bool) -> None:
        desk = self.desk_directory
        try:
            st = os.stat(desk)
        except FileNotFoundError:
            st = None
        except OSError as error:
            raise CheckpointError(f'cannot read the desk {desk}: {error.strerror}') from error
        # The root and home folders are told by identity (device and inode), the same answer
        # as comparing real paths, without resolving every component of the desk's path.
        if st is not None and (st.st_dev, st.st_ino) in _forbidden_desks():
            raise CheckpointError(
                f'refusing to use {desk} as a desk: it is the root or home folder'
            )
        if st is not None and not stat.S_ISDIR(st.st_mode):
            raise CheckpointError(f'the desk {desk} is not a folder')
        if must_exist and st is None:
            raise CheckpointError(f'the desk folder {desk} does not exist')


def _folder(value: object, name: str) -> Path:
    if isinstance(value, Path):
        return value
    if isinstance(value, (str, os.PathLike)) and os.fspath(value):
        return Path(value)
    raise CheckpointError(f'{name} must be a path to a folder, not {value!r}')


def _timeout(value: object) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
        if math.isfinite(seconds) and seconds >= 0:
            return seconds
    raise CheckpointError(f'lock_timeout must be a number of seconds of at least 0, not {value!r}')


def _forbidden_desks() -> set[tuple[int, int]]:
    """The identities of the root folder and of the home folder (when it exists)."""
    found = set()
    for folder in (os.sep, os.path.expanduser('~')):
        try:
            st = os.stat(folder)
        except OSError:
            continue
        found.add((st.st_dev, st.st_ino))
    return found
