"""The values the library returns (checkpoints, snapshot and restore results, diffs, logs) and
their JSON forms.

Each value's ``to_dict()`` is its one JSON form: what ``checkpoints VERB --json`` prints, and
what the MCP server's results are built from (:mod:`trading_checkpoints.agent.mcpresults` adds
the desk and its own fields around it, never re-deriving a value). The forms are TypedDicts, so
the MCP SDK publishes their exact fields as the tools' output schemas; a row both surfaces
show (a checkpoint, a file change, a kept file) is one type under the name the MCP schemas
give it.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field

try:  # pydantic (the MCP SDK) reads TypedDicts from typing_extensions on Python < 3.12
    from typing_extensions import TypedDict
except ImportError:  # pragma: no cover - typing_extensions comes with the mcp extra
    from typing import TypedDict

from ..core.ids import ShortId
from ..store import changestats, metadata
from ..store.commitinfo import CommitInfo

# -- the JSON forms ---------------------------------------------------------------------------
# (No docstrings: the SDK would publish them as schema descriptions. Key order is output order.)


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


class CheckpointBrief(TypedDict):
    id: str
    created_at: str
    reason: str
    tool: str | None
    paths: list[str]


class KeptFile(TypedDict):
    path: str
    reason: str


class RestoreForm(TypedDict):
    action: str
    dry_run: bool
    before_id: str
    target_id: str
    restored_id: str | None
    written: list[str]
    created: list[str]
    deleted: list[str]
    external: list[str]
    kept: list[KeptFile]
    attribution: str


class SnapshotForm(TypedDict):
    id: str | None
    external: list[str]
    skipped: list[KeptFile]


class StatusChange(TypedDict):
    path: str
    kind: str


class StorageForm(TypedDict):
    repository_bytes: int
    objects_bytes: int
    keep: int | None
    older_than: str | None
    max_size: str | None
    would_drop: int | None
    bytes_after: int | None


class StatusForm(TypedDict):
    newest_id: str | None
    changes: list[StatusChange]
    external: list[str]
    basis: str
    skipped: list[KeptFile]
    storage: StorageForm | None


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


DiffForm = TypedDict('DiffForm', {'from': str | None, 'to': str | None, 'changes': list[ChangeRow]})


class LogEntryForm(TypedDict):
    id: str
    created_at: str
    reason: str
    tool: str | None
    paths: list[str]
    turn: str | None
    turn_label: str | None
    action: str | None
    changed: list[str]
    changes: list[StatusChange]


class TurnForm(TypedDict):
    turn_id: str
    label: str
    started_at: str
    first_checkpoint: str
    checkpoints: list[CheckpointBrief]


class PruneForm(TypedDict):
    dry_run: bool
    checkpoints_before: int
    checkpoints_after: int
    bytes_before: int
    bytes_after: int
    pruned: list[str]
    oldest_kept: str | None


def kept_files(pairs: tuple[tuple[str, str], ...]) -> list[KeptFile]:
    """``(path, why)`` pairs (kept, skipped) in their JSON form."""
    return [KeptFile(path=path, reason=why) for path, why in pairs]


def file_content(data: bytes) -> tuple[str, str]:
    """A file's bytes for JSON: ``(text, 'utf-8')`` when they are UTF-8, else base64."""
    try:
        return data.decode('utf-8'), 'utf-8'
    except UnicodeDecodeError:
        return base64.b64encode(data).decode('ascii'), 'base64'


# -- the values -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Checkpoint:
    """One snapshot.

    Attributes:
        checkpoint_id: The snapshot's short git commit id.
        created_at: When it was taken, ISO 8601 with a UTC offset.
        reason: What was about to happen, such as "before write_file Memory.md".
        tool: The tool that was about to write, when the snapshot recorded one.
        paths: The paths it was about to write, when recorded.
        turn: The agent turn the snapshot belongs to, when recorded.
        action: What made it when the library did: ``restore``, ``undo``, ``redo``, or
            ``before-restore``/``before-undo``/``before-redo`` for the snapshot a restore
            takes first; None for an ordinary snapshot.
        files_changed, lines_added, lines_removed: How much it changed from the checkpoint
            before it (text lines only; see ``changestats``); None when not recorded.
    """

    checkpoint_id: ShortId
    created_at: str
    reason: str
    tool: str | None = None
    paths: tuple[str, ...] = ()
    turn: str | None = None
    action: str | None = None
    files_changed: int | None = None
    lines_added: int | None = None
    lines_removed: int | None = None

    def to_dict(self) -> CheckpointRow:
        return CheckpointRow(
            id=self.checkpoint_id,
            created_at=self.created_at,
            reason=self.reason,
            tool=self.tool,
            paths=list(self.paths),
            turn=self.turn,
            action=self.action,
            files_changed=self.files_changed,
            lines_added=self.lines_added,
            lines_removed=self.lines_removed,
        )

    def brief_dict(self) -> CheckpointBrief:
        """The first fields of :meth:`to_dict`, as ``checkpoints turns --json`` lists them."""
        return CheckpointBrief(
            id=self.checkpoint_id,
            created_at=self.created_at,
            reason=self.reason,
            tool=self.tool,
            paths=list(self.paths),
        )


