"""``checkpoints mcp``: a Model Context Protocol server over stdio, for any MCP-capable agent.

Built on the official ``mcp`` Python SDK, an optional extra (``pip install
'trading-checkpoints[mcp]'``); this module imports without it and :func:`build_server` says how
to install it when it is missing. The server serves one workspace (the standard layout); every
tool takes an optional ``desk`` (default: the desk the server was started with).

Tools (arguments are JSON-schema'd from the signatures below; results are structured):

- ``list_desks``, ``list_checkpoints``, ``list_turns``: read only.
- ``snapshot``: take a checkpoint now; ``turn_id`` (the agent's message id) groups the
  checkpoints of one turn so ``restore_turn`` can rewind it whole.
- ``restore`` (``dry_run`` to preview), ``restore_turn``: put files back; always undoable.
- ``diff``, ``show_file``, ``undo``: served when the library has ``Checkpoints.diff``, ``.show``
  and ``.undo``; otherwise they answer with a tool error saying so.

Failures (an unknown id, a missing desk, a bad argument) come back as tool errors whose text
names the problem; the server itself keeps running.
"""

import base64
import dataclasses
import inspect
import sys
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Annotated, Any, TypeVar

try:  # pydantic reads TypedDicts from typing_extensions on Python < 3.12
    from typing_extensions import TypedDict
except ImportError:  # pragma: no cover - typing_extensions comes with the mcp extra
    from typing import TypedDict

from .checkpoints import Checkpoint, Checkpoints
from .errors import CheckpointError
from .turns import snapshot_in_turn
from .workspace import Workspace

INSTALL_HINT = (
    "the MCP server needs the optional 'mcp' extra: pip install 'trading-checkpoints[mcp]'"
)

SERVER_NAME = 'trading-checkpoints'

INSTRUCTIONS = """\
Checkpoints of an agent's working files (desks in a workspace). Take a `snapshot` before risky \
edits; `list_checkpoints` / `list_turns` to see history; `diff` and `show_file` to inspect; \
`restore` (try `dry_run` first) or `undo` to go back. Every restore snapshots the current state \
first, so it can be undone too. Only the tracked paths (Memory.md, memory/, notes/, \
skills/agent/ by default) are ever read or written."""

F = TypeVar('F', bound=Callable[..., Any])


class CheckpointRow(TypedDict):
    id: str
    created_at: str
    reason: str
    tool: str | None
    paths: list[str]
    turn: str | None


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


class SnapshotResult(TypedDict):
    desk: str
    checkpoint_id: str | None
    changed: bool


class RestoreOutcome(TypedDict):
    desk: str
    dry_run: bool
    target_id: str | None
    before_id: str | None
    restored_id: str | None
    written: list[str]
    deleted: list[str]
    undo_hint: str | None


class DiffOutcome(TypedDict):
    desk: str
    from_id: str | None
    to_id: str | None
    diff: Any


class FileAtCheckpoint(TypedDict):
    desk: str
    checkpoint_id: str
    path: str
    exists: bool
    encoding: str
    content: str | None


class UndoOutcome(TypedDict):
    desk: str
    result: Any


# -- adapters to the library -----------------------------------------------------------------
# diff, show and undo (and restore's dry_run and paths) come from a newer library version; the
# tools find them at call time and say clearly when they are not there.


def _missing(feature: str) -> CheckpointError:
    return CheckpointError(
        f'{feature} is not available in this version of trading_checkpoints '
        '(Checkpoints has no such method yet)'
    )


def _accepts(function: Callable[..., Any], name: str) -> bool:
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False
    return name in parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()
    )


