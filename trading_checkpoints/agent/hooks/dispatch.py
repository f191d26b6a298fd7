"""What each hook event does, and the answer the harness gets.

- A prompt (``UserPromptSubmit``, ``BeforeAgent``): closes what the session left at work
  (below) and opens a turn for the session.
- Before a write tool (``PreToolUse``, ``BeforeTool``) whose target is a tracked file: a
  snapshot of the desk the file is in, with the tool, the desk-relative path, the session and
  its turn as metadata, and the call put on the desk's record (``ops/calls.py``) so that what
  lands there while it runs is credited to it. A file reached through a symlink into another
  desk snapshots that desk too. A target in a desk folder that does not exist yet
  (``desks/NEW/...``) creates that desk.
- After it (``PostToolUse``, ``AfterTool``): the call's end on record, and a seal (the state
  the agent left).
- Before a shell command (``Bash``, ``run_shell_command``): a snapshot of every desk of the
  workspace that changed (the desk as the person left it; none for a desk that did not) and
  the call on each desk's record; after it, a checkpoint of what it changed in each desk,
  credited to the session's turn less what other calls explain, and sealed (none when nothing
  changed). The command line itself is never kept: only the names of the programs it starts
  (see ``events.programs``).
- A write tool that failed (``PostToolUseFailure``), the session's next write tool (both
  harnesses run write tools one at a time), its next prompt, or the agent stopping (``Stop``,
  ``AfterAgent``): the session's calls still at work (for a write tool, its write calls) are
  closed as unfinished (``ops/toolcalls.py``: what they named and did not change is no longer
  the agent's; what did change is uncertain). A shell command that failed (an exit status
  other than 0) ran all the same: its failure event captures it as its after event does.
- Anything else, or an event from a folder with no workspace: nothing, silently.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import CheckpointError
from .events import (
    AFTER_TOOL,
    BEFORE_TOOL,
    BLOCKING,
    CLAUDE,
    EVENTS,
    NON_BLOCKING,
    OK,
    PROMPT,
    SHELL_TOOLS,
    STOP,
    TOOL_FAILED,
    HookError,
    Options,
    Reply,
    parse_event,
    programs,
    shell_folder,
    target_paths,
    text,
)
from .lastevent import record_event, record_failure
from .place import (
    all_desks,
    chosen_desk,
    desk_holding,
    desk_name,
    find_workspace,
    open_turn,
    session_id,
    session_word,
    turn_of,
)
from .protect import Answer, budget_notices, put_back_text, refuse_command, refuse_write

if TYPE_CHECKING:
    from ...checkpoints import Checkpoints
    from ...ops.toolcalls import ToolCall


def handle(event: dict[str, Any], options: Options, answer: Answer | None = None) -> str | None:
    """Acts on one event; returns a line describing what was done (None: nothing to do).
    What the harness must be told (a denial, a block, context for the model) goes to
    ``answer``."""
    answer = Answer() if answer is None else answer
    name = event['hook_event_name']
    harness, kind = EVENTS.get(name, (CLAUDE, ''))
    cwd = text(event, 'cwd')
    session = text(event, 'session_id')
    if kind in (PROMPT, STOP):
        if session_word(session) is None:
            return None  # no session to group by: tool events take plain snapshots
        assert session is not None
        workspace = find_workspace(options, cwd, ())
        if workspace is None:
            return None
        closed = Action(workspace, harness, kind, '', session, None).close_session()
        if kind == STOP:
            return _done(workspace, harness, name, None, closed)
        prompt = event.get('prompt')
        turn = open_turn(workspace, session, prompt if isinstance(prompt, str) else '')
        return _done(workspace, harness, name, None, f'opened turn {turn}')
    if kind not in (BEFORE_TOOL, AFTER_TOOL, TOOL_FAILED):
        return None
    tool = text(event, 'tool_name') or ''
    tool_input = event.get('tool_input')
    call_id = text(event, 'tool_use_id')
    if tool in SHELL_TOOLS:
        folder = shell_folder(tool, tool_input, cwd)
        workspace = find_workspace(options, folder or cwd, ())
        if workspace is None:
            return None
        command = tool_input.get('command') if isinstance(tool_input, dict) else None
        if kind == BEFORE_TOOL:
            denied = refuse_command(command)
            if denied is not None:
                answer.deny.append(denied)
                return _done(workspace, harness, name, tool, f'denied {tool}: {denied}')
        action = Action(workspace, harness, kind, tool, session, call_id, tool_input, answer)
        named = chosen_desk(options)
        desks = [named] if named else all_desks(workspace)
        return action.recorded(name, lambda: action.shell(desks, programs(command)))
    paths = target_paths(tool, tool_input, cwd)
    if not paths:
        return None  # not a write tool, or nothing named
    workspace = find_workspace(options, cwd, paths)
    if workspace is None:
        return None
    action = Action(workspace, harness, kind, tool, session, call_id, tool_input, answer)
    targets = _targets(options, workspace, paths, cwd)
    if kind == BEFORE_TOOL:
        raw = target_paths(tool, tool_input, cwd, normalize=False)
        reached = [(desk, found) for desk, _, found in targets if _desk_name_ok(desk)]
        denied = action.recorded(name, lambda: action.policy(refuse_write, workspace, reached, raw))
        if denied is not None:
            answer.deny.append(denied)
            return _done(workspace, harness, name, tool, f'denied {tool}: {denied}')
    return action.recorded(name, lambda: action.write(targets))


def _targets(
    options: Options, workspace: Path, paths: list[str], cwd: str | None
) -> list[tuple[str, bool, list[str]]]:
    """Each desk a write may change, whether it was told by where the file is, and the paths:
    the desk the path names, and the desk a symlink on the way leads into (when another)."""
    desk, by_place = desk_name(options, workspace, paths, cwd)
    targets = [(desk, by_place, paths)]
    if chosen_desk(options):
        return targets
    for path in paths:
        real = os.path.realpath(path)
        other = desk_holding(workspace, real)
        if real != path and other is not None and other != desk:
            targets.append((other, True, [real]))
    return targets


def _done(
    workspace: Path, harness: str, event: str, tool: str | None, line: str | None
) -> str | None:
    if line is not None:
        record_event(workspace, harness, event, tool, line)
    return line


class Action:
    """One event's work on a workspace."""

    def __init__(
        self,
        workspace: Path,
        harness: str,
        kind: str,
        tool: str,
        session: str | None,
        call_id: str | None,
        tool_input: object = None,
        answer: Answer | None = None,
    ) -> None:
        self.workspace = workspace
        self.answer = Answer() if answer is None else answer
        self.harness = harness
        self.kind = kind
        self.tool = tool
        self.session = session
        self.call_id = call_id
        self.tool_input = tool_input
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
        detail = reason(error)
        verb = {BEFORE_TOOL: 'checkpoint', AFTER_TOOL: 'seal'}.get(self.kind, 'close a call of')
        return HookError(
            f'could not {verb} desk {desk!r} for {what}: {detail}',
            blocks=self.kind == BEFORE_TOOL,
        )

    def policy(self, check: Callable[..., str | None], *args: Any) -> str | None:
        """A policy check's answer; a policy that cannot be read fails as a checkpoint does
        (``--strict`` blocks the tool)."""
        try:
            return check(*args)
        except (CheckpointError, OSError) as error:
            raise HookError(
                f'could not read the policy for {self.tool}: {reason(error)}',
                blocks=self.kind == BEFORE_TOOL,
            ) from error

    def call(self) -> ToolCall:
        """The call as the desk's record knows it: its id (the harness's, within its session:
        two sessions' ids never meet), its turn, and a digest of its input."""
        from ...ops.calls import digest
        from ...ops.toolcalls import ToolCall
        from ...store.metadata import Writer

        turn = turn_of(self.workspace, self.session)
        writer = Writer(turn[0], session_id(self.session)) if turn is not None else None
        word = session_word(self.session) or '-'
        call_id = f'{word}/{self.call_id[:100]}' if self.call_id else None
        inputs = digest(self.session, [self.tool, self.tool_input])
        return ToolCall(call_id, self.label_tool, writer, turn[1] if turn else '', inputs)

    def _desk(self, desk: str) -> Checkpoints:
        from ...workspace import Workspace

        return Workspace(self.workspace).desk(desk)  # describes it: touches no disk

    # -- the session moving on ------------------------------------------------------------------

    def close_session(self, kind: str | None = None) -> str | None:
        """Closes, in every desk, the session's calls still at work (of ``kind`` only: a write
        tool's hook before closes the session's write calls, which both harnesses run one at a
        time; shell commands may run side by side)."""
        closed = []
        for desk in all_desks(self.workspace):
            if not _calls_on_record(self.workspace, desk):
                continue  # nothing at work: the desk's modules are not even imported
            from ...ops import calls, toolcalls

            config = self._desk(desk).desk_config
            if not config.repository.is_dir():
                continue
            at_work = calls.open_calls(config.repository, session_id(self.session))
            if not [c for c in at_work if kind is None or c.kind == kind]:
                continue
            try:
                done = toolcalls.unfinished(config, None, session_id(self.session), kind=kind)
            except (CheckpointError, OSError) as error:
                raise self.failed(desk, 'the calls left at work', error) from error
            if done is not None:
                closed.append(desk)
        return f'closed the calls left at work in {", ".join(closed)}' if closed else None

    # -- write tools ------------------------------------------------------------------------

    def write(self, targets: list[tuple[str, bool, list[str]]]) -> str | None:
        """Before: a snapshot of each desk a tracked target is in; after: its seal; failed:
        the call closed as unfinished."""
        if self.kind == BEFORE_TOOL and self.session:
            from ...ops.calls import WRITE

            self.close_session(WRITE)
        lines = []
        for desk, by_place, paths in targets:
            if by_place and not _desk_name_ok(desk):
                continue  # desks/.hidden/...: no desk of ours
            what = f'{self.tool} {" ".join(paths)}'
            try:
                lines.append(self._write(self._desk(desk), desk, by_place, paths))
            except HookError:
                raise
            except (CheckpointError, OSError) as error:
                raise self.failed(desk, what, error) from error
        return '; '.join(line for line in lines if line) or None

    def _write(self, cps: Checkpoints, desk: str, by_place: bool, paths: list[str]) -> str | None:
        from ...checkpoints import Checkpoints
        from ...core.paths import Allowlist, desk_relative
        from ...ops import toolcalls

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
        call = self.call()
        if self.kind == AFTER_TOOL:
            sealed = toolcalls.after_write(cps.desk_config, call, tracked)
            self.tell_budgets(desk, cps, tracked)
            return f'sealed desk {desk!r} as {sealed} after {self.tool}'
        if self.kind == TOOL_FAILED:
            closed = toolcalls.unfinished(cps.desk_config, call, None, tracked)
            return None if closed is None else f'closed the failed {self.tool} on desk {desk!r}'
        cps = Checkpoints.open(cps.repository_directory, folder)  # applies retention
        new_id = toolcalls.before_write(
            cps, call, f'before {self.tool} {" ".join(tracked)}', tracked
        )
        turn = f' (turn {call.writer.turn})' if call.writer is not None else ''
        return f'checkpoint {new_id or "unchanged"} of desk {desk!r} before {self.tool}{turn}'

    # -- shell tools ------------------------------------------------------------------------

    def shell(self, desks: list[str], shown: str) -> str | None:
        """Before: a snapshot of each desk; after: a capture of what the command changed."""
        lines: list[str | None] = []
        for desk in desks:
            what = f'{self.tool} ({shown})'
            try:
                cps = self._desk(desk)
                if not cps.desk_directory.is_dir():
                    continue
                lines.append(self._shell(cps, desk, shown))
            except HookError:
                raise
            except (CheckpointError, OSError) as error:
                raise self.failed(desk, what, error) from error
        return '; '.join(line for line in lines if line) or None

    def _shell(self, cps: Checkpoints, desk: str, shown: str) -> str | None:
        from ...checkpoints import Checkpoints
        from ...ops import putback, toolcalls

        call = self.call()
        if self.kind == BEFORE_TOOL:
            cps = Checkpoints.open(cps.repository_directory, cps.desk_directory)  # retention
            reason = f'before {self.tool}: {shown}'
            new_id = toolcalls.before_shell(cps.desk_config, call, reason)
            if new_id is None:
                return None
            return f'checkpoint {new_id} of desk {desk!r} before {self.tool}'
        if not cps.repository_directory.is_dir():
            return None
        # A command that failed (exit status not 0) ran all the same: what it changed is its.
        subject = f'after {self.tool}: {shown}'
        done, put_back = putback.after_shell(cps.desk_config, call, subject)
        lines = []
        if put_back is not None:
            paths = [*put_back.written, *put_back.deleted]
            self.answer.block.append(put_back_text(desk, paths))
            lines.append(f'put back protected {", ".join(paths)} of desk {desk!r}')
        if done.checkpoint_id is not None:
            self.tell_budgets(desk, cps, done.paths)
            changed = ', '.join(done.paths[:5]) + (' ...' if len(done.paths) > 5 else '')
            lines.insert(
                0, f'checkpoint {done.checkpoint_id} of desk {desk!r} after {self.tool}: {changed}'
            )
        return '; '.join(lines) or None

    def tell_budgets(self, desk: str, cps: Checkpoints, touched: Sequence[str]) -> None:
        """After a write: the budgets it took past their limit, for the agent (once a turn)."""
        notices = budget_notices(self.workspace, self.session, desk, cps, touched)
        self.answer.context.extend(notices)