@dataclass(frozen=True)
class RestoreResult:
    """What a restore did.

    Attributes:
        before_id: The snapshot of the desk taken just before restoring (or the newest
            checkpoint when nothing had changed); ``restore(before_id)`` undoes the restore.
        target_id: The checkpoint that was restored.
        restored_id: The checkpoint recording the restored state, or None when the desk
            already matched the target.
        written: Paths created or overwritten.
        deleted: Paths removed.
        created: Of ``written``, the paths that did not exist before.
        external: Of the paths written or deleted, those changed outside the agent since the
            state it left (see ``Checkpoints.seal``); they are kept in the pre-snapshot.
        dry_run: True when nothing was done and this is the plan (``before_id`` is then the
            newest checkpoint, and ``restored_id`` None).
        action: ``restore``, ``undo`` or ``redo``.
        recovered: Set when this call finished a restore through its intent record: an
            earlier restore a crash had interrupted, or this one after another writer changed
            a file it was about to replace (the desk is then saved as found first). One line.
        kept: ``(path, why)`` for each tracked path the restore left as it is although the
            target differs there: changed outside the agent (a restore that keeps such
            changes), over the maximum file size and not held by the target, or a name the
            checkpoint holds that cannot be written (not UTF-8).
        attribution: How changes outside the agent were told apart: ``sealed``, ``declared``,
            ``unknown`` (no record of what the agent wrote: nothing could be kept) or ``none``.
    """

    before_id: str
    target_id: str
    restored_id: str | None
    written: tuple[str, ...] = field(default=())
    deleted: tuple[str, ...] = field(default=())
    created: tuple[str, ...] = field(default=())
    external: tuple[str, ...] = field(default=())
    dry_run: bool = False
    action: str = 'restore'
    recovered: str | None = None
    kept: tuple[tuple[str, str], ...] = ()
    attribution: str = 'none'

    def to_dict(self) -> RestoreForm:
        """What a restore, undo or redo did (``recovered`` is not part of it)."""
        return RestoreForm(
            action=self.action,
            dry_run=self.dry_run,
            before_id=self.before_id,
            target_id=self.target_id,
            restored_id=self.restored_id,
            written=list(self.written),
            created=list(self.created),
            deleted=list(self.deleted),
            external=list(self.external),
            kept=kept_files(self.kept),
            attribution=self.attribution,
        )


@dataclass(frozen=True)
class SnapshotResult:
    """What :meth:`Checkpoints.snapshot_with_result` did and found.

    Attributes:
        checkpoint_id: The new checkpoint, or None when nothing had changed.
        external: Paths changed outside the agent since the state it left (see ``seal``).
        basis: How that was decided: ``sealed``, ``declared``, ``unknown`` or ``none``.
        skipped: ``(path, why)`` for each tracked file left out of the snapshot, such as a
            file larger than the maximum file size.
        recovered: Set when this call first completed a restore that a crash had interrupted.
        turn_start: True when nothing changed and the checkpoint only marks the start of the
            turn the snapshot named (a turn's first snapshot always leaves one).
    """

    checkpoint_id: ShortId | None
    external: tuple[str, ...] = ()
    basis: str = 'unknown'
    skipped: tuple[tuple[str, str], ...] = ()
    recovered: str | None = None
    turn_start: bool = False

    def to_dict(self) -> SnapshotForm:
        return SnapshotForm(
            id=self.checkpoint_id, external=list(self.external), skipped=kept_files(self.skipped)
        )


