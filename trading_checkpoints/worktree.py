"""The boundary between a desk folder and git trees: scanning for snapshots, writing for restores.

Like jj's working-copy state, the scan and the checkout live together because they share the
stat cache: a scan trusts cached blob ids for files whose stat is unchanged, and a checkout
records the stat of what it wrote so the next scan need not read those files again.

Symlinks are stored as links and never followed, neither when scanning nor when writing; folders
named ``.git`` (nested repositories) are never scanned; files that are neither regular files nor
symlinks (sockets, fifos, devices) are left out and left alone.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dulwich.objects import Blob, Tree

from .durability import fsync_fds, fsync_folders_at_once
from .errors import CheckpointError
from .paths import Allowlist, path_problem
from .repo import EXECUTABLE_MODE, FILE_MODE, SYMLINK_MODE, TREE_MODE
from .statcache import UNSTABLE, StatCache, StatKey, stat_key

FileEntry = tuple[int, bytes]  # (git mode, blob id)
UNSTABLE_KEY: StatKey = (-1, -1, -1, -1, -1)

_FIELDS = 5
_SHA = 20
_FORMAT_MASK = 0o170000
_S_IFDIR, _S_IFREG, _S_IFLNK = stat.S_IFDIR, stat.S_IFREG, stat.S_IFLNK
_NOT_A_FILE = 'it is not a regular file or a symlink'


class Scan:
    """The tracked files of a desk as they are now.

    The files are columns in walk order, like the stat cache's: ``names``, ``numbers`` (five
    stat numbers per file; an unstable read is marked ``UNSTABLE`` so it is never trusted) and
    ``shas`` (20-byte blob ids). :attr:`files` and :attr:`keys` offer them as dicts.
    """

    def __init__(self, started_ns: int) -> None:
        self.names: list[str] = []
        self.numbers = array('q')
        self.shas = b''
        self.new_blobs: dict[bytes, Blob] = {}  # blobs hashed in this scan, by id
        self.changed: set[str] = set()  # added, or content or mode differs from the cache
        self.removed: set[str] = set()  # in the cache, gone now
        self.skipped: list[tuple[str, str]] = []  # (path, why)
        self.started_ns = started_ns
        self.max_file_size = 0  # files larger than this are skipped; 0: no limit
        # Every name, stat and id equals the cache's (so nothing needs to be saved or built).
        self.unchanged = False
        # Racy cache entries were read again and found unchanged: saving the cache with a newer
        # time lets the next scan trust them.
        self.refreshed = False
        self._files: dict[str, FileEntry] | None = None
        self._keys: dict[str, StatKey] | None = None

    @property
    def files(self) -> dict[str, FileEntry]:
        """``path -> (git mode, hex blob id)``."""
        if self._files is None:
            modes = self.numbers[4::_FIELDS]
            hexes = self.shas.hex().encode()
            self._files = {
                name: (git_mode(modes[i]), hexes[i * 40 : i * 40 + 40])
                for i, name in enumerate(self.names)
            }
        return self._files

    @property
    def keys(self) -> dict[str, StatKey]:
        """The stat of each file when hashed; ``UNSTABLE_KEY`` for one that moved while read."""
        if self._keys is None:
            numbers = self.numbers
            self._keys = {
                name: UNSTABLE_KEY
                if numbers[i * _FIELDS] == UNSTABLE
                else tuple(numbers[i * _FIELDS : i * _FIELDS + _FIELDS])  # type: ignore[misc]
                for i, name in enumerate(self.names)
            }
        return self._keys


def git_mode(st_mode: int) -> int:
    if stat.S_ISLNK(st_mode):
        return SYMLINK_MODE
    return EXECUTABLE_MODE if st_mode & stat.S_IXUSR else FILE_MODE


def scan(desk: Path, allowlist: Allowlist, cache: StatCache, *, max_file_size: int = 0) -> Scan:
    """Walks the tracked paths, hashing only files whose stat differs from the cache.

    The walk only collects names and stat numbers. When it finds exactly the cache's names,
    the stat columns are compared in bulk and only the entries that differ (or were racy when
    cached) are read; otherwise each file is looked up in the cache by name.

    Regular files larger than ``max_file_size`` bytes (when not 0) are left out and listed in
    ``Scan.skipped``.
    """
    result = Scan(started_ns=time.time_ns())
    result.max_file_size = max_file_size
    names, numbers = _walk(os.fspath(desk), allowlist, result.skipped)
    if max_file_size and names and max(numbers[0::_FIELDS]) > max_file_size:
        names, numbers = _without_large(names, numbers, max_file_size, result.skipped)
    if names == cache.names:
        _compare_in_place(desk, names, numbers, cache, result)
    else:
        _compare_by_name(desk, names, numbers, cache, result)
    return result


def _walk(
    root: str, allowlist: Allowlist, skipped: list[tuple[str, str]]
) -> tuple[list[str], array]:
    """Names and stat numbers of every regular file and symlink under the tracked paths."""
    names: list[str] = []
    numbers = array('q')
    for entry in allowlist.entries:
        if not _parents_are_folders(root, entry):
            continue
        full = os.path.join(root, entry)
        try:
            st = os.lstat(full)
        except FileNotFoundError:
            continue
        except OSError as error:
            raise CheckpointError(f'cannot read {full}: {error.strerror}') from error
        kind = st.st_mode & _FORMAT_MASK
        if kind == _S_IFREG or kind == _S_IFLNK:
            names.append(entry)
            numbers.extend((st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_mode))
        elif kind == _S_IFDIR:
            _walk_folder(full, entry + '/', names, numbers, skipped)
        else:
            skipped.append((entry, _NOT_A_FILE))
    return names, numbers


# Where the platform allows it, each folder is opened once and listed and stat-ed through its
# descriptor (``fstatat``), so the kernel resolves one name per file instead of its whole path.
_BY_DESCRIPTOR = os.scandir in os.supports_fd and os.stat in os.supports_dir_fd
_FOLDER_FLAGS = (
    os.O_RDONLY
    | getattr(os, 'O_DIRECTORY', 0)
    | getattr(os, 'O_NOFOLLOW', 0)
    | getattr(os, 'O_CLOEXEC', 0)
)


def _walk_folder(
    full: str, prefix: str, names: list[str], numbers: array, skipped: list[tuple[str, str]]
) -> None:
    add_name, add_numbers = names.append, numbers.extend
    pending = [(full, prefix)]
    while pending:
        folder, prefix = pending.pop()
        subfolders = []
        try:
            if _BY_DESCRIPTOR:
                # O_NOFOLLOW: a folder swapped for a symlink since it was listed is not entered.
                fd = os.open(folder, _FOLDER_FLAGS)
                listing = os.scandir(fd)
            else:  # pragma: no cover - Windows
                fd = -1
                listing = os.scandir(folder)
        except (FileNotFoundError, NotADirectoryError):
            continue  # vanished mid-scan: it is absent now
        except OSError as error:
            if error.errno == errno.ELOOP:
                continue  # became a symlink mid-scan: never walked into
            raise CheckpointError(f'cannot list {folder}: {error.strerror}') from error
        try:
            with listing:
                for child in listing:
                    name = child.name
                    if name[0] == '.' or '\\' in name or '\n' in name or '\r' in name:
                        problem = path_problem(prefix + name)
                        if problem:
                            if name.rstrip('. ').lower() != '.git':
                                skipped.append((prefix + name, f'its name has {problem}'))
                            continue  # nested repositories are never snapshotted
                    try:
                        st = child.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    except OSError as error:
                        raise CheckpointError(
                            f'cannot read {os.path.join(folder, name)}: {error.strerror}'
                        ) from error
                    kind = st.st_mode & _FORMAT_MASK
                    if kind == _S_IFREG or kind == _S_IFLNK:
                        add_name(prefix + name)
                        add_numbers(
                            (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_mode)
                        )
                    elif kind == _S_IFDIR:
                        subfolders.append((os.path.join(folder, name), prefix + name + '/'))
                    else:
                        skipped.append((prefix + name, _NOT_A_FILE))
        finally:
            if fd >= 0:
                os.close(fd)
        # Walked last-in first-out: reversed keeps the listing order.
        pending.extend(reversed(subfolders))


def _too_large(limit: int) -> str:
    return f'it is larger than the maximum file size ({limit} bytes)'


def _without_large(
    names: list[str], numbers: array, limit: int, skipped: list[tuple[str, str]]
) -> tuple[list[str], array]:
    """The walk without the regular files larger than ``limit`` (listed in ``skipped``)."""
    kept_names: list[str] = []
    kept = array('q')
    for i, name in enumerate(names):
        record = numbers[i * _FIELDS : (i + 1) * _FIELDS]
        if record[0] > limit and stat.S_ISREG(record[4]):
            skipped.append((name, _too_large(limit)))
            continue
        kept_names.append(name)
        kept.extend(record)
    return kept_names, kept


def _compare_in_place(
    desk: Path, names: list[str], numbers: array, cache: StatCache, result: Scan
) -> None:
    """The walk found the cache's names in the cache's order: compare the columns in bulk."""
    suspects = set(cache.racy)
    if numbers != cache.numbers:
        suspects.update(_differing_records(numbers, cache.numbers))
    result.names = names
    result.numbers = numbers
    if not suspects:
        result.shas = cache.shas
        result.unchanged = True
        return
    shas = bytearray(cache.shas)
    root = os.fspath(desk)
    any_difference = False
    for i in sorted(suspects):
        path = names[i]
        start = i * _FIELDS
        old_mode = cache.numbers[start + 4]
        record = numbers[start : start + _FIELDS]
        sha, stable = _hash(os.path.join(root, path), path, record, result)
        if sha is None:  # vanished mid-scan
            result.removed.add(path)
            any_difference = True
            continue
        if not stable:
            numbers[start] = UNSTABLE
        raw = bytes.fromhex(sha.decode())
        old_sha = cache.shas[i * _SHA : (i + 1) * _SHA]
        if raw != old_sha or not _same_kind(old_mode, numbers[start + 4]):
            result.changed.add(path)
            shas[i * _SHA : (i + 1) * _SHA] = raw
            any_difference = True
        elif numbers[start : start + _FIELDS] != cache.numbers[start : start + _FIELDS]:
            any_difference = True  # same content, new stat: worth caching
    if result.removed:
        _drop(result, shas)
    else:
        result.shas = bytes(shas)
    result.unchanged = not any_difference
    result.refreshed = not any_difference


def _compare_by_name(
    desk: Path, names: list[str], numbers: array, cache: StatCache, result: Scan
) -> None:
    """Files were added, removed or reordered: look each one up in the cache by name."""
    index = cache.index
    cached_numbers, cached_shas = cache.numbers, cache.shas
    racy = set(cache.racy)
    shas = bytearray(len(names) * _SHA)
    root = os.fspath(desk)
    gone: list[int] = []
    for i, path in enumerate(names):
        start = i * _FIELDS
        position = index.get(path)
        if position is not None:
            cached_start = position * _FIELDS
            same = (
                numbers[start : start + _FIELDS]
                == cached_numbers[cached_start : cached_start + _FIELDS]
            )
            if same and position not in racy:
                cached_sha = cached_shas[position * _SHA : (position + 1) * _SHA]
                shas[i * _SHA : (i + 1) * _SHA] = cached_sha
                continue
        record = numbers[start : start + _FIELDS]
        sha, stable = _hash(os.path.join(root, path), path, record, result)
        if sha is None:
            gone.append(i)
            continue
        if not stable:
            numbers[start] = UNSTABLE
        raw = bytes.fromhex(sha.decode())
        shas[i * _SHA : (i + 1) * _SHA] = raw
        if (
            position is None
            or raw != cached_shas[position * _SHA : (position + 1) * _SHA]
            or not _same_kind(cached_numbers[position * _FIELDS + 4], numbers[start + 4])
        ):
            result.changed.add(path)
    result.names, result.numbers = names, numbers
    present = set(names)
    result.removed = {name for name in cache.names if name not in present}
    if gone:
        result.removed.update(names[i] for i in gone)
        _drop(result, shas)
    else:
        result.shas = bytes(shas)


def _drop(result: Scan, shas: bytearray) -> None:
    """Removes the files that vanished mid-scan (listed in ``result.removed``) from the columns."""
    keep = [i for i, name in enumerate(result.names) if name not in result.removed]
    result.names = [result.names[i] for i in keep]
    numbers = array('q')
    new_shas = bytearray()
    for i in keep:
        numbers.extend(result.numbers[i * _FIELDS : (i + 1) * _FIELDS])
        new_shas += shas[i * _SHA : (i + 1) * _SHA]
    result.numbers, result.shas = numbers, bytes(new_shas)
    result.changed -= result.removed


def _same_kind(old_mode: int, new_mode: int) -> bool:
    """Whether two ``st_mode`` values give the same git mode (file type and executable bits)."""
    return old_mode & 0o170111 == new_mode & 0o170111


def _differing_records(new: array, old: array, chunk: int = 64) -> list[int]:
    """Positions of the file records that differ between two stat columns of equal length."""
    out = []
    width = chunk * _FIELDS
    for start in range(0, len(new), width):
        if new[start : start + width] != old[start : start + width]:
            for i in range(start, min(start + width, len(new)), _FIELDS):
                if new[i : i + _FIELDS] != old[i : i + _FIELDS]:
                    out.append(i // _FIELDS)
    return out


def _hash(full: str, path: str, key: array, result: Scan) -> tuple[bytes | None, bool]:
    """Reads and hashes one file into ``result.new_blobs``: its hex id, whether it held still."""
    data, stable = _read(full, key)
    if data is None:
        return None, False
    limit = result.max_file_size
    if limit and len(data) > limit:  # grew past the limit while we read it: left out
        result.skipped.append((path, _too_large(limit)))
        return None, False
    blob = Blob.from_string(data)
    sha = blob.id
    result.new_blobs[sha] = blob
    return sha, stable


def _parents_are_folders(root: str, entry: str) -> bool:
    """Whether every folder above ``entry`` is a real folder (a symlink is never walked into)."""
    parts = entry.split('/')[:-1]
    current = root
    for part in parts:
        current = os.path.join(current, part)
        try:
            if not stat.S_ISDIR(os.lstat(current).st_mode):
                return False
        except FileNotFoundError:
            return False
        except OSError as error:
            raise CheckpointError(f'cannot read {current}: {error.strerror}') from error
    return True


def _read(full: str, key: array) -> tuple[bytes | None, bool]:
    """A file's bytes (or a link's target) and whether its stat held still while we read."""
    expected = tuple(key)
    try:
        if stat.S_ISLNK(key[4]):
            return os.fsencode(os.readlink(full)), True
        flags = os.O_RDONLY | getattr(os, 'O_NOFOLLOW', 0) | getattr(os, 'O_NONBLOCK', 0)
        fd = os.open(full, flags)
        try:
            before = os.fstat(fd)
            if not stat.S_ISREG(before.st_mode):
                return None, False  # replaced by something else since the lstat
            chunks = []
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
            after = os.fstat(fd)
        finally:
            os.close(fd)
    except (FileNotFoundError, NotADirectoryError):
        return None, False
    except OSError as error:
        raise CheckpointError(f'cannot read {full}: {error.strerror}') from error
    stable = stat_key(before) == stat_key(after) == expected
    return b''.join(chunks), stable


# -- trees ---------------------------------------------------------------------------------


def folders_of(path: str) -> list[str]:
    """The folders above a path, nearest first, ending with the root ``''``."""
    out = []
    while '/' in path:
        path = path.rsplit('/', 1)[0]
        out.append(path)
    out.append('')
    return out


def build_trees(
    files: dict[str, FileEntry], dirty: set[str], cached: dict[str, bytes]
) -> tuple[dict[str, bytes], list[Tree]]:
    """Tree ids for every folder holding tracked files, building only the ``dirty`` ones.

    A folder absent from ``cached`` counts as dirty. Returns the ids by folder and the tree
    objects that were built.
    """
    by_parent: dict[str, list[tuple[str, FileEntry]]] = {}
    for path, entry in files.items():
        parent, _, name = path.rpartition('/')
        group = by_parent.get(parent)
        if group is None:
            by_parent[parent] = group = []
        group.append((name, entry))
    all_folders = set(by_parent)
    all_folders.add('')  # an empty desk still has a (empty) root tree
    for folder in by_parent:
        while folder:
            folder = folder.rpartition('/')[0]
            if folder in all_folders:
                break
            all_folders.add(folder)
    subfolders: dict[str, list[str]] = {}
    for folder in all_folders:
        if folder:
            parent, _, name = folder.rpartition('/')
            subfolders.setdefault(parent, []).append(name)
    ids: dict[str, bytes] = {}
    built: list[Tree] = []
    # Deepest folders first, so subtrees are known before their parents.
    for folder in sorted(all_folders, key=lambda f: f.count('/') + (1 if f else 0), reverse=True):
        if folder not in dirty and folder in cached:
            ids[folder] = cached[folder]
            continue
        tree = Tree()
        for name, (mode, sha) in by_parent.get(folder, ()):
            tree.add(name.encode('utf-8', 'surrogateescape'), mode, sha)
        for name in subfolders.get(folder, ()):
            tree.add(
                name.encode('utf-8', 'surrogateescape'),
                TREE_MODE,
                ids[f'{folder}/{name}' if folder else name],
            )
        ids[folder] = tree.id
        built.append(tree)
    return ids, built


def dirty_folders(changed: set[str], removed: set[str]) -> set[str]:
    out: set[str] = set()
    for path in changed | removed:
        out.update(folders_of(path))
    return out


# -- checkout ------------------------------------------------------------------------------


@dataclass
class Plan:
    """What a restore changes in the desk."""

    write: list[str]  # created or overwritten, sorted
    delete: list[str]  # removed, sorted

    @property
    def empty(self) -> bool:
        return not self.write and not self.delete


def plan(current: dict[str, FileEntry], target: dict[str, FileEntry]) -> Plan:
    write = sorted(path for path, entry in target.items() if current.get(path) != entry)
    delete = sorted(path for path in current if path not in target)
    return Plan(write=write, delete=delete)


def check_plan(
    desk: Path, allowlist: Allowlist, the_plan: Plan, current: dict[str, FileEntry]
) -> None:
    """Refuses, before anything is written, a plan that would need to touch untracked files."""
    root = os.fspath(desk)
    deleting = set(the_plan.delete)
    checked: set[str] = set()
    for path in the_plan.write:
        replaced = False  # a tracked file or link above the path is removed: nothing below it
        for folder in reversed(folders_of(path)[:-1]):
            if folder in checked:
                continue
            full = os.path.join(root, folder)
            try:
                st = os.lstat(full)
            except (FileNotFoundError, NotADirectoryError):
                break
            except OSError as error:
                raise CheckpointError(f'cannot read {full}: {error.strerror}') from error
            if stat.S_ISDIR(st.st_mode):
                checked.add(folder)
                continue
            if folder not in deleting:
                raise CheckpointError(
                    f'cannot restore {path}: {full} is in the way and is not tracked '
                    '(it is a file or a symlink, and restoring never writes through one)'
                )
            replaced = True
            break
        if replaced:
            continue
        full = os.path.join(root, path)
        try:
            st = os.lstat(full)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as error:
            raise CheckpointError(f'cannot read {full}: {error.strerror}') from error
        if stat.S_ISDIR(st.st_mode):
            leftover = _untracked_below(full, path, deleting, current)
            if leftover:
                raise CheckpointError(
                    f'cannot restore {path}: the folder {full} holds {leftover}, which is not '
                    'tracked and would be lost'
                )
        elif path not in current:
            raise CheckpointError(
                f'cannot restore {path}: {full} exists but is not tracked '
                '(not a regular file or symlink), and would be lost'
            )


def _untracked_below(full: str, relative: str, deleting: set[str], current: dict) -> str | None:
    for folder, subfolders, names in os.walk(full):
        rel_folder = relative + folder[len(full) :].replace(os.sep, '/')
        for name in names:
            rel = f'{rel_folder}/{name}'
            if rel not in deleting:
                return rel
        for name in subfolders:
            if os.path.islink(os.path.join(folder, name)):
                rel = f'{rel_folder}/{name}'
                if rel not in deleting:
                    return rel
    return None


def apply(
    desk: Path,
    allowlist: Allowlist,
    the_plan: Plan,
    target: dict[str, FileEntry],
    read_blob,
    *,
    durable: bool = True,
    guard: Callable[[str, str], None] | None = None,
) -> dict[str, StatKey]:
    """Makes the desk match ``target`` for the planned paths; returns the stat of what it wrote.

    Every file is written to a temporary file in its folder and renamed into place, so no
    reader (and no crash) ever sees half a file. With ``durable``, each file is flushed before
    its rename and every folder that changed is flushed before this returns. ``guard(path,
    full)``, when given, is called just before a file is deleted or replaced, and may raise to
    stop (it checks the file still is what the plan was made from).
    """
    root = os.fspath(desk)
    touched: set[str] = set()  # folders whose entries changed, flushed at the end when durable
    emptied: set[str] = set()
    for path in reversed(the_plan.delete):
        full = os.path.join(root, path)
        if not _parents_are_folders(root, path):
            continue  # a folder above became a file or a symlink: the path is gone already
        if guard is not None:
            guard(path, full)
        try:
            os.unlink(full)
        except (FileNotFoundError, NotADirectoryError):
            pass
        except IsADirectoryError:
            # A tracked file became a folder since the scan: leave it, it is newer work.
            continue
        except OSError as error:
            raise CheckpointError(f'cannot delete {full}: {error.strerror}') from error
        emptied.update(folders_of(path)[:-1])
        touched.add(os.path.dirname(full))
    for folder in sorted(emptied, key=lambda f: f.count('/'), reverse=True):
        if not allowlist.covers(folder):
            continue  # folders above the tracked paths (``skills``) are not ours to remove
        try:
            os.rmdir(os.path.join(root, folder))
        except OSError:
            pass  # not empty: it holds other files, keep it
        else:
            touched.add(os.path.dirname(os.path.join(root, folder)))
    written: dict[str, StatKey] = {}
    made: set[str] = set()
    # Written in batches: each batch's temporary files are all written, then flushed together
    # (durable), then renamed into place one by one, each after its guard check.
    batch: list[tuple[str, str, int]] = []  # (path, full, open descriptor or -1)
    try:
        for path in the_plan.write:
            mode, sha = target[path]
            parent = os.path.dirname(os.path.join(root, path))
            if parent not in made:
                touched.update(_make_folders(root, path, guard))
                made.add(parent)
            full = os.path.join(root, path)
            try:
                fd = _write_temporary(full, mode, read_blob(sha))
            except OSError as error:
                raise CheckpointError(f'cannot write {full}: {error.strerror}') from error
            batch.append((path, full, fd))
            touched.add(parent)
            if len(batch) >= _BATCH:
                _finish_batch(batch, durable, guard, written)
        _finish_batch(batch, durable, guard, written)
    finally:
        for _, full, fd in batch:  # only after an error: what was not renamed is removed
            if fd >= 0:
                os.close(fd)
            _unlink_quietly(temporary_name(full))
    if durable:
        fsync_folders_at_once(touched)
    return written


_BATCH = 128  # temporary files held open at once


def _write_temporary(full: str, mode: int, data: bytes) -> int:
    """Writes ``full``'s temporary file; returns its open descriptor (-1 for a symlink)."""
    temporary = temporary_name(full)
    _unlink_quietly(temporary)  # a leftover (or anything planted there) is never written through
    try:
        if mode == SYMLINK_MODE:
            os.symlink(os.fsdecode(data), temporary)
            return -1
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, 'O_NOFOLLOW', 0)
        fd = os.open(temporary, flags, 0o666)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            current = os.fstat(fd).st_mode & 0o777
            wanted = current | 0o111 & ~_umask() if mode == EXECUTABLE_MODE else current & ~0o111
            if wanted != current:
                os.fchmod(fd, wanted)
        except BaseException:
            os.close(fd)
            raise
        return fd
    except OSError:
        _unlink_quietly(temporary)
        raise


