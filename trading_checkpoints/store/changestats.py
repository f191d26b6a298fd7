"""How much a checkpoint changed: files, and lines added and removed, kept in its message.

Counted when the commit is written, from the blob bytes the commit already has at hand (the
scan's fresh blobs, the blobs a restore read to write them), never by reading more: listing
checkpoints with their stats then costs nothing more than listing them, and writing them costs
no extra reads. Lines are counted in linear time, as the difference of the two files' lines
taken as multisets: the same as a diff's ``+``/``-`` counts for edits, except that a line moved
within a file counts as neither. Binary files and files over :data:`TEXT_LIMIT` bytes count as
changed files only (as git's ``--numstat`` shows ``-`` for them). When a changed text file's
bytes are not at hand (an edit's old side that would have to be read back), the commit records
its file count only, and its line counts are None, as for commits written by other tools.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..core.trees import FileEntry

KEY = 'Checkpoint-Changes'
TEXT_LIMIT = 256 * 1024
_FORMAT = re.compile(r'(\d{1,9}) files?(?:, \+(\d{1,12}) -(\d{1,12}))?')
_UNKNOWN = object()

Reader = Callable[[bytes], 'bytes | None']  # hex blob id -> bytes at hand, or None


@dataclass(frozen=True)
class ChangeStats:
    files: int
    added: int | None
    removed: int | None

    def trailer(self) -> str:
        files = f'{self.files} file{"" if self.files == 1 else "s"}'
        if self.added is None or self.removed is None:
            return files
        return f'{files}, +{self.added} -{self.removed}'


def parse(value: str) -> ChangeStats | None:
    match = _FORMAT.fullmatch(value.strip())
    if match is None:
        return None
    if match.group(2) is None:
        return ChangeStats(int(match.group(1)), None, None)
    return ChangeStats(int(match.group(1)), int(match.group(2)), int(match.group(3)))


def count(pairs: Iterable[tuple[FileEntry | None, FileEntry | None]], read: Reader) -> ChangeStats:
    """Files and lines changed from each ``(old, new)`` entry pair (None: absent)."""
    files = added = removed = 0
    known = True
    for old, new in pairs:
        if old == new:
            continue
        files += 1
        if not known or (old is not None and new is not None and old[1] == new[1]):
            continue  # lines already unknown, or only the mode changed
        new_lines = _lines_of(read, new)
        if new_lines is None:
            continue  # binary or large: a file without lines
        old_lines = _lines_of(read, old)
        if old_lines is None:
            continue
        if new_lines is _UNKNOWN or old_lines is _UNKNOWN:
            known = False
            continue
        plus, minus = _difference(old_lines, new_lines)  # type: ignore[arg-type]
        added += plus
        removed += minus
    return ChangeStats(files, added if known else None, removed if known else None)


def _lines_of(read: Reader, entry: FileEntry | None) -> list[bytes] | None | object:
    """A text file's lines; None for binary or large; _UNKNOWN when its bytes are not at hand."""
    if entry is None:
        return []
    data = read(entry[1])
    if data is None:
        return _UNKNOWN
    if len(data) > TEXT_LIMIT or b'\0' in data:
        return None
    return data.splitlines()


def _difference(old: list[bytes], new: list[bytes]) -> tuple[int, int]:
    """Lines in ``new`` and not in ``old``, and the reverse, counted as multisets."""
    if not old or not new:
        return len(new), len(old)
    unique_old, unique_new = set(old), set(new)
    if len(unique_old) == len(old) and len(unique_new) == len(new):
        # No line repeats in either: the multisets are sets (an order of magnitude cheaper).
        return len(unique_new - unique_old), len(unique_old - unique_new)
    before, after = Counter(old), Counter(new)
    return sum((after - before).values()), sum((before - after).values())