@dataclass(frozen=True)
class Status:
    """The desk compared with its newest checkpoint.

    Attributes:
        newest_id: The newest checkpoint, None when there is none.
        changes: Files that differ from it (no patches; use ``diff`` for those).
        external: Paths changed outside the agent since the state it left, sorted.
        basis: ``sealed``, ``declared``, ``unknown`` (cannot tell) or ``none`` (see ``seal``).
        skipped: ``(path, why)`` for each tracked file a snapshot would leave out (too large,
            a name git cannot store, ...); such a file shows no change here.
        storage: What the repository takes on disk and what retention would drop (None
            before the first checkpoint).
    """

    newest_id: ShortId | None
    changes: tuple[FileChange, ...]
    external: tuple[str, ...]
    basis: str
    skipped: tuple[tuple[str, str], ...] = ()
    storage: StorageUse | None = None

    @property
    def clean(self) -> bool:
        return not self.changes

    def to_dict(self) -> StatusForm:
        return StatusForm(
            newest_id=self.newest_id,
            changes=[c.status_dict() for c in self.changes],
            external=list(self.external),
            basis=self.basis,
            skipped=kept_files(self.skipped),
            storage=None if self.storage is None else self.storage.to_dict(),
        )


@dataclass(frozen=True)
class StorageUse:
    """What a desk's repository takes on disk, and what its retention limits would drop now
    (see ``ops/storageuse.py``).

    Attributes:
        repository_bytes: The repository folder on disk (allocated blocks, as ``du`` counts).
        objects_bytes: Of which the objects (the checkpoints' content).
        keep, older_than, max_size: The retention limits in effect (None: not set).
        would_drop: How many checkpoints a prune to those limits would drop now (0 without
            limits; None while an unfinished restore forbids pruning).
        bytes_after: The objects' estimated size after that prune (None when it would drop
            nothing or cannot run).
    """

    repository_bytes: int
    objects_bytes: int
    keep: int | None = None
    older_than: str | None = None
    max_size: str | None = None
    would_drop: int | None = 0
    bytes_after: int | None = None

    def to_dict(self) -> StorageForm:
        return StorageForm(
            repository_bytes=self.repository_bytes,
            objects_bytes=self.objects_bytes,
            keep=self.keep,
            older_than=self.older_than,
            max_size=self.max_size,
            would_drop=self.would_drop,
            bytes_after=self.bytes_after,
        )


@dataclass(frozen=True)
class FileChange:
    """How one file differs between two states.

    Attributes:
        path: Desk-relative path.
        kind: ``added``, ``modified``, ``deleted``, ``type-changed`` (file <-> symlink) or
            ``mode-changed`` (only the executable bit changed).
        old_mode, new_mode: git modes (``0o100644``, ``0o100755``, ``0o120000``), None when absent.
        old_id, new_id: git blob ids, None when absent.
        binary: Either side is not UTF-8 text (or holds a NUL byte); no line diff is given.
        patch: A unified diff for text (None for binary, mode-only changes, files over 1 MiB,
            or when patches were not asked for).
        added_lines, removed_lines: Lines added and removed by ``patch``.
    """

    path: str
    kind: str
    old_mode: int | None = None
    new_mode: int | None = None
    old_id: str | None = None
    new_id: str | None = None
    binary: bool = False
    patch: str | None = None
    added_lines: int = 0
    removed_lines: int = 0

    def to_dict(self) -> ChangeRow:
        """Every field; the modes in octal, as git shows them (``100644``)."""
        return ChangeRow(
            path=self.path,
            kind=self.kind,
            old_mode=None if self.old_mode is None else f'{self.old_mode:06o}',
            new_mode=None if self.new_mode is None else f'{self.new_mode:06o}',
            old_id=self.old_id,
            new_id=self.new_id,
            binary=self.binary,
            patch=self.patch,
            added_lines=self.added_lines,
            removed_lines=self.removed_lines,
        )

    def status_dict(self) -> StatusChange:
        """Only the path and how it changed (a status or a log lists no more)."""
        return StatusChange(path=self.path, kind=self.kind)


@dataclass(frozen=True)
class Diff:
    """The changes from one state to another, sorted by path.

    Attributes:
        from_id: The older checkpoint; None for nothing at all (what the oldest checkpoint
            changed: every file it holds is added).
        to_id: The newer checkpoint, or None for the desk as it is now.
        changes: One entry per changed file.
    """

    from_id: ShortId | None
    to_id: ShortId | None
    changes: tuple[FileChange, ...]

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(change.path for change in self.changes)

    def to_dict(self) -> DiffForm:
        return {
            'from': self.from_id,
            'to': self.to_id,
            'changes': [change.to_dict() for change in self.changes],
        }


