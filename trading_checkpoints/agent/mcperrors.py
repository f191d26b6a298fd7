"""What the MCP server says when a tool call fails: one line a model can act on.

The library's messages are written for every surface; where one names a command-line verb
(``checkpoints turns``), the server says it with the MCP tool that does the same
(``list_turns``), built from the error kind's fields, never by editing the message. A refused
restore names the tool's arguments that choose. The SDK's argument validation (pydantic's
several lines ending in a URL) becomes one line naming the argument, and an argument the tool
does not take is refused rather than ignored (a mistyped ``dryrun`` must not restore for real).
Nothing here imports the SDK.
"""

from __future__ import annotations

import difflib
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..errors import (
    CheckpointError,
    ExternalChangesError,
    MissingDeskError,
    NoCheckpointsError,
    PrunedCheckpointError,
    UnknownCheckpointError,
    UnknownTurnError,
)

_HEX_ID = re.compile(r'\s*[0-9a-fA-F]{4,40}\s*')
_SHOWN = 60  # characters of a rejected value quoted back


# What lets a tool refused over files changed outside the agent go ahead, by the choice the
# refusal names (``ExternalChangesError.overrides``): the argument that makes it, and its effect.
OVERRIDES = {
    'restore': {
        'keep': "on_external='keep' keeps them and reverts only the agent's changes",
        'overwrite': "on_external='overwrite' overwrites them, keeping them in the pre-snapshot",
    },
    'restore_turn': {
        'keep': "on_external='keep' leaves them as they are",
        'overwrite': 'force=true puts them back as before the turn, keeping what it overwrites '
        'in the pre-snapshot',
    },
    'undo': {
        'keep': 'keep_external=true leaves those files as they are',
        'overwrite': 'force=true puts the older version back, keeping what it overwrites in the '
        'pre-snapshot',
    },
    'redo': {
        'keep': 'keep_external=true leaves those files as they are',
        'overwrite': 'force=true puts the undone version back, keeping what it overwrites in '
        'the pre-snapshot',
    },
}


def tool_error_text(error: CheckpointError, tool: str, desk: str) -> str:
    """The text of a failed call of ``tool`` on ``desk``."""
    if isinstance(error, UnknownTurnError):
        return f'no turn {error.turn!r} on desk {desk!r}; list_turns lists its turns'
    if isinstance(error, PrunedCheckpointError):
        when = time.strftime('%Y-%m-%d %H:%M', time.localtime(error.pruned_at))
        return (
            f'checkpoint {error.checkpoint} of desk {desk!r} was pruned on {when} (it was taken '
            f'{error.taken_at}); list_checkpoints lists the ones kept'
        )
    if isinstance(error, UnknownCheckpointError):
        given = error.checkpoint
        if not isinstance(given, str) or not _HEX_ID.fullmatch(given):
            return (
                f'{given!r} is not a checkpoint id (4 to 40 hex digits, as list_checkpoints '
                'gives them)'
            )
        return f'{error}; list_checkpoints lists the ids of desk {desk!r}'
    if isinstance(error, ExternalChangesError):
        choices = OVERRIDES.get(tool, {})
        said = [choices[choice] for choice in ('keep', 'overwrite') if choice in error.overrides]
        return f'{error} ({"; ".join(said)})' if said else str(error)
    if isinstance(error, NoCheckpointsError) and tool != 'snapshot':
        return f'{error}; snapshot takes the first'
    return str(error)


def missing_desk(
    name: str, workspace: object, desks: Sequence[str], folder: object
) -> MissingDeskError:
    """The one error for a desk with neither a folder nor checkpoints, in every tool."""
    there = f'its desks: {", ".join(desks)}' if desks else 'it has no desks yet'
    return MissingDeskError(
        f'no desk {name!r} in workspace {workspace} ({there}; list_desks lists them)',
        desk=folder,
        name=name,
    )


def validation_text(tool: str, errors: Iterable[Mapping[str, Any]]) -> str:
    """pydantic's validation errors of a call's arguments, as one line naming each argument."""
    parts = []
    for item in errors:
        where = '.'.join(str(part) for part in item.get('loc', ())) or '?'
        if item.get('type') == 'missing':
            parts.append(f'missing argument {where!r}')
            continue
        message = str(item.get('msg', 'invalid')).replace('\n', ' ')
        parts.append(f'invalid argument {where!r}: {message[:1].lower()}{message[1:]}')
        if 'input' in item:
            shown = repr(item['input'])
            parts[-1] += f' (got {shown if len(shown) <= _SHOWN else shown[:_SHOWN] + "..."})'
    return f'{tool}: {"; ".join(parts) or "invalid arguments"}'


def unknown_arguments(tool: str, given: Iterable[str], known: Sequence[str]) -> str | None:
    """A line refusing the arguments ``tool`` does not take, or None when it takes them all."""
    unknown = [name for name in given if name not in known]
    if not unknown:
        return None
    parts = []
    for name in unknown:
        close = difflib.get_close_matches(name, known, n=1)
        parts.append(f'{name!r}' + (f' (did you mean {close[0]!r}?)' if close else ''))
    takes = ', '.join(known) if known else 'no arguments'
    return f'{tool} takes no argument {", ".join(parts)}; nothing was done (it takes: {takes})'
