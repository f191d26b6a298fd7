"""What a restore is asked to do, and what the commits it makes record.

A :class:`Request` is the one input of the restore pipeline (``restore.py``): a restore, a
partial restore, undo, redo, ``restore_turn``, the completion of an interrupted restore and
clone's first checkout differ only in it. Its ``on_external`` says what becomes of files
changed outside the agent (:data:`POLICIES`). The commits a restore makes carry trailers, read
back by undo and redo (``undo.py`` says how): ``Checkpoint-Action`` (:data:`RESTORE`,
:data:`UNDO`, :data:`REDO`, or ``before-`` one of them on the pre-snapshot),
``Checkpoint-Target``, ``Checkpoint-Undo-Of`` and ``Checkpoint-Redo-Of``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..core.trees import FileEntry
from ..desk.checkout import Plan
from ..errors import InvalidArgumentError
from ..store import metadata
from .results import RestoreResult

TARGET = 'Checkpoint-Target'
UNDO_OF = 'Checkpoint-Undo-Of'
REDO_OF = 'Checkpoint-Redo-Of'

RESTORE, UNDO, REDO = 'restore', 'undo', 'redo'


def compose(subject: str, pairs: Iterable[tuple[str, str]]) -> str:
    """A commit message: a subject line (neutralized, see :mod:`metadata`) and trailers."""
    return metadata.message(metadata.storable(subject, 'the subject', 'subject'), pairs)


# What a restore does with paths changed outside the agent (``Request.on_external``).
OVERWRITE = 'overwrite'  # put them back to the target too (they stay in the pre-snapshot)
KEEP = 'keep'  # leave them as they are, revert only the agent's changes
REFUSE = 'refuse'  # change nothing at all if any would be touched
CONFLICTS = 'conflicts'  # undo/redo: keep unrelated ones, refuse where the step changed them
POLICIES = (OVERWRITE, KEEP, REFUSE, CONFLICTS)


@dataclass
class Request:
    """What to restore.

    Attributes:
        target: The commit whose files are put back (full hex id).
        label: The id as the caller named it, for messages.
        action: ``restore``, ``undo`` or ``redo`` (kept as a trailer).
        selection: Restore only these desk-relative files or folders.
        overlay: Put back exactly these entries (None: delete) and leave the rest of the desk
            as it is; used to complete a restore from its journal, and to rewind a turn.
        others: Paths of the overlay that someone else changed since (a turn's rewind): the
            policy decides them as it decides paths changed outside the agent.
        subject: The restored commit's subject (default ``restored <label>``).
        trailers: Extra ``(key, value)`` trailers of the restored commit.
        message: The whole restored commit message (overrides subject and trailers).
        before_subject: The pre-snapshot's subject.
        record_before: Take the pre-snapshot; off only for a desk with no tracked files yet
            (a clone's first checkout), where there is nothing to keep.
        pids: Processes that worked on this restore before (named in the journal, so their
            temporary files are found if this one is killed too).
        expected: For completing a journal: each path's entry before and after the restore.
            The desk is snapshotted first only when some path holds neither (someone else
            wrote it): the commits the journal names already hold everything else.
        dry_run: Change nothing; return the plan.
        on_external: What to do with paths changed outside the agent (see ``POLICIES``).
    """

    target: bytes
    label: str
    action: str = RESTORE
    selection: tuple[str, ...] = ()
    overlay: dict[str, FileEntry | None] | None = None
    others: frozenset[str] = frozenset()
    subject: str | None = None
    trailers: Sequence[tuple[str, str]] = ()
    message: str | None = None
    before_subject: str | None = None
    dry_run: bool = False
    on_external: str = OVERWRITE
    record_before: bool = True
    pids: tuple[int, ...] = ()
    expected: dict[str, tuple[FileEntry | None, FileEntry | None]] | None = None


@dataclass
class Outcome:
    """A restore's result, and the pre-snapshot it committed (None when the desk was unchanged)."""

    result: RestoreResult
    saved: bytes | None = None
    plan: Plan = field(default_factory=lambda: Plan([], []))


def policy(value: str | None, default: str) -> str:
    """The ``on_external`` policy a caller asked for (``default`` when None), checked."""
    if value is None:
        return default
    if value not in (OVERWRITE, KEEP, REFUSE):
        raise InvalidArgumentError(
            f"on_external must be 'overwrite', 'keep' or 'refuse', not {value!r}",
            name='on_external',
            value=value,
        )
    return value


def undo_policy(force: bool, keep_external: bool) -> str:
    """The policy of an undo or redo: ``force`` overwrites, ``keep_external`` keeps, and by
    default it refuses where the step changed a file that was changed outside the agent."""
    if force and keep_external:
        raise InvalidArgumentError(
            'choose force or keep_external, not both', name='keep_external', value=keep_external
        )
    if force:
        return OVERWRITE
    return KEEP if keep_external else CONFLICTS
