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

from ..errors import DeskChangedError, InvalidArgumentError, UnsafeCheckpointError
from .statcache import stat_key

if TYPE_CHECKING:  # pragma: no cover
    from .scan import Scan

# Files larger than this are left out of snapshots (and reported) unless configured otherwise.
DEFAULT_MAX_FILE_SIZE = 100 * 1024 * 1024
MAX_FILE_SIZE_KEY = (b'checkpoints', b'maxFileSize')
ATOMIC_WRITES_KEY = (b'checkpoints', b'atomicWrites')

_NAME_MAX = 255  # bytes in one path component on every common file system
_LINK_MAX = 4095  # bytes in a symlink target (PATH_MAX - 1 on Linux)
_PREFETCH_BUDGET = 64 * 1024 * 1024  # bytes of vetted blobs kept in memory for the writes

_SIZE = re.compile(r'\s*(\d+)\s*([kmg]?)i?b?\s*', re.IGNORECASE)


def parse_size(text: str) -> int:
    """A size as git writes it: ``1048576``, ``512k``, ``100m``, ``2g`` (powers of 1024)."""
    match = _SIZE.fullmatch(text)
    if not match:
        raise InvalidArgumentError(
            f'{text!r} is not a size (expected a number with k, m or g)',
            name='max_file_size',
            value=text,
        )
    number, unit = int(match.group(1)), match.group(2).lower()
    return number * {'': 1, 'k': 1024, 'm': 1024**2, 'g': 1024**3}[unit]


def describe_size(size: int) -> str:
    for unit, scale in (('GiB', 1024**3), ('MiB', 1024**2), ('KiB', 1024)):
        if size >= scale and size % scale == 0:
            return f'{size // scale} {unit}'
    return f'{size} bytes'


def check_max_file_size(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidArgumentError(
            f'max_file_size must be a whole number of bytes (0 for no limit), not {value!r}',
            name='max_file_size',
            value=value,
        )
    return value


def vet_blobs(
    planned: list[str],
    target: dict[str, tuple[int, bytes]],
    read_blob: Callable[[bytes], bytes],
    symlink_mode: int,
) -> VettedBlobs:
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
                raise UnsafeCheckpointError(
                    f'the checkpoint holds {path!r}, whose name is longer than {_NAME_MAX} bytes',
                    entry=path,
                )
        data = kept.get(sha)
        if data is None:
            data = read_blob(sha)
            if len(data) <= budget:
                kept[sha] = data
                budget -= len(data)
        if mode == symlink_mode:
            if not data or b'\0' in data or len(data) > _LINK_MAX:
                raise UnsafeCheckpointError(
                    f'the checkpoint holds a symlink {path!r} whose target is empty, too long '
                    'or holds a NUL byte',
                    entry=path,
                )

    return VettedBlobs(kept, read_blob)


class VettedBlobs:
    """Serves the blobs a restore vetted: from memory (up to a budget), else read again."""

    def __init__(self, kept: dict[bytes, bytes], read_blob: Callable[[bytes], bytes]) -> None:
        self._kept = kept
        self._read_blob = read_blob

    def __call__(self, sha: bytes) -> bytes:
        data = self._kept.get(sha)
        return data if data is not None else self._read_blob(sha)

    def held(self, sha: bytes) -> bytes | None:
        """A vetted blob's bytes if they are in memory (never reads)."""
        return self._kept.get(sha)


def unchanged_since(scan: Scan) -> Callable[[str, os.stat_result | None], None]:
    """A guard for a checkout: refuses to clobber a file written after the scan.

    Called with the entry's ``lstat`` just before it is replaced or deleted. A tracked file
    whose stat differs from the one the scan hashed, or a file that appeared where the scan
    saw nothing, was written by someone else during the restore; replacing it would lose those
    bytes. The restore then saves the desk as found before finishing.
    """

    def check(path: str, st: os.stat_result | None) -> None:
        if st is None or stat.S_ISDIR(st.st_mode):
            return  # nothing there to lose, or a folder in the way (vetted by check_plan)
        key = scan.key(path)
        if key is None or stat_key(st) != key:
            raise DeskChangedError(path)

    return check
