"""A session: one open repository and one desk state, the engine every verb works through.

Snapshot, restore, seal, undo, history, retention, remotes and the journal take a
:class:`Session` instead of reaching into the ``Checkpoints`` facade. A session is opened under
the repository's lock by :func:`engine.locked` (writers) or without it by :func:`open_reading`
(readers); both close the repository and the desk's folder descriptors when done.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ..core.fs import realpath
from ..core.paths import Allowlist
from ..core.trees import FileEntry, RawObject
from ..desk import safety
from ..desk.scan import REPLACED, Scan, git_mode
from ..desk.statcache import StatCache
from ..desk.state import DeskState
from ..errors import CheckpointError
from ..store import changestats, metadata
from ..store.commitinfo import SHORT_ID_LENGTH
from ..store.objectio import StoreSink, as_objects
from ..store.repo import PRIVATE_DIR, ShadowRepo
from .results import Recovery
from .retention import Limits

STAT_CACHE = 'statcache'
# A commit changing at most this many files reads their old sides back to count lines.
READ_BACK_FOR_STATS = 16


@dataclass(frozen=True)
class DeskConfig:
    """Where a desk and its repository are, and how the library was asked to treat them.

    Attributes:
        repository: The bare repository folder.
        desk: The desk folder.
        requested: The allowlist given by the caller (or the default).
        explicit: Whether the caller gave it (else the repository's remembered one wins).
        max_file_size: The size limit given by the caller, None for the repository's.
        durable: Flush writes in an order that survives a power cut.
        atomic_writes: Restore every file through a temporary file and a rename; None for
            the repository's ``checkpoints.atomicWrites``, else off.
        lock_timeout: Seconds to wait for another holder of the lock.
        limits: Retention limits enforced after every write (empty: the repository's own,
            as saved by ``checkpoints prune --save``).
    """

    repository: Path
    desk: Path
    requested: Allowlist
    explicit: bool
    max_file_size: int | None = None
    durable: bool = True
    atomic_writes: bool | None = None
    lock_timeout: float = 60.0
    limits: Limits = field(default_factory=Limits)


class Session:
    """An open repository and the desk's state, for the length of one verb.

    Attributes:
        config: The desk's configuration.
        repo: The repository.
        allowlist: The tracked paths in effect.
        desk: The desk's state (scan, checkout, stat cache).
        recovery: What completing an interrupted restore did when the session opened.
    """

    def __init__(self, config: DeskConfig, repo: ShadowRepo) -> None:
        self.config = config
        self.repo = repo
        repo.durable = config.durable
        self.allowlist = effective_allowlist(config, repo)
        check_repository_outside(config, self.allowlist)
        self.desk = DeskState(
            config.desk,
            self.allowlist,
            Path(os.path.join(repo.path, PRIVATE_DIR, STAT_CACHE)),
            max_file_size=size_limit(config, repo),
            durable=config.durable,
            atomic=atomic_writes(config, repo),
        )
        self.recovery: Recovery | None = None

    def close(self) -> None:
        self.desk.close()
        self.repo.close()

    # -- the desk ------------------------------------------------------------------------

    def scan(self, *, record: bool = False, exempt: Iterable[str] = ()) -> tuple[Scan, StatCache]:
        """The desk's tracked files now, and the stat cache they were compared with.

        With ``record`` the fresh blobs go to the store as they are read (for a commit).
        A file left out for its size or because it changed while read keeps the entry the
        newest checkpoint holds (see ``desk/scan.py``).
        """
        cache = self.desk.load_cache()
        sink = StoreSink(self.repo) if record else None
        result = self.desk.scan(cache, sink=sink, exempt=exempt)
        missing = {p for p in result.oversize if p not in result.carried}
        missing |= {p for p, why in result.skipped if why == REPLACED and p not in result.carried}
        if missing:
            head = self.repo.head()
            if head is not None:
                held, _ = self.flatten(self.repo.commit_info(head).tree)
                for path in sorted(set(missing)):
                    if path in held:
                        result.carry(path, held[path])
        return result, cache

    def tree_of(self, result: Scan, cache: StatCache) -> bytes:
        """The root tree id the desk would have as a snapshot (computed, nothing written)."""
        if result.unchanged and '' in cache.trees:
            return cache.trees['']
        trees, _ = self.desk.trees(result, cache)
        return trees['']

    def known_tree(self, result: Scan, cache: StatCache) -> bytes | None:
        """The desk's root tree id when it is known without building trees, else None."""
        return cache.trees.get('') if result.unchanged else None

    # -- commits -------------------------------------------------------------------------

    def commit(self, result: Scan, cache: StatCache, message: str) -> bytes | None:
        """Commits a scan on the branch if it differs from the newest checkpoint.

        Saves the stat cache either way; returns the new commit's id or None.
        """
        repo = self.repo
        head = repo.head()
        if result.unchanged and head is not None and cache.commit == head and '' in cache.trees:
            # The desk is what the cache says and the cache matches the newest checkpoint.
            if result.refreshed:
                cache.written_at_ns = result.started_ns
                self.desk.save(cache)
            return None
        trees, built = self.desk.trees(result, cache)
        root = trees['']
        head_tree = None
        if head is not None:
            cached = cache.commit == head and '' in cache.trees
            head_tree = cache.trees[''] if cached else repo.commit_info(head).tree
        new_sha: bytes | None = None
        if head_tree != root:
            if head is not None:
                repo.require_commit(head)  # never build on a parent the store cannot read
            pairs = self._changed_pairs(result, cache, head)
            stats = changestats.count(pairs, self._reader(result, len(pairs)))
            message = metadata.with_trailer(message, changestats.KEY, stats.trailer())
            commit = repo.make_commit(root, head, message)
            repo.write_objects([*self.new_objects(result, built), commit])
            repo.update_branch(head, commit.id, f'commit: {message.splitlines()[0]}')
            new_sha = commit.id
            from ..store import storage

            storage.maybe_pack(repo, commit.id)  # cheap: looks only for 1 commit in 8
        current = new_sha or head or b''
        if (
            new_sha is not None
            or not result.unchanged
            or result.refreshed
            or cache.commit != current
            or cache.trees != trees
        ):
            self.desk.remember(cache, result, trees, current)
        return new_sha

    def _changed_pairs(
        self, result: Scan, cache: StatCache, head: bytes | None
    ) -> list[tuple[FileEntry | None, FileEntry | None]]:
        """``(old, new)`` entries of the files a commit of this scan changes."""
        files = result.files
        if head is None:
            return [(None, entry) for entry in files.values()]
        if cache.commit == head:
            index = cache.index

            def old(path: str) -> FileEntry | None:
                position = index.get(path)
                if position is None:
                    return None
                return (git_mode(cache.numbers[position * 5 + 4]), cache.sha(position))

            pairs = [(old(path), files[path]) for path in result.changed if path in files]
            return pairs + [(old(path), None) for path in result.removed]
        held, _ = self.flatten(self.repo.commit_info(head).tree)
        return [
            (held.get(p), files.get(p))
            for p in set(held) | set(files)
            if held.get(p) != files.get(p)
        ]

    def _reader(self, result: Scan, changed: int) -> changestats.Reader:
        """Blob bytes at hand for counting lines: the scan's fresh ones, and for the few files
        of a small edit, the old side read back from the store."""
        repo = self.repo
        read_back = changed <= READ_BACK_FOR_STATS

        def read(sha: bytes) -> bytes | None:
            data = result.new_blobs.get(sha)
            if data is not None or not read_back or sha in result.stored:
                return data
            try:
                return repo.read_blob(sha)
            except CheckpointError:
                return None  # damaged: the stats are no reason to fail a snapshot

        return read

    def new_objects(self, result: Scan, built: list[RawObject]) -> list:
        """The store objects a commit of this scan needs that the repository lacks."""
        repo = self.repo
        raw = [(sha, b'blob', data) for sha, data in result.new_blobs.items()]
        raw += built
        return as_objects(item for item in raw if not repo.contains(item[0]))

    def commit_tree(
        self, tree: bytes, built: list[RawObject], message: str, *, move_branch: bool = True
    ) -> bytes:
        """Commits a tree (on the branch, or only as an object when ``move_branch`` is off)."""
        repo = self.repo
        head = repo.head()
        commit = repo.make_commit(tree, head, message)
        objects = as_objects(item for item in built if not repo.contains(item[0]))
        repo.write_objects([*objects, commit])
        if move_branch:
            repo.update_branch(head, commit.id, f'commit: {message.splitlines()[0]}')
        return commit.id

    def snapshot(self, message: str) -> tuple[bytes | None, Scan]:
        result, cache = self.scan(record=True)
        return self.commit(result, cache, message), result

    # -- reading the repository ------------------------------------------------------------

    def flatten(
        self, tree: bytes, skipped: list[tuple[str, str]] | None = None
    ) -> tuple[dict[str, FileEntry], dict[str, bytes]]:
        """Every file of a tree, vetted against the allowlist (see ``ShadowRepo.flatten_tree``)."""
        return self.repo.flatten_tree(tree, self.allowlist, skipped)

    def target(self, checkpoint_id: str | None) -> tuple[bytes, str]:
        """The commit a checkpoint id names (None: the newest) and the label to show for it."""
        if checkpoint_id is None:
            newest = self.repo.head()
            if newest is None:
                raise CheckpointError(f'no checkpoints yet in {self.repo.path}')
            return newest, newest.decode()[:SHORT_ID_LENGTH]
        return self.repo.resolve(checkpoint_id), checkpoint_id.strip()


@contextmanager
def open_reading(config: DeskConfig) -> Iterator[Session | None]:
    """A session without the lock, for verbs that only read; None when there is no repository."""
    repo = ShadowRepo.open(config.repository)
    if repo is None:
        yield None
        return
    try:
        session = Session(config, repo)
    except BaseException:
        repo.close()
        raise
    try:
        yield session
    finally:
        session.close()


# -- configuration in effect -----------------------------------------------------------------

# The allowlist a repository remembers, by config path, valid while the config file's stat holds.
_REMEMBERED: dict[str, tuple[tuple[int, int, int], Allowlist]] = {}
_REMEMBERED_LOCK = threading.Lock()
_ALLOWLISTS: dict[tuple[str, ...], Allowlist] = {}


def allowlist_of(entries: tuple[str, ...], source: str | None = None) -> Allowlist:
    """The allowlist of some tracked paths (remembered: building one is pure but not free)."""
    allowlist = _ALLOWLISTS.get(entries)
    if allowlist is None:
        try:
            allowlist = Allowlist(entries)
        except CheckpointError as error:
            if source is None:
                raise
            raise CheckpointError(f'checkpoints.tracked in {source}: {error}') from error
        if len(_ALLOWLISTS) < 64:
            _ALLOWLISTS[entries] = allowlist
    return allowlist


def effective_allowlist(config: DeskConfig, repo: ShadowRepo | None = None) -> Allowlist:
    """The tracked paths in effect: the caller's if given, else the repository's, else default."""
    if config.explicit:
        return config.requested
    if repo is not None:
        remembered = repo.tracked_paths()
        if not remembered:
            return config.requested
        return allowlist_of(remembered, os.path.join(repo.path, 'config'))
    path = os.path.join(config.repository, 'config')
    try:
        info = os.stat(path)
        stamp = (info.st_mtime_ns, info.st_size, info.st_ino)
    except OSError:
        return config.requested
    with _REMEMBERED_LOCK:
        cached = _REMEMBERED.get(path)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    opened = ShadowRepo.open(config.repository)
    if opened is None:
        return config.requested
    try:
        allowlist = effective_allowlist(config, opened)
    finally:
        opened.close()
    with _REMEMBERED_LOCK:
        _REMEMBERED[path] = (stamp, allowlist)
    return allowlist


def size_limit(config: DeskConfig, repo: ShadowRepo) -> int:
    """The maximum file size in effect: the caller's, else the repository's, else 100 MiB."""
    if config.max_file_size is not None:
        return config.max_file_size
    configured = repo.config_string(*safety.MAX_FILE_SIZE_KEY)
    if configured is None:
        return safety.DEFAULT_MAX_FILE_SIZE
    try:
        return safety.parse_size(configured)
    except CheckpointError:
        # The value itself is not echoed: a config is untrusted and may hold anything.
        raise CheckpointError(
            f'checkpoints.maxFileSize in {repo.path / "config"} is not a size '
            '(expected a number with k, m or g, like 100m)'
        ) from None


def atomic_writes(config: DeskConfig, repo: ShadowRepo) -> bool:
    """Whether restores write through temporary files: the caller's choice, else the
    repository's ``checkpoints.atomicWrites``, else not."""
    if config.atomic_writes is not None:
        return config.atomic_writes
    configured = repo.config_string(*safety.ATOMIC_WRITES_KEY)
    if configured is None:
        return False
    value = configured.strip().lower()
    if value in ('true', 'yes', 'on', '1'):
        return True
    if value in ('false', 'no', 'off', '0', ''):
        return False
    raise CheckpointError(
        f'checkpoints.atomicWrites in {repo.path / "config"} is not a boolean '
        '(expected true or false)'
    )


def check_repository_outside(config: DeskConfig, allowlist: Allowlist) -> None:
    """Refuses a repository that lies inside the desk's tracked paths (whatever their source):
    a snapshot would record the repository's own files, and a restore could delete them."""
    real_repo = realpath(config.repository)
    real_desk = realpath(config.desk)
    if real_repo != real_desk and not real_repo.startswith(real_desk.rstrip(os.sep) + os.sep):
        return  # the common case, decided on strings
    relative = Path(real_repo).relative_to(real_desk).as_posix() if real_repo != real_desk else ''
    if not relative or allowlist.covers(relative) or allowlist.is_ancestor(relative):
        source = '' if config.explicit else ' (as remembered in its config)'
        raise CheckpointError(
            f'the checkpoint repository {config.repository} lies inside the tracked files of '
            f'the desk {config.desk}: the tracked paths{source} are '
            f'{", ".join(allowlist.entries)}; keep the repository outside them'
        )
