"""Making a desk's tracked files match a planned state: the plan, its checks, the writes.

Every write and delete goes through :class:`~trading_checkpoints.desk.folders.DeskFolders`: a folder
swapped for a symlink is refused, never written through, and nothing is created outside a
folder that was opened as a real folder of the desk.

A mount point inside the desk is **refused**, never written through nor replaced: a plan that
writes or deletes at one, or below a mounted folder, fails before its first write
(:func:`check_plan`, ``MountPointError``). What is mounted lies outside the desk: rewriting a
bind-mounted file in place would change the outside file, and replacing it by a rename cannot
be done (the kernel refuses to rename over or delete a mount point, ``EBUSY``); inside a
mounted folder every write, rename and delete would change the outside folder.

A file that is already a regular file with a single name is rewritten in place, through a
descriptor opened without following links and checked to be the file the scan saw; a new file
is created at its name. Everything else (symlinks, a folder or a hard-linked file in the way,
a file that changed meanwhile) and, with ``atomic``, every file, is written whole to a
temporary file in its folder and renamed over the old entry, so a reader sees either the old
file or the new one. Rewriting in place is what makes a restore faster than git's
(``benchmarks/README.md``); what a reader or a crash can see is in the README ("Restores write
in place"): the restore's intent record lets the next operation finish an interrupted one
(``ops/recovery.py``), and the pre-snapshot holds every byte it overwrites.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..core.durability import fsync_fds
from ..core.paths import Allowlist
from ..core.trees import EXECUTABLE_MODE, SYMLINK_MODE, FileEntry, folders_of
from ..errors import (
    ConcurrentChangeError,
    FileAccessError,
    MountPointError,
    UntrackedInTheWayError,
)
from .folders import CREATE_FLAGS, REWRITE_FLAGS, DeskFolders
from .statcache import StatKey, stat_key

Guard = Callable[[str, 'os.stat_result | None'], None]
_BATCH = 128  # written files held open at once, to be flushed together
_NAME_MAX = 255  # bytes in one path component on every common file system


@dataclass
class Plan:
    """What a restore changes in the desk.

    Attributes:
        write: Paths created or overwritten, sorted.
        delete: Paths removed, sorted.
        kept: ``(path, why)`` for paths left as they are although the target differs.
    """

    write: list[str]
    delete: list[str]
    kept: list[tuple[str, str]] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.write and not self.delete


def plan(current: dict[str, FileEntry], target: dict[str, FileEntry]) -> Plan:
    write = sorted(path for path, entry in target.items() if current.get(path) != entry)
    delete = sorted(path for path in current if path not in target)
    return Plan(write=write, delete=delete)


def check_plan(folders: DeskFolders, the_plan: Plan, current: dict[str, FileEntry]) -> None:
    """Refuses, before anything is written, a plan that would need to touch untracked files,
    or write or delete at a mount point or below one (see the module's docstring)."""
    for path in (*the_plan.delete, *the_plan.write):
        mount = folders.mount_above(path)
        if mount is not None:
            raise MountPointError(
                f'cannot restore {path}: {folders.full(mount)} is a mount point, and what is '
                'mounted there lies outside the desk (a restore never writes or deletes '
                'through one); nothing was changed. Unmount it, or restore other paths only',
                path=path,
                mount=folders.full(mount),
            )
    deleting = set(the_plan.delete)
    checked: set[str] = set()
    for path in the_plan.write:
        replaced = False  # a tracked file or link above the path is removed: nothing below it
        for folder in reversed(folders_of(path)[:-1]):
            if folder in checked:
                continue
            st = folders.lstat(folder)
            if st is None:
                break  # absent: created by the restore
            if stat.S_ISDIR(st.st_mode):
                checked.add(folder)
                continue
            if folder not in deleting:
                raise UntrackedInTheWayError(
                    f'cannot restore {path}: {folders.full(folder)} is in the way and is not '
                    'tracked (it is a file or a symlink, and restoring never writes through one)',
                    path=path,
                    blocker=folders.full(folder),
                )
            replaced = True
            break
        if replaced:
            continue
        st = folders.lstat(path)
        if st is None:
            continue
        if stat.S_ISDIR(st.st_mode):
            leftover = untracked_below(folders, path, deleting)
            if leftover:
                raise UntrackedInTheWayError(
                    f'cannot restore {path}: the folder {folders.full(path)} holds {leftover}, '
                    'which is not tracked and would be lost',
                    path=path,
                    blocker=folders.full(leftover),
                )
        elif path not in current:
            raise UntrackedInTheWayError(
                f'cannot restore {path}: {folders.full(path)} exists but is not tracked '
                '(not a regular file or symlink, or left out of snapshots), and would be lost',
                path=path,
                blocker=folders.full(path),
            )


def untracked_below(folders: DeskFolders, top: str, deleting: set[str]) -> str | None:
    """The first entry under folder ``top`` that the plan does not delete, or None."""
    pending = [top]
    while pending:
        folder = pending.pop()
        listing = folders.listing(folder)
        if listing is None:
            return folder  # swapped for something else meanwhile: not ours to remove
        for name, st in listing:
            rel = f'{folder}/{name}'
            if stat.S_ISDIR(st.st_mode):
                pending.append(rel)
            elif rel not in deleting:
                return rel
    return None


def apply(
    folders: DeskFolders,
    allowlist: Allowlist,
    the_plan: Plan,
    target: dict[str, FileEntry],
    read_blob: Callable[[bytes], bytes],
    *,
    durable: bool = True,
    atomic: bool = False,
    guard: Guard | None = None,
) -> dict[str, StatKey]:
    """Makes the desk match ``target`` for the planned paths; returns the stat of what it wrote.

    A regular file with a single name is rewritten in place and a new file created at its
    name, unless ``atomic``; everything else goes through a temporary file renamed into place
    (see the module's docstring). ``guard(path, stat or None)`` is called just before an entry
    is deleted, rewritten or replaced and may raise to stop (it checks the entry still is what
    the plan was made from). With ``durable``, every written file is flushed, and so is every
    folder whose entries changed, before this returns.
    """
    renamed: set[str] = set()  # folders whose entries changed
    written_in: set[str] = set()  # folders a file was written in
    _delete(folders, allowlist, the_plan.delete, guard, renamed)
    written: dict[str, StatKey] = {}
    batch = _Batch()
    try:
        for path in the_plan.write:
            mode, sha = target[path]
            parent, _, name = path.rpartition('/')
            fd = folders.folder(parent, create=True)
            assert fd is not None  # create=True raises instead
            folder_fd = batch.hold(parent, fd)
            data = read_blob(sha)
            pending = None
            if not atomic and mode != SYMLINK_MODE:
                pending = _write_at_name(folders, folder_fd, path, name, mode, data, guard)
            if pending is None:
                pending = _write_temporary(folders, folder_fd, path, name, mode, data)
            if pending.renames or pending.created:
                renamed.add(parent)
            written_in.add(parent)
            batch.pending.append(pending)
            if len(batch.pending) >= _BATCH:
                _finish_batch(folders, batch, durable, guard, written)
        _finish_batch(folders, batch, durable, guard, written)
    finally:
        batch.discard()  # after an error: what was not renamed is removed
    renamed.update(folder.rpartition('/')[0] for folder in folders.created)
    renamed.update(folders.created)
    moved = [f for f in sorted(renamed | written_in) if not folders.still_in_place(f)]
    if moved:
        raise ConcurrentChangeError(
            f'the folder {folders.full(moved[0])} was moved away while it was being restored',
            path=folders.full(moved[0]),
        )
    if durable:
        _flush_folders(folders, renamed)
    return written


def midway(found: bytes, old: bytes | None, new: bytes) -> bool:
    """Whether ``found`` is what rewriting ``old`` in place with ``new`` can leave when stopped
    part way (a crash, a full disk): the start of the new bytes written over the old ones, and
    the old tail not cut yet. Such a file holds nothing of its own: ``old`` and ``new`` do."""
    if found == new:
        return True
    old = old or b''
    same = _common_prefix(found, new)
    return len(found) == max(len(old), same) and found[same:] == old[same : len(found)]


def _common_prefix(a: bytes, b: bytes) -> int:
    """The length of the longest common start of ``a`` and ``b``."""
    low, high = 0, min(len(a), len(b))
    while low < high:  # compared in halves: slices compare in C
        middle = (low + high + 1) // 2
        if a[low:middle] == b[low:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def temporary_name(name: str, pid: int | None = None) -> str:
    """The temporary file a restore writes in a file's folder before renaming it into place.

    A name too long to take the affixes within the file system's limit (255 bytes) is replaced
    by a digest of it, so the temporary name always fits and is the same for the same file.
    """
    suffix = f'.checkpoint-{os.getpid() if pid is None else pid}.tmp'
    encoded = os.fsencode(name)
    if 1 + len(encoded) + len(suffix) > _NAME_MAX:
        return f'.{hashlib.sha256(encoded).hexdigest()[:32]}{suffix}'
    return f'.{name}{suffix}'


class _Pending:
    """A written file waiting to be flushed and closed, and (``renames``) renamed into place
    from its temporary name."""

    def __init__(
        self,
        path: str,
        folder_fd: int,
        name: str,
        fd: int,
        *,
        renames: bool = True,
        created: bool = False,
    ) -> None:
        self.path, self.folder_fd, self.name, self.fd = path, folder_fd, name, fd
        self.renames, self.created = renames, created

    def close_file(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class _Batch:
    """Temporary files written and not yet renamed, with their folders held open (one
    descriptor per folder, whatever the folder cache does meanwhile)."""

    def __init__(self) -> None:
        self.pending: list[_Pending] = []
        self._folders: dict[str, int] = {}

    def hold(self, folder: str, fd: int) -> int:
        held = self._folders.get(folder)
        if held is None:
            held = self._folders[folder] = os.dup(fd)
        return held

    def release(self) -> None:
        for fd in self._folders.values():
            os.close(fd)
        self._folders.clear()

    def discard(self) -> None:
        for pending in self.pending:
            pending.close_file()
            if not pending.renames:
                continue  # written at its name: the restore's record completes it
            try:
                os.unlink(temporary_name(pending.name), dir_fd=pending.folder_fd)
            except OSError:
                pass
        self.pending.clear()
        self.release()


def _write_temporary(
    folders: DeskFolders, folder_fd: int, path: str, name: str, mode: int, data: bytes
) -> _Pending:
    """Writes the temporary file of ``path`` inside its (already opened) folder."""
    temporary = temporary_name(name)
    try:
        if mode == SYMLINK_MODE:
            _make(
                lambda: os.symlink(os.fsdecode(data), temporary, dir_fd=folder_fd),
                temporary,
                folder_fd,
            )
            return _Pending(path, folder_fd, name, -1)
        fd = _make(
            lambda: os.open(temporary, CREATE_FLAGS, 0o666, dir_fd=folder_fd), temporary, folder_fd
        )
    except OSError as error:
        raise FileAccessError(
            f'cannot write {folders.full(path)}: {error.strerror}',
            path=folders.full(path),
            action='write',
        ) from error
    pending = _Pending(path, folder_fd, name, fd)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if mode == EXECUTABLE_MODE:  # created without x bits (0o666 less the umask)
            os.fchmod(fd, 0o777 & ~_umask())
    except OSError as error:
        pending.close_file()
        try:
            os.unlink(temporary, dir_fd=folder_fd)
        except OSError:
            pass
        raise FileAccessError(
            f'cannot write {folders.full(path)}: {error.strerror}',
            path=folders.full(path),
            action='write',
        ) from error
    return pending


def _write_at_name(
    folders: DeskFolders,
    folder_fd: int,
    path: str,
    name: str,
    mode: int,
    data: bytes,
    guard: Guard | None,
) -> _Pending | None:
    """Rewrites a regular file with a single name in place, or creates a file where there is
    none; None when something else is there (a symlink, a folder, a hard-linked or special
    file, a file that appeared meanwhile): that goes through a temporary file instead.

    The descriptor written through is the one checked: opened without following a symlink,
    its own stat is what the guard compares with the scan's, so a file swapped in after the
    scan is never written to. A hard-linked file is never written in place: its other names,
    perhaps outside the desk, would change too. Nor is a file on another device than its
    folder (a mount point that appeared after :func:`check_plan`): the rename that replaces it
    instead is refused by the kernel, so the outside file never changes. Only a regular file
    is ever opened.
    """
    where = folders.full(path)
    try:
        try:
            st = os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
        except FileNotFoundError:
            if guard is not None:
                guard(path, None)
            try:
                fd = os.open(name, CREATE_FLAGS, _mode_bits(mode), dir_fd=folder_fd)
            except FileExistsError:
                return None  # appeared meanwhile: the rename's guard looks at it
            pending = _Pending(path, folder_fd, name, fd, renames=False, created=True)
            _write_all(pending, data, None, where, 0)  # created with the mode's bits
            return pending
    except OSError as error:
        raise FileAccessError(
            f'cannot write {where}: {error.strerror}', path=where, action='write'
        ) from error
    if not stat.S_ISREG(st.st_mode):
        return None  # never opened: a pipe or a device could act on an open
    try:
        fd = os.open(name, REWRITE_FLAGS, dir_fd=folder_fd)
    except OSError:
        return None  # swapped, or not writable: a temporary file and a rename instead
    pending = _Pending(path, folder_fd, name, fd, renames=False)
    try:
        now = os.fstat(fd)
        if now.st_nlink != 1 or now.st_dev != os.fstat(folder_fd).st_dev:
            pending.close_file()
            return None  # its other names, or what it is mounted from, lie outside the desk
        if guard is not None:
            guard(path, now)  # the file opened is the one the scan saw: a swap changes the stat
        _write_all(pending, data, _new_mode(now.st_mode, mode), where, now.st_size)
    except BaseException:
        pending.close_file()
        raise
    return pending


def _write_all(pending: _Pending, data: bytes, chmod: int | None, where: str, size: int) -> None:
    """Writes ``data`` over the start of the open file (``size`` bytes long), cuts what is
    left of the old bytes, and sets the permission bits (None: as they are)."""
    fd = pending.fd
    try:
        view, offset = memoryview(data), 0
        while offset < len(data):
            offset += os.pwrite(fd, view[offset:], offset)
        if size > len(data):
            os.ftruncate(fd, len(data))
        if chmod is not None:
            os.fchmod(fd, chmod)
    except OSError as error:
        pending.close_file()
        raise FileAccessError(
            f'cannot write {where}: {error.strerror}', path=where, action='write'
        ) from error


def _mode_bits(mode: int) -> int:
    return 0o777 if mode == EXECUTABLE_MODE else 0o666


def _new_mode(current: int, mode: int) -> int | None:
    """The permission bits a rewritten file gets: its own, with the x bits git's mode says."""
    bits = stat.S_IMODE(current)
    if mode == EXECUTABLE_MODE:
        wanted = bits | (0o111 & ~_umask()) | 0o100
    else:
        wanted = bits & ~0o111
    return None if wanted == bits else wanted


def _make(create: Callable[[], Any], temporary: str, folder_fd: int) -> Any:
    """Creates a temporary file exclusively; a leftover (or anything planted) is removed first,
    never written through."""
    try:
        return create()
    except FileExistsError:
        os.unlink(temporary, dir_fd=folder_fd)
        return create()


def _finish_batch(
    folders: DeskFolders,
    batch: _Batch,
    durable: bool,
    guard: Guard | None,
    written: dict[str, StatKey],
) -> None:
    """Flushes (durable) and closes a batch's files, then renames the temporary ones into
    place."""
    pending = batch.pending
    try:
        if durable:
            fsync_fds([item.fd for item in pending if item.fd >= 0])
        for item in pending:
            if not item.renames:
                written[item.path] = stat_key(os.fstat(item.fd))
    except OSError as error:
        where = folders.full(pending[0].path)
        raise FileAccessError(
            f'cannot write {where}: {error.strerror}', path=where, action='write'
        ) from error
    for item in pending:
        item.close_file()
    while pending:
        if pending[0].renames:
            _rename_into_place(folders, pending[0], guard, written)
        del pending[0]
    batch.release()


def _rename_into_place(
    folders: DeskFolders, pending: _Pending, guard: Guard | None, written: dict[str, StatKey]
) -> None:
    folder_fd, name, where = pending.folder_fd, pending.name, folders.full(pending.path)
    try:
        st = os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
    except FileNotFoundError:
        st = None
    except OSError as error:
        raise FileAccessError(
            f'cannot read {where}: {error.strerror}', path=where, action='read'
        ) from error
    if guard is not None:
        guard(pending.path, st)
    try:
        if st is not None and stat.S_ISDIR(st.st_mode):
            _remove_empty_folder(folders, pending.path)  # a folder becoming a file
        os.replace(temporary_name(name), name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
        written[pending.path] = stat_key(os.stat(name, dir_fd=folder_fd, follow_symlinks=False))
    except OSError as error:
        raise FileAccessError(
            f'cannot write {where}: {error.strerror}', path=where, action='write'
        ) from error


def _delete(
    folders: DeskFolders,
    allowlist: Allowlist,
    paths: list[str],
    guard: Guard | None,
    touched: set[str],
) -> None:
    emptied: set[str] = set()
    for path in reversed(paths):
        st = folders.lstat(path)
        if st is None:
            continue  # gone already (or a folder above is no longer a real folder)
        if stat.S_ISDIR(st.st_mode):
            continue  # a tracked file became a folder since the scan: newer work, left alone
        if guard is not None:
            guard(path, st)
        if folders.unlink(path):
            touched.add(path.rpartition('/')[0])
            emptied.update(folders_of(path)[:-1])
    for folder in sorted(emptied, key=lambda f: f.count('/'), reverse=True):
        if allowlist.covers(folder) and folders.rmdir(folder):
            touched.add(folder.rpartition('/')[0])


def _flush_folders(folders: DeskFolders, touched: set[str]) -> None:
    fds = []
    for folder in touched:
        fd = folders.folder(folder)
        if fd is not None:
            fds.append(os.dup(fd))
    try:
        fsync_fds(fds)
    except OSError:
        pass  # some file systems refuse fsync on folders; their metadata is synchronous
    finally:
        for fd in fds:
            os.close(fd)


def _remove_empty_folder(folders: DeskFolders, top: str) -> None:
    """Removes a folder holding nothing but (possibly nested) empty folders."""
    order = [top]
    pending = [top]
    while pending:
        folder = pending.pop()
        listing = folders.listing(folder)
        if listing is None:
            raise OSError(20, 'Not a directory', folders.full(folder))
        for name, st in listing:
            if not stat.S_ISDIR(st.st_mode):
                raise OSError(39, 'Directory not empty', folders.full(folder))
            order.append(f'{folder}/{name}')
            pending.append(f'{folder}/{name}')
    for folder in reversed(order):
        if not folders.rmdir(folder):
            raise OSError(39, 'Directory not empty', folders.full(folder))


_UMASK: int | None = None


def _umask() -> int:
    global _UMASK
    if _UMASK is None:
        _UMASK = os.umask(0)
        os.umask(_UMASK)
    return _UMASK
