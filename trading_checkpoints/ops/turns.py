"""Agent turns: every checkpoint taken while a turn is open carries the turn's id.

A turn is one user message and all the tool calls the agent makes to answer it. Opening a turn
costs nothing; its first snapshot records the desk as it was before the turn's first write (the
turn's pre-image), so :func:`restore_turn` can put the desk back as it was before the turn began.

Example::

    with checkpoints.turn('tidy the notes', message_id='msg_17') as turn:
        write_file('notes/a.md', '...')        # a guarded tool: snapshots, tagged msg_17
    checkpoints.restore_turn('msg_17')        # the desk as it was before that turn

The open turn is kept in a :class:`contextvars.ContextVar`, one per desk repository, so threads
and asyncio tasks do not see each other's turns. A tool that runs on a worker thread can be
given the turn explicitly (``guard(..., turn=turn)``) or be run with
``contextvars.copy_context().run``.
"""

from __future__ import annotations

import os
import secrets
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from types import MappingProxyType
from typing import Protocol

from ..core.ids import ShortId
from ..errors import InvalidArgumentError, NoCheckpointsError, TurnStillOpenError, UnknownTurnError
from ..store import metadata
from ..store.repo import ShadowRepo
from . import engine, turnindex
from .deskconfig import DeskConfig
from .prompts import LABEL_PREFIX, label_of
from .results import Checkpoint, SnapshotResult, TurnInfo, checkpoint_from
from .session import LockedSession
from .turnid import check_turn_id


class CheckpointsLike(Protocol):
    """What a turn needs of the desk it belongs to (``trading_checkpoints.Checkpoints``)."""

    repository_directory: Path
    desk_directory: Path
    desk_config: DeskConfig

    def snapshot(
        self,
        reason: str,
        *,
        tool: str | None = ...,
        paths: Sequence[str] | None = ...,
        turn: str | None = ...,
        session: str | None = ...,
    ) -> str | None: ...

    def seal(self) -> str: ...


_MAX_LABEL = 200

# The open turn of each desk repository (keyed by its real path) in the current context.
_ACTIVE: ContextVar[Mapping[str, Turn]] = ContextVar(
    'trading_checkpoints_turns', default=MappingProxyType({})
)


def _key(checkpoints: CheckpointsLike) -> str:
    return os.path.realpath(checkpoints.repository_directory)


def _one_line(text: str, limit: int) -> str:
    line = ' '.join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + '…'


def new_turn_id() -> str:
    """A fresh turn id: ``turn-<UTC time>-<random>``, sortable by start time."""
    stamp = datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%S')
    return f'turn-{stamp}-{secrets.token_hex(3)}'


