"""Access to one desk's bare shadow repository, through dulwich only.

The one object the rest of the package holds for a repository: history and config here,
reading objects in ``objectread.py`` and the refs in ``refs.py`` (both reached through the same
object), the packs in the ``pack*`` modules. The repository is isolated from the user's git:
we build commits ourselves (no porcelain, so no user config, hooks or signing are ever
consulted), with a fixed identity, and we never read ``GIT_DIR`` or ``GIT_WORK_TREE``.
"""

from __future__ import annotations

import os
import re
import stat
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ..core import repofiles
from ..core.durability import fsync_folders
from ..core.paths import Allowlist
from ..core.repofiles import RepoFile
from ..errors import (
    CorruptRepositoryError,
    FileAccessError,
    PrunedCheckpointError,
    UnknownCheckpointError,
)
from . import commitmemo, gitfiles, prunedlog, treevetting
from . import config as repo_config
from .commitinfo import CommitInfo, from_commit, parse_commit
from .damage import blame, object_damage
from .dulwichadapter import object_id, refresh_packs
from .objectread import COMMIT, HEX_SHA, ObjectReader
from .refs import Reflog, RefStore
from .repofolder import BRANCH, file_mode, is_initialized

if TYPE_CHECKING:
    from dulwich.objects import Commit, ShaFile, Tree
    from dulwich.repo import Repo

IDENTITY = b'trading_checkpoints <checkpoints@trading-checkpoints.invalid>'
PRIVATE_DIR = 'checkpoints'  # our own files inside the repository (lock, stat cache)


_HEX_ID = re.compile(r'[0-9a-fA-F]{4,40}')
# (repository, sha) -> commit, see commit_info
_COMMITS: dict[tuple[str, bytes], CommitInfo] = {}


def _local_offset_seconds(now: float) -> int:
    offset = datetime.fromtimestamp(now).astimezone().utcoffset()
    return int(offset.total_seconds()) if offset is not None else 0


