"""One desk's tracked files and their stat cache, as read: the desk -> entries -> trees side.

Like jj's working-copy state, :class:`DeskState` keeps the desk and the cache that spares a scan
from reading files whose stat is unchanged: ``scan`` trusts cached blob ids for those. What the
cache should hold after a snapshot or a checkout is computed here (:func:`record_scan`,
:func:`record_checkout`); saving it, and writing the desk (``checkout.apply``), is left to the
holder of the repository's lock. All file access goes through ``desk.folders``.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Callable, Iterable
from pathlib import Path

from ..core.fs import realpath
from ..core.paths import Allowlist
from ..core.repofiles import RepoFile
from ..core.trees import FileEntry, RawObject, build_trees_of, dirty_folders
from ..errors import ConcurrentChangeError, FileAccessError
from . import checkout, narrow, scan, statcache
from .folders import DeskFolders
from .narrow import Since
from .scan import BlobSink, Scan
from .statcache import FIELDS, SHA_SIZE, StatCache, StatKey


class DeskState:
    """The tracked files of one desk folder, with the stat cache kept in its repository.

    Attributes:
        path: The desk folder.
        allowlist: What is tracked.
        cache_path: Where the stat cache is kept (a file of the repository).
        max_file_size: Files larger than this are left out of snapshots (0: no limit).
        context: What the stat cache is valid for (the desk folder and the tracked paths).
    """

    def __init__(
        self,
        path: Path,
        allowlist: Allowlist,
        cache_path: RepoFile | Path,
        *,
        max_file_size: int = 0,
    ) -> None:
        self.path = Path(path)
        self.allowlist = allowlist
        self.cache_path = cache_path
        self.max_file_size = max_file_size
        context = '\0'.join((realpath(self.path), *allowlist.entries))
        self.context = context.encode('utf-8', 'surrogateescape')
        self._folders: DeskFolders | None = None

    # -- the desk folder ---------------------------------------------------------------

    @property
    def folders(self) -> DeskFolders:
        """The desk's open folders (opened on first use, closed by :meth:`close`)."""
        if self._folders is None:
            self._folders = DeskFolders(self.path)
        return self._folders

    def close(self) -> None:
        if self._folders is not None:
            self._folders.close()
            self._folders = None

    def check_held_still(self) -> None:
        """Refuses to go on with a desk folder that vanished or was replaced meanwhile."""
        if self._folders is None:
            return
        try:
            st = os.stat(self.path)
            same = (st.st_dev, st.st_ino) == self._folders.identity
        except OSError:
            same = False
        if not same:
            raise ConcurrentChangeError(
                f'the desk folder {self.path} vanished or was replaced while it was being '
                'read; nothing was recorded',
                path=self.path,
            )

    # -- scanning ------------------------------------------------------------------------

    def load_cache(self) -> StatCache:
        return statcache.load(self.cache_path, self.context)

    def scan(
        self,
        cache: StatCache,
        *,
        sink: BlobSink | None = None,
        exempt: Iterable[str] = (),
        since: Since | None = None,
    ) -> Scan:
        """The tracked files now (see ``scan.scan``), refusing a desk replaced meanwhile.

        ``since``: what changed since a walk found the desk equal to ``cache``; then only that
        is walked (``narrow.scan_since``), when it can be.
        """
        result = None
        if since is not None and not exempt:
            result = narrow.scan_since(
                self.folders,
                self.allowlist,
                cache,
                since,
                max_file_size=self.max_file_size,
                sink=sink,
            )
        if result is None:
            result = scan.scan(
                self.folders,
                self.allowlist,
                cache,
                max_file_size=self.max_file_size,
                sink=sink,
                exempt=exempt,
            )
        self.check_held_still()
        return result

    def trees(self, result: Scan, cache: StatCache) -> tuple[dict[str, bytes], list[RawObject]]:
        """Tree ids of the scanned files, building only the folders that changed."""
        dirty = dirty_folders(result.changed, result.removed)
        return build_trees_of(result.names, result.entry, dirty, cache.trees)

    # -- before a checkout ---------------------------------------------------------------

    def check_plan(self, the_plan: checkout.Plan, current: dict[str, FileEntry]) -> None:
        checkout.check_plan(self.folders, the_plan, current)

    # -- reading -------------------------------------------------------------------------

    def reader(self, result: Scan) -> Callable[[str, bytes], bytes]:
        """Reads a desk file's bytes: from the scan's fresh blobs, else from the desk."""

        def read(path: str, sha: bytes) -> bytes:
            data = result.new_blobs.get(sha)
            if data is not None:
                return data
            found = self.folders.read_bytes(path)
            if found is None:
                raise FileAccessError(
                    f'cannot read {self.folders.full(path)}: it is gone',
                    path=self.folders.full(path),
                    action='read',
                )
            return found

        return read


def record_scan(cache: StatCache, result: Scan, trees: dict[str, bytes], commit: bytes) -> None:
    """Sets the cache to the desk as the scan found it, matching ``commit``'s trees."""
    cache.set_columns(result.names, result.numbers, result.shas)
    cache.trees = trees
    cache.commit = commit
    cache.written_at_ns = result.started_ns


def record_checkout(
    cache: StatCache,
    result: Scan,
    target: dict[str, FileEntry],
    target_trees: dict[str, bytes],
    written: dict[str, StatKey],
    commit: bytes,
) -> None:
    """Sets the cache to the desk after a checkout: the scan's stats, patched where it wrote.

    The scan's columns are copied whole and only the rows that differ are changed: a
    file written gets its new stat, a file the target holds differently its id, a file
    the target lacks is dropped, and a file the restore created is added at the end (so
    the next scan finds the cache in its own order and compares stats in bulk)."""
    names = list(result.names)
    numbers = array('q', result.numbers)
    shas = bytearray(result.shas)
    positions = result.positions
    differ = {path for path, _ in result.files.items() ^ target.items()}
    dropped: list[int] = []
    for path in differ.union(written):
        row = positions.get(path)
        if row is None:
            continue  # not in the scan: added below if the restore wrote it
        entry = target.get(path)
        key = written.get(path)
        if entry is None:
            dropped.append(row)
            continue
        if key is not None:
            numbers[row * FIELDS : row * FIELDS + FIELDS] = array('q', key)
        shas[row * SHA_SIZE : row * SHA_SIZE + SHA_SIZE] = bytes.fromhex(entry[1].decode())
    for row in sorted(dropped, reverse=True):
        del names[row]
        del numbers[row * FIELDS : row * FIELDS + FIELDS]
        del shas[row * SHA_SIZE : row * SHA_SIZE + SHA_SIZE]
    for path in (p for p in target if p in differ and p not in positions):
        key = written.get(path)
        if key is not None:
            names.append(path)
            numbers.extend(key)
            shas += bytes.fromhex(target[path][1].decode())
    cache.set_columns(names, numbers, bytes(shas))
    cache.trees = dict(target_trees)
    cache.commit = commit