# The desk's call record (``ops/calls.py``'s NAME), looked at before the modules that read it
# are imported: a prompt or a stop with no call at work then costs no more than starting.
CALLS_RECORD = ('checkpoints', 'calls')


def _calls_on_record(workspace: Path, desk: str) -> bool:
    """Whether the desk's call record holds anything (an empty or missing one: no call)."""
    from ...workspace import Workspace

    try:
        record = Workspace(workspace).repository_directory(desk).joinpath(*CALLS_RECORD)
        return os.stat(record).st_size > 0
    except FileNotFoundError:
        return False
    except (OSError, CheckpointError):
        return True  # read as before, which reports what is wrong


def _desk_name_ok(name: str) -> bool:
    from ...workspace import desk_name_problem

    return desk_name_problem(name) is None and not name.startswith('.')


def reason(error: Exception) -> str:
    """What an error says in a hook's line: a system error as its reason, then the file it
    names if any (``Too many open files: /path``); any other error, its message."""
    if not isinstance(error, OSError):
        return str(error)
    said = error.strerror or str(error)
    return f'{said}: {error.filename}' if error.filename else said


def run(raw: bytes, options: Options) -> Reply:
    """The whole hook: parse, act, and answer as the harness expects."""
    harness = options.harness
    answer = Answer()
    name, kind = '', ''
    try:
        event = parse_event(raw)
        name = event['hook_event_name']
        harness, kind = EVENTS.get(name, (harness, ''))
        harness = options.harness or harness
        done = handle(event, options, answer)
    except Exception as error:  # noqa: BLE001 - a hook never shows a traceback
        # An error no step put into words (one before the desks are known, or unexpected):
        # a tool's first hook may precede a write, so ``--strict`` fails closed, as a failed
        # checkpoint does.
        blocks = kind == BEFORE_TOOL
        if isinstance(error, HookError):
            message, blocks = str(error), error.blocks
        elif isinstance(error, CheckpointError | OSError):
            message = reason(error)
        else:
            if os.environ.get('CHECKPOINTS_DEBUG'):
                raise
            message = f'unexpected {type(error).__name__}: {error}'
        if options.strict and blocks:
            return Reply(
                BLOCKING,
                stderr=f'checkpoints hook: {message} (blocked: --strict)\n',
            )
        return Reply(NON_BLOCKING, stderr=f'checkpoints hook: {message}\n')
    note = f'checkpoints hook: {done}\n' if done and options.verbose else ''
    return Reply(OK, stdout=answer.stdout(harness, name, kind), stderr=note)
