"""The ``Checkpoints`` facade: snapshot, list and restore one desk. Verbs only.

Each verb checks its arguments, opens a session (``engine.locked`` to write,
``session.open_reading`` or ``engine.reading`` to read) and hands it to the one operation that
does the work: ``snapshot``, ``restore``, ``undo``, ``history``, ``external``, ``retention``,
``turns``, ``guard`` or ``remote``; the policy verbs (protected paths, budgets) are in
``protection.py``.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

from .core import lock
from .core.ids import short_id
from .core.paths import TRACKED_PATHS
from .errors import InvalidArgumentError
from .ops import deskconfig, engine, history, listing, request, restore, undo, vouched
from .ops import retention as pruning
from .ops.asof import Moment
from .ops.heldat import Held, chosen, held, named
from .ops.results import (
    Checkpoint,
    Diff,
    LogEntry,
    PruneResult,
    Recovery,
    RestoreResult,
    SnapshotResult,
    Status,
    TurnInfo,
)
from .ops.session import open_reading
from .ops.turns import Turn, first_checkpoint, first_of_turn, open_turn
from .ops.turns import turns as recorded_turns
from .protection import PolicyVerbs
from .store import metadata
from .store.repofolder import is_initialized

if TYPE_CHECKING:  # blame, restore-turn, the guard import these as they run; no hook event does
    from .ops.blame import Blame
    from .ops.guard import Guard

__all__ = ['Checkpoint', 'Checkpoints', 'RestoreResult', 'SnapshotResult', 'Status']

_F = TypeVar('_F', bound=Callable[..., Any])
_Self = TypeVar('_Self', bound='Checkpoints')


def _remote() -> ModuleType:  # imported by the verbs that use it: it loads dulwich's clients
    from . import remote

    return remote


class Checkpoints(PolicyVerbs):
    """The checkpoint repository of one desk.

    Attributes:
        repository_directory: The bare git directory that holds the snapshots.
        desk_directory: The desk folder whose tracked files are snapshotted.
        tracked_paths: The tracked paths as given; when left at the default, the paths
            remembered by an existing repository are used instead, so the library and the
            command line always agree on what a repository tracks.
        desk_config: All of the above, and the options, as the operations take them.
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
        atomic_writes: bool | None = None,
        lock_timeout: float = lock.DEFAULT_TIMEOUT,
    ) -> None:
        """Describes the repository without touching the disk.

        Args:
            repository_directory, desk_directory, tracked_paths: As the attributes.
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
        """
        self.desk_config = deskconfig.make(
            repository_directory,
            desk_directory,
            tracked_paths,
            max_file_size=max_file_size,
            durable=durable,
            atomic_writes=atomic_writes,
            lock_timeout=lock_timeout,
        )
        self.repository_directory = self.desk_config.repository
        self.desk_directory = self.desk_config.desk
        self.tracked_paths = deskconfig.as_given(tracked_paths)
        self.last_recovery: Recovery | None = None

    def __repr__(self) -> str:
        return (
            f'{type(self).__name__}({str(self.repository_directory)!r}, '
            f'{str(self.desk_directory)!r}, tracked_paths={self.tracked_paths!r})'
        )

    # -- snapshot, list, restore -----------------------------------------------------------

    def snapshot(
        self,
        reason: str,
        *,
        tool: str | None = None,
        paths: Sequence[str] | None = None,
        turn: str | None = None,
        session: str | None = None,
    ) -> str | None:
        """Records the tracked files as they are now, if they changed since the newest checkpoint.

        The first snapshot creates the repository.

        Args:
            reason: What is about to happen, kept as the checkpoint's message.
            tool: Optional name of the tool about to write (kept as a git trailer).
            paths: Optional paths it is about to write (kept as trailers).
            turn: Optional id of the agent turn (kept as a trailer); its first snapshot always
                leaves a checkpoint, even when nothing changed (the turn's start).
            session: Optional id of the agent session the turn belongs to (kept as a trailer).

        Returns:
            The new checkpoint's short id, or None when nothing had changed.
        """
        result = self.snapshot_with_result
        return result(reason, tool=tool, paths=paths, turn=turn, session=session).checkpoint_id

    def snapshot_with_result(
        self,
        reason: str,
        *,
        tool: str | None = None,
        paths: Sequence[str] | None = None,
        turn: str | None = None,
        session: str | None = None,
    ) -> SnapshotResult:
        """Like :meth:`snapshot`, but also says which files were left out, and any recovery."""
        if not isinstance(reason, str):
            raise InvalidArgumentError(
                f'reason must be a string, not {type(reason).__name__}', name='reason', value=reason
            )
        if isinstance(paths, str):
            paths = (paths,)
        message = metadata.compose(reason, tool, paths, turn, session)
        deskconfig.check_desk(self.desk_config, must_exist=True)
        self.last_recovery = None
        taken = engine.take_snapshot(self.desk_config, message, report_to=self)
        return first_of_turn(self.desk_config, turn, message, taken)

    def list(self, limit: int | None = 20) -> builtins.list[Checkpoint]:
        """The most recent checkpoints, newest first (``limit=None``: all of them); ``[]`` when
        none has been taken."""
        listing.check_limit(limit)
        engine.complete_pending(self.desk_config, report_to=self)
        return listing.list_checkpoints(self.repository_directory, limit)

    def checkpoint_at(self, at: Moment) -> Checkpoint:
        """The state the desk held at moment ``at`` (ISO 8601 with an offset, or ``'2h'``,
        ``'3d'``: see ``ops/asof.py``): the newest checkpoint taken at or before it, or the
        agent's write sealed after that checkpoint and before the moment (see
        ``ops/heldat.py``); before the oldest: ``BeforeFirstCheckpointError``."""
        return self.held_at(at).checkpoint

    def held_at(self, at: Moment) -> Held:
        """:meth:`checkpoint_at`, and what it is: a checkpoint or the agent's sealed write (with
        its turn), and whether the desk changed after it and before the moment unrecorded."""
        engine.complete_pending(self.desk_config, report_to=self)
        return held(self.repository_directory, at)

    def page(self, limit: int = 100, start: str | None = None) -> listing.Page:
        """``limit`` checkpoints from full id ``start`` (default: the newest) back, with their
        full ids and where the next page starts (each page reads only its own commits)."""
        engine.complete_pending(self.desk_config, report_to=self)
        return listing.page(self.repository_directory, limit, start)

    def introduced(self, checkpoint_id: str, *, patches: bool = True) -> Diff:
        """What a checkpoint changed from the one before it (the oldest kept: every file)."""
        with engine.reading(self.desk_config, report_to=self) as session:
            return history.introduced(session, checkpoint_id, patches=patches)

    def blame(
        self, path: str, checkpoint_id: str | None = None, *, at: Moment | None = None
    ) -> Blame:
        """Who wrote each line of ``path`` (``ops/blame.py``), in the desk or at an id or ``at``."""
        from .ops import blame as blames

        with engine.reading(self.desk_config, report_to=self) as session:
            return blames.blame(session, path, chosen(session, checkpoint_id, at))

    @overload
    def restore(
        self,
        checkpoint_id: str | None = None,
        paths: Sequence[str] | None = None,
        dry_run: Literal[False] = False,
        force: bool = True,
        *,
        on_external: str | None = None,
        at: Moment | None = None,
    ) -> str: ...

    @overload
    def restore(
        self,
        checkpoint_id: str | None,
        paths: Sequence[str] | None,
        dry_run: Literal[True],
        force: bool = True,
        *,
        on_external: str | None = None,
        at: Moment | None = None,
    ) -> RestoreResult: ...

    @overload
    def restore(
        self,
        checkpoint_id: str | None = None,
        paths: Sequence[str] | None = None,
        *,
        dry_run: Literal[True],
        force: bool = True,
        on_external: str | None = None,
        at: Moment | None = None,
    ) -> RestoreResult: ...

    def restore(
        self,
        checkpoint_id: str | None = None,
        paths: Sequence[str] | None = None,
        dry_run: bool = False,
        force: bool = True,
        *,
        on_external: str | None = None,
        at: Moment | None = None,
    ) -> str | RestoreResult:
        """Puts the tracked files back as they were at a checkpoint, snapshotting the current
        ones first, so a restore can itself be undone. Files created after the checkpoint are
        removed; files outside the tracked paths are never touched.

        Args:
            checkpoint_id: The checkpoint to return to: a short id or a full 40-digit sha.
                None means the newest checkpoint (discard the changes made since it), unless
                ``at`` names the moment whose checkpoint to return to (see :meth:`checkpoint_at`).
            paths: Restore only these files or folders (desk-relative); the rest of the desk
                is left as it is. The pre-snapshot still records the whole desk.
            dry_run: Change nothing and return the plan (``dry_run=True``); where the
                restore would refuse, the same error (its message says it would).
            force: True (the default) makes every tracked path match the checkpoint, files
                changed outside the agent included (they are kept in the pre-snapshot and
                listed in ``RestoreResult.external``). False reverts only the agent's changes
                and keeps every file changed outside the agent as it is (listed in
                ``RestoreResult.kept``); see :meth:`seal` for how they are told apart.
            on_external: Instead of ``force``: ``'overwrite'``, ``'keep'``, or ``'refuse'``
                (raise ``ExternalChangesError`` and change nothing if any such file would be
                touched).

        Returns:
            The id of the snapshot taken just before restoring, or of the current state when
            nothing had changed; ``restore(that_id)`` undoes this restore. With ``dry_run``,
            the plan.
        """
        result = self.restore_with_result(
            checkpoint_id, paths, dry_run, force, on_external=on_external, at=at
        )
        return result if dry_run else result.before_id

    def restore_with_result(
        self,
        checkpoint_id: str | None = None,
        paths: Sequence[str] | None = None,
        dry_run: bool = False,
        force: bool = True,
        *,
        on_external: str | None = None,
        at: Moment | None = None,
    ) -> RestoreResult:
        """Like :meth:`restore`, but says what was (or, dry, would be) written and deleted."""
        policy = request.policy(on_external, request.OVERWRITE if force else request.KEEP)
        deskconfig.check_desk(self.desk_config, must_exist=False)
        engine.require_repository(self.desk_config)
        with engine.locked(self.desk_config, report_to=self, verb='restore') as session:
            checkpoint_id = chosen(session, checkpoint_id, at)
            return restore.to_checkpoint(
                session, checkpoint_id, paths, dry_run=dry_run, on_external=policy
            )

    # -- looking back (history.py) --------------------------------------------------------

    def diff(
        self,
        from_id: str | None = None,
        to_id: str | None = None,
        *,
        patches: bool = True,
        paths: Sequence[str] | None = None,
        at: Moment | None = None,
    ) -> Diff:
        """The changes from checkpoint ``from_id`` (or the one the desk held at moment ``at``,
        see :meth:`checkpoint_at`) to ``to_id``, or to the desk as it is now. Each change names
        its path and kind (added, modified, deleted, type-changed, mode-changed) and, for text
        files, carries a unified diff; binary files are flagged. ``paths`` (files or folders,
        desk-relative) limits the diff to those. A desk file that snapshots leave out (too
        large, ...) shows no change."""
        with engine.reading(self.desk_config, report_to=self) as session:
            start = named(session, from_id, at, 'from_id')
            return history.diff(session, start, to_id, patches=patches, paths=paths)

    def show(
        self, checkpoint_id: str | None = None, path: str = '', *, at: Moment | None = None
    ) -> bytes:
        """A file's bytes as they were at a checkpoint, or at moment ``at`` (a symlink's target
        for a symlink)."""
        with engine.reading(self.desk_config, report_to=self) as session:
            return history.show(session, named(session, checkpoint_id, at, 'checkpoint_id'), path)

    def log(
        self, path: str | None = None, limit: int | None = 20, *, at: Moment | None = None
    ) -> builtins.list[LogEntry]:
        """Checkpoints newest first with the files each changed from the one before it
        (``limit=None``: all); with ``at``, from the one the desk held then. With ``path`` (a
        file or folder), only those that changed something there (``[]`` when none did)."""
        listing.check_limit(limit)
        engine.complete_pending(self.desk_config, report_to=self)
        with open_reading(self.desk_config) as session:
            return [] if session is None else history.log(session, path, limit, at)

    def status(self) -> Status:
        """What changed in the desk since the newest checkpoint, and which of it was external
        (an interrupted restore is completed first, ``last_recovery`` saying so)."""
        deskconfig.check_desk(self.desk_config, must_exist=False)
        engine.complete_pending(self.desk_config, report_to=self)
        with open_reading(self.desk_config) as session:
            if session is not None:
                return history.status(session)
        return history.unrecorded_status(self.desk_config)

    # -- tracked paths -------------------------------------------------------------------

    def effective_tracked_paths(self) -> tuple[str, ...]:
        """The tracked paths the next snapshot will use: the ones given to this object, else
        the ones the repository remembers, else the default."""
        return deskconfig.effective_allowlist(self.desk_config).entries

    def set_tracked_paths(self, tracked_paths: Sequence[str]) -> tuple[str, ...]:
        """Records new tracked paths in the repository (creating it if needed); returns them.
        Files outside the new list are no longer snapshotted or restored; checkpoints taken
        before keep what they hold. Nothing in the desk is changed."""
        config = deskconfig.tracking(self.desk_config, tracked_paths)
        deskconfig.check_desk(config, must_exist=False)
        self.tracked_paths = config.requested.entries
        self.desk_config = config
        with engine.locked(config, report_to=self, verb='track'):
            pass  # the lock records an explicit list in the repository's config
        return config.requested.entries

    # -- the agent's state, undo and redo --------------------------------------------------

    def seal(self) -> str:
        """Records the desk as the state the agent left, once its write tool has run.

        Later, :meth:`status`, :meth:`snapshot_with_result` and restores report files that
        differ from this state as changed outside the agent. A seal holds until the next
        checkpoint; restores, undo and redo seal the state they write by themselves. Returns
        the short id of the seal (the newest checkpoint when the desk matches it)."""
        deskconfig.check_desk(self.desk_config, must_exist=True)
        with engine.locked(self.desk_config, report_to=self, verb='seal') as session:
            return short_id(vouched.seal(session))  # narrowed by a running watcher

    def undo(
        self, *, force: bool = False, dry_run: bool = False, keep_external: bool = False
    ) -> RestoreResult:
        """Rewinds the agent's last step, like an editor's undo.

        With changes since the newest checkpoint, it restores that checkpoint (the state the
        change started from); otherwise the state before the current one in the undo history
        (see ``undo.py`` for the exact rules). Repeatable: three undos undo the last three
        writes. It is an ordinary restore, so it can be undone, and :meth:`redo` reverses it.

        Files changed outside the agent (see :meth:`seal`) that the step did not touch are
        left as they are. When the step changed a file that was also changed outside the agent
        since, it refuses (``ExternalChangesError`` naming the files, nothing changed) unless
        ``force`` (put the step's version back; the outside change stays in the pre-snapshot)
        or ``keep_external`` (leave those files as they are).
        """
        policy = request.undo_policy(force, keep_external)
        deskconfig.check_desk(self.desk_config, must_exist=False)
        engine.require_repository(self.desk_config)
        with engine.locked(self.desk_config, report_to=self, verb='undo') as session:
            return undo.undo(session, policy, dry_run)

    def redo(
        self, *, force: bool = False, dry_run: bool = False, keep_external: bool = False
    ) -> RestoreResult:
        """Reverses the newest undo not yet redone (nothing to redo after new checkpoints);
        files changed since the undo are treated as :meth:`undo` treats outside changes."""
        policy = request.undo_policy(force, keep_external)
        deskconfig.check_desk(self.desk_config, must_exist=False)
        engine.require_repository(self.desk_config)
        with engine.locked(self.desk_config, report_to=self, verb='redo') as session:
            return undo.redo(session, policy, dry_run)

    # -- agent integration: guards, decorators and turns (guard.py, turns.py) --------------

    def before_write(
        self,
        tool: str | None = None,
        *,
        path_arg: str | Sequence[str] | None = 'path',
        strict: bool = False,
    ) -> Callable[[_F], _F]:
        """Decorator: snapshot before the decorated write tool runs (see ``guard.before_write``);
        e.g. ``@checkpoints.before_write('write_file', path_arg='path')``."""
        from .ops import guard

        return guard.before_write(self, tool, path_arg=path_arg, strict=strict)

    def guard(
        self,
        action: str,
        *,
        tool: str | None = None,
        paths: Sequence[str] | str | None = None,
        strict: bool = False,
        turn: Turn | None = None,
    ) -> Guard:
        """Context manager: snapshot before the write in its block (see ``guard.Guard``); e.g.
        ``with checkpoints.guard('write_file Memory.md'): (desk / 'Memory.md').write_text(t)``."""
        from .ops.guard import Guard

        return Guard(self, action, tool=tool, paths=paths, strict=strict, turn=turn)

    def turn(self, label: str = '', message_id: str | None = None) -> AbstractContextManager[Turn]:
        """Context manager: tag every checkpoint taken in its block with one turn id.

        Example::

            with checkpoints.turn('tidy the notes', message_id='msg_17') as turn:
                write_file('notes/a.md', '...')
        """
        return open_turn(self, label, message_id)

    def restore_turn(
        self,
        turn_id: str,
        dry_run: bool = False,
        force: bool = False,
        *,
        on_external: str | None = None,
    ) -> RestoreResult:
        """Puts back the files turn ``turn_id`` wrote, as they were before the turn began; what
        later turns, other sessions and other writers changed elsewhere stays.

        Where someone else changed such a file after the turn did, it refuses and changes
        nothing (``TurnConflictError`` naming the files) unless ``force`` (put it back anyway;
        the pre-snapshot keeps it) or ``on_external='keep'`` (leave it as it is). See
        ``ops/rewind.py`` for how the writer of each file is told.
        """
        policy = request.policy(on_external, request.OVERWRITE if force else request.REFUSE)
        deskconfig.check_desk(self.desk_config, must_exist=False)
        first_checkpoint(self, turn_id)  # the turn exists
        from .ops import rewind

        with engine.locked(self.desk_config, report_to=self, verb='restore-turn') as session:
            return rewind.restore_turn(session, turn_id.strip(), policy, dry_run)

    def turns(self, limit: int | None = 20) -> builtins.list[TurnInfo]:
        """The recorded turns, newest first, each with its checkpoints (newest first)."""
        return recorded_turns(self, limit)

    # -- retention and backups (retention.py, remote/) ---------------------------------------

    @classmethod
    def open(
        cls: type[_Self],
        repository_directory: Path,
        desk_directory: Path,
        *,
        keep: int | None = None,
        retention: str | float | None = None,
        max_bytes: int | str | None = None,
        tracked_paths: Sequence[str] = TRACKED_PATHS,
    ) -> _Self:
        """A ``Checkpoints`` held to retention limits: pruned now, and again after every write
        it makes, so ``keep=N`` means at most N checkpoints after each snapshot. Limits not
        given here are read from the repository's config (``checkpoints.keep``, ``.retention``,
        ``.maxsize``, as ``checkpoints prune --save`` writes them), so every entry point
        applies the same ones; writes of any ``Checkpoints`` apply the configured ones.

        Example::

            checkpoints = Checkpoints.open(repo, desk, keep=200, retention='30d')
        """
        checkpoints = cls(repository_directory, desk_directory, tracked_paths)
        repository = checkpoints.repository_directory
        limits = pruning.held_to(repository, keep, retention, max_bytes)
        checkpoints.desk_config = replace(checkpoints.desk_config, limits=limits)
        if pruning.due_at_start(repository, limits):
            checkpoints.prune(
                keep=limits.keep, older_than=limits.older_than, max_bytes=limits.max_size
            )
        return checkpoints

    def prune(
        self,
        keep: int | None = None,
        older_than: str | float | None = None,
        max_bytes: int | str | None = None,
        *,
        dry_run: bool = False,
    ) -> PruneResult:
        """Drops old checkpoints beyond ``keep`` (the newest N; at least 1 is always kept),
        ``older_than`` (seconds, or text like ``'30d'``) and ``max_bytes`` (the oldest until the
        objects fit: bytes, or text like ``'500M'``); the ids of the kept ones never change.
        ``dry_run`` only says what would be dropped. With no limit at all it only compacts the
        storage (one pack, with deltas). Refuses while a restore journal says a restore is
        unfinished.
        """
        if not engine.repository_exists(self.desk_config):
            return PruneResult(0, 0, 0, 0)
        with engine.locked(self.desk_config, report_to=self, verb='prune') as session:
            return pruning.prune_or_compact(
                session.repo, keep=keep, older_than=older_than, max_bytes=max_bytes, dry_run=dry_run
            )

    def add_remote(self, name: str, url: str):  # -> remote.Remote
        """Remembers a git remote (path, file://, http(s):// or ssh:// URL) for backups."""
        with engine.locked(self.desk_config, report_to=self, verb='remote') as session:
            return _remote().add_remote(session.repo.path, name, url)

    def remove_remote(self, name: str) -> None:
        with engine.locked(self.desk_config, report_to=self, verb='remote') as session:
            _remote().remove_remote(session.repo.path, name)

    def remotes(self) -> builtins.list:  # -> list[remote.Remote]
        held = is_initialized(self.repository_directory)
        return _remote().list_remotes(self.repository_directory) if held else []

    def push(
        self, remote: str | None = None, *, progress=None, create_parents: bool = False
    ):  # -> remote.TransferResult
        """Pushes the checkpoints to a remote's branch main (fast-forward only); a path
        remote's folder must exist (``MissingRemoteFolderError``) unless ``create_parents``."""
        engine.require_repository(self.desk_config)
        return _remote().push(self.desk_config, remote, progress, create_parents=create_parents)

    def pull(self, remote: str | None = None, *, progress=None):  # -> remote.TransferResult
        """Fast-forwards the checkpoints to a remote's; the desk's files are not touched."""
        return _remote().pull_desk(self.desk_config, remote, progress, report_to=self)

    @classmethod
    def clone(
        cls: type[_Self],
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
        checkpoints = cls(repository_directory, desk_directory, tracked_paths)
        result, written = _remote().clone(
            checkpoints.desk_config, url, restore=restore, progress=progress
        )
        return checkpoints, result, written
