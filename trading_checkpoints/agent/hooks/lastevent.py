"""What the hook did last, per harness, for ``checkpoints hook doctor``.

Two records per harness in the workspace's hook state folder (``.checkpoints/hooks/``): the last
event that did something (``last-handled.<harness>``) and the last that failed, with its error
text (``last-failed.<harness>``). A harness run without a terminal (``claude -p``) shows a failing
hook's message to nobody, so doctor is where a person reads it. Each record is one small JSON
object written whole by ``write_atomically`` (two hooks running at once never mix their
records; neither is flushed: they are notes for people), and a hook never fails for them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ...core import repofiles
from ...core.durability import write_atomically
from ...errors import CheckpointError
from .place import state_folder

HANDLED, FAILED = 'handled', 'failed'
MAX_BYTES = 64 * 1024


@dataclass(frozen=True)
class LastEvent:
    """One record: when (ISO 8601, UTC), which event and tool, what came of it."""

    time: str
    event: str
    tool: str
    outcome: str


def record_name(harness: str, kind: str) -> str:
    return f'last-{kind}.{harness}'


def record_event(workspace: Path, harness: str, event: str, tool: str | None, outcome: str) -> None:
    """Keeps what an event did (best effort)."""
    _record(workspace, harness, HANDLED, LastEvent(_now(), event, tool or '', outcome))


def record_failure(workspace: Path, harness: str, event: str, tool: str | None, error: str) -> None:
    """Keeps why an event failed, with the error's text (best effort)."""
    _record(workspace, harness, FAILED, LastEvent(_now(), event, tool or '', error))


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec='milliseconds')


def _record(workspace: Path, harness: str, kind: str, last: LastEvent) -> None:
    record = {
        'time': last.time,
        'event': last.event[:100],
        'tool': last.tool[:100],
        'outcome': last.outcome[:2000],
    }
    try:
        folder = state_folder(workspace, create=True)
        data = json.dumps(record, ensure_ascii=True).encode()
        write_atomically(folder / record_name(harness, kind), data, durable=False)
    except (OSError, CheckpointError):
        pass


def last_event(workspace: Path, harness: str, kind: str = HANDLED) -> LastEvent | None:
    """The last event of ``harness`` that was handled (or, with ``FAILED``, that failed), as
    kept; None when none is on record (or the record is damaged)."""
    try:
        folder = state_folder(workspace, create=False)
        data = repofiles.read(repofiles.RepoFile.of(folder / record_name(harness, kind)), MAX_BYTES)
        record = json.loads(data) if data is not None else None
    except (ValueError, CheckpointError):
        return None
    if not isinstance(record, dict):
        return None
    return LastEvent(*(str(record.get(key, '')) for key in ('time', 'event', 'tool', 'outcome')))
