"""Sessions: one open repository and one desk, for the length of one verb.

A :class:`ReadSession` reads: the repository, the desk through the scan and its stat cache, the
files a checkpoint holds. A :class:`LockedSession` is a session opened under the repository's
lock (``engine.locked`` opens it, after completing any interrupted restore), and only it has the
methods that write: commit and move the branch, save the stat cache, write the desk's files. So
an operation's signature says whether it writes: each one that does takes a ``LockedSession``,
as jj's ``start_mutation()`` hands out a ``LockedWorkingCopy``; one given a ``ReadSession``
only reads. (Both carry the repository object itself, ``repo``: its writes are made only by
operations given a locked session, and by ``retention``, handed the repository under the lock.)

:func:`open_reading` opens a read session without the lock; both kinds close the repository
and the desk's folder descriptors when done.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from ..core.ids import short_id
from ..core.paths import Allowlist, path_problem
from ..core.trees import TREE_MODE, FileEntry, RawObject
from ..desk import checkout, statcache
from ..desk.checkout import Plan
from ..desk.narrow import Since
from ..desk.scan import REPLACED, BlobSink, Scan, git_mode
from ..desk.statcache import StatCache, StatKey
from ..desk.state import DeskState, record_checkout, record_scan
from ..errors import CheckpointError, NoCheckpointsError
from ..store import changestats, metadata
from ..store.objectio import StoreSink, as_objects
from ..store.repo import ShadowRepo
from .deskconfig import (
    DeskConfig,
    atomic_writes,
    check_repository_outside,
    effective_allowlist,
    size_limit,
)
from .listing import refuse_unfinished_clone
from .results import Recovery

OUTSIDE = 'it is outside the tracked paths'
# A commit changing at most this many files reads their old sides back to count lines.
READ_BACK_FOR_STATS = 16


class ReadSession:
    """An open repository and the desk's state, for reading.

    Attributes:
        config: The desk's configuration.
        repo: The repository (only read through a read session).
        allowlist: The tracked paths in effect.
        desk: The desk's tracked files as read (scan, stat cache, folders).
        atomic: Whether restores write through temporary files (the setting in effect).
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
            statcache.file_in(repo.path),
            max_file_size=size_limit(config, repo),
        )
        self.atomic = atomic_writes(config, repo)

    def close(self) -> None:
        self.desk.close()
        self.repo.close()

    # -- the desk ------------------------------------------------------------------------

    def scan(self, *, since: Since | None = None) -> tuple[Scan, StatCache]:
        """The desk's tracked files now, and the stat cache they were compared with.

        A file left out for its size or because it changed while read keeps the entry the
        newest checkpoint holds (see ``desk/scan.py``). ``since``: what changed since a walk
        found the desk equal to the stat cache, which then matches the newest checkpoint;
        only that is walked (``desk/narrow.py``).
        """
        return self._scan(None, (), since)

    def _scan(
        self, sink: BlobSink | None, exempt: Iterable[str], since: Since | None = None
    ) -> tuple[Scan, StatCache]:
        cache = self.desk.load_cache()
        if since is not None and (cache.commit != self.repo.head() or '' not in cache.trees):
            since = None  # not the cache the clean walk left: it cannot be trusted beside
        result = self.desk.scan(cache, sink=sink, exempt=exempt, since=since)
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
        return self.built_trees(result, cache)[0]

    def built_trees(self, result: Scan, cache: StatCache) -> tuple[bytes, list[RawObject]]:
        """:meth:`tree_of`, with the trees built for it (none when the cache holds them)."""
        if result.unchanged and '' in cache.trees:
            return cache.trees[''], []
        trees, built = self.desk.trees(result, cache)
        return trees[''], built

    def known_tree(self, result: Scan, cache: StatCache) -> bytes | None:
        """The desk's root tree id when it is known without building trees, else None."""
        return cache.trees.get('') if result.unchanged else None

    # -- reading the repository ------------------------------------------------------------

    def flatten(
        self, tree: bytes, skipped: list[tuple[str, str]] | None = None
    ) -> tuple[dict[str, FileEntry], dict[str, bytes]]:
        """Every file of a tree, vetted (see ``ShadowRepo.flatten_tree``), and the tree id of
        every folder.

        A checkpoint may hold paths outside the tracked paths in effect: taken before
        ``track --remove``, or by another tool. They are left out, as names a tree cannot
        hold are, and when ``skipped`` is given each outermost such folder or file is listed
        there with :data:`OUTSIDE`: a restore never writes them and a comparison with the desk
        never sees them. Every entry is vetted all the same (an unsafe name is refused).
        """
        allowlist = self.allowlist
        beside = _outside(self.repo, tree, allowlist)
        if not beside:
            return self.repo.flatten_tree(tree, allowlist, skipped)
        vetting = Allowlist([*allowlist.entries, *beside])
        files, folders = self.repo.flatten_tree(tree, vetting, skipped)
        left_out: set[str] = set()
        for path in [p for p in files if not allowlist.covers(p)]:
            del files[path]
            left_out.add(_outermost_outside(path, allowlist))
        if skipped is not None:
            skipped.extend((path, OUTSIDE) for path in sorted(left_out))
        kept = {
            folder: sha
            for folder, sha in folders.items()
            if not folder or allowlist.covers(folder) or allowlist.is_ancestor(folder)
        }
        return files, kept

    def target(self, checkpoint_id: str | None) -> tuple[bytes, str]:
        """The commit a checkpoint id names (None: the newest) and the label to show for it."""
        if checkpoint_id is None:
            newest = self.repo.head()
            if newest is None:
                raise NoCheckpointsError(
                    f'no checkpoints yet in {self.repo.path}', repository=self.repo.path
                )
            return newest, short_id(newest)
        return self.repo.resolve(checkpoint_id), checkpoint_id.strip()


