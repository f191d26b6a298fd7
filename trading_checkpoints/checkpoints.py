"""The ``Checkpoints`` facade: snapshot, list and restore one desk. Verbs only.

Each verb opens a session (``engine.locked`` to write, ``session.open_reading`` to read) and
hands it to the module that does the work: ``snapshot``, ``restore`` (through ``recovery``),
``history``, ``external``, ``undo``, ``retention``, ``remote``, ``turns`` and ``guard``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Literal, overload

from .agentverbs import AgentVerbs
from .core.paths import Allowlist
from .core.trees import FileEntry, build_trees
from .desk import safety
from .desk.state import DeskState
from .errors import CheckpointError
from .ops import external, history, restore, undo
from .ops.listing import list_checkpoints
from .ops.restore import Request
from .ops.results import Checkpoint, Diff, LogEntry, RestoreResult, SnapshotResult, Status
from .ops.session import STAT_CACHE, Session, effective_allowlist, open_reading
from .storageverbs import StorageVerbs
from .store import metadata
from .store.commitinfo import SHORT_ID_LENGTH
from .store.repo import PRIVATE_DIR

__all__ = ['Checkpoint', 'Checkpoints', 'RestoreResult', 'SnapshotResult', 'Status']


class Checkpoints(StorageVerbs, AgentVerbs):
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
        from .ops import snapshot

        if not isinstance(reason, str):
            raise CheckpointError(f'reason must be a string, not {type(reason).__name__}')
        if isinstance(paths, str):
            paths = (paths,)
        message = metadata.compose(reason, tool, paths, turn)
        self._check_desk(must_exist=True)
        self.last_recovery = None
        earlier = snapshot.look(self.desk_config, message)
        if earlier is not None and earlier.answer is not None:
            return earlier.answer  # nothing changed (see snapshot.py: sound without the lock)
        with self._locked(light=True) as session:
            return snapshot.take(session, message, earlier)

    def list(self, limit: int | None = 20) -> list[Checkpoint]:
        """The most recent checkpoints, newest first (``limit=None``: all of them); ``[]`` when
        none has been taken."""
        _check_limit(limit)
        self._complete_pending_restore()
        return list_checkpoints(self.repository_directory, limit)

    @overload
    def restore(
        self,
        checkpoint_id: str | None = None,
        paths: Sequence[str] | None = None,
        dry_run: Literal[False] = False,
        force: bool = True,
        *,
        on_external: str | None = None,
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
    ) -> RestoreResult: ...

    def restore(
        self,
        checkpoint_id: str | None = None,
        paths: Sequence[str] | None = None,
        dry_run: bool = False,
        force: bool = True,
        *,
        on_external: str | None = None,
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

        Raises:
            CheckpointError: The checkpoint or a path does not exist, or the restore failed.
        """
        result = self.restore_with_result(
            checkpoint_id, paths=paths, dry_run=dry_run, force=force, on_external=on_external
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
    ) -> RestoreResult:
        """Like :meth:`restore`, but says what was (or, dry, would be) written and deleted."""
        policy = _policy(on_external, restore.OVERWRITE if force else restore.KEEP)
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
            request = Request(
                target, label, selection=selection, dry_run=dry_run, on_external=policy
            )
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

    def log(self, path: str | None = None, limit: int | None = 20) -> list[LogEntry]:
        """Checkpoints newest first, each with the files that differ from the one before it
        (``limit=None``: all of them).

        With ``path`` (a file or folder), only the checkpoints where something at or below it
        changed; ``[]`` when none did (also for a path that never existed).
        """
        _check_limit(limit)
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
        self.desk_config = replace(self.desk_config, requested=allowlist, explicit=True)
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
        from .ops import external

        self._check_desk(must_exist=True)
        with self._locked() as session:
            return external.seal(session).decode()[:SHORT_ID_LENGTH]

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
        policy = _undo_policy(force, keep_external)
        self._check_desk(must_exist=False)
        self._require_repository()
        with self._locked() as session:
            view, baseline, _ = _agent_trees(session, policy)
            step = undo.undo_target(session.repo, view, baseline)
            request = Request(
                step.sha.encode(),
                step.short_id,
                action=undo.UNDO,
                subject=f'undo: back to {step.short_id} ({step.subject})',
                dry_run=dry_run,
                on_external=policy,
            )
            return self._restore(session, request)

    def redo(
        self, *, force: bool = False, dry_run: bool = False, keep_external: bool = False
    ) -> RestoreResult:
        """Reverses the newest undo not yet redone (nothing to redo after new checkpoints).

        Files changed since the undo are treated as :meth:`undo` treats outside changes.
        """
        policy = _undo_policy(force, keep_external)
        self._check_desk(must_exist=False)
        self._require_repository()
        with self._locked() as session:
            undone, state = undo.redo_source(session.repo)
            head = session.repo.head()
            view, baseline, files = _agent_trees(session, policy)
            if policy != restore.OVERWRITE and head and view != baseline:
                held, _ = session.flatten(baseline)
                changed = sorted(p for p in {*held, *files} if held.get(p) != files.get(p))
                raise CheckpointError(
                    'the agent changed the desk since the last undo; redo would overwrite '
                    f'that ({", ".join(changed[:5])}); force it to redo anyway (the changes '
                    'are kept in a pre-snapshot)'
                )
            request = Request(
                state,
                state.decode()[:SHORT_ID_LENGTH],
                action=undo.REDO,
                subject=f'redo: reverse undo {undone.short_id}',
                trailers=[(undo.REDO_OF, undone.sha)],
                dry_run=dry_run,
                on_external=policy,
            )
            return self._restore(session, request)


def _policy(value: str | None, default: str) -> str:
    if value is None:
        return default
    if value not in (restore.OVERWRITE, restore.KEEP, restore.REFUSE):
        raise CheckpointError(f"on_external must be 'overwrite', 'keep' or 'refuse', not {value!r}")
    return value


def _undo_policy(force: bool, keep_external: bool) -> str:
    if force and keep_external:
        raise CheckpointError('choose force or keep_external, not both')
    if force:
        return restore.OVERWRITE
    return restore.KEEP if keep_external else restore.CONFLICTS


def _agent_trees(session: Session, policy: str) -> tuple[bytes, bytes, dict[str, FileEntry]]:
    """What undo and redo measure the agent's steps with: the desk as the agent left it
    (changes made outside it left out, unless they are to be overwritten anyway) as a tree and
    as files, and the newest checkpoint's tree as the agent left it (see
    ``external.agent_baseline``)."""
    repo = session.repo
    result, cache = session.scan()
    head = repo.head()
    head_tree = repo.commit_info(head).tree if head is not None else b''
    if policy == restore.OVERWRITE:
        return session.tree_of(result, cache), head_tree, result.files
    baseline = external.agent_baseline(repo, head) if head is not None else head_tree
    attribution = external.attribute(session, result.files, session.known_tree(result, cache))
    if not attribution.external:
        return session.tree_of(result, cache), baseline, result.files
    view = external.agent_view(result.files, attribution)
    trees, _ = build_trees(view, set(), {})
    return trees[''], baseline, view


def _check_limit(limit: object) -> None:
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise CheckpointError(f'limit must be a whole number of at least 0 or None, not {limit!r}')
