"""What the desk held at a moment, counting the agent's sealed writes ("what did the memory say
when the agent acted?").

Checkpoints are taken *before* writes, so the newest checkpoint at or before a moment is the
desk before the agent's last write, not after it. The state after it is the seal
(``external.seal``: the hooks seal after every write tool), and a seal is superseded by the next
checkpoint, which records the sealed state with whatever else changed since. So the state held
at a moment T is, in order:

1. the seal on the newest checkpoint, when T is at or after it (the agent's write, sealed);
2. else, when a later checkpoint superseded a seal made at or before T (its
   ``Checkpoint-Sealed-At`` trailer) and holds nothing but what the sealing turn wrote, that
   checkpoint: its files are the sealed state;
3. else the newest checkpoint at or before T (``asof.find``). When the next checkpoint differs
   from it by more than a write sealed after T, the desk changed meanwhile without a record
   of when: :class:`Held` says so (``changed_before``), rather than claim the desk held it.

A moment before the first checkpoint, a time without an offset, a moment that overflows: the
errors of ``asof.moment``.
"""

from __future__ import annotations

from contextlib import closing
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from ..errors import InvalidArgumentError
from ..store import metadata
from ..store.commitinfo import CommitInfo
from ..store.repo import ShadowRepo
from . import external, history
from .asof import Moment, find_with_next, moment
from .listing import walk
from .results import Checkpoint, checkpoint_from
from .session import ReadSession


@dataclass(frozen=True)
class Held:
    """The state a desk held at a moment.

    Attributes:
        info: The recorded state: a checkpoint, or the agent's sealed write (a seal, or the
            later checkpoint that holds nothing else).
        sealed: Whether it is the agent's sealed write rather than a checkpoint taken then.
        turn: The turn that made that write, when one is named.
        changed_before: The next checkpoint, when the desk changed after ``info`` in a way no
            sealed write before the moment explains (when is not recorded).
    """

    info: CommitInfo
    sealed: bool = False
    turn: str | None = None
    changed_before: CommitInfo | None = None

    @property
    def checkpoint(self) -> Checkpoint:
        return checkpoint_from(self.info)


def held(repository: Path, at: Moment) -> Held:
    """The state the desk's repository says it held at ``at`` (see the module notes)."""
    when = moment(at)
    with closing(walk(repository)) as commits:
        found, newer = find_with_next(commits, when, Path(repository))
    repo = ShadowRepo.open(repository)
    if repo is None:
        return Held(found)
    try:
        return _held(repo, found, newer, when)
    finally:
        repo.close()


def _held(repo: ShadowRepo, found: CommitInfo, newer: CommitInfo | None, when: datetime) -> Held:
    if newer is None:
        seal = external.current_seal(repo, found.sha.encode())
        if seal is not None and _a_write(seal) and seal.sha != found.sha:
            if datetime.fromisoformat(seal.created_at) <= when:
                writer = external.writer(repo)  # the seal's, else the checkpoint's turn
                return Held(seal, True, writer.turn if writer is not None else None)
        return Held(found)
    sealed_at = metadata.trailer_values(newer.message).get(metadata.SEALED_AT)
    sealed_then = _time(sealed_at[-1]) if sealed_at else None
    only_sealed = sealed_then is not None and _only_the_turns(repo, found, newer)
    if sealed_then is not None and sealed_then <= when and only_sealed:
        return Held(newer, True, _turn(newer))
    if newer.tree == found.tree or only_sealed:
        return Held(found)  # what came next was a write sealed after the moment
    return Held(found, changed_before=newer)


def _a_write(seal: CommitInfo) -> bool:
    """Whether a seal records an agent's write (not an announcement, nor a restore's state)."""
    return metadata.action_of(seal.message) not in (external.ANNOUNCE, external.RESTORED_STATE)


def _turn(info: CommitInfo) -> str | None:
    groups = metadata.written_groups(info.message)
    if groups:
        return groups[-1].writer.turn
    found = metadata.writer_of(info.message)
    return found.turn if found is not None else None


def _only_the_turns(repo: ShadowRepo, older: CommitInfo, newer: CommitInfo) -> bool:
    """Whether every change ``newer`` holds was written, for certain, by the turns it credits."""
    certain: set[str] = set()
    for group in metadata.written_groups(newer.message):
        certain |= group.paths - group.changed_after - group.maybe
    changed = {path for path, _, _ in history.changed_files(repo, older.tree, newer.tree)}
    return bool(changed) and changed <= certain


def _time(text: str) -> datetime | None:
    try:
        found = datetime.fromisoformat(text)
    except ValueError:
        return None  # the repository is untrusted: a malformed time counts as none
    return found if found.tzinfo is not None else None


def chosen(session: ReadSession, checkpoint_id: str | None, at: Moment | None) -> str | None:
    """The id a verb acts on: ``checkpoint_id``, or the full id of the state held at ``at``
    (one of the two, not both)."""
    if at is None:
        return checkpoint_id
    if checkpoint_id is not None:
        raise InvalidArgumentError(
            f'give a checkpoint id or a time, not both (id {checkpoint_id!r}, at {at!r})',
            name='at',
            value=at if isinstance(at, str) else at.isoformat(),
        )
    return held(session.repo.path, at).info.sha


def named(session: ReadSession, checkpoint_id: str | None, at: Moment | None, name: str) -> str:
    """:func:`chosen`, for a verb that needs a checkpoint: an id (argument ``name``) or a
    time."""
    found = chosen(session, checkpoint_id, at)
    if found is None:
        raise InvalidArgumentError(
            f'give {name} (a checkpoint id) or at (a time)', name=name, value=None
        )
    return found