Change = tuple[str, FileEntry | None, FileEntry | None]
"""A file a commit changes: its path, its entry before (None: new) and after (None: gone)."""


class LockedSession(ReadSession):
    """A session under the repository's lock: it reads as a :class:`ReadSession` does, and
    alone commits, moves the branch, saves the stat cache and writes the desk's files.

    Attributes:
        recovery: What completing an interrupted restore did: when the lock was taken, or
            during a restore another writer interrupted (see ``restore.restore``).
    """

    def __init__(self, config: DeskConfig, repo: ShadowRepo) -> None:
        super().__init__(config, repo)
        self.recovery: Recovery | None = None

    def scan(
        self, *, record: bool = False, exempt: Iterable[str] = (), since: Since | None = None
    ) -> tuple[Scan, StatCache]:
        """Like :meth:`ReadSession.scan`; with ``record`` the fresh blobs go to the store as
        they are read (for a commit), and the ``exempt`` paths are read whatever their size."""
        return self._scan(StoreSink(self.repo) if record else None, exempt, since)

    # -- commits -------------------------------------------------------------------------

    def commit(
        self,
        result: Scan,
        cache: StatCache,
        message: str,
        trailers: Callable[[list[Change]], Iterable[tuple[str, str]]] | None = None,
    ) -> bytes | None:
        """Commits a scan on the branch if it differs from the newest checkpoint.

        ``trailers``, given the files the commit changes, returns trailers to add to the
        message (who wrote them). Saves the stat cache either way; returns the new commit's id
        or None.
        """
        repo = self.repo
        head = repo.head()
        if result.unchanged and head is not None and cache.commit == head and '' in cache.trees:
            # The desk is what the cache says and the cache matches the newest checkpoint.
            if result.refreshed:
                cache.written_at_ns = result.started_ns
                self.save_cache(cache)
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
            changes = self._changes(result, cache, head)
            pairs = [(old, new) for _, old, new in changes]
            stats = changestats.count(pairs, self._reader(result, len(pairs)))
            message = metadata.with_trailer(message, changestats.KEY, stats.trailer())
            if trailers is not None:
                changed = [change for change in changes if change[1] != change[2]]
                message = metadata.with_trailers(message, trailers(changed))
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
            record_scan(cache, result, trees, current)
            self.save_cache(cache)
        return new_sha

    def _changes(self, result: Scan, cache: StatCache, head: bytes | None) -> list[Change]:
        """``(path, old, new)`` of the files a commit of this scan changes."""
        if head is None:
            return [(path, None, entry) for path, entry in result.files.items()]
        if cache.commit == head:
            rows = cache.rows([*result.changed, *result.removed])

            def old(path: str) -> FileEntry | None:
                position = rows.get(path)
                if position is None:
                    return None
                return (git_mode(cache.numbers[position * 5 + 4]), cache.sha(position))

            found = result.entries(sorted(result.changed))
            changes = [(path, old(path), entry) for path, entry in found.items()]
            return changes + [(path, old(path), None) for path in result.removed]
        held, _ = self.flatten(self.repo.commit_info(head).tree)
        files = result.files
        return [
            (p, held.get(p), files.get(p))
            for p in sorted(set(held) | set(files))
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

    # -- the stat cache and the desk's files -------------------------------------------------

    def save_cache(self, cache: StatCache) -> None:
        statcache.save(self.desk.cache_path, cache)

    def forget_cache(self) -> None:
        """Empties the stat cache, so the next scan reads every file again."""
        self.save_cache(StatCache(context=self.desk.context))

    def checkout(
        self,
        the_plan: Plan,
        target: dict[str, FileEntry],
        read_blob: Callable[[bytes], bytes],
        guard: checkout.Guard | None = None,
    ) -> dict[str, StatKey]:
        """Writes and deletes the planned desk paths (see ``checkout.apply``), flushed when the
        session is durable, through temporary files when atomic; returns the stat of each
        written file."""
        return checkout.apply(
            self.desk.folders,
            self.allowlist,
            the_plan,
            target,
            read_blob,
            durable=self.config.durable,
            atomic=self.atomic,
            guard=guard,
        )

    def remember_checkout(
        self,
        cache: StatCache,
        result: Scan,
        target: dict[str, FileEntry],
        target_trees: dict[str, bytes],
        written: dict[str, StatKey],
        commit: bytes,
    ) -> None:
        """Saves the stat cache after a checkout (see ``state.record_checkout``)."""
        record_checkout(cache, result, target, target_trees, written, commit)
        self.save_cache(cache)

    def remove_temporaries(self, paths: Iterable[str], pids: Iterable[int]) -> None:
        """Removes the temporary files killed restores (``pids``) left beside ``paths``."""
        pids = tuple(pids)
        folders = self.desk.folders
        for path in paths:
            parent, _, name = path.rpartition('/')
            for pid in pids:
                folders.unlink(f'{parent}/{checkout.temporary_name(name, pid)}'.lstrip('/'))


def _outside(repo: ShadowRepo, tree: bytes, allowlist: Allowlist) -> list[str]:
    """The entries of a tree outside the tracked paths: at its root, or beside a tracked path
    in a folder above one (``skills/other`` beside ``skills/agent``). Names that are unsafe
    or not UTF-8 are left to the vetting, which refuses or skips them."""
    found = []
    pending = [('', tree)]
    while pending:
        prefix, sha = pending.pop()
        for raw, mode, child in repo.tree_entries(sha):
            try:
                name = raw.decode('utf-8')
            except UnicodeDecodeError:
                continue
            path = prefix + name
            if '/' in name or path_problem(path) or allowlist.covers(path):
                continue
            if allowlist.is_ancestor(path):
                if mode == TREE_MODE:
                    pending.append((path + '/', child))
            else:
                found.append(path)
    return found


def _outermost_outside(path: str, allowlist: Allowlist) -> str:
    """The outermost folder of ``path`` (or the path itself) that lies outside the tracked
    paths: ``memory`` for ``memory/a.md`` once ``memory`` is no longer tracked."""
    parts = path.split('/')
    for depth in range(1, len(parts) + 1):
        prefix = '/'.join(parts[:depth])
        if not allowlist.is_ancestor(prefix):
            return prefix
    return path


@contextmanager
def open_reading(config: DeskConfig) -> Iterator[ReadSession | None]:
    """A session without the lock, for verbs that only read; None when there is no repository.

    An unfinished clone is refused (``UnfinishedCloneError``): it is not a desk's history yet.
    """
    refuse_unfinished_clone(config.repository)
    repo = ShadowRepo.open(config.repository)
    if repo is None:
        yield None
        return
    try:
        session = ReadSession(config, repo)
    except BaseException:
        repo.close()
        raise
    try:
        yield session
    finally:
        session.close()
