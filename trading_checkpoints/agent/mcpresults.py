"""The MCP server's structured results: one TypedDict per tool answer, built around the values'
JSON forms (their ``to_dict()``, see :mod:`trading_checkpoints.ops.results`).

Each answer names its desk and adds what only an agent needs (an ``undo_hint``, a ``note``); the
values in it come from the form the command line prints too, so the two cannot drift. The SDK
turns each TypedDict into the tool's output JSON schema, so an agent sees the exact fields it
gets back. Nothing here imports the SDK; :mod:`trading_checkpoints.agent.mcp` does.
"""

from collections.abc import Sequence

try:  # pydantic reads TypedDicts from typing_extensions on Python < 3.12
    from typing_extensions import TypedDict
except ImportError:  # pragma: no cover - typing_extensions comes with the mcp extra
    from typing import TypedDict

from ..ops.blame import Blame, BlameLineForm
from ..ops.policy import BudgetUse
from ..ops.results import (
    ChangeRow,
    Checkpoint,
    CheckpointRow,
    Diff,
    KeptFile,
    LogEntry,
    PruneResult,
    RestoreResult,
    Status,
    StatusChange,
    TurnInfo,
    file_content,
)

# -- listing -------------------------------------------------------------------------------


class DeskList(TypedDict):
    workspace: str
    default_desk: str
    desks: list[str]


class CheckpointList(TypedDict):
    desk: str
    checkpoints: list[CheckpointRow]


class TurnRow(TypedDict):
    turn_id: str
    label: str
    started_at: str
    first_checkpoint: str
    checkpoints: list[CheckpointRow]


class TurnList(TypedDict):
    desk: str
    turns: list[TurnRow]


def checkpoint_row(item: Checkpoint) -> CheckpointRow:
    return item.to_dict()


def turn_row(turn: TurnInfo) -> TurnRow:
    """The turn's form, with each checkpoint in full (the command line lists them in brief)."""
    form = turn.to_dict()
    return TurnRow(
        turn_id=form['turn_id'],
        label=form['label'],
        started_at=form['started_at'],
        first_checkpoint=form['first_checkpoint'],
        checkpoints=[c.to_dict() for c in turn.checkpoints],
    )


# -- writing -------------------------------------------------------------------------------


class SnapshotOutcome(TypedDict):
    desk: str
    checkpoint_id: str | None
    changed: bool


class RestoreOutcome(TypedDict):
    desk: str
    action: str
    dry_run: bool
    target_id: str | None
    before_id: str | None
    restored_id: str | None
    written: list[str]
    created: list[str]
    deleted: list[str]
    external: list[str]
    kept: list[KeptFile]
    attribution: str
    recovered: str | None
    undo_hint: str | None


def restore_outcome(desk: str, result: RestoreResult) -> RestoreOutcome:
    """A restore, undo or redo; ``undo_hint`` names the restore that takes it back."""
    form = result.to_dict()
    before = form['before_id']
    return RestoreOutcome(
        desk=desk,
        action=form['action'],
        dry_run=form['dry_run'],
        target_id=form['target_id'],
        before_id=before,
        restored_id=form['restored_id'],
        written=form['written'],
        created=form['created'],
        deleted=form['deleted'],
        external=form['external'],
        kept=form['kept'],
        attribution=form['attribution'],
        recovered=result.recovered,
        undo_hint=None if form['dry_run'] or not before else f'restore {before}',
    )


class SealOutcome(TypedDict):
    desk: str
    seal_id: str


class BudgetRow(TypedDict):
    path: str
    bytes: int
    tokens: int | None
    size: int
    over: bool


class ProtectedList(TypedDict):
    desk: str
    protected: list[str]
    budgets: list[BudgetRow]


def budget_row(use: BudgetUse) -> BudgetRow:
    budget = use.budget
    return BudgetRow(
        path=budget.path, bytes=budget.limit, tokens=budget.tokens, size=use.size, over=use.over
    )


# -- looking back --------------------------------------------------------------------------


class DiffOutcome(TypedDict):
    desk: str
    from_id: str | None
    to_id: str | None
    paths: list[str] | None
    files_changed: int
    added_lines: int
    removed_lines: int
    changes: list[ChangeRow]


