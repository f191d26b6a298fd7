"""The ``Checkpoints`` facade: snapshot, list and restore one desk. Verbs and locks only."""

from __future__ import annotations

import os
import stat
from array import array
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

from . import (
    external,
    history,
    journal,
    lock,
    metadata,
    safety,
    statcache,
    storage,
    undo,
    worktree,
)
from .errors import CheckpointError, CorruptRepositoryError
from .fs import realpath
from .history import Diff, FileChange, LogEntry
from .journal import Recovery
from .paths import TRACKED_PATHS, Allowlist
from .repo import (
    PRIVATE_DIR,
    SHORT_ID_LENGTH,
    SYMLINK_MODE,
    CommitInfo,
    ShadowRepo,
    is_initialized,
    repair_head,
)

if TYPE_CHECKING:  # the agent-integration methods' types (guard.py, turns.py)
    import builtins
    from collections.abc import Callable
    from contextlib import AbstractContextManager
    from typing import Any, TypeVar

    from .guard import Guard
    from .turns import Turn, TurnInfo

    _F = TypeVar('_F', bound=Callable[..., Any])


@dataclass(frozen=True)
class Checkpoint:
    """One snapshot.

    Attributes:
        checkpoint_id: The snapshot's short git commit id.
        created_at: When it was taken, ISO 8601 with a UTC offset.
        reason: What was about to happen, such as "before write_file Memory.md".
        tool: The tool that was about to write, when the snapshot recorded one.
        paths: The paths it was about to write, when recorded.
        turn: The agent turn the snapshot belongs to, when recorded.
        action: What made it when the library did: ``restore``, ``undo``, ``redo``, or
            ``before-restore``/``before-undo``/``before-redo`` for the snapshot a restore
            takes first; None for an ordinary snapshot.
    """

    checkpoint_id: str
    created_at: str
    reason: str
    tool: str | None = None
    paths: tuple[str, ...] = ()
    turn: str | None = None
    action: str | None = None


@dataclass(frozen=True)
class RestoreResult:
    """What a restore did.

    Attributes:
        before_id: The snapshot of the desk taken just before restoring (or the newest
            checkpoint when nothing had changed); ``restore(before_id)`` undoes the restore.
        target_id: The checkpoint that was restored.
        restored_id: The checkpoint recording the restored state, or None when the desk
            already matched the target.
        written: Paths created or overwritten.
        deleted: Paths removed.
        created: Of ``written``, the paths that did not exist before.
        external: Of the paths written or deleted, those changed outside the agent since the
            state it left (see ``Checkpoints.seal``); they are kept in the pre-snapshot.
        dry_run: True when nothing was done and this is the plan (``before_id`` is then the
            newest checkpoint, and ``restored_id`` None).
        action: ``restore``, ``undo`` or ``redo``.
        recovered: Set when this call finished a restore through its intent record: an
            earlier restore a crash had interrupted, or this one after another writer changed
            a file it was about to replace (the desk is then saved as found first). One line.
    """

    before_id: str
    target_id: str
    restored_id: str | None
    written: tuple[str, ...] = field(default=())
    deleted: tuple[str, ...] = field(default=())
    created: tuple[str, ...] = field(default=())
    external: tuple[str, ...] = field(default=())
    dry_run: bool = False
    action: str = 'restore'
    recovered: str | None = None


@dataclass(frozen=True)
class SnapshotResult:
    """What :meth:`Checkpoints.snapshot_with_result` did and found.

    Attributes:
        checkpoint_id: The new checkpoint, or None when nothing had changed.
        external: Paths changed outside the agent since the state it left (see ``seal``).
        basis: How that was decided: ``sealed``, ``declared``, ``unknown`` or ``none``.
        skipped: ``(path, why)`` for each tracked file left out of the snapshot, such as a
            file larger than the maximum file size.
        recovered: Set when this call first completed a restore that a crash had interrupted.
    """

    checkpoint_id: str | None
    external: tuple[str, ...] = ()
    basis: str = 'unknown'
    skipped: tuple[tuple[str, str], ...] = ()
    recovered: str | None = None


@dataclass(frozen=True)
class Status:
    """The desk compared with its newest checkpoint.

    Attributes:
        newest_id: The newest checkpoint, None when there is none.
        changes: Files that differ from it (no patches; use ``diff`` for those).
        external: Paths changed outside the agent since the state it left, sorted.
        basis: ``sealed``, ``declared``, ``unknown`` (cannot tell) or ``none`` (see ``seal``).
    """

    newest_id: str | None
    changes: tuple[FileChange, ...]
    external: tuple[str, ...]
    basis: str

    @property
    def clean(self) -> bool:
        return not self.changes

    def to_dict(self) -> dict[str, Any]:
        return {
            'newest_id': self.newest_id,
            'changes': [{'path': c.path, 'kind': c.kind} for c in self.changes],
            'external': list(self.external),
            'basis': self.basis,
        }