def _finish_batch(
    batch: list[tuple[str, str, int]],
    durable: bool,
    guard: Callable[[str, str], None] | None,
    written: dict[str, StatKey],
) -> None:
    """Flushes (durable) and closes a batch's temporary files, then renames each into place."""
    fds = [fd for _, _, fd in batch if fd >= 0]
    try:
        if durable:
            fsync_fds(fds)
    except OSError as error:
        raise CheckpointError(f'cannot write {batch[0][1]}: {error.strerror}') from error
    for index, (path, full, fd) in enumerate(batch):
        if fd >= 0:
            os.close(fd)
            batch[index] = (path, full, -1)
    while batch:
        path, full, _ = batch[0]
        temporary = temporary_name(full)
        try:
            if guard is not None:
                guard(path, full)
            if os.path.isdir(full) and not os.path.islink(full):
                _remove_empty_folders(full)  # a folder becoming a file (check_plan vouched for it)
            os.replace(temporary, full)
            st = os.lstat(full)
        except OSError as error:
            raise CheckpointError(f'cannot write {full}: {error.strerror}') from error
        del batch[0]
        written[path] = stat_key(st)


def _make_folders(
    root: str, path: str, guard: Callable[[str, str], None] | None = None
) -> list[str]:
    """Creates the folders above ``path``; returns the folders whose entries changed."""
    current = root
    changed: list[str] = []
    parts = path.split('/')
    for depth, part in enumerate(parts[:-1], 1):
        parent, current = current, os.path.join(current, part)
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            try:
                os.mkdir(current)
            except OSError as error:
                raise CheckpointError(f'cannot create {current}: {error.strerror}') from error
            changed.append(parent)
            continue
        if stat.S_ISDIR(st.st_mode):
            continue
        if stat.S_ISLNK(st.st_mode) or stat.S_ISREG(st.st_mode):
            # Only reached for a tracked file or link that check_plan cleared for removal.
            if guard is not None:
                guard('/'.join(parts[:depth]), current)
            try:
                os.unlink(current)
                os.mkdir(current)
            except OSError as error:
                raise CheckpointError(f'cannot create {current}: {error.strerror}') from error
            changed.append(parent)
            continue
        raise CheckpointError(f'cannot create {current}: something else is in the way')
    return changed


def temporary_name(full: str, pid: int | None = None) -> str:
    """The temporary file a restore writes before renaming it to ``full``."""
    folder, name = os.path.split(full)
    return os.path.join(folder, f'.{name}.checkpoint-{os.getpid() if pid is None else pid}.tmp')


def _remove_empty_folders(full: str) -> None:
    """Removes a folder that holds nothing but (possibly nested) empty folders."""
    for folder, subfolders, names in os.walk(full, topdown=False):
        if names:
            raise OSError(39, 'Directory not empty', folder)
        for name in subfolders:
            os.rmdir(os.path.join(folder, name))
    os.rmdir(full)


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


_UMASK: int | None = None


def _umask() -> int:
    global _UMASK
    if _UMASK is None:
        _UMASK = os.umask(0)
        os.umask(_UMASK)
    return _UMASK
