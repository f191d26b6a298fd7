"""A record of pruned checkpoints, so an id that was pruned is reported as pruned, and when.

``<repo>/checkpoints/pruned`` holds one line per pruned checkpoint (``P <sha> <taken at>
<pruned at>``) and one per compaction of the storage (``C <when>``), appended under the
repository's lock. Like everything in the repository it is untrusted: malformed lines are
ignored, and a damaged file only costs the better error message (one that is a link or not a
regular file is neither read nor appended to: ``core.repofiles``). It is kept to the newest
:data:`MAX_LINES` lines.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

from ..core import repofiles
from ..core.repofiles import RepoFile
from ..errors import CheckpointError

NAME = 'pruned'
MAX_LINES = 20_000
_LIMIT = 4 * 1024 * 1024  # bytes read at most
_PRUNED = re.compile(r'P ([0-9a-f]{40}) (\S{1,40}) ([0-9]{1,12})')
_COMPACTED = re.compile(r'C ([0-9]{1,12})')


@dataclass(frozen=True)
class Pruned:
    """One pruned checkpoint: its id, when it was taken (ISO 8601), when it was pruned."""

    sha: str
    taken_at: str
    pruned_at: float


def _file(repository: Path) -> RepoFile:
    return RepoFile(Path(repository), f'checkpoints/{NAME}')


def _lines(repository: Path) -> list[str]:
    try:
        data = repofiles.read(_file(repository), _LIMIT)
    except CheckpointError:
        return []
    return (data or b'').decode('ascii', 'replace').splitlines()


def record(repository: Path, pruned: list[tuple[str, str]], now: float | None = None) -> None:
    """Appends ``(sha, taken at)`` of checkpoints just pruned; call under the lock."""
    stamp = int(time.time() if now is None else now)
    _append(repository, [f'P {sha} {taken_at} {stamp}' for sha, taken_at in pruned])


def record_compaction(repository: Path, now: float | None = None) -> None:
    _append(repository, [f'C {int(time.time() if now is None else now)}'])


def _append(repository: Path, lines: list[str]) -> None:
    text = ''.join(line + '\n' for line in lines).encode('ascii')
    try:
        size = repofiles.append(_file(repository), text)
        if size > _LIMIT // 2:
            kept = _lines(repository)[-MAX_LINES // 2 :]
            data = ''.join(line + '\n' for line in kept).encode('ascii')
            repofiles.replace(_file(repository), data)
    except CheckpointError:
        pass  # only a better error message is lost


def since_compaction(repository: Path) -> int:
    """How many checkpoints were pruned since the storage was last compacted."""
    count = 0
    for line in _lines(repository):
        if _COMPACTED.fullmatch(line):
            count = 0
        elif _PRUNED.fullmatch(line):
            count += 1
    return count


def find(repository: Path, prefix: str) -> Pruned | None:
    """The newest record of a pruned checkpoint whose id starts with ``prefix``."""
    prefix = prefix.strip().lower()
    found = None
    for line in _lines(repository):
        match = _PRUNED.fullmatch(line)
        if match and match.group(1).startswith(prefix):
            found = Pruned(match.group(1), match.group(2), float(match.group(3)))
    return found


def describe(item: Pruned) -> str:
    """``pruned on <date> (taken <date>)``, for error messages."""
    when = time.strftime('%Y-%m-%d %H:%M', time.localtime(item.pruned_at))
    return f'pruned on {when} (it was taken {item.taken_at})'