_STAT_CACHE = 'statcache'
_LOCK = 'lock'


class Checkpoints:
    """The checkpoint repository of one desk.

    Attributes:
        repository_directory: The bare git directory that holds the snapshots.
        desk_directory: The desk folder whose tracked files are snapshotted.
        tracked_paths: The tracked paths as given; when left at the default, the paths
            remembered by an existing repository are used instead, so the library and the
            command line always agree on what a repository tracks.

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
        """
        self._max_file_size = (
            None if max_file_size is None else safety.check_max_file_size(max_file_size)
        )
        self._durable = bool(durable)
        self._lock_timeout = lock.check_timeout(lock_timeout)
        self.last_recovery: Recovery | None = None
        self.repository_directory = Path(repository_directory)
        self.desk_directory = Path(desk_directory)
        if isinstance(tracked_paths, str):
            tracked_paths = (tracked_paths,)
        self.tracked_paths = tuple(tracked_paths)
        self._requested = _allowlist_of(self.tracked_paths)
        self._explicit = self._requested != _allowlist_of(TRACKED_PATHS)
        self._real_desk: str | None = None  # the desk's real path, found by each verb

    def __repr__(self) -> str:
        return (
            f'Checkpoints({str(self.repository_directory)!r}, {str(self.desk_directory)!r}, '
            f'tracked_paths={self.tracked_paths!r})'
        )

    # -- the verbs -------------------------------------------------------------------------

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
        if not isinstance(reason, str):
            raise CheckpointError(f'reason must be a string, not {type(reason).__name__}')
        if isinstance(paths, str):
            paths = (paths,)
        message = metadata.compose(reason, tool, paths, turn)
        self._check_desk(must_exist=True)
        with self._locked() as repo:
            allowlist = self._allowlist(repo)
            cache = self._load_cache(repo, allowlist)
            scan = self._scan(repo, allowlist, cache)
            attribution = external.attribute(
                repo, allowlist, _LazyFiles(scan), self.desk_directory, _known_tree(scan, cache)
            )
            sha = self._commit_scan(repo, scan, cache, allowlist, message)
            if sha is None:
                external.announce(repo, message)
        return SnapshotResult(
            checkpoint_id=sha.decode()[:SHORT_ID_LENGTH] if sha else None,
            external=attribution.external,
            basis=attribution.basis,
            skipped=tuple(scan.skipped),
            recovered=str(self.last_recovery) if self.last_recovery else None,
        )

    def list(self, limit: int = 20) -> list[Checkpoint]:
        """The most recent checkpoints, newest first; ``[]`` when none has been taken."""
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise CheckpointError(f'limit must be a whole number of at least 0, not {limit!r}')
        self.last_recovery = None
        if journal.pending(self.repository_directory):
            with self._locked():
                pass  # completes the interrupted restore first
        repo = ShadowRepo.open(self.repository_directory)
        if repo is None:
            return []
        try:
            return [_checkpoint(info) for info in repo.history(limit)]
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
        with self._locked() as repo:
            return self._restore_locked(
                repo, checkpoint_id, paths=paths, dry_run=dry_run, force=force
            )

    def _restore_locked(
        self,
        repo: ShadowRepo,
        checkpoint_id: str | None,
        *,
        paths: Sequence[str] | None = None,
        dry_run: bool = False,
        force: bool = True,
        action: str = undo.RESTORE,
        subject: str | None = None,
        trailers: Sequence[tuple[str, str]] = (),
    ) -> RestoreResult:
        if checkpoint_id is None:
            newest = repo.head()
            if newest is None:
                raise CheckpointError(f'no checkpoints yet in {self.repository_directory}')
            target_sha = newest
            label = newest.decode()[:SHORT_ID_LENGTH]
        else:
            target_sha = repo.resolve(checkpoint_id)
            label = checkpoint_id.strip()
        allowlist = self._allowlist(repo)
        target_info = repo.commit_info(target_sha)
        # Read and vet the whole target before the desk is touched.
        target, target_trees = repo.flatten_tree(target_info.tree, allowlist)
        target_tree = target_info.tree
        cache = self._load_cache(repo, allowlist)
        if not dry_run:
            self.desk_directory.mkdir(parents=True, exist_ok=True)
        scan = self._scan(repo, allowlist, cache)
        selection: tuple[str, ...] = ()
        if paths is not None:
            if isinstance(paths, str):
                paths = (paths,)
            selection = tuple(history.normalize_path(path, allowlist) for path in paths)
            if not selection:
                raise CheckpointError('no paths given to restore')
            for path in selection:
                if not any(history.under(name, (path,)) for name in (*target, *scan.files)):
                    raise CheckpointError(
                        f'{path!r} is neither in checkpoint {label} nor in the desk'
                    )
            target = {
                **{p: e for p, e in scan.files.items() if not history.under(p, selection)},
                **{p: e for p, e in target.items() if history.under(p, selection)},
            }
            target_trees, partial_trees = worktree.build_trees(target, set(), {})
            target_tree = target_trees['']
        the_plan = worktree.plan(scan.files, target)
        touched = set(the_plan.write) | set(the_plan.delete)
        attribution = external.attribute(
            repo, allowlist, scan.files, self.desk_directory, _known_tree(scan, cache)
        )
        overwritten = tuple(path for path in attribution.external if path in touched)
        head = repo.head()
        assert head is not None
        if dry_run:
            return RestoreResult(
                before_id=head.decode()[:SHORT_ID_LENGTH],
                target_id=target_sha.decode()[:SHORT_ID_LENGTH],
                restored_id=None,
                written=tuple(the_plan.write),
                deleted=tuple(the_plan.delete),
                created=tuple(path for path in the_plan.write if path not in scan.files),
                external=overwritten,
                dry_run=True,
                action=action,
            )
        if overwritten and not force:
            raise external.ExternalChangesError(
                f'refusing to {action}: it would overwrite {len(overwritten)} file(s) changed '
                f'outside the agent: {", ".join(overwritten[:5])}'
                f'{" ..." if len(overwritten) > 5 else ""} (force it to overwrite them; they '
                'are kept in the pre-snapshot)',
                overwritten,
            )
        before_message = undo.compose(
            f'before {action}' if action != undo.RESTORE else f'before restoring {label}',
            [(undo.ACTION, f'before-{action}')],
        )
        before = self._commit_scan(repo, scan, cache, allowlist, before_message)
        head = repo.head()
        assert head is not None
        safety.refuse_skipped_in_the_way(the_plan.write, scan.skipped)
        read_blob = safety.vet_blobs(the_plan.write, target, repo.read_blob, SYMLINK_MODE)
        worktree.check_plan(self.desk_directory, allowlist, the_plan, scan.files)
        head_tree = repo.commit_info(head).tree  # read before the desk is touched
        # The intent record: a crash from here on is completed by the next operation.
        journal.begin(repo.path, label, target_sha, head, the_plan, scan.files, target)
        try:
            written = worktree.apply(
                self.desk_directory,
                allowlist,
                the_plan,
                target,
                read_blob,
                durable=self._durable,
                guard=safety.unchanged_since(scan),
            )
        except safety.DeskChangedError as change:
            # Someone wrote a planned path meanwhile: the journal saves the desk as found
            # (their bytes included) and then finishes the restore.
            return self._finish_after_change(repo, change, before or head, target_sha, the_plan)
        restored: bytes | None = None
        if head_tree != target_tree:
            pairs = [(undo.ACTION, action), (undo.TARGET, target_sha.decode())]
            pairs += [(metadata.PATH, path) for path in selection]
            if action == undo.UNDO:
                pairs.append((undo.UNDO_OF, head.decode()))
            pairs += list(trailers)
            message = undo.compose(subject or f'restored {label}', pairs)
            objects: list = []
            if selection:
                objects = [tree for tree in partial_trees if not repo.contains(tree.id)]
            commit = repo.make_commit(target_tree, head, message)
            repo.write_objects([*objects, commit])
            repo.update_branch(head, commit.id, f'commit: {message.splitlines()[0]}')
            restored = commit.id
        self._save_after_restore(repo, cache, scan, target, target_trees, written, restored or head)
        journal.finish(repo.path)
        external.mark_sealed(repo)
        before_sha = before or head
        return RestoreResult(
            before_id=before_sha.decode()[:SHORT_ID_LENGTH],
            target_id=target_sha.decode()[:SHORT_ID_LENGTH],
            restored_id=restored.decode()[:SHORT_ID_LENGTH] if restored else None,
            written=tuple(the_plan.write),
            deleted=tuple(the_plan.delete),
            created=tuple(path for path in the_plan.write if path not in scan.files),
            external=overwritten,
            action=action,
            recovered=str(self.last_recovery) if self.last_recovery else None,
        )

    # -- looking back (history.py), external edits (external.py), undo/redo (undo.py) ------

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
        ``paths`` (files or folders, desk-relative) limits the diff to those.

        Example::

            for change in checkpoints.diff('3f2a9c1').changes:
                print(change.kind, change.path)
        """
        repo = self._open_repository()
        try:
            allowlist = self._allowlist(repo)
            if isinstance(paths, str):
                paths = (paths,)
            only = (
                tuple(history.normalize_path(path, allowlist) for path in paths) if paths else None
            )
            old_sha = repo.resolve(from_id)
            old, _ = repo.flatten_tree(repo.commit_info(old_sha).tree, allowlist)
            read_old = history.repo_reader(repo)
            if to_id is None:
                cache = self._load_cache(repo, allowlist)
                scan = self._scan(repo, allowlist, cache)
                new, read_new = scan.files, history.desk_reader(self.desk_directory, scan, repo)
                new_label = None
            else:
                new_sha = repo.resolve(to_id)
                new, _ = repo.flatten_tree(repo.commit_info(new_sha).tree, allowlist)
                read_new, new_label = read_old, new_sha.decode()[:SHORT_ID_LENGTH]
            changes = history.compare(
                old, new, read_old if patches else None, read_new if patches else None, only
            )
            return Diff(old_sha.decode()[:SHORT_ID_LENGTH], new_label, changes)
        finally:
            repo.close()

    def show(self, checkpoint_id: str, path: str) -> bytes:
        """A file's bytes as they were at a checkpoint (a symlink's target for a symlink)."""
        repo = self._open_repository()
        try:
            allowlist = self._allowlist(repo)
            sha = repo.resolve(checkpoint_id)
            wanted = history.normalize_path(path, allowlist)
            files, _ = repo.flatten_tree(repo.commit_info(sha).tree, allowlist)
            _, blob = history.show_file(files, wanted, checkpoint_id.strip())
            return repo.read_blob(blob)
        finally:
            repo.close()

    def log(self, path: str | None = None, limit: int = 20) -> list[LogEntry]:
        """Checkpoints newest first, each with the files that differ from the one before it.

        With ``path`` (a file or folder), only the checkpoints where something at or below it
        changed; ``[]`` when none did (also for a path that never existed).
        """
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise CheckpointError(f'limit must be a whole number of at least 0, not {limit!r}')
        repo = ShadowRepo.open(self.repository_directory)
        if repo is None:
            return []
        try:
            wanted = history.normalize_path(path, self._allowlist(repo)) if path else None
            entries: list[LogEntry] = []
            for info in repo.history():
                if len(entries) >= limit:
                    break
                parent = info.parents[0] if info.parents else None
                parent_tree = (
                    repo.commit_info(parent).tree
                    if parent is not None and repo.contains(parent)
                    else None
                )
                changed = history.changed_paths(repo, parent_tree, info.tree)
                if wanted is not None:
                    changed = [p for p in changed if history.under(p, (wanted,))]
                    if not changed:
                        continue
                entries.append(LogEntry(_checkpoint(info), tuple(changed), undo.action_of(info)))
            return entries
        finally:
            repo.close()

    def status(self) -> Status:
        """What changed in the desk since the newest checkpoint, and which of it was external."""
        self._check_desk(must_exist=False)
        repo = ShadowRepo.open(self.repository_directory)
        allowlist = self._allowlist(repo)
        try:
            cache = self._load_cache(repo, allowlist) if repo is not None else statcache.StatCache()
            scan = worktree.scan(self.desk_directory, allowlist, cache)
            head = repo.head() if repo is not None else None
            if repo is None or head is None:
                changes = history.compare({}, scan.files)
                return Status(None, changes, (), external.NONE)
            newest, _ = repo.flatten_tree(repo.commit_info(head).tree, allowlist)
            changes = history.compare(newest, scan.files)
            attribution = external.attribute(
                repo, allowlist, scan.files, self.desk_directory, _known_tree(scan, cache)
            )
            return Status(
                head.decode()[:SHORT_ID_LENGTH], changes, attribution.external, attribution.basis
            )
        finally:
            if repo is not None:
                repo.close()

    def effective_tracked_paths(self) -> tuple[str, ...]:
        """The tracked paths the next snapshot will use: the ones given to this object, else
        the ones the repository remembers, else the default."""
        repo = ShadowRepo.open(self.repository_directory)
        try:
            return self._allowlist(repo).entries
        finally:
            if repo is not None:
                repo.close()

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
        self._requested = allowlist
        self._explicit = True
        with self._locked():
            pass  # the lock records an explicit list in the repository's config
        return allowlist.entries

    def seal(self) -> str:
        """Records the desk as the state the agent left, once its write tool has run.

        Later, :meth:`status`, :meth:`snapshot_with_result` and restores report files that
        differ from this state as changed outside the agent. A seal holds until the next
        checkpoint; restores, undo and redo seal the state they write by themselves.

        Returns:
            The short id of the seal (the newest checkpoint when the desk matches it).
        """
        self._check_desk(must_exist=True)
        with self._locked() as repo:
            allowlist = self._allowlist(repo)
            cache = self._load_cache(repo, allowlist)
            scan = self._scan(repo, allowlist, cache)
            sha = external.seal(repo, scan, cache)
        return sha.decode()[:SHORT_ID_LENGTH]

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
        with self._locked() as repo:
            allowlist = self._allowlist(repo)
            cache = self._load_cache(repo, allowlist)
            scan = self._scan(repo, allowlist, cache)
            step = undo.undo_target(repo, history.desk_tree_id(scan, cache))
            return self._restore_locked(
                repo,
                step.sha,
                dry_run=dry_run,
                force=force,
                action=undo.UNDO,
                subject=f'undo: back to {step.short_id} ({step.subject})',
            )

    def redo(self, *, force: bool = False, dry_run: bool = False) -> RestoreResult:
        """Reverses the newest undo not yet redone (nothing to redo after new changes)."""
        self._check_desk(must_exist=False)
        self._require_repository()
        with self._locked() as repo:
            allowlist = self._allowlist(repo)
            cache = self._load_cache(repo, allowlist)
            scan = self._scan(repo, allowlist, cache)
            undone, state = undo.redo_source(repo, history.desk_tree_id(scan, cache), force)
            return self._restore_locked(
                repo,
                state.decode(),
                dry_run=dry_run,
                force=force,
                action=undo.REDO,
                subject=f'redo: reverse undo {undone.short_id}',
                trailers=[(undo.REDO_OF, undone.sha)],
            )

    # -- internals -------------------------------------------------------------------------

    def _finish_after_change(
        self,
        repo: ShadowRepo,
        change: safety.DeskChangedError,
        before: bytes,
        target: bytes,
        the_plan: worktree.Plan,
    ) -> RestoreResult:
        cause = f'a restore during which {change.path} was changed by another writer'
        recovery = journal.recover(self, repo, cause=cause)
        self.last_recovery = recovery
        return RestoreResult(
            before_id=before.decode()[:SHORT_ID_LENGTH],
            target_id=target.decode()[:SHORT_ID_LENGTH],
            restored_id=recovery.restored_id if recovery else None,
            written=tuple(the_plan.write),
            deleted=tuple(the_plan.delete),
            recovered=str(recovery) if recovery else None,
        )

    def _snapshot(
        self, repo: ShadowRepo, message: str, skipped: list[tuple[str, str]] | None = None
    ) -> bytes | None:
        allowlist = self._allowlist(repo)
        cache = self._load_cache(repo, allowlist)
        scan = self._scan(repo, allowlist, cache)
        if skipped is not None:
            skipped.extend(scan.skipped)
        return self._commit_scan(repo, scan, cache, allowlist, message)

    def _scan(
        self, repo: ShadowRepo, allowlist: Allowlist, cache: statcache.StatCache
    ) -> worktree.Scan:
        """Scans the desk with the size limit, refusing a desk that vanished meanwhile."""
        identity = safety.folder_identity(self.desk_directory)
        safety.check_desk_held_still(self.desk_directory, identity)
        scan = worktree.scan(
            self.desk_directory, allowlist, cache, max_file_size=self._size_limit(repo)
        )
        safety.check_desk_held_still(self.desk_directory, identity)
        return scan

    def _size_limit(self, repo: ShadowRepo) -> int:
        if self._max_file_size is not None:
            return self._max_file_size
        configured = repo.config_string(*safety.MAX_FILE_SIZE_KEY)
        if configured is None:
            return safety.DEFAULT_MAX_FILE_SIZE
        try:
            return safety.parse_size(configured)
        except CheckpointError as error:
            raise CheckpointError(
                f'checkpoints.maxFileSize in {repo.path / "config"}: {error}'
            ) from error

    def _commit_scan(
        self,
        repo: ShadowRepo,
        scan: worktree.Scan,
        cache: statcache.StatCache,
        allowlist: Allowlist,
        message: str,
    ) -> bytes | None:
        """Commits a scan if it differs from the newest checkpoint; saves the cache."""
        head = repo.head()
        if scan.unchanged and head is not None and cache.commit == head and '' in cache.trees:
            # The desk is exactly what the cache says and the cache matches the newest
            # checkpoint: nothing to build, write or (unless racy entries were cleared) save.
            if scan.refreshed:
                cache.written_at_ns = scan.started_ns
                statcache.save(self._cache_path(), cache)
            return None
        removed = scan.removed
        dirty = worktree.dirty_folders(scan.changed, removed)
        trees, built = worktree.build_trees(scan.files, dirty, cache.trees)
        root_tree = trees['']
        head_tree = None
        if head is not None:
            head_tree = (
                cache.trees.get('')
                if cache.commit == head and '' in cache.trees
                else repo.commit_info(head).tree
            )
        new_sha: bytes | None = None
        if head_tree != root_tree:
            objects = [blob for sha, blob in scan.new_blobs.items() if not repo.contains(sha)]
            objects += [tree for tree in built if not repo.contains(tree.id)]
            if head is not None and head_tree is cache.trees.get(''):
                repo.commit_info(head)  # never build on a parent that cannot be read
            commit = repo.make_commit(root_tree, head, message)
            objects.append(commit)
            repo.write_objects(objects)
            repo.update_branch(head, commit.id, f'commit: {message.splitlines()[0]}')
            new_sha = commit.id
            storage.maybe_pack(repo, commit.id)  # cheap: looks only for 1 commit in 8
        current = new_sha or head
        changed_cache = (
            new_sha is not None
            or not scan.unchanged
            or scan.refreshed
            or cache.commit != (current or b'')
            or cache.trees != trees
        )
        if changed_cache:
            cache.set_columns(scan.names, scan.numbers, scan.shas)
            cache.trees = trees
            cache.commit = current or b''
            cache.written_at_ns = scan.started_ns
            statcache.save(self._cache_path(), cache)
        return new_sha

    def _save_after_restore(
        self,
        repo: ShadowRepo,
        cache: statcache.StatCache,
        scan: worktree.Scan,
        target: dict[str, worktree.FileEntry],
        target_trees: dict[str, bytes],
        written: dict[str, statcache.StatKey],
        head: bytes,
    ) -> None:
        if len(target) == len(scan.names) and all(path in target for path in written):
            index = {path: i for i, path in enumerate(scan.names)}
            if all(path in index for path in target):
                # The same paths as scanned: patch the scan's columns where the restore wrote.
                numbers = array('q', scan.numbers)
                shas = bytearray(scan.shas)
                for path, key in written.items():
                    i = index[path]
                    numbers[i * 5 : i * 5 + 5] = array('q', key)
                    shas[i * 20 : i * 20 + 20] = bytes.fromhex(target[path][1].decode())
                cache.set_columns(scan.names, numbers, bytes(shas))
                cache.trees = dict(target_trees)
                cache.commit = head
                statcache.save(self._cache_path(), cache)
                return
        # In the order of the scan (new files last), so the next scan finds the cache's order
        # and compares the stat columns in bulk.
        keys = scan.keys
        names: list[str] = []
        numbers = array('q')
        shas = bytearray()
        order = dict.fromkeys(scan.names)
        order.update(dict.fromkeys(target))
        for path in order:
            entry = target.get(path)
            key = written.get(path) or keys.get(path)
            if entry is None or key is None:
                continue
            names.append(path)
            numbers.extend(key)
            shas += bytes.fromhex(entry[1].decode())
        cache.set_columns(names, numbers, bytes(shas))
        cache.trees = dict(target_trees)
        cache.commit = head
        statcache.save(self._cache_path(), cache)

    def _allowlist(self, repo: ShadowRepo | None) -> Allowlist:
        """The effective allowlist: the caller's if given, else the repository's, else default."""
        if self._explicit or repo is None:
            return self._requested
        remembered = repo.tracked_paths()
        return _allowlist_of(remembered) if remembered else self._requested

    def _cache_path(self) -> Path:
        return self.repository_directory / PRIVATE_DIR / _STAT_CACHE

    def _load_cache(self, repo: ShadowRepo, allowlist: Allowlist) -> statcache.StatCache:
        desk = self._real_desk or realpath(self.desk_directory)
        context = '\0'.join((desk, *allowlist.entries))
        return statcache.load(self._cache_path(), context.encode('utf-8', 'surrogateescape'))

    @contextmanager
    def _locked(self) -> Iterator[ShadowRepo]:
        """Holds the repository's lock, creating the repository on first use."""
        path = self.repository_directory
        if path.exists() and not path.is_dir():
            raise CorruptRepositoryError(f'the checkpoint repository {path} is not a folder')
        if path.is_dir() and not is_initialized(path) and _foreign_content(path):
            raise CorruptRepositoryError(
                f'{path} is not a checkpoint repository and is not empty; '
                'refusing to create one inside it'
            )
        self._check_repository_outside_desk()
        try:
            if not os.path.isdir(path / PRIVATE_DIR):
                (path / PRIVATE_DIR).mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise CheckpointError(
                f'cannot create the checkpoint repository {path}: {error}'
            ) from error
        self.last_recovery = None
        with lock.exclusive(path / PRIVATE_DIR / _LOCK, self._lock_timeout) as previous_died:
            _remove_stale_lock_files(path)
            if previous_died:
                _remove_crash_leftovers(path)
            repair_head(path)
            repo = ShadowRepo.open(path)
            if repo is None:
                repo = ShadowRepo.create(path, self._requested.entries)
            elif self._explicit and repo.tracked_paths() != self._requested.entries:
                repo.remember_tracked_paths(self._requested.entries)
            repo.durable = self._durable
            try:
                self.last_recovery = journal.recover(self, repo)
                yield repo
                repo.remember_packed_commits()
            finally:
                repo.close()

    def _require_repository(self) -> None:
        repo = ShadowRepo.open(self.repository_directory)
        if repo is None:
            raise CheckpointError(f'no checkpoints yet in {self.repository_directory}')
        repo.close()

    def _open_repository(self) -> ShadowRepo:
        repo = ShadowRepo.open(self.repository_directory)
        if repo is None:
            raise CheckpointError(f'no checkpoints yet in {self.repository_directory}')
        return repo

    def _check_desk(self, must_exist: bool) -> None:
        desk = self.desk_directory
        resolved = self._real_desk = realpath(desk)
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

    def _check_repository_outside_desk(self) -> None:
        real_repo = realpath(self.repository_directory)
        real_desk = self._real_desk or realpath(self.desk_directory)
        if real_repo != real_desk and not real_repo.startswith(real_desk.rstrip(os.sep) + os.sep):
            return  # the common case, decided on strings
        repo, desk = Path(real_repo), Path(real_desk)
        if repo == desk or desk in repo.parents:
            relative = repo.relative_to(desk).as_posix() if repo != desk else ''
            if (
                not relative
                or self._requested.covers(relative)
                or any(
                    relative.startswith(entry + '/')
                    or entry.startswith(relative + '/')
                    or entry == relative
                    for entry in self._requested.entries
                )
            ):
                raise CheckpointError(
                    f'the checkpoint repository {self.repository_directory} lies inside the '
                    f'tracked files of the desk {self.desk_directory}'
                )

    # -- retention (issue 6: see retention.py and storage.py) --------------------------------

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
        checkpoints = cls(repository_directory, desk_directory, tracked_paths)
        from . import retention as _retention

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
        with self._locked() as repo:
            if keep is None and older_than is None and max_bytes is None and not dry_run:
                before = len(list(repo.history()))
                stats = storage.consolidate(repo)
                return _retention.PruneResult(before, before, stats.bytes_before, stats.bytes_after)
            return _retention.prune(
                repo, keep=keep, older_than=older_than, max_bytes=max_bytes, dry_run=dry_run
            )

    # -- remotes (issue 6: see remote.py) ----------------------------------------------------

    def add_remote(self, name: str, url: str):  # -> remote.Remote
        """Remembers a git remote (path, file://, http(s):// or ssh:// URL) for backups."""
        from . import remote as _remote

        with self._locked() as repo:
            return _remote.add_remote(repo.path, name, url)

    def remove_remote(self, name: str) -> None:
        from . import remote as _remote

        with self._locked() as repo:
            _remote.remove_remote(repo.path, name)

    def remotes(self) -> list:  # -> list[remote.Remote]
        from . import remote as _remote

        if not is_initialized(self.repository_directory):
            return []
        return _remote.list_remotes(self.repository_directory)

    def push(self, remote: str | None = None, *, progress=None):  # -> remote.TransferResult
        """Pushes the checkpoints to a remote's branch main (fast-forward only)."""
        from . import remote as _remote

        if ShadowRepo.open(self.repository_directory) is None:
            raise CheckpointError(f'no checkpoints yet in {self.repository_directory}')
        return _remote.push(self, remote, progress)  # locks only while reading the repository

    def pull(self, remote: str | None = None, *, progress=None):  # -> remote.TransferResult
        """Fast-forwards the checkpoints to a remote's; the desk's files are not touched."""
        from . import remote as _remote

        if ShadowRepo.open(self.repository_directory) is None:
            raise CheckpointError(
                f'no checkpoint repository at {self.repository_directory}; use clone instead'
            )
        with self._locked() as repo:
            return _remote.pull(repo, _remote.get_remote(repo.path, remote), progress)

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
        holds no tracked files yet; the remote is remembered as ``origin``.
        """
        from . import remote as _remote

        checkpoints = cls(repository_directory, desk_directory, tracked_paths)
        result, written = _remote.clone(checkpoints, url, restore=restore, progress=progress)
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
        from .turns import restore_turn

        return restore_turn(self, turn_id, dry_run=dry_run)

    def turns(self, limit: int | None = 20) -> builtins.list[TurnInfo]:
        """The recorded turns, newest first, each with its checkpoints (newest first)."""
        from .turns import turns

        return turns(self, limit)


def _checkpoint(info: CommitInfo) -> Checkpoint:
    meta = metadata.parse(info.message)
    return Checkpoint(
        info.short_id,
        info.created_at,
        info.subject,
        meta.tool,
        meta.paths,
        meta.turn,
        undo.action_of(info),
    )


_REPOSITORY_NAMES = frozenset(
    {'objects', 'refs', 'info', 'config', 'description', 'HEAD', PRIVATE_DIR, 'hooks', 'branches'}
)


def _foreign_content(path: Path) -> bool:
    """Whether a folder holds anything but the pieces of an unfinished repository."""
    try:
        names = os.listdir(path)
    except OSError:
        return False
    return any(name not in _REPOSITORY_NAMES and not name.endswith('.tmp') for name in names)


def _remove_stale_lock_files(path: Path) -> None:
    """Removes ``*.lock`` files a killed writer left behind; we hold the only writer's lock."""
    names = ('config.lock', 'HEAD.lock', 'packed-refs.lock', 'shallow.lock')
    candidates = [os.path.join(path, name) for name in os.listdir(path) if name in names]
    pending = [os.path.join(path, 'refs')]
    while pending:
        try:
            with os.scandir(pending.pop()) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)
                    elif entry.name.endswith('.lock'):
                        candidates.append(entry.path)
        except OSError:
            pass
    for candidate in candidates:
        try:
            os.unlink(candidate)
        except OSError:
            pass


