"""Checks made before a restore touches the desk, and the size limit of snapshotted files.

Everything a restore will write is read and vetted first: each blob must exist, be a blob,
and be writable as what its mode says (a symlink target must be a non-empty path without NUL;
every name must fit the file system). A restore that would fail half-way is refused before
its first write instead.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable
from typing import TYPE_CHECKING

from .errors import CheckpointError, CorruptRepositoryError
from .statcache import stat_key

if TYPE_CHECKING:  # pragma: no cover
    from .worktree import Scan

# Files larger than this are left out of snapshots (and reported) unless configured otherwise.
DEFAULT_MAX_FILE_SIZE = 100 * 1024 * 1024
MAX_FILE_SIZE_KEY = (b'checkpoints', b'maxFileSize')

_NAME_MAX = 255  # bytes in one path component on every common file system
_LINK_MAX = 4095  # bytes in a symlink target (PATH_MAX - 1 on Linux)
_PREFETCH_BUDGET = 64 * 1024 * 1024  # bytes of vetted blobs kept in memory for the writes

_SIZE = re.compile(r'\s*(\d+)\s*([kmg]?)i?b?\s*', re.IGNORECASE)


def parse_size(text: str) -> int:
    """A size as git writes it: ``1048576``, ``512k``, ``100m``, ``2g`` (powers of 1024)."""
    match = _SIZE.fullmatch(text)
    if not match:
        raise CheckpointError(f'{text!r} is not a size (expected a number with k, m or g)')
    number, unit = int(match.group(1)), match.group(2).lower()
    return number * {'': 1, 'k': 1024, 'm': 1024**2, 'g': 1024**3}[unit]


def describe_size(size: int) -> str:
    for unit, scale in (('GiB', 1024**3), ('MiB', 1024**2), ('KiB', 1024)):
        if size >= scale and size % scale == 0:
            return f'{size // scale} {unit}'
    return f'{size} bytes'


def check_max_file_size(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise CheckpointError(
            f'max_file_size must be a whole number of bytes (0 for no limit), not {value!r}'
        )
    return value


def refuse_skipped_in_the_way(planned: list[str], skipped: list[tuple[str, str]]) -> None:
    """Refuses a restore that would overwrite a file the snapshot had to leave out."""
    left_out = dict(skipped)
    for path in planned:
        if path in left_out:
            raise CheckpointError(
                f'cannot restore {path}: the file in the desk was left out of the snapshot '
                f'({left_out[path]}), so overwriting it would lose it; move it away first'
            )


def vet_blobs(
    planned: list[str],
    target: dict[str, tuple[int, bytes]],
    read_blob: Callable[[bytes], bytes],
    symlink_mode: int,
) -> Callable[[bytes], bytes]:
    """Reads every blob a restore will write, refusing any it could not write whole.

    Returns a reader that serves the vetted blobs (kept in memory up to a budget, read again
    beyond it).
    """
    kept: dict[bytes, bytes] = {}
    budget = _PREFETCH_BUDGET
    for path in planned:
        mode, sha = target[path]
        for component in path.split('/'):
            if len(os.fsencode(component)) > _NAME_MAX:
                raise CorruptRepositoryError(
                    f'the checkpoint holds {path!r}, whose name is longer than {_NAME_MAX} bytes'
                )
        data = kept.get(sha)
        if data is None:
            data = read_blob(sha)
            if len(data) <= budget:
                kept[sha] = data
                budget -= len(data)
        if mode == symlink_mode:
            if not data or b'\0' in data or len(data) > _LINK_MAX:
                raise CorruptRepositoryError(
                    f'the checkpoint holds a symlink {path!r} whose target is empty, too long '
                    'or holds a NUL byte'
                )

    def read(sha: bytes) -> bytes:
        data = kept.get(sha)
        return data if data is not None else read_blob(sha)

    return read


def folder_identity(path: os.PathLike[str] | str) -> tuple[int, int] | None:
    """The device and inode of a folder, or None when it is not there."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def check_desk_held_still(desk: os.PathLike[str] | str, before: tuple[int, int] | None) -> None:
    """Refuses to commit a scan of a desk that vanished or was replaced while it was read."""
    if before is None or folder_identity(desk) != before:
        raise CheckpointError(
            f'the desk folder {os.fspath(desk)} vanished or was replaced while it was being '
            'read; nothing was recorded'
        )


class DeskChangedError(CheckpointError):
    """A file a restore was about to replace or delete changed after the restore read it."""

    def __init__(self, path: str) -> None:
        super().__init__(f'{path} changed while it was being restored')
        self.path = path


def unchanged_since(scan: Scan) -> Callable[[str, str], None]:
    """A guard for ``worktree.apply``: refuses to clobber a file written after the scan.

    A tracked file whose stat differs from the one the scan hashed, or a file that appeared
    where the scan saw nothing, was written by someone else during the restore; replacing it
    would lose those bytes. The restore then saves the desk as found before finishing.
    """
    keys, files = scan.keys, scan.files

    def check(path: str, full: str) -> None:
        try:
            st = os.lstat(full)
        except OSError:
            return  # absent (or unreachable): nothing there to lose
        if stat.S_ISDIR(st.st_mode):
            return  # folders in the way were vetted by check_plan
        if path not in files:
            raise DeskChangedError(path)
        key = keys.get(path)
        if key is not None and stat_key(st) != key:
            raise DeskChangedError(path)

    return check
