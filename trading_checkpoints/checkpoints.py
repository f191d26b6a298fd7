"""The ``Checkpoints`` facade: snapshot, list and restore one desk. Verbs and locks only."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from . import lock, metadata, statcache, storage, worktree
from .errors import CheckpointError, CorruptRepositoryError
from .paths import TRACKED_PATHS, Allowlist
from .repo import PRIVATE_DIR, SHORT_ID_LENGTH, CommitInfo, ShadowRepo, is_initialized


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
    """

    checkpoint_id: str
    created_at: str
    reason: str
    tool: str | None = None
    paths: tuple[str, ...] = ()
    turn: str | None = None


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
    """

    before_id: str
    target_id: str
    restored_id: str | None
    written: tuple[str, ...] = field(default=())
    deleted: tuple[str, ...] = field(default=())


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
    ) -> None:
        """Describes the repository without touching the disk."""
        self.repository_directory = Path(repository_directory)
        self.desk_directory = Path(desk_directory)
        if isinstance(tracked_paths, str):
            tracked_paths = (tracked_paths,)
        self.tracked_paths = tuple(tracked_paths)
        self._requested = Allowlist(self.tracked_paths)
        self._explicit = self._requested != Allowlist(TRACKED_PATHS)

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
        if not isinstance(reason, str):
            raise CheckpointError(f'reason must be a string, not {type(reason).__name__}')
        if isinstance(paths, str):
            paths = (paths,)
        message = metadata.compose(reason, tool, paths, turn)
        self._check_desk(must_exist=True)
        with self._locked() as repo:
            sha = self._snapshot(repo, message)
        return sha.decode()[:SHORT_ID_LENGTH] if sha else None

    def list(self, limit: int = 20) -> list[Checkpoint]:
        """The most recent checkpoints, newest first; ``[]`` when none has been taken."""
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise CheckpointError(f'limit must be a whole number of at least 0, not {limit!r}')
        repo = ShadowRepo.open(self.repository_directory)
        if repo is None:
            return []
        try:
            return [_checkpoint(info) for info in repo.history(limit)]
        finally:
            repo.close()

    def restore(self, checkpoint_id: str) -> str:
        """Puts the tracked files back as they were at a checkpoint.

        The current files are snapshotted first, so a restore can itself be undone. Files
        created after the checkpoint are removed; files outside the tracked paths are never
        touched.

        Args:
            checkpoint_id: The checkpoint to return to: a short id or a full 40-digit sha.

        Returns:
            The id of the snapshot taken just before restoring, or of the current state when
            nothing had changed; ``restore(that_id)`` undoes this restore.

        Raises:
            CheckpointError: The checkpoint does not exist, or the restore failed.
        """
        return self.restore_with_result(checkpoint_id).before_id

    def restore_with_result(self, checkpoint_id: str) -> RestoreResult:
        """Like :meth:`restore`, but says what was written and deleted."""
        self._check_desk(must_exist=False)
        if ShadowRepo.open(self.repository_directory) is None:
            raise CheckpointError(f'no checkpoints yet in {self.repository_directory}')
        with self._locked() as repo:
            target_sha = repo.resolve(checkpoint_id)
            label = checkpoint_id.strip()
            allowlist = self._allowlist(repo)
            target_info = repo.commit_info(target_sha)
            # Read and vet the whole target before the desk is touched.
            target, target_trees = repo.flatten_tree(target_info.tree, allowlist)
            self.desk_directory.mkdir(parents=True, exist_ok=True)
            cache = self._load_cache(repo, allowlist)
            scan = worktree.scan(self.desk_directory, allowlist, cache)
            before = self._commit_scan(repo, scan, cache, allowlist, f'before restoring {label}')
            head = repo.head()
            assert head is not None
            the_plan = worktree.plan(scan.files, target)
            worktree.check_plan(self.desk_directory, allowlist, the_plan, scan.files)
            written = worktree.apply(
                self.desk_directory, allowlist, the_plan, target, repo.read_blob
            )
            restored: bytes | None = None
            head_tree = repo.commit_info(head).tree
            if head_tree != target_info.tree:
                commit = repo.make_commit(target_info.tree, head, f'restored {label}\n')
                repo.write_objects([commit])
                repo.update_branch(head, commit.id, f'commit: restored {label}')
                restored = commit.id
            self._save_after_restore(repo, cache, scan, target, target_trees, written, restored or head)
        before_sha = before or head
        return RestoreResult(
            before_id=before_sha.decode()[:SHORT_ID_LENGTH],
            target_id=target_sha.decode()[:SHORT_ID_LENGTH],
            restored_id=restored.decode()[:SHORT_ID_LENGTH] if restored else None,
            written=tuple(the_plan.write),
            deleted=tuple(the_plan.delete),
        )

    # -- internals -------------------------------------------------------------------------

    def _snapshot(self, repo: ShadowRepo, message: str) -> bytes | None:
        allowlist = self._allowlist(repo)
        cache = self._load_cache(repo, allowlist)
        scan = worktree.scan(self.desk_directory, allowlist, cache)
        return self._commit_scan(repo, scan, cache, allowlist, message)

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
        removed = set(cache.files) - set(scan.files)
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
            commit = repo.make_commit(root_tree, head, message)
            objects.append(commit)
            repo.write_objects(objects)
            repo.update_branch(head, commit.id, f'commit: {message.splitlines()[0]}')
            new_sha = commit.id
            storage.maybe_pack(repo, commit.id)  # cheap: looks only for 1 commit in 8
        current = new_sha or head
        changed_cache = (
            new_sha is not None
            or bool(scan.new_blobs)
            or removed
            or cache.commit != (current or b'')
            or any(cache.files.get(p, (None,))[0] != k for p, k in scan.keys.items())
        )
        if changed_cache:
            cache.files = {
                path: (scan.keys[path], entry[1])
                for path, entry in scan.files.items()
                if path in scan.keys
            }
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
        files = {}
        for path, (_, sha) in target.items():
            key = written.get(path) or scan.keys.get(path)
            if key is not None:
                files[path] = (key, sha)
        cache.files = files
        cache.trees = dict(target_trees)
        cache.commit = head
        statcache.save(self._cache_path(), cache)

    def _allowlist(self, repo: ShadowRepo | None) -> Allowlist:
        """The effective allowlist: the caller's if given, else the repository's, else default."""
        if self._explicit or repo is None:
            return self._requested
        remembered = repo.tracked_paths()
        return Allowlist(remembered) if remembered else self._requested

    def _cache_path(self) -> Path:
        return self.repository_directory / PRIVATE_DIR / _STAT_CACHE

    def _load_cache(self, repo: ShadowRepo, allowlist: Allowlist) -> statcache.StatCache:
        context = '\0'.join((os.path.realpath(self.desk_directory), *allowlist.entries))
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
            (path / PRIVATE_DIR).mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise CheckpointError(f'cannot create the checkpoint repository {path}: {error}') from error
        with lock.exclusive(path / PRIVATE_DIR / _LOCK):
            _remove_stale_lock_files(path)
            repo = ShadowRepo.open(path)
            if repo is None:
                repo = ShadowRepo.create(path, self._requested.entries)
            elif self._explicit and repo.tracked_paths() != self._requested.entries:
                repo.remember_tracked_paths(self._requested.entries)
            try:
                yield repo
            finally:
                repo.close()

    def _check_desk(self, must_exist: bool) -> None:
        desk = self.desk_directory
        resolved = desk.resolve()
        if resolved == Path(resolved.anchor) or resolved == Path.home().resolve():
            raise CheckpointError(
                f'refusing to use {desk} as a desk: it is the root or home folder'
            )
        if desk.exists() and not desk.is_dir():
            raise CheckpointError(f'the desk {desk} is not a folder')
        if must_exist and not desk.is_dir():
            raise CheckpointError(f'the desk folder {desk} does not exist')

    def _check_repository_outside_desk(self) -> None:
        repo = Path(os.path.realpath(self.repository_directory))
        desk = Path(os.path.realpath(self.desk_directory))
        if repo == desk or desk in repo.parents:
            relative = repo.relative_to(desk).as_posix() if repo != desk else ''
            if not relative or self._requested.covers(relative) or any(
                relative.startswith(entry + '/') or entry.startswith(relative + '/')
                or entry == relative
                for entry in self._requested.entries
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


def _checkpoint(info: CommitInfo) -> Checkpoint:
    meta = metadata.parse(info.message)
    return Checkpoint(
        info.short_id, info.created_at, info.subject, meta.tool, meta.paths, meta.turn
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
    candidates = [path / name for name in names]
    refs = path / 'refs'
    if refs.is_dir():
        for folder, _, names in os.walk(refs):
            candidates.extend(Path(folder) / name for name in names if name.endswith('.lock'))
    for candidate in candidates:
        try:
            candidate.unlink()
        except OSError:
            pass