class _LazyFiles(Mapping):
    """A scan's files, built only if asked for (an unchanged desk's attribution never does)."""

    def __init__(self, scan: worktree.Scan) -> None:
        self._scan = scan

    def __getitem__(self, path: str) -> worktree.FileEntry:
        return self._scan.files[path]

    def __iter__(self) -> Iterator[str]:
        return iter(self._scan.files)

    def __len__(self) -> int:
        return len(self._scan.files)


def _known_tree(scan: worktree.Scan, cache: statcache.StatCache) -> bytes | None:
    """The desk's root tree id when the scan found exactly the cached files, else None."""
    return cache.trees.get('') if scan.unchanged else None


def _home() -> str:
    """The real path of the home folder (remembered per value of ``HOME``)."""
    home = os.path.expanduser('~')
    if home not in _HOMES:
        _HOMES[home] = os.path.realpath(home)
    return _HOMES[home]


_HOMES: dict[str, str] = {}
_ALLOWLISTS: dict[tuple[str, ...], Allowlist] = {}


def _allowlist_of(entries: tuple[str, ...]) -> Allowlist:
    """The allowlist of some tracked paths (remembered: building one is pure but not free)."""
    allowlist = _ALLOWLISTS.get(entries)
    if allowlist is None:
        allowlist = Allowlist(entries)
        if len(_ALLOWLISTS) < 64:
            _ALLOWLISTS[entries] = allowlist
    return allowlist


