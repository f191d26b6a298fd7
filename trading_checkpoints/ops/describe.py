"""One checkpoint described as ``git show`` describes a commit: its time, its whole message,
the tool and turn it was taken for (with the turn's prompt label), and what it changed."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol

try:  # pydantic (the MCP SDK) reads TypedDicts from typing_extensions on Python < 3.12
    from typing_extensions import TypedDict
except ImportError:  # pragma: no cover - typing_extensions comes with the mcp extra
    from typing import TypedDict

from ..store import metadata
from ..store.commitinfo import CommitInfo
from . import credits, engine, history, prompts
from .deskconfig import DeskConfig
from .engine import RecoveryReport
from .results import ChangeRow, Checkpoint, CheckpointRow, Diff, checkpoint_from
from .session import ReadSession


class WrittenForm(TypedDict):
    path: str
    turn: str | None
    session: str | None
    uncertain: bool


class Described(RecoveryReport, Protocol):
    """What describing a checkpoint needs of its desk (``trading_checkpoints.Checkpoints``)."""

    desk_config: DeskConfig


class DescriptionForm(TypedDict):
    checkpoint: CheckpointRow
    full_id: str
    message: str
    session: str | None
    turn_label: str | None
    parent: str | None
    changes: list[ChangeRow]
    written_by: list[WrittenForm]


@dataclass(frozen=True)
class Written:
    """Who made one change a checkpoint holds: ``turn`` (None: no turn, such as a person;
    ``t-1 or t-2`` when either may have), and whether that is uncertain (someone else changed
    the path again before the checkpoint, or another writer was at work at the same time)."""

    path: str
    turn: str | None
    session: str | None = None
    uncertain: bool = False

    def to_dict(self) -> WrittenForm:
        return WrittenForm(
            path=self.path, turn=self.turn, session=self.session, uncertain=self.uncertain
        )


@dataclass(frozen=True)
class Description:
    """A checkpoint and what it changed.

    Attributes:
        checkpoint: Its fields (id, time, reason, tool, paths, turn, action, counts).
        full_id: Its full 40-digit id.
        message: Its message without the trailers (the subject and any body).
        session: The agent session it was taken in, when recorded.
        turn_label: Its turn's label (the user's prompt, one line, as stored), when found.
        diff: What it changed from the checkpoint before it, with line counts (and patches
            when asked for).
        written_by: Who made each of those changes, as the checkpoint records it (see
            ``credits``); empty for a restore, undo or redo, which puts back earlier work.
    """

    checkpoint: Checkpoint
    full_id: str
    message: str
    session: str | None
    turn_label: str | None
    diff: Diff
    written_by: tuple[Written, ...] = ()

    def to_dict(self) -> DescriptionForm:
        return DescriptionForm(
            checkpoint=self.checkpoint.to_dict(),
            full_id=self.full_id,
            message=self.message,
            session=self.session,
            turn_label=self.turn_label,
            parent=self.diff.from_id,
            changes=[change.to_dict() for change in self.diff.changes],
            written_by=[item.to_dict() for item in self.written_by],
        )


def describe(checkpoints: Described, checkpoint_id: str, *, patches: bool = False) -> Description:
    """Checkpoint ``checkpoint_id`` of a desk (``trading_checkpoints.Checkpoints``) described
    (see the module notes); ``patches``: with the diff of each text file."""
    with engine.reading(checkpoints.desk_config, report_to=checkpoints) as session:
        return _describe(session, checkpoint_id, patches)


def _describe(session: ReadSession, checkpoint_id: str, patches: bool) -> Description:
    repo = session.repo
    sha = repo.resolve(checkpoint_id)
    info = repo.commit_info(sha)
    meta = metadata.parse(info.message)
    label = None
    if meta.turn is not None:
        label = prompts.labels(repo.path, [meta.turn], sha).get(meta.turn)
    diff = history.introduced(session, info.sha)  # the line counts come with the patches
    if not patches:
        diff = replace(diff, changes=tuple(replace(c, patch=None) for c in diff.changes))
    message = body(info.message)
    written = _written(session, info, diff)
    return Description(checkpoint_from(info), info.sha, message, meta.session, label, diff, written)


def _written(session: ReadSession, info: CommitInfo, diff: Diff) -> tuple[Written, ...]:
    """Who made each change the checkpoint holds, read as ``credits`` reads it."""
    if metadata.action_of(info.message) in credits.RESTORING:
        return ()
    repo = session.repo
    parent = info.parents[0] if info.parents and repo.contains(info.parents[0]) else None
    previous = repo.commit_info(parent).message if parent is not None else ''
    credit = credits.of_checkpoint(info.message, previous, {})
    found = []
    for change in diff.changes:
        new = None if change.new_id is None else (change.new_mode or 0, change.new_id.encode())
        given = credit(change.path, new)
        writers = credits.writers_of(given)
        turn = ' or '.join(w.turn for w in writers) or None
        by = ' or '.join(w.session or '-' for w in writers) if writers else None
        found.append(Written(change.path, turn, by, not credits.certain(given)))
    return tuple(found)


def body(message: str) -> str:
    """A commit message without its trailer block."""
    text = message.rstrip('\n')
    if metadata.trailers(message):
        text = text.rsplit('\n\n', 1)[0]
    return text.rstrip('\n') + '\n'
