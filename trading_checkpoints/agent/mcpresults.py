"""The MCP server's structured results: one TypedDict per tool answer, and the functions that
shape the library's values into them.

The SDK turns each TypedDict into the tool's output JSON schema, so an agent sees the exact
fields it gets back. Nothing here imports the SDK; :mod:`trading_checkpoints.agent.mcp` does.
"""

import base64
from collections.abc import Sequence

try:  # pydantic reads TypedDicts from typing_extensions on Python < 3.12
    from typing_extensions import TypedDict
except ImportError:  # pragma: no cover - typing_extensions comes with the mcp extra
    from typing import TypedDict

from ..ops.results import Checkpoint, Diff, FileChange, LogEntry, PruneResult, RestoreResult, Status
from ..ops.turns import TurnInfo

# -- listing -------------------------------------------------------------------------------


class CheckpointRow(TypedDict):
    id: str
    created_at: str
    reason: str
    tool: str | None
    paths: list[str]
    turn: str | None
    action: str | None
    files_changed: int | None
    lines_added: int | None
    lines_removed: int | None


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
    return CheckpointRow(
        id=item.checkpoint_id,
        created_at=item.created_at,
        reason=item.reason,
        tool=item.tool,
        paths=list(item.paths),
        turn=item.turn,
        action=item.action,
        files_changed=item.files_changed,
        lines_added=item.lines_added,
        lines_removed=item.lines_removed,
    )


def turn_row(turn: TurnInfo) -> TurnRow:
    return TurnRow(
        turn_id=turn.turn_id,
        label=turn.label,
        started_at=turn.started_at,
        first_checkpoint=turn.first.checkpoint_id,
        checkpoints=[checkpoint_row(c) for c in turn.checkpoints],
    )


# -- writing -------------------------------------------------------------------------------


class SnapshotOutcome(TypedDict):
    desk: str
    checkpoint_id: str | None
    changed: bool


class KeptFile(TypedDict):
    path: str
    reason: str


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
    before = result.before_id
    return RestoreOutcome(
        desk=desk,
        action=result.action,
        dry_run=result.dry_run,
        target_id=result.target_id,
        before_id=before,
        restored_id=result.restored_id,
        written=list(result.written),
        created=list(result.created),
        deleted=list(result.deleted),
        external=list(result.external),
        kept=[KeptFile(path=path, reason=why) for path, why in result.kept],
        attribution=result.attribution,
        recovered=result.recovered,
        undo_hint=None if result.dry_run or not before else f'restore {before}',
    )


class SealOutcome(TypedDict):
    desk: str
    seal_id: str


# -- looking back --------------------------------------------------------------------------


class ChangeRow(TypedDict):
    path: str
    kind: str
    old_mode: str | None
    new_mode: str | None
    old_id: str | None
    new_id: str | None
    binary: bool
    patch: str | None
    added_lines: int
    removed_lines: int


class DiffOutcome(TypedDict):
    desk: str
    from_id: str
    to_id: str | None
    paths: list[str] | None
    files_changed: int
    added_lines: int
    removed_lines: int
    changes: list[ChangeRow]


def change_row(change: FileChange) -> ChangeRow:
    return ChangeRow(
        path=change.path,
        kind=change.kind,
        old_mode=None if change.old_mode is None else f'{change.old_mode:06o}',
        new_mode=None if change.new_mode is None else f'{change.new_mode:06o}',
        old_id=change.old_id,
        new_id=change.new_id,
        binary=change.binary,
        patch=change.patch,
        added_lines=change.added_lines,
        removed_lines=change.removed_lines,
    )


def diff_outcome(desk: str, diff: Diff, paths: Sequence[str] | None) -> DiffOutcome:
    return DiffOutcome(
        desk=desk,
        from_id=diff.from_id,
        to_id=diff.to_id,
        paths=list(paths) if paths else None,
        files_changed=len(diff.changes),
        added_lines=sum(c.added_lines for c in diff.changes),
        removed_lines=sum(c.removed_lines for c in diff.changes),
        changes=[change_row(c) for c in diff.changes],
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
    try:
        content, encoding = data.decode('utf-8'), 'utf-8'
    except UnicodeDecodeError:
        content, encoding = base64.b64encode(data).decode('ascii'), 'base64'
    return FileAtCheckpoint(
        desk=desk,
        checkpoint_id=checkpoint_id,
        path=path,
        exists=True,
        encoding=encoding,
        content=content,
    )


class StatusChange(TypedDict):
    path: str
    kind: str


class StatusOutcome(TypedDict):
    desk: str
    newest_id: str | None
    clean: bool
    changes: list[StatusChange]
    external: list[str]
    basis: str


def status_outcome(desk: str, status: Status) -> StatusOutcome:
    return StatusOutcome(
        desk=desk,
        newest_id=status.newest_id,
        clean=status.clean,
        changes=[StatusChange(path=c.path, kind=c.kind) for c in status.changes],
        external=list(status.external),
        basis=status.basis,
    )


class LogRow(TypedDict):
    id: str
    created_at: str
    reason: str
    tool: str | None
    paths: list[str]
    turn: str | None
    action: str | None
    changed: list[str]


class LogOutcome(TypedDict):
    desk: str
    path: str | None
    entries: list[LogRow]


def log_row(entry: LogEntry) -> LogRow:
    c = entry.checkpoint
    return LogRow(
        id=c.checkpoint_id,
        created_at=c.created_at,
        reason=c.reason,
        tool=c.tool,
        paths=list(c.paths),
        turn=c.turn,
        action=entry.action,
        changed=list(entry.changed),
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
    return PruneOutcome(
        desk=desk,
        dry_run=dry_run,
        limits=limits,
        checkpoints_before=result.checkpoints_before,
        checkpoints_after=result.checkpoints_after,
        pruned_count=result.pruned_count,
        pruned=list(result.pruned),
        oldest_kept=result.oldest_kept,
        bytes_before=result.bytes_before,
        bytes_after=result.bytes_after,
        note=note,
    )