def _remove_crash_leftovers(path: Path) -> None:
    """Removes what a writer killed while holding the lock may have left in the repository.

    Called under the lock when the previous holder died holding it: dulwich's lock files for
    loose objects and pack indexes, temporary packs, a pack whose index was never written,
    and our own temporary files. Objects, refs and the restore record are never touched.
    """
    objects = path / 'objects'
    leftovers: list[Path] = []
    try:
        fanouts = [entry for entry in os.scandir(objects) if len(entry.name) == 2]
    except OSError:
        fanouts = []
    for fanout in fanouts:
        try:
            leftovers += [Path(e.path) for e in os.scandir(fanout.path) if e.name.endswith('.lock')]
        except OSError:
            pass
    try:
        leftovers += [Path(e.path) for e in os.scandir(objects) if e.name.startswith('tmp_')]
    except OSError:
        pass
    packs = objects / 'pack'
    try:
        names = set(os.listdir(packs))
    except OSError:
        names = set()
    for name in names:
        if name.endswith('.lock') or (name.startswith('tmp') and name.endswith('.pack')):
            leftovers.append(packs / name)
        elif name.startswith('pack-') and name.endswith('.pack'):
            if name[: -len('.pack')] + '.idx' not in names:
                leftovers.append(packs / name)  # renamed into place, index never written
    for folder in (path, path / PRIVATE_DIR):
        try:
            leftovers += [
                Path(e.path)
                for e in os.scandir(folder)
                if e.name.startswith('.') and e.name.endswith('.tmp')
            ]
        except OSError:
            pass
    for leftover in leftovers:
        try:
            leftover.unlink()
        except OSError:
            pass