class ShadowRepo:
    """A bare repository holding one desk's checkpoints on branch ``main``.

    With ``durable`` set (the default), objects are flushed to the disk, with the folders that
    name them, before the branch is moved to a commit that needs them; the branch file and its
    folder are flushed after.
    """

    durable: bool = True

    def __init__(
        self,
        path: Path,
        repo: Repo | None = None,
        config: repo_config.RepoConfig | None = None,
    ) -> None:
        self.path = path
        # The dulwich repository is opened on first use: a snapshot of an unchanged desk only
        # reads the branch file and never needs it.
        self._dulwich = repo
        # The vetted config, read once (see config.load); writes here replace it.
        self._config = config
        # Commits read from the on-disk memo or loose objects without dulwich; packed ones it
        # had to read, and the ones written here, are added to the memo when this is closed.
        self._commits = commitmemo.CommitReader(path)
        self._upkeep: Callable[[], None] | None = None
        # The refs read through this object are forgotten when a ref is written here or
        # dulwich's repository is handed out.
        self._refs = RefStore(path, lambda: self._repo, lambda: self._dulwich is not None)
        # Our own small files in the repository (``checkpoints/announced``), as read or written
        # through this object.
        self._private: dict[str, bytes | None] = {}
        self._objects = ObjectReader(path, lambda: self._repo, lambda: self._dulwich is not None)

    def defer_upkeep(self, upkeep: Callable[[], None]) -> None:
        """Runs ``upkeep`` (the sweep of stale lock files) before the first write of a ref or
        the config, or the first hand-over of dulwich's repository to another module."""
        self._upkeep = upkeep

    def _before_writing(self) -> None:
        self._refs.forget()
        upkeep, self._upkeep = self._upkeep, None
        if upkeep is not None:
            upkeep()

    @property
    def _repo(self) -> Repo:
        if self._dulwich is None:
            # Opened without dulwich's own config parsing (which follows includes) and without
            # following any .git or commondir file; dulwich is imported when first needed.
            try:
                self._dulwich = repo_config.open_dulwich(self.path, self.config)
            except (OSError, ValueError, KeyError) as error:
                reason = getattr(error, 'strerror', None) or type(error).__name__
                raise CorruptRepositoryError(
                    f'cannot open the checkpoint repository {self.path}: {reason}',
                    path=self.path,
                ) from error
        return self._dulwich

    @property
    def dulwich_repo(self) -> Repo:
        """dulwich's repository object, for the store's own modules (packing, transfers)."""
        self._before_writing()
        return self._repo

    def packs_written(self) -> None:
        """Packs were added or removed: dulwich's list of them is read again, when its
        repository is open (one opened later lists them itself, so none is opened here)."""
        if self._dulwich is not None:
            refresh_packs(self._dulwich.object_store)

    @property
    def config(self) -> repo_config.RepoConfig:
        """The repository's vetted config (read on first use)."""
        if self._config is None:
            self._config = repo_config.load(self.path)
        return self._config

    # -- opening ---------------------------------------------------------------------------

    @classmethod
    def open(cls, path: Path) -> ShadowRepo | None:
        """The repository at ``path``, or None when none was created there yet."""
        root = os.fspath(path)
        mode = file_mode(root)
        if mode is None:
            return None
        if not stat.S_ISDIR(mode):
            raise CorruptRepositoryError(
                f'the checkpoint repository {path} is not a folder', path=path
            )
        if not is_initialized(path):
            return None
        objects, refs = os.path.join(root, 'objects'), os.path.join(root, 'refs')
        if not (os.path.isdir(objects) and os.path.isdir(refs)):
            raise CorruptRepositoryError(
                f'cannot open the checkpoint repository {path}: it has no objects or refs folder',
                path=path,
            )
        # Vetted before anything else is read or written: an include, a format or an
        # extension we cannot write is refused here.
        return cls(path, config=repo_config.load(path))

    @classmethod
    def create(cls, path: Path, tracked: Iterable[str]) -> ShadowRepo:
        """Creates (or finishes creating, after a crash) a bare repository at ``path``."""
        for parts in (
            ('objects', 'info'),
            ('objects', 'pack'),
            ('refs', 'heads'),
            ('refs', 'tags'),
            ('info',),
        ):
            path.joinpath(*parts).mkdir(parents=True, exist_ok=True)
        # The folders are durable before HEAD can be: a power cut that keeps HEAD (the mark of
        # a finished repository) never loses objects/pack, which nothing would make again.
        fsync_folders([path / 'objects', path / 'refs', path / 'refs' / 'heads', path, path.parent])
        for name, data in (
            ('config', repo_config.initial(tracked)),
            ('description', b'trading_checkpoints: snapshots of one desk\n'),
            ('HEAD', b'ref: ' + BRANCH + b'\n'),  # last: a repository without it is unfinished
        ):
            repofiles.replace(RepoFile(path, name), data)
        config = repo_config.load(path)
        return cls(path, repo_config.open_dulwich(path, config), config)

    def close(self) -> None:
        self._commits.flush()
        if self._dulwich is not None:
            try:
                self._dulwich.close()
            except BufferError:
                # Reading a damaged packed object failed, and the error on its way out still
                # holds a view of the pack's mapping: the mapping is released with it instead.
                pass
            self._dulwich = None

    def remember_commit(self, commit: Commit) -> None:
        """A commit just written: kept for this process and in the on-disk memo, so readers
        (even in a new process) find it without opening the pack."""
        raw = commit.as_raw_string()
        self._commits.remember(commit.id, raw)
        if len(_COMMITS) >= 512:
            _COMMITS.clear()
        _COMMITS[(os.fspath(self.path), commit.id)] = parse_commit(commit.id, raw)

    # -- configuration ---------------------------------------------------------------------

    def tracked_paths(self) -> tuple[str, ...] | None:
        """The tracked paths remembered in the repository's config (vetted), if any."""
        return self.config.tracked_paths()

    def config_string(self, section: bytes, name: bytes) -> str | None:
        """One value of the repository's config (``checkpoints.maxFileSize``), or None."""
        return self.config.string(section, name)

    def remember_tracked_paths(self, tracked: Iterable[str]) -> None:
        self._before_writing()
        self._config = repo_config.set_tracked(self.path, tracked)

    # -- refs and history ------------------------------------------------------------------

    def head(self) -> bytes | None:
        """The newest checkpoint's sha, or None when the branch has no commit yet (read once
        per object: ``update_branch`` keeps it current)."""
        return self._refs.head()

    def read_head_again(self) -> bytes | None:
        """The branch as it is on disk now (a reader without the lock checking that it held)."""
        return self._refs.read_head_again()

    def read_ref(self, name: bytes) -> bytes | None:
        """The sha a ref other than ``main`` points at (such as the seal), or None; read once
        per object, like the branch."""
        return self._refs.read(name)

    def read_ref_again(self, name: bytes) -> bytes | None:
        """Like :meth:`read_ref`, as it is on disk now."""
        return self._refs.read_again(name)

    def read_private(self, name: str, limit: int, *, again: bool = False) -> bytes | None:
        """A small file of ours in the repository (``checkpoints/announced``), or None when it
        is missing; read once per object, like a ref, unless ``again``.

        Raises:
            CheckpointError: It is a link or not a regular file, holds more than ``limit``
                bytes, or could not be read (see ``core.repofiles.read``).
        """
        if again or name not in self._private:
            self._private.pop(name, None)
            self._private[name] = repofiles.read(RepoFile(self.path, name), limit)
        return self._private[name]

    def write_private(self, name: str, data: bytes | None) -> None:
        """Replaces a small file of ours with ``data``, never flushed: only for a file whose
        loss at a power cut costs no checkpoint (see its module). With None it is removed,
        and the removal flushed when durable (a file removed must not come back).

        Raises:
            CheckpointError: A folder on the way is a link, or the system refused.
        """
        self._private.pop(name, None)
        file = RepoFile(self.path, name)
        if data is None:
            if repofiles.remove(file) and self.durable:
                fsync_folders([file.path.parent])
        else:
            repofiles.replace(file, data, durable=False)
        self._private[name] = data

    def update_branch(self, old: bytes | None, new: bytes, reflog_message: str) -> None:
        """Moves ``main`` from ``old`` to ``new``, failing if someone else moved it meanwhile."""
        self._before_writing()
        now = int(time.time())
        reflog: Reflog = {
            'committer': IDENTITY,
            'timestamp': now,
            'timezone': _local_offset_seconds(now),
            'message': reflog_message.encode('utf-8', 'replace')[:200],
        }
        self._refs.move_branch(old, new, reflog, durable=self.durable)

    def check_ref_settable(self, name: bytes) -> None:
        """Refuses a ref :meth:`set_ref` could not write (see ``RefStore.check_settable``)."""
        self._refs.check_settable(name)

    def set_ref(self, name: bytes, sha: bytes) -> None:
        """Points a ref other than ``main`` (such as the seal) at ``sha`` (see ``RefStore.set``)."""
        self._before_writing()
        self._refs.set(name, sha)

    def commit_info(self, sha: bytes) -> CommitInfo:
        # A commit never changes (its id is the hash of its bytes): one read is remembered for
        # the process. A new process finds it in the on-disk memo or as a loose object, both
        # read without dulwich; only a packed commit the memo lacks opens the packs.
        key = (os.fspath(self.path), sha)
        info = _COMMITS.get(key)
        if info is not None:
            return info
        info = self._commits.find(sha) if HEX_SHA.fullmatch(sha) else None
        if info is None:
            from dulwich.objects import Commit

            commit = self._objects.read(sha, Commit)
            if None in (commit.tree, commit.commit_time, commit.commit_timezone, commit.message):
                # dulwich parses a truncated loose commit without complaint, fields missing.
                raise CorruptRepositoryError(
                    f'the object {sha.decode()} in {self.path} is unreadable: the commit is '
                    'incomplete',
                    path=self.path,
                )
            info = from_commit(sha, commit)
            self._commits.remember(sha, commit.as_raw_string())
        if len(_COMMITS) >= 512:
            _COMMITS.clear()
        _COMMITS[key] = info
        return info

    def require_commit(self, sha: bytes) -> None:
        """Reads a commit from the store itself (not the memo): a clear error if it is damaged."""
        from dulwich.objects import Commit

        self._objects.read(sha, Commit)

    def history(self, limit: int | None = None) -> Iterator[CommitInfo]:
        """Commits from the newest back along first parents."""
        sha = self.head()
        shallow = self._shallow()
        count = 0
        while sha is not None and (limit is None or count < limit):
            info = self.commit_info(sha)
            yield info
            count += 1
            if sha in shallow or not info.parents:
                break
            sha = info.parents[0]

    def _shallow(self) -> set[bytes]:
        return gitfiles.read_shallow(self.path)

    def resolve(self, checkpoint_id: str) -> bytes:
        """The full sha of the checkpoint a short or full id names."""
        if not isinstance(checkpoint_id, str) or not _HEX_ID.fullmatch(checkpoint_id.strip()):
            raise UnknownCheckpointError(
                f'{checkpoint_id!r} is not a checkpoint id (expected 4 to 40 hex digits, '
                'as shown by `checkpoints list`)',
                checkpoint=checkpoint_id,
            )
        prefix = checkpoint_id.strip().lower().encode()
        try:
            commits = self._objects.from_store(lambda: self._commits_with_prefix(prefix))
        except KeyError as error:  # listed by an index, yet not found in its pack
            raise self._search_failed(checkpoint_id, error) from error
        except object_damage() as error:
            raise self._search_failed(checkpoint_id, error) from error
        pruned = prunedlog.find(self.path, checkpoint_id)
        if pruned is not None and (not commits or commits == [pruned.sha.encode()]):
            raise PrunedCheckpointError(
                f'checkpoint {checkpoint_id.strip()} was {prunedlog.describe(pruned)}; '
                '`checkpoints list` shows the ones kept',
                checkpoint=checkpoint_id.strip(),
                commit=pruned.sha,
                taken_at=pruned.taken_at,
                pruned_at=pruned.pruned_at,
            )
        if not commits:
            raise UnknownCheckpointError(
                f'no checkpoint {checkpoint_id!r} in {self.path}', checkpoint=checkpoint_id
            )
        if len(commits) > 1:
            raise UnknownCheckpointError(
                f'checkpoint id {checkpoint_id!r} is ambiguous in {self.path}; '
                'give more of its digits',
                checkpoint=checkpoint_id,
            )
        return commits[0]

    def _search_failed(self, checkpoint_id: str, error: BaseException) -> CorruptRepositoryError:
        path, problem = blame(self.path, error)
        return CorruptRepositoryError(
            f'cannot search {self.path} for {checkpoint_id!r}: '
            + (f'{path} is damaged ({problem})' if path is not None else problem),
            path=path or self.path,
        )

    def _commits_with_prefix(self, prefix: bytes) -> list[bytes]:
        candidates = {sha for sha in self._repo.object_store.iter_prefix(prefix)}
        return [sha for sha in sorted(candidates) if self._objects.type_of(sha) == COMMIT]

    # -- objects (read by objectread.ObjectReader) -------------------------------------------

    def contains(self, sha: bytes) -> bool:
        return self._objects.contains(sha)

    def read_blob(self, sha: bytes) -> bytes:
        return self._objects.read_blob(sha)

    def read_tree(self, sha: bytes) -> Tree:
        return self._objects.read_tree(sha)

    def flatten_tree(
        self,
        tree_sha: bytes,
        allowlist: Allowlist,
        skipped: list[tuple[str, str]] | None = None,
    ) -> tuple[dict[str, tuple[int, bytes]], dict[str, bytes]]:
        """Every file of a tree as ``path -> (mode, blob sha)``, refusing unsafe entries, and
        the tree id of every folder (see ``treevetting.flatten_tree``)."""
        return treevetting.flatten_tree(self.tree_entries, tree_sha, allowlist, skipped)

    def tree_entries(self, sha: bytes) -> list[tuple[bytes, int, bytes]]:
        """A tree's entries exactly as stored, duplicates included (kept for the process: the
        caller must not change the list)."""
        return self._objects.tree_entries(sha)

    def write_objects(self, objects: list[ShaFile]) -> None:
        """Stores new objects in a pack at once, never as loose files.

        They are appended to the newest small pack as deltas against the versions they replace
        (see ``storage.append_objects``), so a snapshot costs about what it adds, not a 4 KiB
        block per object plus a whole copy of each changed file and folder. When durable, the
        pack and its index are flushed, with the folder that names them, before this returns,
        so a branch moved afterwards never names an object a power cut could lose. A new commit
        is remembered (see ``remember_commit``).
        """
        from dulwich.errors import ObjectFormatException
        from dulwich.objects import Commit

        from . import storage

        try:
            storage.append_objects(self, objects)
        except (OSError, ValueError, ObjectFormatException) as error:
            raise FileAccessError(
                f'cannot write objects into {self.path}: {error}', path=self.path, action='write'
            ) from error
        for obj in objects:
            if isinstance(obj, Commit):
                self.remember_commit(obj)

    def make_commit(self, tree: bytes, parent: bytes | None, message: str) -> Commit:
        from dulwich.objects import Commit

        now = int(time.time())
        offset = _local_offset_seconds(now)
        commit = Commit()
        commit.tree = object_id(tree)
        commit.parents = [object_id(parent)] if parent is not None else []
        commit.author = commit.committer = IDENTITY
        commit.author_time = commit.commit_time = now
        commit.author_timezone = commit.commit_timezone = offset
        commit.encoding = None
        commit.message = message.encode('utf-8', 'surrogateescape')
        return commit
