"""A turn id as checkpoints keep it: one word (the ``Checkpoint-Turn`` trailer is one line).

Its own module: the hooks check the turn a session's state file names before anything that
reads a repository is imported.
"""

from __future__ import annotations

from ..errors import InvalidArgumentError


def check_turn_id(turn_id: object, what: str = 'turn id') -> str:
    """Refuses a turn id that is not one non-empty word (it is kept as a one-line trailer)."""
    if not isinstance(turn_id, str) or not turn_id.strip():
        raise InvalidArgumentError(
            f'{what} must be a non-empty string, not {turn_id!r}',
            name=what.replace(' ', '_'),
            value=turn_id,
        )
    if len(turn_id.split()) != 1 or turn_id != turn_id.strip():
        raise InvalidArgumentError(
            f'{what} {turn_id!r} must be one word (no spaces or line breaks)',
            name=what.replace(' ', '_'),
            value=turn_id,
        )
    return turn_id