@dataclass(frozen=True)
class LogEntry:
    """One checkpoint in a log and the files that differ from the checkpoint before it.

    Attributes:
        checkpoint: The checkpoint (id, time, reason and metadata).
        changed: Paths whose content differs from the previous checkpoint (for the first
            checkpoint: every file it holds), sorted.
        action: What made it when the library made it: ``restore``, ``undo``, ``redo`` or
            ``before-restore``/``before-undo``/``before-redo`` (None for ordinary snapshots).
        changes: For each path of ``changed``, how it changed (``kind`` and the entries; no
            patches).
        turn_label: The prompt of the checkpoint's turn (its label, as stored), when found.
    """

    checkpoint: Checkpoint
    changed: tuple[str, ...]
    action: str | None = None
    changes: tuple[FileChange, ...] = ()
    turn_label: str | None = None

    def to_dict(self) -> LogEntryForm:
        c = self.checkpoint
        return LogEntryForm(
            id=c.checkpoint_id,
            created_at=c.created_at,
            reason=c.reason,
            tool=c.tool,
            paths=list(c.paths),
            turn=c.turn,
            turn_label=self.turn_label,
            action=self.action,
            changed=list(self.changed),
            changes=[change.status_dict() for change in self.changes],
        )


@dataclass(frozen=True)
class Recovery:
    """What the completion of an interrupted restore did.

    Attributes:
        label: The checkpoint id the interrupted restore was given.
        target_id: The checkpoint it restored.
        before_id: The snapshot taken before it started; ``restore(before_id)`` undoes it.
        restored_id: The checkpoint recording the completed restore (None when the crash came
            after it had been recorded).
        saved_id: A snapshot of the desk as found, taken when some planned path held content
            that was neither its old state nor its target; otherwise None.
        written: Paths written by the completion.
        deleted: Paths deleted by the completion.
        message: One line for people.
        what: What was completed, as the message words it (``an interrupted restore``, ...).
    """

    label: str
    target_id: str
    before_id: str
    restored_id: str | None
    saved_id: str | None
    written: tuple[str, ...]
    deleted: tuple[str, ...]
    message: str
    what: str = 'an interrupted restore'

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class TurnInfo:
    """One turn as recorded in the repository.

    Attributes:
        turn_id: The turn's id.
        label: What the turn was about, as given when it was opened ('' when none).
        checkpoints: Its checkpoints, newest first (like :meth:`Checkpoints.list`).
    """

    turn_id: str
    label: str
    checkpoints: tuple[Checkpoint, ...]

    @property
    def first(self) -> Checkpoint:
        """The turn's first checkpoint: the desk as it was before the turn wrote anything."""
        return self.checkpoints[-1]

    @property
    def started_at(self) -> str:
        return self.first.created_at

    def to_dict(self) -> TurnForm:
        """The turn with its checkpoints in brief (see :meth:`Checkpoint.brief_dict`)."""
        return TurnForm(
            turn_id=self.turn_id,
            label=self.label,
            started_at=self.started_at,
            first_checkpoint=self.first.checkpoint_id,
            checkpoints=[c.brief_dict() for c in self.checkpoints],
        )


@dataclass(frozen=True)
class PruneResult:
    """What a prune did (or, with ``dry_run``, would do)."""

    checkpoints_before: int
    checkpoints_after: int
    bytes_before: int
    bytes_after: int
    pruned: tuple[ShortId, ...] = field(default=())
    oldest_kept: ShortId | None = None
    dry_run: bool = False

    @property
    def pruned_count(self) -> int:
        return self.checkpoints_before - self.checkpoints_after

    def to_dict(self) -> PruneForm:
        return PruneForm(
            dry_run=self.dry_run,
            checkpoints_before=self.checkpoints_before,
            checkpoints_after=self.checkpoints_after,
            bytes_before=self.bytes_before,
            bytes_after=self.bytes_after,
            pruned=list(self.pruned),
            oldest_kept=self.oldest_kept,
        )


def checkpoint_from(info: CommitInfo) -> Checkpoint:
    """The public view of a commit: id, time, reason and the metadata its trailers carry."""
    values = metadata.trailer_values(info.message)
    meta = metadata.parse(info.message)
    stats = changestats.parse(values.get(changestats.KEY, [''])[-1])
    actions = values.get(metadata.ACTION)
    return Checkpoint(
        info.short_id,
        info.created_at,
        info.subject,
        meta.tool,
        meta.paths,
        meta.turn,
        actions[-1] if actions else None,
        stats.files if stats else None,
        stats.added if stats else None,
        stats.removed if stats else None,
    )
