"""``checkpoints mcp``: a Model Context Protocol server over stdio, for any MCP-capable agent.

Built on the official ``mcp`` Python SDK, an optional extra (``pip install
'trading-checkpoints[mcp]'``); this module imports without it and :func:`build_server` says how
to install it when it is missing. The server serves one workspace (the standard layout); every
tool takes an optional ``desk`` (default: the desk the server was started with).

Tools (arguments are JSON-schema'd from the signatures below; results are structured, typed in
:mod:`trading_checkpoints.agent.mcpresults`):

- read only: ``list_desks``, ``list_checkpoints``, ``list_turns``, ``status``, ``log``,
  ``diff`` (``paths`` limits it), ``show_file``, ``blame`` (who wrote each line),
  ``list_protected`` (the desk's policy: there is no tool to change it).
- writing: ``snapshot`` (``turn_id``, the agent's message id, groups the checkpoints of one
  turn so ``restore_turn`` can rewind it whole), ``seal`` (the state the agent left).
- rewinding, always undoable: ``restore`` (``dry_run`` to preview, ``paths``),
  ``restore_turn``, ``undo``, ``redo``; each refuses (``ProtectedPathError``) to change a
  path the desk protects.
- ``prune``: a dry run unless ``dry_run`` is false.

Failures (an unknown id, a missing desk, a bad argument) come back as tool errors: one line
naming the problem and the tool (or argument) that helps, see :mod:`.mcperrors`; one rule for a
desk that does not exist, in every tool. The server itself keeps running, and reports the
package's version to the client.
"""

import importlib
import sys
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from ..errors import CheckpointError, InvalidArgumentError, MissingDeskError, NoCheckpointsError
from ..workspace import Workspace

if TYPE_CHECKING:
    from ..checkpoints import Checkpoints
    from .mcpresults import PruneLimits

INSTALL_HINT = (
    "the MCP server needs the optional 'mcp' extra: pip install 'trading-checkpoints[mcp]'"
)

SERVER_NAME = 'trading-checkpoints'
DISTRIBUTION = 'trading-checkpoints'

INSTRUCTIONS = """\
Checkpoints of an agent's working files (desks in a workspace). Take a `snapshot` before risky \
edits (pass your message id as `turn_id`) and `seal` once your write is done; `status` shows \
what changed since the newest checkpoint, `list_checkpoints` / `list_turns` / `log` the history; \
`diff`, `show_file` and `blame` (who wrote each line) inspect it; `restore` (try `dry_run` \
first), `restore_turn`, `undo` and `redo` go back and forth. Every restore snapshots the current \
state first, so it can be undone too. `prune` drops old checkpoints (a dry run unless \
dry_run=false). Only the tracked paths (Memory.md, memory/, notes/, skills/agent/ by default) \
are ever read or written."""

F = TypeVar('F', bound=Callable[..., Any])


# -- the server ----------------------------------------------------------------------------


# Where each line of the SDK keeps its server class: mcp 2.x, else 1.x. Imported by name, as
# only one of the two exists in any installed SDK.
_SERVERS = (('mcp.server.mcpserver', 'MCPServer'), ('mcp.server.fastmcp', 'FastMCP'))


def _sdk() -> tuple[Any, type[Exception], Any]:
    """The SDK's server class, its ToolError and ToolAnnotations (mcp 2.x, else 1.x)."""
    missing: ImportError | None = None
    for package, server_name in _SERVERS:
        try:
            server = importlib.import_module(package)
            exceptions = importlib.import_module(f'{package}.exceptions')
        except ImportError as error:
            missing = error
            continue
        from mcp.types import ToolAnnotations

        return getattr(server, server_name), exceptions.ToolError, ToolAnnotations
    raise CheckpointError(INSTALL_HINT) from missing


