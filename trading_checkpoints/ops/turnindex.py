"""Which turns the newest checkpoints carry, without reading them all at every hook event.

A hook event asks whether its turn has a checkpoint yet (``turns.started``): one of the newest
:data:`DEPTH` checkpoints carrying the turn's id. Reading them all costs a commit read each;
the first event of every turn reads the whole window and finds nothing. So the answer is kept:
``checkpoints/turns`` in the repository names a branch tip and the history's shallow boundary
(where a prune cut it) then, and for each turn among the :data:`DEPTH` checkpoints up to the
tip, how far back from it its newest checkpoint is.

The record needs no trust in who wrote it or when. A commit's id fixes its whole first-parent
history, so what the record says of a tip holds for any later tip that has it as an ancestor:
a question walks back from the branch only until it meets the recorded tip (the few
checkpoints made since) and adds what it read to the record's depths. When the walk does not
meet the tip within the window (the ref was moved back or rewritten; the record is missing,
damaged or of another tip), or the boundary moved (a prune), it reads the whole window, as
without the record. So a
stale record never changes an answer. (The record is trusted as the refs are: whoever can
write it can move the branch.)

It is rewritten, under the desk's lock and never flushed (a lost or torn record only costs one
full walk), when a question read at least :data:`REMEMBER_AFTER` checkpoints to answer: a
turn's first event after a few others' checkpoints reads only those.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from ..core.repofiles import RepoFile
from ..core.repofiles import read as read_file
from ..core.repofiles import replace as replace_file
from ..errors import CheckpointError
from ..store import gitfiles, metadata
from ..store.repo import PRIVATE_DIR, ShadowRepo

NAME = f'{PRIVATE_DIR}/turns'
DEPTH = 200  # the window the record covers: questions about a longer one walk it all
REMEMBER_AFTER = 8  # checkpoints read before an answer is worth writing down
MAX_BYTES = 64 * 1024
_TIP = re.compile(r'[0-9a-f]{40}|[0-9a-f]{64}')
_BOUNDARY = re.compile(r'[0-9a-f]{16}')


@dataclass(frozen=True)
class Near:
    """The turns among the :data:`DEPTH` checkpoints up to ``tip`` (the history cut at the
    shallow boundary ``boundary``, a digest): each turn's newest checkpoint's distance from
    ``tip`` (0: the tip itself)."""

    tip: str
    boundary: str
    depths: dict[str, int]


def started(
    repo: ShadowRepo, turn_id: str, lookback: int = DEPTH, *, remember: bool = False
) -> bool:
    """Whether one of the newest ``lookback`` checkpoints carries ``turn_id``. ``remember``
    (the caller holds the desk's lock): the answer's walk is written down when it was long."""
    head = repo.head()
    if head is None:
        return False
    if lookback > DEPTH:
        return any(metadata.parse(i.message).turn == turn_id for i in repo.history(lookback))
    boundary = _boundary(repo)
    known = read(repo)
    if known is not None and known.boundary != boundary:
        known = None
    newer: dict[str, int] = {}
    walked = 0
    met = False
    for info in repo.history(DEPTH):
        if known is not None and info.sha == known.tip:
            met = True
            break
        turn = metadata.parse(info.message).turn
        if turn == turn_id and walked < lookback:
            return True  # found before the walk met the record: nothing new to write down
        if turn is not None:
            newer.setdefault(turn, walked)
        walked += 1
    depths = dict(newer)
    if met and known is not None:
        for turn, depth in known.depths.items():
            if depth + walked < DEPTH:
                depths.setdefault(turn, depth + walked)
    if remember and walked >= REMEMBER_AFTER:
        write(repo, Near(head.decode('ascii'), boundary, depths))
    return depths.get(turn_id, DEPTH) < lookback


def read(repo: ShadowRepo) -> Near | None:
    """The record, or None when it is missing or does not parse (anything odd: no record)."""
    try:
        data = read_file(RepoFile(repo.path, NAME), MAX_BYTES)
    except CheckpointError:
        return None
    if not data:
        return None
    try:
        lines = data.decode('utf-8').split('\n')
    except UnicodeDecodeError:
        return None
    tip, _, boundary = lines[0].partition(' ')
    if not _TIP.fullmatch(tip) or not _BOUNDARY.fullmatch(boundary) or lines[-1] != '':
        return None
    depths: dict[str, int] = {}
    for line in lines[1:-1]:
        depth, _, turn = line.partition(' ')
        if not depth.isdigit() or not turn or len(turn.split()) != 1 or int(depth) >= DEPTH:
            return None
        depths.setdefault(turn, int(depth))
    return Near(tip, boundary, depths)


def _boundary(repo: ShadowRepo) -> str:
    """A digest of the history's shallow boundary (a prune moves it)."""
    shallow = b''.join(sorted(gitfiles.read_shallow(repo.path)))
    return hashlib.blake2b(shallow, digest_size=8).hexdigest()


def write(repo: ShadowRepo, near: Near) -> None:
    """Writes the record down (under the desk's lock); a failure only leaves it stale."""
    rows = sorted(near.depths.items(), key=lambda item: item[1])
    text = f'{near.tip} {near.boundary}\n' + ''.join(
        f'{d} {t}\n' for t, d in rows if len(t.split()) == 1
    )
    try:
        data = text.encode('utf-8', 'surrogatepass')
        replace_file(RepoFile(repo.path, NAME), data, durable=False)
    except (CheckpointError, UnicodeError):
        pass
