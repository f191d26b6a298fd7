"""How much a checkpoint changed: files, and lines added and removed, kept in its message.

Counted when the commit is written, from blobs the commit had at hand (the scan's fresh ones,
or the repository's), so listing checkpoints with their stats costs nothing more than listing
them. Lines are counted in linear time, as the difference of the two files' lines taken as
multisets: the same as a diff's ``+``/``-`` counts for edits, except that a line moved within
a file counts as neither. Text files up to :data:`TEXT_LIMIT` bytes are counted; binary and
larger files count as changed files only (like git's ``--numstat`` shows ``-`` for them).
Commits written by other tools have no stats (None).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .trees import FileEntry

KEY = 'Checkpoint-Changes'
TEXT_LIMIT = 256 * 1024
_BUDGET = 4 * 1024 * 1024  # bytes of text compared per commit; past it, files are counted only
_FORMAT = re.compile(r'(\d{1,9}) files?, \+(\d{1,12}) -(\d{1,12})')

Reader = Callable[[bytes], 'bytes | None']  # hex blob id -> bytes, or None when not at hand


@dataclass(frozen=True)
class ChangeStats:
    files: int
    added: int
    removed: int

    def trailer(self) -> str:
        return f'{self.files} file{"" if self.files == 1 else "s"}, +{self.added} -{self.removed}'


def parse(value: str) -> ChangeStats | None:
    match = _FORMAT.fullmatch(value.strip())
    if match is None:
        return None
    return ChangeStats(int(match.group(1)), int(match.group(2)), int(match.group(3)))


def count(pairs: Iterable[tuple[FileEntry | None, FileEntry | None]], read: Reader) -> ChangeStats:
    """Files and lines changed from each ``(old, new)`` entry pair (None: absent)."""
    files = added = removed = 0
    budget = _BUDGET
    for old, new in pairs:
        if old == new:
            continue
        files += 1
        if budget <= 0 or (old is not None and new is not None and old[1] == new[1]):
            continue  # out of budget, or only the mode changed
        new_text = _text(read, new)  # first: a binary or large new file spares reading the old
        if new_text is None:
            continue
        old_text = _text(read, old)
        if old_text is None:
            continue
        budget -= len(old_text) + len(new_text)
        plus, minus = _lines(old_text, new_text)
        added += plus
        removed += minus
    return ChangeStats(files, added, removed)


def _text(read: Reader, entry: FileEntry | None) -> list[bytes] | None:
    if entry is None:
        return []
    data = read(entry[1])
    if data is None or len(data) > TEXT_LIMIT or b'\0' in data:
        return None
    return data.splitlines()


def _lines(old: list[bytes], new: list[bytes]) -> tuple[int, int]:
    if not old or not new:
        return len(new), len(old)
    before, after = Counter(old), Counter(new)
    return sum((after - before).values()), sum((before - after).values())
