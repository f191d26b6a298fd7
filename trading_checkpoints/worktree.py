"""The boundary between a desk folder and git trees: scanning for snapshots, writing for restores.

Like jj's working-copy state, the scan and the checkout live together because they share the
stat cache: a scan trusts cached blob ids for files whose stat is unchanged, and a checkout
records the stat of what it wrote so the next scan need not read those files again.

Symlinks are stored as links and never followed, neither when scanning nor when writing; folders
named ``.git`` (nested repositories) are never scanned; files that are neither regular files nor
symlinks (sockets, fifos, devices) are left out and left alone.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from dulwich.objects import Blob, Tree

from .durability import fsync_folders
from .errors import CheckpointError
from .paths import Allowlist, path_problem
from .repo import EXECUTABLE_MODE, FILE_MODE, SYMLINK_MODE, TREE_MODE
from .statcache import StatCache, StatKey, is_racy, stat_key

FileEntry = tuple[int, bytes]  # (git mode, blob id)
UNSTABLE_KEY: StatKey = (-1, -1, -1, -1, -1)


@dataclass
class Scan:
    """The tracked files of a desk as they are now."""

    files: dict[str, FileEntry]
    keys: dict[str, StatKey]  # stat of each file when hashed
    new_blobs: dict[bytes, Blob]  # blobs hashed in this scan, by id
    changed: set[str]  # paths whose entry differs from the cache (added or modified)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, why)
    started_ns: int = 0
    max_file_size: int = 0  # files larger than this are skipped; 0: no limit


def git_mode(st_mode: int) -> int:
    if stat.S_ISLNK(st_mode):
        return SYMLINK_MODE
    return EXECUTABLE_MODE if st_mode & stat.S_IXUSR else FILE_MODE


def scan(desk: Path, allowlist: Allowlist, cache: StatCache, *, max_file_size: int = 0) -> Scan:
    """Walks the tracked paths, hashing only files whose stat differs from the cache.

    Regular files larger than ``max_file_size`` bytes (when not 0) are left out and listed in
    ``Scan.skipped``.
    """
    result = Scan(files={}, keys={}, new_blobs={}, changed=set(), started_ns=time.time_ns())
    result.max_file_size = max_file_size
    root = os.fspath(desk)
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
        if stat.S_ISDIR(st.st_mode):
            _scan_folder(full, entry, result, cache)
        else:
            _scan_file(full, entry, st, result, cache)
    return result


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


def _scan_folder(full: str, relative: str, result: Scan, cache: StatCache) -> None:
    try:
        with os.scandir(full) as entries:
            children = list(entries)
    except FileNotFoundError:
        return  # vanished mid-scan: it is absent now
    except OSError as error:
        raise CheckpointError(f'cannot list {full}: {error.strerror}') from error
    for child in children:
        path = f'{relative}/{child.name}'
        problem = path_problem(path)
        if problem:
            if child.name.rstrip('. ').lower() != '.git':
                result.skipped.append((path, f'its name has {problem}'))
            continue  # nested repositories are never snapshotted
        try:
            st = child.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue
        except OSError as error:
            raise CheckpointError(f'cannot read {child.path}: {error.strerror}') from error
        if stat.S_ISDIR(st.st_mode):
            _scan_folder(child.path, path, result, cache)
        else:
            _scan_file(child.path, path, st, result, cache)


def _scan_file(full: str, path: str, st: os.stat_result, result: Scan, cache: StatCache) -> None:
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
        result.skipped.append((path, 'it is not a regular file or a symlink'))
        return
    limit = result.max_file_size
    if limit and stat.S_ISREG(st.st_mode) and st.st_size > limit:
        result.skipped.append((path, f'it is larger than the maximum file size ({limit} bytes)'))
        return
    key = stat_key(st)
    mode = git_mode(st.st_mode)
    cached = cache.files.get(path)
    if cached is not None and cached[0] == key and not is_racy(key, cache.written_at_ns):
        result.files[path] = (mode, cached[1])
        result.keys[path] = key
        return
    data, stable = _read(full, st)
    if data is None:
        return  # vanished mid-scan
    if limit and len(data) > limit:  # grew past the limit while we read it
        result.skipped.append((path, f'it is larger than the maximum file size ({limit} bytes)'))
        return
    blob = Blob.from_string(data)
    sha = blob.id
    result.files[path] = (mode, sha)
    # A file that changed while we read it is remembered with a stat that never matches, so it
    # is read again next time (and its removal still marks its folder dirty).
    result.keys[path] = key if stable else UNSTABLE_KEY
    result.new_blobs[sha] = blob
    if cached is None or cached[1] != sha or cached[0][4] & 0o170111 != st.st_mode & 0o170111:
        result.changed.add(path)


def _read(full: str, st: os.stat_result) -> tuple[bytes | None, bool]:
    """A file's bytes (or a link's target) and whether its stat held still while we read."""
    try:
        if stat.S_ISLNK(st.st_mode):
            return os.fsencode(os.readlink(full)), True
        fd = os.open(full, os.O_RDONLY | getattr(os, 'O_NOFOLLOW', 0) | getattr(os, 'O_NONBLOCK', 0))
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
    except FileNotFoundError:
        return None, False
    except OSError as error:
        raise CheckpointError(f'cannot read {full}: {error.strerror}') from error
    stable = stat_key(before) == stat_key(after) == stat_key(st)
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
    children: dict[str, list[tuple[str, int, bytes | None]]] = {}
    all_folders: set[str] = set()
    for path, (mode, sha) in files.items():
        parent, _, name = path.rpartition('/')
        children.setdefault(parent, []).append((name, mode, sha))
        for folder in folders_of(path):
            if folder in all_folders:
                break
            all_folders.add(folder)
            if folder:
                grand, _, folder_name = folder.rpartition('/')
                children.setdefault(grand, []).append((folder_name, TREE_MODE, None))
    ids: dict[str, bytes] = {}
    built: list[Tree] = []
    all_folders.add('')  # an empty desk still has a (empty) root tree
    # Deepest folders first, so subtrees are known before their parents.
    for folder in sorted(all_folders, key=lambda f: f.count('/') + (1 if f else 0), reverse=True):
        if folder not in dirty and folder in cached:
            ids[folder] = cached[folder]
            continue
        tree = Tree()
        for name, mode, sha in children.get(folder, []):
            if sha is None:
                sha = ids[f'{folder}/{name}' if folder else name]
            tree.add(name.encode('utf-8', 'surrogateescape'), mode, sha)
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


def check_plan(desk: Path, allowlist: Allowlist, the_plan: Plan, current: dict[str, FileEntry]) -> None:
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
    for path in the_plan.write:
        mode, sha = target[path]
        parent = os.path.dirname(os.path.join(root, path))
        if parent not in made:
            touched.update(_make_folders(root, path, guard))
            made.add(parent)
        full = os.path.join(root, path)
        check = None if guard is None else (lambda p=path, f=full: guard(p, f))
        try:
            st = _write_file(full, mode, read_blob(sha), durable, check)
        except OSError as error:
            raise CheckpointError(f'cannot write {full}: {error.strerror}') from error
        written[path] = stat_key(st)
        touched.add(parent)
    if durable:
        fsync_folders(touched)
    return written


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


def _write_file(
    full: str,
    mode: int,
    data: bytes,
    durable: bool = True,
    check: Callable[[], None] | None = None,
) -> os.stat_result:
    """Writes through a temporary file and a rename: a reader never sees half a file.

    ``check``, when given, runs just before the rename and may raise to keep what is there.
    """
    temporary = temporary_name(full)
    _unlink_quietly(temporary)  # a leftover (or anything planted there) is never written through
    try:
        if mode == SYMLINK_MODE:
            os.symlink(os.fsdecode(data), temporary)
        else:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, 'O_NOFOLLOW', 0)
            fd = os.open(temporary, flags, 0o666)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                current = os.fstat(fd).st_mode & 0o777
                wanted = (
                    current | 0o111 & ~_umask() if mode == EXECUTABLE_MODE else current & ~0o111
                )
                if wanted != current:
                    os.fchmod(fd, wanted)
                if durable:
                    os.fsync(fd)
            finally:
                os.close(fd)
    except OSError:
        _unlink_quietly(temporary)
        raise
    try:
        if check is not None:
            check()
        if os.path.isdir(full) and not os.path.islink(full):
            _remove_empty_folders(full)  # a folder becoming a file (check_plan vouched for it)
        os.replace(temporary, full)
    except BaseException:
        _unlink_quietly(temporary)
        raise
    return os.lstat(full)


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