def diff_outcome(desk: str, diff: Diff, paths: Sequence[str] | None) -> DiffOutcome:
    form = diff.to_dict()
    return DiffOutcome(
        desk=desk,
        from_id=form['from'],
        to_id=form['to'],
        paths=list(paths) if paths else None,
        files_changed=len(form['changes']),
        added_lines=sum(c['added_lines'] for c in form['changes']),
        removed_lines=sum(c['removed_lines'] for c in form['changes']),
        changes=form['changes'],
    )


class FileAtCheckpoint(TypedDict):
    desk: str
    checkpoint_id: str
    path: str
    exists: bool
    encoding: str
    content: str | None


def file_at_checkpoint(desk: str, checkpoint_id: str, path: str, data: bytes) -> FileAtCheckpoint:
    """The bytes as UTF-8 text when they are, else base64."""
    content, encoding = file_content(data)
    return FileAtCheckpoint(
        desk=desk,
        checkpoint_id=checkpoint_id,
        path=path,
        exists=True,
        encoding=encoding,
        content=content,
    )


class StatusOutcome(TypedDict):
    desk: str
    newest_id: str | None
    clean: bool
    changes: list[StatusChange]
    external: list[str]
    basis: str


def status_outcome(desk: str, status: Status) -> StatusOutcome:
    form = status.to_dict()
    return StatusOutcome(
        desk=desk,
        newest_id=form['newest_id'],
        clean=status.clean,
        changes=form['changes'],
        external=form['external'],
        basis=form['basis'],
    )


class LogRow(TypedDict):
    id: str
    created_at: str
    reason: str
    tool: str | None
    paths: list[str]
    turn: str | None
    turn_label: str | None
    action: str | None
    changed: list[str]


class LogOutcome(TypedDict):
    desk: str
    path: str | None
    entries: list[LogRow]


def log_row(entry: LogEntry) -> LogRow:
    """The entry's form without the kind of each change."""
    form = entry.to_dict()
    return LogRow(
        id=form['id'],
        created_at=form['created_at'],
        reason=form['reason'],
        tool=form['tool'],
        paths=form['paths'],
        turn=form['turn'],
        turn_label=form['turn_label'],
        action=form['action'],
        changed=form['changed'],
    )


class BlameOutcome(TypedDict):
    desk: str
    path: str
    checkpoint: str | None
    lines: list[BlameLineForm]


def blame_outcome(desk: str, blame: Blame) -> BlameOutcome:
    """Each line with its origin; ``checkpoint`` None: the file as the desk holds it now."""
    form = blame.to_dict()
    return BlameOutcome(
        desk=desk, path=form['path'], checkpoint=form['checkpoint'], lines=form['lines']
    )


# -- retention -----------------------------------------------------------------------------


class PruneLimits(TypedDict):
    keep: int | None
    older_than: str | None
    max_size: str | None


class PruneOutcome(TypedDict):
    desk: str
    dry_run: bool
    limits: PruneLimits
    checkpoints_before: int
    checkpoints_after: int
    pruned_count: int
    pruned: list[str]
    oldest_kept: str | None
    bytes_before: int
    bytes_after: int
    note: str


def prune_outcome(
    desk: str, result: PruneResult, limits: PruneLimits, dry_run: bool
) -> PruneOutcome:
    if not any(value is not None for value in limits.values()):
        note = (
            'no limits given or stored: nothing is dropped; a run with dry_run=false only '
            'compacts the storage'
        )
    elif dry_run and result.pruned_count:
        note = (
            f'dry run: would drop {result.pruned_count} checkpoint(s), nothing was dropped; '
            'call again with dry_run=false to drop them'
        )
    elif dry_run:
        note = 'dry run: nothing to drop under these limits'
    else:
        note = f'pruned {result.pruned_count} checkpoint(s); the ids of those kept are unchanged'
    form = result.to_dict()
    return PruneOutcome(
        desk=desk,
        dry_run=dry_run,
        limits=limits,
        checkpoints_before=form['checkpoints_before'],
        checkpoints_after=form['checkpoints_after'],
        pruned_count=result.pruned_count,
        pruned=form['pruned'],
        oldest_kept=form['oldest_kept'],
        bytes_before=form['bytes_before'],
        bytes_after=form['bytes_after'],
        note=note,
    )
