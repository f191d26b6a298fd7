"""What each hook event does, and the answer the harness gets.

- A prompt (``UserPromptSubmit``, ``BeforeAgent``): opens a turn for the session.
- Before a write tool (``PreToolUse``, ``BeforeTool``) whose target is a tracked file: a
  snapshot, with the tool, the desk-relative path, the session and its turn as metadata. A
  target in a desk folder that does not exist yet (``desks/NEW/...``) creates that desk.
- After it (``PostToolUse``, ``AfterTool``): a seal (the state the agent left).
- Before a shell command (``Bash``, ``run_shell_command``): a snapshot of each desk it may
  write (the desk as the person left it); after it, a checkpoint of what it changed, credited
  to the session's turn and sealed (none when nothing changed). The command line itself is
  never kept: only the names of the programs it starts (see ``events.programs``).
- Anything else, or an event from a folder with no workspace above it: nothing, silently.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import CheckpointError
from .events import (
    AFTER_TOOL,
    BEFORE_TOOL,
    BLOCKING,
    CLAUDE,
    EVENTS,
    GEMINI,
    NON_BLOCKING,
    OK,
    PROMPT,
    SHELL_TOOLS,
    HookError,
    Options,
    Reply,
    parse_event,
    programs,
    shell_folder,
    target_paths,
    text,
)

if TYPE_CHECKING:
    from ...checkpoints import Checkpoints

from .lastevent import record_event, record_failure
from .place import (
    desk_name,
    find_workspace,
    open_turn,
    session_id,
    session_word,
    shell_desks,
    turn_of,
)


def handle(event: dict[str, Any], options: Options) -> str | None:
    """Acts on one event; returns a line describing what was done (None: nothing to do)."""
    name = event['hook_event_name']
    harness, kind = EVENTS.get(name, (CLAUDE, ''))
    cwd = text(event, 'cwd')
    session = text(event, 'session_id')
    if kind == PROMPT:
        if session_word(session) is None:
            return None  # no session to group by: tool events take plain snapshots
        assert session is not None
        workspace = find_workspace(options, cwd, ())
        if workspace is None:
            return None
        prompt = event.get('prompt')
        turn = open_turn(workspace, session, prompt if isinstance(prompt, str) else '')
        return _done(workspace, harness, name, None, f'opened turn {turn}')
    if kind not in (BEFORE_TOOL, AFTER_TOOL):
        return None
    tool = text(event, 'tool_name') or ''
    tool_input = event.get('tool_input')
    if tool in SHELL_TOOLS:
        folder = shell_folder(tool, tool_input, cwd)
        workspace = find_workspace(options, folder or cwd, ())
        if workspace is None:
            return None
        command = tool_input.get('command') if isinstance(tool_input, dict) else None
        action = Action(workspace, harness, kind, tool, session)
        desks = shell_desks(options, workspace, folder)
        return action.recorded(name, lambda: action.shell(desks, programs(command)))
    paths = target_paths(tool, tool_input, cwd)
    if not paths:
        return None  # not a write tool, or nothing named
    workspace = find_workspace(options, cwd, paths)
    if workspace is None:
        return None
    desk, by_place = desk_name(options, workspace, paths, cwd)
    action = Action(workspace, harness, kind, tool, session)
    return action.recorded(name, lambda: action.write(desk, by_place, paths))


def _done(
    workspace: Path, harness: str, event: str, tool: str | None, line: str | None
) -> str | None:
    if line is not None:
        record_event(workspace, harness, event, tool, line)
    return line


class Action:
    """One tool event's work on a workspace."""

    def __init__(
        self, workspace: Path, harness: str, kind: str, tool: str, session: str | None
    ) -> None:
        self.workspace = workspace
        self.harness = harness
        self.kind = kind
        self.tool = tool
        self.session = session
        self.label_tool = f'{harness}:{tool}'

    def recorded(self, event: str, work: Callable[[], str | None]) -> str | None:
        """Does the work, keeping what it did (or why it failed) as the last event."""
        try:
            line = work()
        except HookError as error:
            record_failure(self.workspace, self.harness, event, self.tool, str(error))
            raise
        return _done(self.workspace, self.harness, event, self.tool, line)

    def failed(self, desk: str, what: str, error: Exception) -> HookError:
        if isinstance(error, OSError):
            detail: object = (
                f'{error.strerror or error}: {error.filename}' if error.filename else error
            )
        else:
            detail = error
        verb = 'checkpoint' if self.kind == BEFORE_TOOL else 'seal'
        return HookError(
            f'could not {verb} desk {desk!r} for {what}: {detail}',
            blocks=self.kind == BEFORE_TOOL,
        )

    # -- write tools ------------------------------------------------------------------------

    def write(self, desk: str, by_place: bool, paths: list[str]) -> str | None:
        """Snapshots (before) or seals (after) the desk when ``paths`` hold a tracked file."""
        from ...workspace import Workspace

        if by_place and not _desk_name_ok(desk):
            return None  # desks/.hidden/...: no desk of ours
        what = f'{self.tool} {" ".join(paths)}'
        try:
            cps = Workspace(self.workspace).desk(desk)  # describes it: touches no disk
            return self._write(cps, desk, by_place, paths)
        except HookError:
            raise
        except (CheckpointError, OSError) as error:
            raise self.failed(desk, what, error) from error

    def _write(self, cps: Checkpoints, desk: str, by_place: bool, paths: list[str]) -> str | None:
        from ...checkpoints import Checkpoints
        from ...core.paths import Allowlist
        from ...ops.guard import desk_relative

        folder = cps.desk_directory
        allowlist = Allowlist(cps.effective_tracked_paths())
        inside = [r for r in (desk_relative(folder, p) for p in paths) if r is not None]
        tracked = [path for path in inside if allowlist.covers(path)]
        if not folder.is_dir():
            if not by_place:
                raise HookError(
                    f'no desk {desk!r} in {self.workspace} (expected the folder {folder}); '
                    'pass --desk or set CHECKPOINTS_DESK',
                    blocks=self.kind == BEFORE_TOOL,
                )
            if not tracked or self.kind != BEFORE_TOOL:
                return None  # nothing of ours, or the tool could not have written there
            folder.mkdir(parents=True, exist_ok=True)  # a write into desks/NEW/ makes the desk
        if not tracked:
            return None
        if self.kind == AFTER_TOOL:
            return f'sealed desk {desk!r} as {cps.seal()} after {self.tool}'
        cps = Checkpoints.open(cps.repository_directory, folder)  # applies retention
        return self._snapshot(cps, desk, f'before {self.tool} {" ".join(tracked)}', tracked)

    def _snapshot(self, cps: Checkpoints, desk: str, reason: str, paths: list[str] | None) -> str:
        from ...ops.turns import snapshot_in_turn

        turn = turn_of(self.workspace, self.session)
        if turn is None:
            new_id = cps.snapshot(reason, tool=self.label_tool, paths=paths)
            return f'checkpoint {new_id or "unchanged"} of desk {desk!r} before {self.tool}'
        turn_id, label = turn
        new_id = snapshot_in_turn(
            cps,
            turn_id,
            reason,
            label=label,
            tool=self.label_tool,
            paths=paths,
            session=session_id(self.session),
        )
        return (
            f'checkpoint {new_id or "unchanged"} of desk {desk!r} before {self.tool} '
            f'(turn {turn_id})'
        )

    # -- shell tools ------------------------------------------------------------------------

    def shell(self, desks: list[str], shown: str) -> str | None:
        """Before: a snapshot of each desk; after: a capture of what the command changed."""
        from ...workspace import Workspace

        lines: list[str | None] = []
        for desk in desks:
            what = f'{self.tool} ({shown})'
            try:
                cps = Workspace(self.workspace).desk(desk)
                if not cps.desk_directory.is_dir():
                    continue
                if self.kind == BEFORE_TOOL:
                    lines.append(self._before_shell(cps, desk, shown))
                else:
                    lines.append(self._after_shell(cps, desk, shown))
            except HookError:
                raise
            except (CheckpointError, OSError) as error:
                raise self.failed(desk, what, error) from error
        return '; '.join(line for line in lines if line) or None

    def _before_shell(self, cps: Checkpoints, desk: str, shown: str) -> str:
        from ...checkpoints import Checkpoints

        cps = Checkpoints.open(cps.repository_directory, cps.desk_directory)  # retention
        return self._snapshot(cps, desk, f'before {self.tool}: {shown}', None)

    def _after_shell(self, cps: Checkpoints, desk: str, shown: str) -> str | None:
        from ...ops import engine, snapshot
        from ...store.metadata import Writer

        config = cps.desk_config
        if not cps.repository_directory.is_dir() or snapshot.settled(config):
            return None  # nothing changed since the snapshot before it
        turn = turn_of(self.workspace, self.session)
        writer = Writer(turn[0], session_id(self.session)) if turn is not None else None
        with engine.locked(config, light=True) as session:
            done = snapshot.capture(session, f'after {self.tool}: {shown}', self.label_tool, writer)
        if done.checkpoint_id is None:
            return None
        changed = ', '.join(done.paths[:5]) + (' ...' if len(done.paths) > 5 else '')
        return f'checkpoint {done.checkpoint_id} of desk {desk!r} after {self.tool}: {changed}'


