"""The ``Checkpoints`` facade: snapshot, list and restore one desk. Verbs only.

Each verb opens a session (``engine.locked`` to write, ``session.open_reading`` to read) and
hands it to the module that does the work: ``snapshot``, ``restore`` (through ``recovery``),
``history``, ``external``, ``undo``, ``retention``, ``remote``, ``turns`` and ``guard``.
"""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

from . import engine, history, lock, metadata, safety, undo
from .commitinfo import SHORT_ID_LENGTH
from .desk import DeskState
from .errors import CheckpointError
from .fs import realpath
from .paths import TRACKED_PATHS, Allowlist
from .recovery import restore_or_complete
from .repo import PRIVATE_DIR, ShadowRepo, is_initialized
from .restore import Request
from .results import (
    Checkpoint,
    Diff,
    LogEntry,
    Recovery,
    RestoreResult,
    SnapshotResult,
    Status,
    TurnInfo,
    checkpoint_from,
)
from .session import STAT_CACHE, DeskConfig, allowlist_of, effective_allowlist, open_reading

if TYPE_CHECKING:
    import builtins

    from .guard import Guard
    from .turns import Turn

_F = TypeVar('_F', bound=Callable[..., Any])

__all__ = ['Checkpoint', 'Checkpoints', 'RestoreResult', 'SnapshotResult', 'Status']