def jsonable(value: Any) -> Any:
    """A JSON-ready copy of whatever a library call returned."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, bytes):
        try:
            return value.decode('utf-8')
        except UnicodeDecodeError:
            return {'base64': base64.b64encode(value).decode('ascii')}
    if isinstance(value, Path):
        return value.as_posix()
    to_dict = getattr(value, 'to_dict', None)
    if callable(to_dict):
        return jsonable(to_dict())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    return str(value)


def call_diff(
    cps: Checkpoints, from_id: str | None, to_id: str | None, paths: list[str] | None
) -> Any:
    diff = getattr(cps, 'diff', None)
    if diff is None:
        raise _missing('diff')
    if from_id is None:
        newest = cps.list(1)
        if not newest:
            raise CheckpointError(f'no checkpoints yet in {cps.repository_directory}')
        from_id = newest[0].checkpoint_id
    kwargs: dict[str, Any] = {}
    if paths:
        if not _accepts(diff, 'paths'):
            raise _missing('diff limited to paths')
        kwargs['paths'] = paths
    return diff(from_id, to_id, **kwargs)


def call_show(cps: Checkpoints, checkpoint_id: str, path: str) -> Any:
    show = getattr(cps, 'show', None)
    if show is None:
        raise _missing('show')
    return show(checkpoint_id, path)


def call_undo(cps: Checkpoints, *, dry_run: bool = False, force: bool = False) -> Any:
    undo = getattr(cps, 'undo', None)
    if undo is None:
        raise _missing('undo')
    kwargs = {name: True for name, wanted in (('dry_run', dry_run), ('force', force)) if wanted}
    for name in kwargs:
        if not _accepts(undo, name):
            raise _missing(f'undo {name}')
    return undo(**kwargs)


def call_restore(
    cps: Checkpoints, checkpoint_id: str, *, dry_run: bool = False, paths: list[str] | None = None
) -> Any:
    kwargs: dict[str, Any] = {}
    if dry_run:
        kwargs['dry_run'] = True
    if paths:
        kwargs['paths'] = paths
    if not kwargs:
        return cps.restore_with_result(checkpoint_id)
    for function in (cps.restore_with_result, cps.restore):
        if all(_accepts(function, name) for name in kwargs):
            return function(checkpoint_id, **kwargs)
    raise _missing(' and '.join(f'restore {name}' for name in kwargs))


# -- shaping results -----------------------------------------------------------------------


def checkpoint_row(item: Checkpoint) -> CheckpointRow:
    return CheckpointRow(
        id=item.checkpoint_id,
        created_at=item.created_at,
        reason=item.reason,
        tool=item.tool,
        paths=list(item.paths),
        turn=item.turn,
    )


def restore_outcome(desk: str, result: Any, *, dry_run: bool, target: str) -> RestoreOutcome:
    if isinstance(result, str):  # restore() returns the pre-restore snapshot's id
        before: str | None = result
        written: list[str] = []
        deleted: list[str] = []
        target_id, restored = target, None
    else:
        before = getattr(result, 'before_id', None)
        target_id = getattr(result, 'target_id', None) or target
        restored = getattr(result, 'restored_id', None)
        written = [str(p) for p in getattr(result, 'written', ()) or ()]
        deleted = [str(p) for p in getattr(result, 'deleted', ()) or ()]
    return RestoreOutcome(
        desk=desk,
        dry_run=dry_run,
        target_id=target_id,
        before_id=before,
        restored_id=restored,
        written=written,
        deleted=deleted,
        undo_hint=None if dry_run or not before else f'restore {before}',
    )


def file_at_checkpoint(desk: str, checkpoint_id: str, path: str, value: Any) -> FileAtCheckpoint:
    content = getattr(value, 'content', value)
    if content is None:
        return FileAtCheckpoint(
            desk=desk,
            checkpoint_id=checkpoint_id,
            path=path,
            exists=False,
            encoding='none',
            content=None,
        )
    if isinstance(content, str):
        return FileAtCheckpoint(
            desk=desk,
            checkpoint_id=checkpoint_id,
            path=path,
            exists=True,
            encoding='utf-8',
            content=content,
        )
    data = bytes(content)
    try:
        return FileAtCheckpoint(
            desk=desk,
            checkpoint_id=checkpoint_id,
            path=path,
            exists=True,
            encoding='utf-8',
            content=data.decode('utf-8'),
        )
    except UnicodeDecodeError:
        return FileAtCheckpoint(
            desk=desk,
            checkpoint_id=checkpoint_id,
            path=path,
            exists=True,
            encoding='base64',
            content=base64.b64encode(data).decode(),
        )


# -- the server ----------------------------------------------------------------------------


def _sdk() -> tuple[Any, type[Exception], Any]:
    """The SDK's server class, its ToolError and ToolAnnotations (mcp 2.x, else 1.x)."""
    try:
        from mcp.server.mcpserver import MCPServer as Server
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError:
        try:
            from mcp.server.fastmcp import FastMCP as Server
            from mcp.server.fastmcp.exceptions import ToolError
        except ImportError as error:
            raise CheckpointError(INSTALL_HINT) from error
    from mcp.types import ToolAnnotations

    return Server, ToolError, ToolAnnotations