def _desk_name_ok(name: str) -> bool:
    from ...workspace import desk_name_problem

    return desk_name_problem(name) is None and not name.startswith('.')


def run(raw: bytes, options: Options) -> Reply:
    """The whole hook: parse, act, and answer as the harness expects."""
    harness = options.harness
    try:
        event = parse_event(raw)
        harness = harness or EVENTS.get(event['hook_event_name'], (None, ''))[0]
        done = handle(event, options)
    except Exception as error:  # noqa: BLE001 - a hook never shows a traceback
        if isinstance(error, HookError):
            message, blocks = str(error), error.blocks
        elif isinstance(error, CheckpointError):
            message, blocks = str(error), False
        elif isinstance(error, OSError):
            where = f': {error.filename}' if error.filename else ''
            message, blocks = f'{error.strerror or error}{where}', False
        else:
            if os.environ.get('CHECKPOINTS_DEBUG'):
                raise
            message, blocks = f'unexpected {type(error).__name__}: {error}', False
        if options.strict and blocks:
            return Reply(
                BLOCKING,
                stderr=f'checkpoints hook: {message} (blocked: --strict)\n',
            )
        return Reply(NON_BLOCKING, stderr=f'checkpoints hook: {message}\n')
    note = f'checkpoints hook: {done}\n' if done and options.verbose else ''
    return Reply(OK, stdout='{}\n' if harness == GEMINI else '', stderr=note)