class Checkpoints:
    """The checkpoint repository of one desk.

    Attributes:
        repository_directory: The bare git directory that holds the snapshots.
        desk_directory: The desk folder whose tracked files are snapshotted.
        tracked_paths: The tracked paths as given; when left at the default, the paths
            remembered by an existing repository are used instead, so the library and the
            command line always agree on what a repository tracks.
        last_recovery: What the last verb did to complete an interrupted restore, if anything.

    Example::

        checkpoints = Checkpoints(Path('workspace/.checkpoints/main.git'),
                                  Path('workspace/desks/main'))
        checkpoints.snapshot('before write_file Memory.md')
        checkpoints.restore('3f2a9c1')
    """

    def __init__(
        self,
        repository_directory: Path,
        desk_directory: Path,
        tracked_paths: Sequence[str] = TRACKED_PATHS,
        *,
        max_file_size: int | None = None,
        durable: bool = True,
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
            lock_timeout=_timeout(lock_timeout),
        )
        self.last_recovery: Recovery | None = None

    def __repr__(self) -> str:
        return (
            f'Checkpoints({str(self.repository_directory)!r}, {str(self.desk_directory)!r}, '
            f'tracked_paths={self.tracked_paths!r})'
        )

    # -- snapshot, list, restore -----------------------------------------------------------

    def snapshot(
        self,
        reason: str,
        *,
        tool: str | None = None,
        paths: Sequence[str] | None = None,
        turn: str | None = None,
    ) -> str | None:
        """Records the tracked files as they are now, if they changed since the newest checkpoint.

        The first snapshot creates the repository.

        Args:
            reason: What is about to happen, kept as the checkpoint's message.
            tool: Optional name of the tool about to write (kept as a git trailer).
            paths: Optional paths it is about to write (kept as trailers).
            turn: Optional id of the agent turn (kept as a trailer).

        Returns:
            The new checkpoint's short id, or None when nothing had changed.

        Raises:
            CheckpointError: The desk or repository cannot be read or written.
        """
        return self.snapshot_with_result(reason, tool=tool, paths=paths, turn=turn).checkpoint_id

    def snapshot_with_result(
        self,
        reason: str,
        *,
        tool: str | None = None,
        paths: Sequence[str] | None = None,
        turn: str | None = None,
    ) -> SnapshotResult:
        """Like :meth:`snapshot`, but also says which files were left out, and any recovery."""
        from . import snapshot

        if not isinstance(reason, str):
            raise CheckpointError(f'reason must be a string, not {type(reason).__name__}')
        if isinstance(paths, str):
            paths = (paths,)
        message = metadata.compose(reason, tool, paths, turn)
        self._check_desk(must_exist=True)
        with self._locked() as session:
            return snapshot.take(session, message)

    def list(self, limit: int = 20) -> list[Checkpoint]:
        """The most recent checkpoints, newest first; ``[]`` when none has been taken."""
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise CheckpointError(f'limit must be a whole number of at least 0, not {limit!r}')
        self._complete_pending_restore()
        repo = ShadowRepo.open(self.repository_directory)
        if repo is None:
            return []
        try:
            return [checkpoint_from(info) for info in repo.history(limit)]
        finally:
            repo.close()

    @overload
    def restore(
        self,
        checkpoint_id: str | None = None,
        paths: Sequence[str] | None = None,
        dry_run: Literal[False] = False,
        force: bool = True,
    ) -> str: ...

    @overload
    def restore(
        self,
        checkpoint_id: str | None,
        paths: Sequence[str] | None,
        dry_run: Literal[True],
        force: bool = True,
    ) -> RestoreResult: ...

    @overload
    def restore(
        self,
        checkpoint_id: str | None = None,
        paths: Sequence[str] | None = None,
        *,
        dry_run: Literal[True],
        force: bool = True,
    ) -> RestoreResult: ...

    def restore(
        self,
        checkpoint_id: str | None = None,
        paths: Sequence[str] | None = None,
        dry_run: bool = False,
        force: bool = True,
    ) -> str | RestoreResult:
        """Puts the tracked files back as they were at a checkpoint.

        The current files are snapshotted first, so a restore can itself be undone. Files
        created after the checkpoint are removed; files outside the tracked paths are never
        touched.

        Args:
            checkpoint_id: The checkpoint to return to: a short id or a full 40-digit sha.
                None means the newest checkpoint (discard the changes made since it).
            paths: Restore only these files or folders (desk-relative); the rest of the desk
                is left as it is. The pre-snapshot still records the whole desk.
            dry_run: Change nothing (no pre-snapshot, no writes) and return the plan as a
                :class:`RestoreResult` with ``dry_run=True``.
            force: When False, refuse (raising ``ExternalChangesError``, nothing changed) if
                the restore would overwrite files changed outside the agent since the state
                it left (see :meth:`seal`). The default overwrites them; they are kept in the
                pre-snapshot either way.

        Returns:
            The id of the snapshot taken just before restoring, or of the current state when
            nothing had changed; ``restore(that_id)`` undoes this restore. With ``dry_run``,
            the plan.

        Raises:
            CheckpointError: The checkpoint or a path does not exist, or the restore failed.
        """
        result = self.restore_with_result(checkpoint_id, paths=paths, dry_run=dry_run, force=force)
        return result if dry_run else result.before_id

    def restore_with_result(
        self,
        checkpoint_id: str | None = None,
        paths: Sequence[str] | None = None,
        dry_run: bool = False,
        force: bool = True,
    ) -> RestoreResult:
        """Like :meth:`restore`, but says what was (or, dry, would be) written and deleted."""
        self._check_desk(must_exist=False)
        self._require_repository()
        with self._locked() as session:
            target, label = session.target(checkpoint_id)
            selection: tuple[str, ...] = ()
            if paths is not None:
                if isinstance(paths, str):
                    paths = (paths,)
                selection = tuple(history.normalize_path(p, session.allowlist) for p in paths)
                if not selection:
                    raise CheckpointError('no paths given to restore')
            request = Request(target, label, selection=selection, dry_run=dry_run, force=force)
            return self._restore(session, request)

    # -- looking back (history.py) --------------------------------------------------------

    def diff(
        self,
        from_id: str,
        to_id: str | None = None,
        *,
        patches: bool = True,
        paths: Sequence[str] | None = None,
    ) -> Diff:
        """The changes from checkpoint ``from_id`` to ``to_id``, or to the desk as it is now.

        Each change names its path and kind (added, modified, deleted, type-changed,
        mode-changed) and, for text files, carries a unified diff; binary files are flagged.
        ``paths`` (files or folders, desk-relative) limits the diff to those. A desk file
        that snapshots leave out (too large, ...) shows no change.

        Example::

            for change in checkpoints.diff('3f2a9c1').changes:
                print(change.kind, change.path)
        """
        with self._reading() as session:
            return history.diff(session, from_id, to_id, patches=patches, paths=paths)

    def show(self, checkpoint_id: str, path: str) -> bytes:
        """A file's bytes as they were at a checkpoint (a symlink's target for a symlink)."""
        with self._reading() as session:
            return history.show(session, checkpoint_id, path)

    def log(self, path: str | None = None, limit: int = 20) -> list[LogEntry]:
        """Checkpoints newest first, each with the files that differ from the one before it.

        With ``path`` (a file or folder), only the checkpoints where something at or below it
        changed; ``[]`` when none did (also for a path that never existed).
        """
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise CheckpointError(f'limit must be a whole number of at least 0, not {limit!r}')
        with open_reading(self.desk_config) as session:
            return [] if session is None else history.log(session, path, limit)

    def status(self) -> Status:
        """What changed in the desk since the newest checkpoint, and which of it was external."""
        self._check_desk(must_exist=False)
        with open_reading(self.desk_config) as session:
            if session is not None:
                return history.status(session)
        if not self.desk_directory.is_dir():
            return Status(None, (), (), 'none')
        limit = self.desk_config.max_file_size
        desk = DeskState(
            self.desk_directory,
            effective_allowlist(self.desk_config),
            self.repository_directory / PRIVATE_DIR / STAT_CACHE,
            max_file_size=safety.DEFAULT_MAX_FILE_SIZE if limit is None else limit,
        )
        try:
            result = desk.scan(desk.load_cache())
        finally:
            desk.close()
        return Status(None, history.compare({}, result.files), (), 'none', tuple(result.skipped))

    # -- tracked paths -------------------------------------------------------------------

    def effective_tracked_paths(self) -> tuple[str, ...]:
        """The tracked paths the next snapshot will use: the ones given to this object, else
        the ones the repository remembers, else the default."""
        return effective_allowlist(self.desk_config).entries

    def set_tracked_paths(self, tracked_paths: Sequence[str]) -> tuple[str, ...]:
        """Records new tracked paths in the repository (creating it if needed); returns them.

        Files outside the new list are no longer snapshotted or restored; checkpoints taken
        before keep what they hold. Nothing in the desk is changed.
        """
        if isinstance(tracked_paths, str):
            tracked_paths = (tracked_paths,)
        allowlist = Allowlist(tuple(tracked_paths))
        self._check_desk(must_exist=False)
        self.tracked_paths = allowlist.entries
        self.desk_config = _replace(self.desk_config, requested=allowlist, explicit=True)
        with self._locked():
            pass  # the lock records an explicit list in the repository's config
        return allowlist.entries

    # -- the agent's state, undo and redo --------------------------------------------------

    def seal(self) -> str:
        """Records the desk as the state the agent left, once its write tool has run.

        Later, :meth:`status`, :meth:`snapshot_with_result` and restores report files that
        differ from this state as changed outside the agent. A seal holds until the next
        checkpoint; restores, undo and redo seal the state they write by themselves.

        Returns:
            The short id of the seal (the newest checkpoint when the desk matches it).
        """
        from . import external

        self._check_desk(must_exist=True)
        with self._locked() as session:
            return external.seal(session).decode()[:SHORT_ID_LENGTH]

    def undo(self, *, force: bool = False, dry_run: bool = False) -> RestoreResult:
        """Rewinds one step, like an editor's undo.

        With changes since the newest checkpoint, it restores that checkpoint (the state the
        change started from); otherwise the state before the current one in the undo history
        (see ``undo.py`` for the exact rules).

        Repeatable: three undos undo the last three writes. Refuses (``ExternalChangesError``)
        to overwrite files changed outside the agent unless ``force``. It is an ordinary
        restore, so it can be undone, and :meth:`redo` reverses it. See ``undo.py``.
        """
        self._check_desk(must_exist=False)
        self._require_repository()
        with self._locked() as session:
            result, cache = session.scan()
            step = undo.undo_target(session.repo, session.tree_of(result, cache))
            request = Request(
                step.sha.encode(),
                step.short_id,
                action=undo.UNDO,
                subject=f'undo: back to {step.short_id} ({step.subject})',
                dry_run=dry_run,
                force=force,
            )
            return self._restore(session, request)

    def redo(self, *, force: bool = False, dry_run: bool = False) -> RestoreResult:
        """Reverses the newest undo not yet redone (nothing to redo after new changes)."""
        self._check_desk(must_exist=False)
        self._require_repository()
        with self._locked() as session:
            result, cache = session.scan()
            undone, state = undo.redo_source(session.repo, session.tree_of(result, cache), force)
            request = Request(
                state,
                state.decode()[:SHORT_ID_LENGTH],
                action=undo.REDO,
                subject=f'redo: reverse undo {undone.short_id}',
                trailers=[(undo.REDO_OF, undone.sha)],
                dry_run=dry_run,
                force=force,
            )
            return self._restore(session, request)

    # -- retention and remotes (retention.py, remote.py) -----------------------------------

    @classmethod
    def open(
        cls,
        repository_directory: Path,
        desk_directory: Path,
        *,
        keep: int | None = None,
        retention: str | float | None = None,
        max_bytes: int | str | None = None,
        tracked_paths: Sequence[str] = TRACKED_PATHS,
    ) -> Checkpoints:
        """A ``Checkpoints`` pruned to its limits before anything new is written.

        Limits not given here are read from the repository's config (``checkpoints.keep``,
        ``checkpoints.retention``, ``checkpoints.maxsize``, as written by
        ``checkpoints prune --save``), so every entry point applies the same ones.

        Example::

            checkpoints = Checkpoints.open(repo, desk, keep=200, retention='30d')
        """
        from . import retention as _retention

        checkpoints = cls(repository_directory, desk_directory, tracked_paths)
        stored = _retention.read_limits(checkpoints.repository_directory)
        keep = stored.keep if keep is None else keep
        retention = stored.older_than if retention is None else retention
        max_bytes = stored.max_size if max_bytes is None else max_bytes
        if (
            is_initialized(checkpoints.repository_directory)
            and (keep is not None or retention is not None or max_bytes is not None)
            # An unfinished restore may need any checkpoint: prune later, never block start-up.
            and _retention.journal_present(checkpoints.repository_directory) is None
        ):
            checkpoints.prune(keep=keep, older_than=retention, max_bytes=max_bytes)
        return checkpoints

    def prune(
        self,
        keep: int | None = None,
        older_than: str | float | None = None,
        max_bytes: int | str | None = None,
        *,
        dry_run: bool = False,
    ):  # -> retention.PruneResult
        """Drops old checkpoints; the ids of the kept ones never change.

        Args:
            keep: Keep at most this many of the newest checkpoints (at least 1 is always kept).
            older_than: Drop checkpoints older than this: seconds, or text like ``'30d'``.
            max_bytes: Drop the oldest until the objects fit: bytes, or text like ``'500M'``.
            dry_run: Only say what would be dropped.

        With no limit at all it only compacts the storage (one pack, with deltas). Refuses
        while a restore journal says a restore is unfinished.
        """
        from . import retention as _retention

        if ShadowRepo.open(self.repository_directory) is None:
            return _retention.PruneResult(0, 0, 0, 0)
        with self._locked() as session:
            return _retention.prune_or_compact(
                session.repo,
                keep=keep,
                older_than=older_than,
                max_bytes=max_bytes,
                dry_run=dry_run,
            )

    def add_remote(self, name: str, url: str):  # -> remote.Remote
        """Remembers a git remote (path, file://, http(s):// or ssh:// URL) for backups."""
        from . import remote as _remote

        with self._locked() as session:
            return _remote.add_remote(session.repo.path, name, url)

    def remove_remote(self, name: str) -> None:
        from . import remote as _remote

        with self._locked() as session:
            _remote.remove_remote(session.repo.path, name)

    def remotes(self) -> list:  # -> list[remote.Remote]
        from . import remote as _remote

        if not is_initialized(self.repository_directory):
            return []
        return _remote.list_remotes(self.repository_directory)

    def push(self, remote: str | None = None, *, progress=None):  # -> remote.TransferResult
        """Pushes the checkpoints to a remote's branch main (fast-forward only)."""
        from . import remote as _remote

        self._require_repository()
        return _remote.push(self.desk_config, remote, progress)

    def pull(self, remote: str | None = None, *, progress=None):  # -> remote.TransferResult
        """Fast-forwards the checkpoints to a remote's; the desk's files are not touched."""
        from . import remote as _remote

        if ShadowRepo.open(self.repository_directory) is None:
            raise CheckpointError(
                f'no checkpoint repository at {self.repository_directory}; use clone instead'
            )
        with self._locked() as session:
            remote = _remote.get_remote(session.repo.path, remote)
            return _remote.pull(session.repo, remote, progress)

    @classmethod
    def clone(
        cls,
        url: str,
        repository_directory: Path,
        desk_directory: Path,
        *,
        restore: bool = True,
        progress=None,
        tracked_paths: Sequence[str] = TRACKED_PATHS,
    ):  # -> (Checkpoints, remote.TransferResult, tuple of restored paths or None)
        """Copies a remote's checkpoints into a new repository for a desk.

        With ``restore`` (the default) the newest checkpoint is written into the desk when it
        holds no tracked files yet; the remote is remembered as ``origin``. A clone that was
        interrupted is resumed by cloning again.
        """
        from . import remote as _remote

        checkpoints = cls(repository_directory, desk_directory, tracked_paths)
        result, written = _remote.clone(
            checkpoints.desk_config, url, restore=restore, progress=progress
        )
        return checkpoints, result, written

    # -- agent integration (guard.py, turns.py) -------------------------------------------

    def before_write(
        self,
        tool: str | None = None,
        *,
        path_arg: str | Sequence[str] | None = 'path',
        strict: bool = False,
    ) -> Callable[[_F], _F]:
        """Decorator: snapshot before the decorated write tool runs (see ``guard.before_write``).

        Example::

            @checkpoints.before_write('write_file', path_arg='path')
            def write_file(path: str, content: str) -> None: ...
        """
        from .guard import before_write

        return before_write(self, tool, path_arg=path_arg, strict=strict)

    def guard(
        self,
        action: str,
        *,
        tool: str | None = None,
        paths: Sequence[str] | str | None = None,
        strict: bool = False,
        turn: Turn | None = None,
    ) -> Guard:
        """Context manager: snapshot before the write in its block (see ``guard.Guard``).

        Example::

            with checkpoints.guard('write_file Memory.md'):
                (desk / 'Memory.md').write_text(text)
        """
        from .guard import Guard

        return Guard(self, action, tool=tool, paths=paths, strict=strict, turn=turn)

    def turn(self, label: str = '', message_id: str | None = None) -> AbstractContextManager[Turn]:
        """Context manager: tag every checkpoint taken in its block with one turn id.

        Example::

            with checkpoints.turn('tidy the notes', message_id='msg_17') as turn:
                write_file('notes/a.md', '...')
        """
        from .turns import open_turn

        return open_turn(self, label, message_id)

    def restore_turn(self, turn_id: str, dry_run: bool = False) -> RestoreResult:
        """Puts the tracked files back as they were before turn ``turn_id`` began."""
        from .turns import first_checkpoint

        return self.restore_with_result(first_checkpoint(self, turn_id), dry_run=dry_run)

    def turns(self, limit: int | None = 20) -> builtins.list[TurnInfo]:
        """The recorded turns, newest first, each with its checkpoints (newest first)."""
        from .turns import turns

        return turns(self, limit)

    # -- internals -------------------------------------------------------------------------

    def _locked(self) -> AbstractContextManager[Any]:
        return _Recorded(self, engine.locked(self.desk_config))

    def _reading(self) -> AbstractContextManager[Any]:
        self._complete_pending_restore()
        return _Required(self.repository_directory, open_reading(self.desk_config))

    def _restore(self, session: Any, request: Request) -> RestoreResult:
        result = restore_or_complete(session, request)
        if session.recovery is not None and result.recovered is None:
            return _with_recovery(result, session.recovery)
        return result

    def _complete_pending_restore(self) -> None:
        from . import journal

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
        resolved = realpath(desk)
        if os.path.dirname(resolved) == resolved or resolved == _home():
            raise CheckpointError(
                f'refusing to use {desk} as a desk: it is the root or home folder'
            )
        try:
            is_folder = stat.S_ISDIR(os.stat(desk).st_mode)
        except FileNotFoundError:
            is_folder = None
        except OSError as error:
            raise CheckpointError(f'cannot read the desk {desk}: {error.strerror}') from error
        if is_folder is False:
            raise CheckpointError(f'the desk {desk} is not a folder')
        if must_exist and not is_folder:
            raise CheckpointError(f'the desk folder {desk} does not exist')