def build_server(workspace: Path, default_desk: str = 'main') -> Any:
    """The MCP server for one workspace; ``.run()`` serves it over stdio."""
    Server, ToolError, ToolAnnotations = _sdk()
    from pydantic import Field

    root = Workspace(workspace)
    root.desk(default_desk)  # refuses a bad default desk name early

    def tool_errors(function: F) -> F:
        @wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return function(*args, **kwargs)
            except CheckpointError as error:
                raise ToolError(str(error)) from error
            except OSError as error:
                where = f': {error.filename}' if error.filename else ''
                raise ToolError(f'{error.strerror or error}{where}') from error

        return wrapper  # type: ignore[return-value]

    server = Server(SERVER_NAME, instructions=INSTRUCTIONS, log_level='WARNING')
    read_only = ToolAnnotations(readOnlyHint=True, openWorldHint=False)
    writes = ToolAnnotations(readOnlyHint=False, destructiveHint=False, openWorldHint=False)
    rewinds = ToolAnnotations(readOnlyHint=False, destructiveHint=True, openWorldHint=False)

    DeskArg = Annotated[
        str | None,
        Field(description=f'Desk name (a folder in <workspace>/desks); default {default_desk!r}.'),
    ]
    Limit = Annotated[int, Field(ge=0, le=10_000, description='At most this many.')]
    Paths = Annotated[
        list[str] | None,
        Field(description='Only these desk-relative paths (files or folders).'),
    ]

    def named(desk: str | None) -> tuple[str, Checkpoints]:
        name = default_desk if desk is None else desk
        return name, root.desk(name)

    @server.tool(annotations=read_only)
    @tool_errors
    def list_desks() -> DeskList:
        """List the desks of the workspace (folders in desks/ and desks with checkpoints)."""
        return DeskList(workspace=str(root.root), default_desk=default_desk, desks=root.desks())

    @server.tool(annotations=read_only)
    @tool_errors
    def list_checkpoints(desk: DeskArg = None, limit: Limit = 20) -> CheckpointList:
        """List a desk's checkpoints, newest first, with their reason, tool, paths and turn."""
        name, cps = named(desk)
        return CheckpointList(desk=name, checkpoints=[checkpoint_row(c) for c in cps.list(limit)])

    @server.tool(annotations=read_only)
    @tool_errors
    def list_turns(desk: DeskArg = None, limit: Limit = 20) -> TurnList:
        """List agent turns, newest first, each with its checkpoints (newest first)."""
        name, cps = named(desk)
        rows = [
            TurnRow(
                turn_id=t.turn_id,
                label=t.label,
                started_at=t.started_at,
                first_checkpoint=t.first.checkpoint_id,
                checkpoints=[checkpoint_row(c) for c in t.checkpoints],
            )
            for t in cps.turns(limit)
        ]
        return TurnList(desk=name, turns=rows)

    @server.tool(annotations=writes)
    @tool_errors
    def snapshot(
        reason: Annotated[str, Field(description='Why, e.g. "before rewriting notes/plan.md".')],
        desk: DeskArg = None,
        turn_id: Annotated[
            str | None,
            Field(
                description='Your current turn or message id: checkpoints of one turn are grouped, '
                'and restore_turn rewinds to before its first snapshot.'
            ),
        ] = None,
        turn_label: Annotated[
            str | None, Field(description="What the turn is about (the user's request).")
        ] = None,
    ) -> SnapshotResult:
        """Take a checkpoint of the desk's tracked files now, e.g. before editing them.

        Without turn_id, no checkpoint is taken when nothing changed. With turn_id, the first
        snapshot of that turn always records a checkpoint, so the turn can be rewound whole.
        """
        name, cps = named(desk)
        if not cps.desk_directory.is_dir():
            raise CheckpointError(f'no desk {name!r} (expected the folder {cps.desk_directory})')
        if turn_id is None:
            new_id = cps.snapshot(reason, tool='mcp:snapshot')
        else:
            new_id = snapshot_in_turn(
                cps, turn_id, reason, label=turn_label or '', tool='mcp:snapshot'
            )
        return SnapshotResult(desk=name, checkpoint_id=new_id, changed=new_id is not None)

    @server.tool(annotations=rewinds)
    @tool_errors
    def restore(
        checkpoint_id: Annotated[str, Field(description='Checkpoint id (short or full).')],
        desk: DeskArg = None,
        dry_run: Annotated[
            bool, Field(description='Only report what would be written and deleted.')
        ] = False,
        paths: Paths = None,
    ) -> RestoreOutcome:
        """Put the desk's tracked files back as they were at a checkpoint.

        The current state is snapshotted first: restoring `before_id` undoes this.
        """
        name, cps = named(desk)
        result = call_restore(cps, checkpoint_id, dry_run=dry_run, paths=paths)
        return restore_outcome(name, result, dry_run=dry_run, target=checkpoint_id)

    @server.tool(annotations=rewinds)
    @tool_errors
    def restore_turn(
        turn_id: Annotated[str, Field(description='Turn id, as listed by list_turns.')],
        desk: DeskArg = None,
        dry_run: Annotated[
            bool, Field(description='Only report what would be written and deleted.')
        ] = False,
    ) -> RestoreOutcome:
        """Rewind the desk to the state before an agent turn began (later turns too)."""
        name, cps = named(desk)
        result = cps.restore_turn(turn_id, dry_run=dry_run)
        return restore_outcome(name, result, dry_run=dry_run, target=result.target_id)

    @server.tool(annotations=read_only)
    @tool_errors
    def diff(
        from_id: Annotated[
            str | None, Field(description='Older checkpoint (default: the newest).')
        ] = None,
        to_id: Annotated[
            str | None, Field(description='Newer checkpoint (default: the files now).')
        ] = None,
        desk: DeskArg = None,
        paths: Paths = None,
    ) -> DiffOutcome:
        """Show what changed between two checkpoints, or between one and the files now."""
        name, cps = named(desk)
        result = call_diff(cps, from_id, to_id, paths)
        return DiffOutcome(desk=name, from_id=from_id, to_id=to_id, diff=jsonable(result))

    @server.tool(annotations=read_only)
    @tool_errors
    def show_file(
        checkpoint_id: Annotated[str, Field(description='Checkpoint id (short or full).')],
        path: Annotated[str, Field(description='Desk-relative path, e.g. "Memory.md".')],
        desk: DeskArg = None,
    ) -> FileAtCheckpoint:
        """The content of one file as it was at a checkpoint (base64 when not UTF-8 text)."""
        name, cps = named(desk)
        return file_at_checkpoint(name, checkpoint_id, path, call_show(cps, checkpoint_id, path))

    @server.tool(annotations=rewinds)
    @tool_errors
    def undo(
        desk: DeskArg = None,
        dry_run: Annotated[
            bool, Field(description='Only report what would be written and deleted.')
        ] = False,
        force: Annotated[
            bool, Field(description='Overwrite files changed outside the agent.')
        ] = False,
    ) -> UndoOutcome:
        """Undo the newest change to the desk's tracked files (itself undoable)."""
        name, cps = named(desk)
        return UndoOutcome(desk=name, result=jsonable(call_undo(cps, dry_run=dry_run, force=force)))

    return server


def serve(workspace: Path, default_desk: str = 'main') -> None:
    """Runs the server over stdio until the client closes the connection."""
    server = build_server(workspace, default_desk)
    if sys.stdin.isatty():
        print(
            f'checkpoints MCP server for {workspace} (desk {default_desk!r}): waiting for an MCP '
            'client on stdin; register it in your agent instead of running it here (Ctrl-C stops)',
            file=sys.stderr,
        )
    server.run()