@dataclass
class Turn:
    """An open turn of one desk.

    Attributes:
        checkpoints: The desk the turn belongs to.
        turn_id: Its id, kept as the ``Checkpoint-Turn`` trailer of each of its checkpoints:
            the ``message_id`` given to :meth:`Checkpoints.turn`, or a generated one.
        label: What the turn is about (such as the user's message), one line.
        checkpoint_ids: The checkpoints taken in this turn so far, oldest first.
        session: The agent session the turn belongs to, when a harness names one (kept as
            the ``Checkpoint-Session`` trailer).
    """

    checkpoints: CheckpointsLike
    turn_id: str
    label: str
    checkpoint_ids: list[str] = field(default_factory=list)
    session: str | None = None
    _started: bool = field(default=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def started(self) -> bool:
        """Whether the turn has taken its first checkpoint (its pre-image)."""
        return self._started

    def snapshot(
        self, reason: str, *, tool: str | None = None, paths: Sequence[str] | None = None
    ) -> str | None:
        """Takes a checkpoint of this turn.

        The turn's first call always leaves a checkpoint carrying the turn id, even when the
        desk equals the newest checkpoint (a checkpoint of the same files is added), so the
        turn's pre-image can always be found by its id.

        Returns:
            The new checkpoint's id, or None when nothing changed since the newest checkpoint
            (never None for the turn's first call).
        """
        if not isinstance(reason, str):
            raise InvalidArgumentError(
                f'reason must be a string, not {type(reason).__name__}', name='reason', value=reason
            )
        if isinstance(paths, str):
            paths = (paths,)
        if self._started:
            new_id = self._take(reason, tool, paths)
        else:
            with self._lock:  # parallel tool calls of one turn: one pre-image, taken once
                if self._started:
                    new_id = self._take(reason, tool, paths)
                else:
                    new_id = _first_snapshot(self, reason, tool, paths)
                    self._started = True
        if new_id is not None:
            self.checkpoint_ids.append(new_id)
        return new_id

    def _take(self, reason: str, tool: str | None, paths: Sequence[str] | None) -> str | None:
        turn, session = self.turn_id, self.session
        if session is None:  # keeps the protocol's older implementations working
            return self.checkpoints.snapshot(reason, tool=tool, paths=paths, turn=turn)
        return self.checkpoints.snapshot(reason, tool=tool, paths=paths, turn=turn, session=session)


def _first_snapshot(turn: Turn, reason: str, tool: str | None, paths: Sequence[str] | None) -> str:
    """Snapshots, or marks the current checkpoint as the turn's start when nothing changed."""
    body = labelled(reason, turn.label)
    # The public verb first, so whatever bookkeeping a snapshot does happens here too.
    new_id = turn._take(body, tool, paths)
    if new_id is not None:
        return new_id
    config = turn.checkpoints.desk_config
    return mark(config, metadata.compose(body, tool, paths, turn.turn_id, turn.session))


def labelled(reason: str, label: str) -> str:
    """A turn's first checkpoint's message: the reason, and the turn's label below it."""
    body = reason.strip() or 'snapshot'
    return f'{body}\n\n{LABEL_PREFIX}{_one_line(label, _MAX_LABEL)}' if label.strip() else body


def mark(config: DeskConfig, message: str) -> ShortId:
    """Commits the desk with ``message``; when it equals the newest checkpoint, commits that
    checkpoint's files again, so the message (a turn's start) is on the branch either way."""
    with engine.locked(config) as session:
        return mark_in(session, message)


def mark_in(session: LockedSession, message: str) -> ShortId:
    """:func:`mark` in a session that holds the lock."""
    from . import snapshot

    # A change that slipped in meanwhile is the pre-image; the mark declares the paths itself.
    found = snapshot.take(session, message, start=True)
    assert found.checkpoint_id is not None  # a start is committed whether or not it changed
    return found.checkpoint_id


def started(repository: Path, turn_id: str, lookback: int = 200) -> bool:
    """Whether one of the newest ``lookback`` checkpoints carries the turn id (read through
    the record of the turns near the branch's tip: ``turnindex``)."""
    repo = ShadowRepo.open(repository)
    if repo is None:
        return False
    try:
        return turnindex.started(repo, turn_id, lookback)
    finally:
        repo.close()


def first_of_turn(
    config: DeskConfig, turn_id: str | None, message: str, result: SnapshotResult
) -> SnapshotResult:
    """A snapshot's result, made to mark the turn's start when it took no checkpoint and none
    of the newest checkpoints carries the turn id (as ``checkpoints snapshot --turn`` does)."""
    if turn_id is None or result.checkpoint_id is not None:
        return result
    check_turn_id(turn_id)
    if started(config.repository, turn_id):
        return result
    return replace(result, checkpoint_id=mark(config, message), turn_start=True)


def snapshot_in_turn(
    checkpoints: CheckpointsLike,
    turn_id: str,
    reason: str,
    *,
    label: str = '',
    tool: str | None = None,
    paths: Sequence[str] | None = None,
    lookback: int = 200,
    session: str | None = None,
) -> str | None:
    """A snapshot tagged with ``turn_id`` (and ``session``), for callers that keep no
    :class:`Turn` open (such as the MCP server, where the agent passes its message id with each
    call, and the hooks, one process per event).

    When none of the newest ``lookback`` checkpoints carries the turn id, this is the turn's
    first snapshot and always leaves a checkpoint (see :meth:`Turn.snapshot`). Misjudging an
    old turn as new only adds one checkpoint of unchanged files; ``restore_turn`` still finds
    the turn's oldest checkpoint.
    """
    check_turn_id(turn_id)
    found = started(checkpoints.repository_directory, turn_id, lookback)
    label = _one_line(label, _MAX_LABEL)
    turn = Turn(checkpoints, turn_id, label, session=session, _started=found)
    return turn.snapshot(reason, tool=tool, paths=paths)


def current(checkpoints: CheckpointsLike) -> Turn | None:
    """The turn open on this desk in the current thread or task, if any."""
    return _ACTIVE.get().get(_key(checkpoints))


@contextmanager
def open_turn(
    checkpoints: CheckpointsLike, label: str = '', message_id: str | None = None
) -> Iterator[Turn]:
    """Opens a turn on a desk for the duration of a ``with`` block (see the module docs)."""
    if not isinstance(label, str):
        raise InvalidArgumentError(
            f'a turn label must be a string, not {type(label).__name__}', name='label', value=label
        )
    if message_id is not None:
        check_turn_id(message_id, 'message_id')
    key = _key(checkpoints)
    active = _ACTIVE.get()
    if key in active:
        raise TurnStillOpenError(
            f'turn {active[key].turn_id!r} is still open on {checkpoints.desk_directory}; '
            'turns of one desk do not nest',
            turn=active[key].turn_id,
            desk=checkpoints.desk_directory,
        )
    turn = Turn(checkpoints, message_id or new_turn_id(), _one_line(label, _MAX_LABEL))
    token = _ACTIVE.set({**active, key: turn})
    try:
        yield turn
    finally:
        try:
            _ACTIVE.reset(token)
        except ValueError:  # closed in another context: drop just this turn
            _ACTIVE.set({k: v for k, v in _ACTIVE.get().items() if v is not turn})


def turns(checkpoints: CheckpointsLike, limit: int | None = 20) -> list[TurnInfo]:
    """The turns recorded in a desk's repository, newest first, each with its checkpoints."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise InvalidArgumentError(
            f'limit must be a whole number of at least 0, not {limit!r}', name='limit', value=limit
        )
    order: list[str] = []
    grouped: dict[str, list[Checkpoint]] = {}
    labels: dict[str, str] = {}
    repo = ShadowRepo.open(checkpoints.repository_directory)
    if repo is None:
        return []
    try:
        for info in repo.history():
            item = checkpoint_from(info)
            if item.turn is None:
                continue
            if item.turn not in grouped:
                order.append(item.turn)
                grouped[item.turn] = []
            grouped[item.turn].append(item)
            label = label_of(info.message)
            if label is not None:
                labels[item.turn] = label  # the oldest checkpoint's label wins
    finally:
        repo.close()
    chosen = order if limit is None else order[:limit]
    return [TurnInfo(t, labels.get(t, ''), tuple(grouped[t])) for t in chosen]


def first_checkpoint(checkpoints: CheckpointsLike, turn_id: str) -> ShortId:
    """The id of a turn's first checkpoint (its pre-image)."""
    if not isinstance(turn_id, str) or not turn_id.strip():
        raise InvalidArgumentError(
            f'a turn id must be a non-empty string, not {turn_id!r}', name='turn_id', value=turn_id
        )
    turn_id = turn_id.strip()
    repo = ShadowRepo.open(checkpoints.repository_directory)
    if repo is None:
        raise NoCheckpointsError(
            f'no checkpoints yet in {checkpoints.repository_directory}',
            repository=checkpoints.repository_directory,
        )
    found: ShortId | None = None
    try:
        for info in repo.history():
            if metadata.parse(info.message).turn == turn_id:
                found = info.short_id
    finally:
        repo.close()
    if found is None:
        raise UnknownTurnError(
            f'no turn {turn_id!r} in {checkpoints.repository_directory} '
            '(`checkpoints turns` lists them)',
            turn=turn_id,
        )
    return found