class _Recorded(AbstractContextManager):
    """A locked session that leaves the recovery it did on the facade's ``last_recovery``."""

    def __init__(self, owner: Checkpoints, inner: AbstractContextManager[Any]) -> None:
        self._owner = owner
        self._inner = inner

    def __enter__(self) -> Any:
        self._owner.last_recovery = None
        session = self._inner.__enter__()
        self._session = session
        self._owner.last_recovery = session.recovery
        return session

    def __exit__(self, *exc_info: Any) -> Any:
        self._owner.last_recovery = self._session.recovery
        return self._inner.__exit__(*exc_info)


class _Required(AbstractContextManager):
    """A reading session that must find a repository."""

    def __init__(self, repository: Path, inner: AbstractContextManager[Any]) -> None:
        self._repository = repository
        self._inner = inner

    def __enter__(self) -> Any:
        session = self._inner.__enter__()
        if session is None:
            self._inner.__exit__(None, None, None)
            raise CheckpointError(f'no checkpoints yet in {self._repository}')
        return session

    def __exit__(self, *exc_info: Any) -> Any:
        return self._inner.__exit__(*exc_info)


def _with_recovery(result: RestoreResult, recovery: Recovery) -> RestoreResult:
    from dataclasses import replace

    return replace(result, recovered=str(recovery))


def _replace(config: DeskConfig, **changes: Any) -> DeskConfig:
    from dataclasses import replace

    return replace(config, **changes)


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


def _home() -> str:
    """The real path of the home folder (remembered per value of ``HOME``)."""
    home = os.path.expanduser('~')
    if home not in _HOMES:
        _HOMES[home] = os.path.realpath(home)
    return _HOMES[home]


_HOMES: dict[str, str] = {}