def package_version() -> str:
    """The installed package's version, as the server reports it to clients; ``0+unknown`` when
    the package runs from a folder it was not installed from."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return '0+unknown'


def _checked_server(Server: Any, ToolError: type[Exception]) -> Any:
    """The SDK's server class, answering a call whose arguments do not fit in one line: an
    argument the tool does not take is refused (never ignored), and pydantic's validation
    errors become one line naming the argument (see :mod:`.mcperrors`)."""
    from pydantic import ValidationError

    from .mcperrors import unknown_arguments, validation_text

    class CheckedServer(Server):  # type: ignore[misc, valid-type, unused-ignore]  # Any in 2.x stubs, a class in 1.x
        async def call_tool(self, name: str, arguments: dict[str, Any], *args: Any, **kw: Any):
            known = None
            for tool in await self.list_tools():
                if tool.name == name:
                    schema = (
                        tool.input_schema if hasattr(tool, 'input_schema') else tool.inputSchema
                    )
                    known = list(schema.get('properties', {}))
            if known is not None:
                refused = unknown_arguments(name, arguments or {}, known)
                if refused is not None:
                    raise ToolError(refused)
            try:
                return await super().call_tool(name, arguments, *args, **kw)
            except ToolError as error:
                cause = error.__cause__
                if isinstance(cause, ValidationError):
                    raise ToolError(validation_text(name, cause.errors())) from cause
                raise

    return CheckedServer


def prune_limits(
    cps: 'Checkpoints', keep: int | None, older_than: str | None, max_size: int | str | None
) -> 'PruneLimits':
    """The limits a prune applies: those given, else those stored with ``prune --save``."""
    from ..ops.retention import parse_duration, parse_size, read_limits
    from .mcpresults import PruneLimits

    if older_than is not None:
        parse_duration(older_than)
    if max_size is not None:
        parse_size(max_size)
    if keep is None and older_than is None and max_size is None:
        stored = read_limits(cps.repository_directory)
        keep, older_than, max_size = stored.keep, stored.older_than, stored.max_size
    return PruneLimits(
        keep=keep, older_than=older_than, max_size=None if max_size is None else str(max_size)
    )


def build_server(workspace: Path, default_desk: str = 'main') -> Any:
    """The MCP server for one workspace; ``.run()`` serves it over stdio."""
    Server, ToolError, ToolAnnotations = _sdk()
    from pydantic import Field

    from ..checkpoints import Checkpoints
    from ..ops.turns import snapshot_in_turn
    from .mcperrors import missing_desk, tool_error_text
    from .mcpresults import (
        BlameOutcome,
        CheckpointList,
        DeskList,
        DiffOutcome,
        FileAtCheckpoint,
        LogOutcome,
        ProtectedList,
        PruneOutcome,
        RestoreOutcome,
        SealOutcome,
        SnapshotOutcome,
        StatusOutcome,
        TurnList,
        blame_outcome,
        budget_row,
        checkpoint_row,
        diff_outcome,
        file_at_checkpoint,
        log_row,
        prune_outcome,
        restore_outcome,
        status_outcome,
        turn_row,
    )

    root = Workspace(workspace)
    root.desk(default_desk)  # refuses a bad default desk name early

    def tool_errors(function: F) -> F:
        @wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return function(*args, **kwargs)
            except CheckpointError as error:
                desk = kwargs.get('desk') or default_desk
                raise ToolError(tool_error_text(error, function.__name__, desk)) from error
            except OSError as error:
                where = f': {error.filename}' if error.filename else ''
                raise ToolError(f'{error.strerror or error}{where}') from error

        return wrapper  # type: ignore[return-value]

    Checked = _checked_server(Server, ToolError)
    options: dict[str, Any] = {'instructions': INSTRUCTIONS, 'log_level': 'WARNING'}
    try:
        server = Checked(SERVER_NAME, version=package_version(), **options)
    except TypeError:  # mcp 1.x: its server reports the SDK's version
        server = Checked(SERVER_NAME, **options)
    read_only = ToolAnnotations(readOnlyHint=True, openWorldHint=False)
    writes = ToolAnnotations(
        readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=False
    )
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
    CheckpointId = Annotated[
        str | None, Field(description='Checkpoint id (short or full); or give `at` instead.')
    ]
    At = Annotated[
        str | None,
        Field(
            description='Instead of an id: the checkpoint the desk held at this time, ISO 8601 '
            'with an offset (2025-03-14T14:30:00+01:00) or a period before now (90m, 2h, 3d).'
        ),
    ]
    DryRun = Annotated[bool, Field(description='Only report what would be written and deleted.')]
    Force = Annotated[
        bool,
        Field(description='Overwrite files changed outside the agent too (kept in a snapshot).'),
    ]
    KeepExternal = Annotated[
        bool,
        Field(
            description='Leave files changed outside the agent as they are, even where the '
            "agent's step changed them (else such a conflict is refused)."
        ),
    ]
    OnExternal = Annotated[
        Literal['overwrite', 'keep', 'refuse'],
        Field(
            description='Files changed outside the agent: overwrite them (kept in a '
            "snapshot), keep them (revert only the agent's changes), or refuse."
        ),
    ]

    def existing(desk: str | None) -> tuple[str, Checkpoints]:
        """The desk a tool names (default: the server's), refused by every tool alike when it
        has neither a folder nor checkpoints: the error lists the desks there are."""
        name = default_desk if desk is None else desk
        cps = root.desk(name).for_agent()  # its restores refuse the desk's protected paths
        if not cps.desk_directory.is_dir() and not cps.repository_directory.is_dir():
            raise missing_desk(name, root.root, root.desks(), cps.desk_directory)
        return name, cps

    @server.tool(annotations=read_only)
    @tool_errors
    def list_desks() -> DeskList:
        """List the desks of the workspace (folders in desks/ and desks with checkpoints)."""
        return DeskList(workspace=str(root.root), default_desk=default_desk, desks=root.desks())

    @server.tool(annotations=read_only)
    @tool_errors
    def list_checkpoints(desk: DeskArg = None, limit: Limit = 20) -> CheckpointList:
        """List a desk's checkpoints, newest first, with their reason, tool, paths and turn."""
        name, cps = existing(desk)
        return CheckpointList(desk=name, checkpoints=[checkpoint_row(c) for c in cps.list(limit)])

    @server.tool(annotations=read_only)
    @tool_errors
    def list_turns(desk: DeskArg = None, limit: Limit = 20) -> TurnList:
        """List agent turns, newest first, each with its checkpoints (newest first)."""
        name, cps = existing(desk)
        return TurnList(desk=name, turns=[turn_row(t) for t in cps.turns(limit)])

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
    ) -> SnapshotOutcome:
        """Take a checkpoint of the desk's tracked files now, e.g. before editing them.

        Without turn_id, no checkpoint is taken when nothing changed. With turn_id, the first
        snapshot of that turn always records a checkpoint, so the turn can be rewound whole.
        """
        name, cps = existing(desk)
        if not cps.desk_directory.is_dir():
            raise MissingDeskError(
                f'desk {name!r} has checkpoints but no folder {cps.desk_directory} to snapshot '
                '(restore one to bring the folder back)',
                desk=cps.desk_directory,
                name=name,
            )
        if turn_id is None:
            new_id = cps.snapshot(reason, tool='mcp:snapshot')
        else:
            new_id = snapshot_in_turn(
                cps, turn_id, reason, label=turn_label or '', tool='mcp:snapshot'
            )
        return SnapshotOutcome(desk=name, checkpoint_id=new_id, changed=new_id is not None)

    @server.tool(annotations=writes)
    @tool_errors
    def seal(desk: DeskArg = None) -> SealOutcome:
        """Record the desk as the state you (the agent) left it, once your write is done.

        Later, status, restores, undo and redo tell files changed by someone else since then
        (external) apart from yours. A seal holds until the next checkpoint.
        """
        name, cps = existing(desk)
        return SealOutcome(desk=name, seal_id=cps.seal())

    @server.tool(annotations=rewinds)
    @tool_errors
    def restore(
        checkpoint_id: CheckpointId = None,
        desk: DeskArg = None,
        dry_run: DryRun = False,
        paths: Paths = None,
        on_external: OnExternal = 'overwrite',
        at: At = None,
    ) -> RestoreOutcome:
        """Put the desk's tracked files back as they were at a checkpoint.

        The current state is snapshotted first: restoring `before_id` undoes this. `kept`
        lists the files left as they were, with why.
        """
        name, cps = existing(desk)
        if checkpoint_id is None and at is None:
            raise InvalidArgumentError(
                "missing argument 'checkpoint_id' (or 'at', a time)",
                name='checkpoint_id',
                value=None,
            )
        result = cps.restore_with_result(
            checkpoint_id, paths=paths, dry_run=dry_run, on_external=on_external, at=at
        )
        return restore_outcome(name, result)

    @server.tool(annotations=rewinds)
    @tool_errors
    def restore_turn(
        turn_id: Annotated[str, Field(description='Turn id, as listed by list_turns.')],
        desk: DeskArg = None,
        dry_run: DryRun = False,
        force: Annotated[
            bool,
            Field(
                description='Put back files another turn or writer changed after this turn '
                'did (they are kept in a snapshot); else such a conflict is refused.'
            ),
        ] = False,
        on_external: Annotated[
            Literal['overwrite', 'keep', 'refuse'] | None,
            Field(
                description='Instead of force: overwrite such files, keep them as they are, '
                'or refuse (the default).'
            ),
        ] = None,
    ) -> RestoreOutcome:
        """Put back the files an agent turn wrote as they were before it began.

        Only that turn's files are rewound: what later turns, other sessions or a person
        changed elsewhere stays. Where someone else changed one of its files afterwards, it
        refuses and names them, unless `force` or on_external='keep'.
        """
        name, cps = existing(desk)
        result = cps.restore_turn(turn_id, dry_run=dry_run, force=force, on_external=on_external)
        return restore_outcome(name, result)

    @server.tool(annotations=rewinds)
    @tool_errors
    def undo(
        desk: DeskArg = None,
        dry_run: DryRun = False,
        force: Force = False,
        keep_external: KeepExternal = False,
    ) -> RestoreOutcome:
        """Undo the agent's newest step on the desk's tracked files, like an editor.

        Repeat to go further back; `redo` reverses it. Files changed outside the agent that
        the step did not touch are kept; a file the step wrote that someone changed since is
        a conflict, refused unless `force` or `keep_external`.
        """
        name, cps = existing(desk)
        result = cps.undo(dry_run=dry_run, force=force, keep_external=keep_external)
        return restore_outcome(name, result)

    @server.tool(annotations=rewinds)
    @tool_errors
    def redo(
        desk: DeskArg = None,
        dry_run: DryRun = False,
        force: Force = False,
        keep_external: KeepExternal = False,
    ) -> RestoreOutcome:
        """Reverse the newest undo not yet redone (nothing to redo after new checkpoints)."""
        name, cps = existing(desk)
        result = cps.redo(dry_run=dry_run, force=force, keep_external=keep_external)
        return restore_outcome(name, result)

    @server.tool(annotations=read_only)
    @tool_errors
    def status(desk: DeskArg = None) -> StatusOutcome:
        """What changed in the desk since its newest checkpoint, and which of it was external.

        `basis` says how changes were attributed: sealed, declared, unknown (cannot tell) or
        none (no checkpoint yet).
        """
        name, cps = existing(desk)
        return status_outcome(name, cps.status())

    @server.tool(annotations=read_only)
    @tool_errors
    def list_protected(desk: DeskArg = None) -> ProtectedList:
        """The paths you may read but not change on this desk (a person protects them), and
        the size budgets to keep files under, with their sizes now."""
        name, cps = existing(desk)
        budgets = cps.budgets() if cps.desk_directory.is_dir() else []
        rows = [budget_row(use) for use in budgets]
        return ProtectedList(desk=name, protected=list(cps.protected()), budgets=rows)

    @server.tool(annotations=read_only)
    @tool_errors
    def log(
        desk: DeskArg = None,
        path: Annotated[
            str | None,
            Field(description='Only checkpoints that changed this file or folder (desk-relative).'),
        ] = None,
        limit: Limit = 20,
        at: At = None,
    ) -> LogOutcome:
        """Checkpoints newest first, each with the files that differ from the one before it;
        with `at`, from the checkpoint the desk held then."""
        name, cps = existing(desk)
        entries = cps.log(path, limit, at=at)
        return LogOutcome(desk=name, path=path, entries=[log_row(e) for e in entries])

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
        patches: Annotated[
            bool, Field(description='Include unified diffs of text files (false: names only).')
        ] = True,
        at: At = None,
    ) -> DiffOutcome:
        """Show what changed between two checkpoints, or between one and the files now; `at`
        instead of from_id starts from the checkpoint the desk held at that time."""
        name, cps = existing(desk)
        if from_id is None and at is None:
            newest = cps.list(1)
            if not newest:
                raise NoCheckpointsError(
                    f'no checkpoints yet for desk {name!r}',
                    repository=cps.repository_directory,
                    desk=name,
                )
            from_id = newest[0].checkpoint_id
        result = cps.diff(from_id, to_id, patches=patches, paths=paths, at=at)
        return diff_outcome(name, result, paths)

    @server.tool(annotations=read_only)
    @tool_errors
    def show_file(
        path: Annotated[str, Field(description='Desk-relative path, e.g. "Memory.md".')],
        checkpoint_id: CheckpointId = None,
        desk: DeskArg = None,
        at: At = None,
    ) -> FileAtCheckpoint:
        """The content of one file as it was at a checkpoint, or at a time (`at`); base64 when
        not UTF-8 text."""
        name, cps = existing(desk)
        if checkpoint_id is None and at is not None:  # one lookup: the id named is the one read
            checkpoint_id, at = cps.checkpoint_at(at).checkpoint_id, None
        data = cps.show(checkpoint_id, path, at=at)
        return file_at_checkpoint(name, checkpoint_id or '', path, data)

    @server.tool(annotations=read_only)
    @tool_errors
    def blame(
        path: Annotated[str, Field(description='Desk-relative path of a file, e.g. "Memory.md".')],
        checkpoint_id: Annotated[
            str | None,
            Field(description='Blame the file as this checkpoint held it (default: the desk now).'),
        ] = None,
        desk: DeskArg = None,
        at: At = None,
    ) -> BlameOutcome:
        """Who wrote each line of a file: the checkpoint that introduced it, its time, and who
        (`who`: agent, with its turn, tool and the turn's prompt as `label`; uncertain; watch;
        outside, a person or a process; unknown). As the desk holds it now, or at a checkpoint
        or a time (`at`)."""
        name, cps = existing(desk)
        return blame_outcome(name, cps.blame(path, checkpoint_id, at=at))

    @server.tool(annotations=rewinds)
    @tool_errors
    def prune(
        desk: DeskArg = None,
        keep: Annotated[
            int | None, Field(ge=1, description='Keep at most this many newest checkpoints.')
        ] = None,
        older_than: Annotated[
            str | None, Field(description='Drop checkpoints older than this, e.g. "30d", "12h".')
        ] = None,
        max_size: Annotated[
            int | str | None,
            Field(description='Drop the oldest until the objects fit: bytes, or e.g. "500M".'),
        ] = None,
        dry_run: Annotated[
            bool,
            Field(
                description='Only say what would be dropped (the default). Pass false, after '
                'checking the dry run, to really drop them.'
            ),
        ] = True,
    ) -> PruneOutcome:
        """Drop old checkpoints; a dry run unless dry_run is false. Kept ids never change.

        Without limits, those stored in the desk's repository (`prune --save` on the command
        line) apply. The newest
        checkpoint, and the snapshot a kept restore took first, are always kept.
        """
        name, cps = existing(desk)
        limits = prune_limits(cps, keep, older_than, max_size)
        result = cps.prune(
            limits['keep'], limits['older_than'], limits['max_size'], dry_run=dry_run
        )
        return prune_outcome(name, result, limits, dry_run)

    return server


def serve(workspace: Path, default_desk: str = 'main') -> None:
    """Runs the server over stdio until the client closes the connection.

    A client's handshake is answered before the SDK is imported when the SDK has answered the
    same one before (see :mod:`.mcpstart`); at a terminal the SDK starts at once.
    """
    Workspace(workspace).desk_directory(default_desk)  # refuses a bad default desk name early
    if not sys.stdin.isatty():
        from .mcpstart import serve as serve_stdio

        context = f'{package_version()}\0{default_desk}'
        serve_stdio(lambda: build_server(workspace, default_desk), context)
        return
    server = build_server(workspace, default_desk)
    print(
        f'checkpoints MCP server for {workspace} (desk {default_desk!r}): waiting for an MCP '
        'client on stdin; register it in your agent instead of running it here (Ctrl-C stops)',
        file=sys.stderr,
    )
    server.run()
