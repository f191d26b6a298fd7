"""Commits read without opening the repository: an on-disk memo of raw commits, and loose objects.

Listing checkpoints, and the no-op snapshot that reads the newest commit, should not pay for
importing dulwich and loading pack indexes. A commit never changes (its id is the hash of its
bytes), so ``<repo>/checkpoints/commits`` keeps the raw bytes of recent commits, each checked
against its id when read: a torn, forged or foreign record is simply not used, and the
commit is read from the repository instead. Records are appended (commits the library writes,
and packed commits it had to read), in one write each time, so readers need no lock; the file
is rewritten with the newest :data:`KEEP` records when it grows past :data:`MAX_BYTES`.

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


def _file(repository: Path) -> RepoFile:
    return RepoFile(Path(repository), f'checkpoints/{NAME}')


def _verified(sha: bytes, raw: bytes) -> bool:
    return hashlib.sha1(b'commit %d\0' % len(raw) + raw).hexdigest().encode() == sha


def load(repository: Path) -> dict[bytes, bytes]:
    """The remembered raw commits by id; records that do not check out are left out."""
    try:
        data = repofiles.read(_file(repository), 4 * MAX_BYTES)
    except CheckpointError:
        return {}
    if data is None:
        return {}
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
        self._memo: dict[bytes, bytes] | None = None
        self._new: list[bytes] = []

    def find(self, sha: bytes) -> CommitInfo | None:
        if self._memo is None:
            self._memo = load(self.repository)
        raw = self._memo.get(sha)
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
        if self._memo is None:
            self._memo = load(self.repository)
        if sha in self._memo or len(raw) > _MAX_COMMIT:
            return
        self._memo[sha] = raw
        self._new.append(record(sha, raw))

    def flush(self) -> None:
        if self._new:
            append(self.repository, self._new)
            self._new = []
