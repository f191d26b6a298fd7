"""Commits read without opening the repository: an on-disk memo of raw commits, and loose objects.

Listing checkpoints, and the no-op snapshot that reads the newest commit, should not pay for
importing dulwich and loading pack indexes. A commit never changes (its id is the hash of its
bytes), so ``<repo>/checkpoints/commits`` keeps the raw bytes of recent commits, each checked
against its id when read: a torn, forged or foreign record is simply not used, and the
commit is read from the repository instead. Records are appended (commits the library writes,
and packed commits it had to read), in one write each time, so readers need no lock; the file
is rewritten with the newest :data:`KEEP` records when it grows past :data:`MAX_BYTES`.

A reader looks a commit up by searching the memo's bytes for its record's header, newest
first, and checks only the records it finds (:func:`lookup`): an event of the hooks reads a
few commits, and checking all of a full memo's thousand records cost each event milliseconds.
A header found inside another record's bytes is harmless: whatever it frames is used only if
it hashes to the id asked for, which makes it that commit.

Loose objects are read here too (zlib, then the same check), so only packed commits that the
memo lacks need dulwich. The memo and loose objects are opened through ``core.repofiles`` (never
through a link, only regular files of bounded size): a memo that is not one is left unused.
"""

from __future__ import annotations

import hashlib
import zlib
from pathlib import Path

from ..core import repofiles
from ..core.repofiles import RepoFile
from ..errors import CheckpointError
from . import gitfiles
from .commitinfo import CommitInfo, parse_commit

NAME = 'commits'
MAX_BYTES = 512 * 1024
KEEP = 1024
_MAGIC = b'TCCM2 '
_MAX_COMMIT = 1 << 20  # a commit larger than this is not remembered
_MAX_TRIES = 8  # records under one id that fail their check before the memo is given up on


def _file(repository: Path) -> RepoFile:
    return RepoFile(Path(repository), f'checkpoints/{NAME}')


def _verified(sha: bytes, raw: bytes) -> bool:
    return hashlib.sha1(b'commit %d\0' % len(raw) + raw).hexdigest().encode() == sha


def _read(repository: Path) -> bytes:
    """The memo's bytes; empty when there is none or it cannot be read (a cache: unused)."""
    try:
        data = repofiles.read(_file(repository), 4 * MAX_BYTES)
    except CheckpointError:
        return b''
    return data or b''


def lookup(data: bytes, sha: bytes) -> bytes | None:
    """The raw commit ``sha`` names in a memo's bytes, checked against the id; None when no
    record of it checks out (torn, forged, or none), after at most :data:`_MAX_TRIES`."""
    header = _MAGIC + sha + b' '
    end = len(data)
    for _ in range(_MAX_TRIES):
        start = data.rfind(header, 0, end)
        if start < 0:
            return None
        end = start  # the next try looks before this record
        newline = data.find(b'\n', start, start + 80)
        size_text = data[start + len(header) : newline]
        if newline < 0 or not size_text.isdigit():
            continue
        raw = data[newline + 1 : newline + 1 + int(size_text)]
        if len(raw) == int(size_text) and _verified(sha, raw):
            return raw
    return None


def load(repository: Path) -> dict[bytes, bytes]:
    """The remembered raw commits by id; records that do not check out are left out."""
    data = _read(repository)
    found: dict[bytes, bytes] = {}
    position = 0
    while position < len(data):
        end = data.find(b'\n', position, position + 80)
        if end < 0 or not data.startswith(_MAGIC, position):
            break  # torn or foreign from here on
        fields = data[position + len(_MAGIC) : end].split(b' ')
        if len(fields) != 2 or len(fields[0]) != 40 or not fields[1].isdigit():
            break
        size = int(fields[1])
        raw = data[end + 1 : end + 1 + size]
        if len(raw) != size:
            break
        if _verified(fields[0], raw):
            found[fields[0]] = raw
        position = end + 1 + size
    return found


def record(sha: bytes, raw: bytes) -> bytes:
    return _MAGIC + sha + b' %d\n' % len(raw) + raw


def append(repository: Path, records: list[bytes]) -> None:
    """Appends records in one write (readers need no lock); best effort, it is a cache."""
    if not records:
        return
    try:
        size = repofiles.append(_file(repository), b''.join(records))
    except CheckpointError:
        return
    if size > MAX_BYTES:
        _compact(repository)


def _compact(repository: Path) -> None:
    kept = list(load(repository).items())[-KEEP:]
    data = b''.join(record(sha, raw) for sha, raw in kept)
    try:
        repofiles.replace(_file(repository), data, durable=False)  # a cache
    except CheckpointError:
        pass


def read_loose(repository: Path, sha: bytes) -> bytes | None:
    """The raw bytes of a loose commit, checked against its id; None when it is not loose
    (or not a commit, or damaged: the repository's own reader then says what is wrong)."""
    try:
        compressed = gitfiles.read_loose_object(repository, sha.decode())
        if compressed is None or len(compressed) > 2 * _MAX_COMMIT:
            return None
        inflater = zlib.decompressobj()
        data = inflater.decompress(compressed, _MAX_COMMIT + 64)
        if inflater.unconsumed_tail:
            return None  # larger than any commit remembered: the repository's reader reads it
    except (CheckpointError, zlib.error):
        return None
    header, _, raw = data.partition(b'\0')
    if header != b'commit %d' % len(raw) or not _verified(sha, raw):
        return None
    return raw


class CommitReader:
    """Reads commits by id from the memo, then loose objects; remembers what it had to fetch."""

    def __init__(self, repository: Path) -> None:
        self.repository = Path(repository)
        self._data: bytes | None = None  # the memo as first read
        self._memo: dict[bytes, bytes] = {}  # what this reader found or was given
        self._new: list[bytes] = []

    def _raw(self, sha: bytes) -> bytes | None:
        """The raw commit from this reader's own, then from the memo (read once)."""
        raw = self._memo.get(sha)
        if raw is None:
            if self._data is None:
                self._data = _read(self.repository)
            raw = lookup(self._data, sha)
            if raw is not None:
                self._memo[sha] = raw
        return raw

    def find(self, sha: bytes) -> CommitInfo | None:
        raw = self._raw(sha)
        if raw is None:
            raw = read_loose(self.repository, sha)
            if raw is None:
                return None
        try:
            return parse_commit(sha, raw)
        except ValueError:
            return None

    def remember(self, sha: bytes, raw: bytes) -> None:
        """A commit read from a pack, or just written: kept for the next reader."""
        if len(raw) > _MAX_COMMIT or self._raw(sha) is not None:
            return
        self._memo[sha] = raw
        self._new.append(record(sha, raw))

    def flush(self) -> None:
        if self._new:
            append(self.repository, self._new)
            self._new = []
