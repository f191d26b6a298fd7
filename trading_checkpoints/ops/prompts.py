"""A turn's prompt: the label (the user's message, one line, as stored) a turn's first
checkpoint carries in its message (``Turn label: ...``), read back by the verbs that print it
beside the turn's id (show, log, list --turns, blame, browse)."""

from __future__ import annotations

from collections.abc import Collection
from contextlib import closing
from pathlib import Path

from ..store import metadata
from .listing import walk

LABEL_PREFIX = 'Turn label: '


def label_of(message: str) -> str | None:
    """The turn label a checkpoint's message carries (a turn's first checkpoint), or None."""
    for line in message.splitlines()[1:]:
        if line.startswith(LABEL_PREFIX):
            return line[len(LABEL_PREFIX) :].strip()
    return None


def labels(
    repository: Path, wanted: Collection[str], start: bytes | None = None, lookback: int = 200
) -> dict[str, str]:
    """The labels (the user's prompt, as stored) of the turns ``wanted``: each is read from the
    turn's first checkpoint, found walking the branch from ``start`` (default: the newest
    checkpoint) back. A turn is given up once ``lookback`` checkpoints went by since its last
    one (as ``turns.started`` judges a turn new); a turn without a label is left out."""
    missing = {turn for turn in wanted if turn}
    found: dict[str, str] = {}
    last: dict[str, int] = {}
    with closing(walk(repository, start)) as commits:
        for position, info in enumerate(commits):
            if not missing:
                break
            turn = metadata.parse(info.message).turn
            if turn in missing:
                last[turn] = position
                label = label_of(info.message)
                if label is not None:
                    found[turn] = label
                    missing.discard(turn)
            missing -= {t for t in missing if t in last and position - last[t] > lookback}
    return found
