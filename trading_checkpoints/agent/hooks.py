"""Hook adapters: checkpoint a desk from an agent harness's hook events (JSON on stdin).

``checkpoints hook --harness claude`` (or ``python -m trading_checkpoints.agent.hooks``) is
meant to be registered as a command hook of Claude Code or Gemini CLI. It reads one event and:

- ``UserPromptSubmit`` (Claude Code) / ``BeforeAgent`` (Gemini CLI): opens a turn for the
  session; the session's next snapshot is the turn's first checkpoint, labelled with the prompt
  (``checkpoints restore-turn`` rewinds the whole answer).
- ``PreToolUse`` / ``BeforeTool`` of a write tool whose target is a tracked file of the desk: a
  snapshot, with the tool, the desk-relative path and the session's turn as metadata.
- ``PostToolUse`` / ``AfterTool`` of the same tools: ``seal`` (the state the agent left), so
  later edits by a person are told apart.
- anything else: nothing.

Write tools: Claude Code's ``Write``, ``Edit``, ``MultiEdit`` (``tool_input.file_path``) and
``NotebookEdit`` (``tool_input.notebook_path``); Gemini CLI's ``write_file`` and ``replace``
(``tool_input.file_path``). Other tools, and targets outside the desk's tracked paths, are left
alone without a word.

Exit status, as both harnesses read it: 0 when done (or nothing to do), with nothing on stdout
for Claude Code and ``{}`` for Gemini CLI (which parses stdout as JSON); 1, a non-blocking
error, with one line on stderr, when the event cannot be read or the checkpoint failed: the
harness shows the line and the tool still runs. With ``--strict`` a failed checkpoint before a
write tool exits 2 instead, which blocks the tool and tells the agent why.

Where: ``--workspace``, else ``$CHECKPOINTS_WORKSPACE``, else the event's ``cwd`` walked upward to
a folder holding ``.checkpoints/`` or ``desks/``. The desk: ``--desk``, else ``$CHECKPOINTS_DESK``,
else the ``desks/<name>`` the target file is in, else the one ``cwd`` is in, else ``main``.
The open turn of each session is kept in ``<workspace>/.checkpoints/hooks/`` (one small file per
session, removed after 30 days).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import secrets
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import CheckpointError

CLAUDE = 'claude'
GEMINI = 'gemini'
HARNESSES = (CLAUDE, GEMINI)

PROMPT, BEFORE_TOOL, AFTER_TOOL = 'prompt', 'before-tool', 'after-tool'

# hook_event_name -> (harness, what it means here)
EVENTS: dict[str, tuple[str, str]] = {
    'UserPromptSubmit': (CLAUDE, PROMPT),
    'PreToolUse': (CLAUDE, BEFORE_TOOL),
    'PostToolUse': (CLAUDE, AFTER_TOOL),
    'BeforeAgent': (GEMINI, PROMPT),
    'BeforeTool': (GEMINI, BEFORE_TOOL),
    'AfterTool': (GEMINI, AFTER_TOOL),
}

# tool_name -> the tool_input fields that name the file it writes (the first one present).
WRITE_TOOLS: dict[str, tuple[str, ...]] = {
    'Write': ('file_path',),
    'Edit': ('file_path',),
    'MultiEdit': ('file_path',),
    'NotebookEdit': ('notebook_path',),
    'write_file': ('file_path', 'absolute_path', 'path'),
    'replace': ('file_path', 'absolute_path', 'path'),
}

OK, NON_BLOCKING, BLOCKING = 0, 1, 2

STATE_FOLDER = ('.checkpoints', 'hooks')
STATE_MAX_AGE = 30 * 86400
MAX_EVENT_BYTES = 64 * 1024 * 1024  # a Write event carries the whole new file
MAX_LABEL = 200
_UNSAFE = re.compile(r'[^A-Za-z0-9._:-]+')


class HookError(CheckpointError):
    """The event cannot be handled; ``blocks`` when ``--strict`` should stop the tool."""

    def __init__(self, message: str, *, blocks: bool = False) -> None:
        super().__init__(message)
        self.blocks = blocks


@dataclass(frozen=True)
class Options:
    workspace: Path | None = None
    desk: str | None = None
    harness: str | None = None
    strict: bool = False
    verbose: bool = False


@dataclass(frozen=True)
class Reply:
    """What the hook process says: its exit status and its two output streams."""

    code: int
    stdout: str = ''
    stderr: str = ''


# -- reading the event -----------------------------------------------------------------------


def parse_event(raw: bytes) -> dict[str, Any]:
    """The event object, or a :class:`HookError` saying why the input is not one."""
    # It might have been a write: --strict fails closed (blocks=True).
    if len(raw) > MAX_EVENT_BYTES:
        raise HookError(f'the hook event is larger than {MAX_EVENT_BYTES} bytes', blocks=True)
    if not raw.strip():
        raise HookError('no hook event on stdin (expected one JSON object)', blocks=True)
    try:
        event = json.loads(raw)
    except (ValueError, RecursionError) as error:
        raise HookError(
            f'the hook event on stdin is not valid JSON: {error}', blocks=True
        ) from None
    if not isinstance(event, dict):
        raise HookError(
            f'the hook event must be a JSON object, not {type(event).__name__}', blocks=True
        )
    name = event.get('hook_event_name')
    if not isinstance(name, str) or not name:
        raise HookError('the hook event has no "hook_event_name"', blocks=True)
    return event


def _text(event: dict[str, Any], key: str) -> str | None:
    value = event.get(key)
    return value if isinstance(value, str) and value else None


def target_paths(tool: str, tool_input: object, cwd: str | None) -> list[str]:
    """The absolute paths a write tool is about to write ([] for other tools)."""
    fields = WRITE_TOOLS.get(tool)
    if not fields or not isinstance(tool_input, dict):
        return []
    for name in fields:
        value = tool_input.get(name)
        if isinstance(value, str) and value and '\0' not in value:
            if not os.path.isabs(value):
                if cwd is None:
                    raise HookError(
                        f'{tool} names a relative path {value!r} and the event has no cwd'
                    )
                value = os.path.join(cwd, value)
            return [os.path.normpath(value)]
    return []


# -- where: workspace and desk ---------------------------------------------------------------


def find_workspace(options: Options, cwd: str | None, paths: Sequence[str]) -> Path:
    """``--workspace``, ``$CHECKPOINTS_WORKSPACE``, else upward from cwd (or the target)."""
    if options.workspace is not None:
        chosen = options.workspace.expanduser()
    elif os.environ.get('CHECKPOINTS_WORKSPACE'):
        chosen = Path(os.environ['CHECKPOINTS_WORKSPACE']).expanduser()
    else:
        starts = [Path(cwd)] if cwd and os.path.isabs(cwd) else []
        starts += [Path(p).parent for p in paths]
        for start in starts:
            for folder in (start, *start.parents):
                if (folder / '.checkpoints').is_dir() or (folder / 'desks').is_dir():
                    return folder
        where = f'from {cwd}' if cwd else 'without a cwd in the event'
        raise HookError(
            f'no workspace found {where} (a folder holding desks/ or .checkpoints/); '
            'pass --workspace or set CHECKPOINTS_WORKSPACE'
        )
    if not chosen.is_dir():
        raise HookError(f'the workspace {chosen} is not a folder')
    return chosen


def desk_holding(workspace: Path, path: str | None) -> str | None:
    """The name of the desk folder ``path`` lies in (``<workspace>/desks/<name>/...``)."""
    if not path or not os.path.isabs(path):
        return None
    full = os.path.abspath(path)
    for base in {os.path.abspath(workspace), os.path.realpath(workspace)}:
        desks = os.path.join(base, 'desks') + os.sep
        if full.startswith(desks):
            name = full[len(desks) :].split(os.sep, 1)[0]
            return name or None
    return None


def desk_name(options: Options, workspace: Path, paths: Sequence[str], cwd: str | None) -> str:
    if options.desk:
        return options.desk
    if os.environ.get('CHECKPOINTS_DESK'):
        return os.environ['CHECKPOINTS_DESK']
    for candidate in (*paths, cwd):
        name = desk_holding(workspace, candidate)
        if name is not None:
            return name
    return 'main'


# -- turns: one per prompt of a session, kept between hook processes --------------------------


def session_word(session: str | None) -> str | None:
    """A session id made safe as (the start of) a one-word turn id."""
    if not session:
        return None
    word = _UNSAFE.sub('_', session).strip('_.:-')[:64]
    return word or None


def _state_folder(workspace: Path, create: bool) -> Path:
    folder = workspace.joinpath(*STATE_FOLDER)
    if create:
        folder.mkdir(parents=True, exist_ok=True)
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise HookError(f'{folder} is not a plain folder; refusing to keep hook state there')
    return folder


def _state_file(workspace: Path, session: str, create: bool = False) -> Path:
    key = hashlib.sha256(session.encode('utf-8', 'surrogateescape')).hexdigest()[:32]
    return _state_folder(workspace, create) / f'{key}.json'


def read_turn(workspace: Path, session: str) -> tuple[str, str] | None:
    """The (turn id, label) the session's last prompt opened, if it is on record and sane."""
    from ..ops.turns import check_turn_id

    path = _state_file(workspace, session)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, 'O_NOFOLLOW', 0))
    except FileNotFoundError:
        return None
    except OSError as error:
        raise HookError(f'cannot read {path}: {error.strerror or error}') from error
    with os.fdopen(fd, 'rb') as handle:
        data = handle.read(64 * 1024 + 1)
    try:
        state = json.loads(data)
        turn, label = state['turn'], state.get('label', '')
        if not isinstance(label, str):
            raise ValueError('label')
        check_turn_id(turn)
    except (ValueError, KeyError, TypeError, CheckpointError):
        return None  # a damaged record: the session's own id is the turn again
    return turn, label[:MAX_LABEL]


def open_turn(workspace: Path, session: str, prompt: str) -> str:
    """Records a new turn for the session, labelled with the prompt; returns its id."""
    from ..core.durability import write_atomically

    word = session_word(session)
    assert word is not None
    previous = read_turn(workspace, session)
    turn = f'{word}-{datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")}'
    if previous is not None and previous[0].startswith(turn):  # two prompts in one second
        turn = f'{turn}-{secrets.token_hex(2)}'
    label = ' '.join(prompt.split())[:MAX_LABEL]
    path = _state_file(workspace, session, create=True)
    state = {'turn': turn, 'label': label, 'session': session[:200]}
    write_atomically(path, json.dumps(state).encode())
    _forget_old_sessions(path.parent)
    return turn


def _forget_old_sessions(folder: Path) -> None:
    cutoff = time.time() - STATE_MAX_AGE
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        try:
            if (
                entry.name.endswith('.json')
                and entry.is_file(follow_symlinks=False)
                and entry.stat(follow_symlinks=False).st_mtime < cutoff
            ):
                os.unlink(entry.path)
        except OSError:
            pass


# -- the events ------------------------------------------------------------------------------


def handle(event: dict[str, Any], options: Options) -> str | None:
    """Acts on one event; returns a line describing what was done (None: nothing to do)."""
    harness, kind = EVENTS.get(event['hook_event_name'], (CLAUDE, ''))
    cwd = _text(event, 'cwd')
    session = _text(event, 'session_id')
    if kind == PROMPT:
        if session_word(session) is None:
            return None  # no session to group by: tool events take plain snapshots
        assert session is not None
        workspace = find_workspace(options, cwd, ())
        prompt = event.get('prompt')
        turn = open_turn(workspace, session, prompt if isinstance(prompt, str) else '')
        return f'opened turn {turn}'
    if kind not in (BEFORE_TOOL, AFTER_TOOL):
        return None
    tool = _text(event, 'tool_name') or ''
    paths = target_paths(tool, event.get('tool_input'), cwd)
    if not paths:
        return None  # not a write tool, or nothing named
    workspace = find_workspace(options, cwd, paths)
    name = desk_name(options, workspace, paths, cwd)
    what = f'{tool} {" ".join(paths)}'
    try:
        return _tool_event(workspace, name, harness, kind, tool, paths, session)
    except HookError:
        raise
    except (CheckpointError, OSError) as error:
        detail: str | BaseException = error
        if isinstance(error, OSError) and error.filename:
            detail = f'{error.strerror or error}: {error.filename}'
        verb = 'checkpoint' if kind == BEFORE_TOOL else 'seal'
        raise HookError(
            f'could not {verb} desk {name!r} for {what}: {detail}', blocks=kind == BEFORE_TOOL
        ) from error


def _tool_event(
    workspace: Path,
    name: str,
    harness: str,
    kind: str,
    tool: str,
    paths: list[str],
    session: str | None,
) -> str | None:
    """Snapshots (before) or seals (after) desk ``name`` when ``paths`` hold a tracked file."""
    from ..checkpoints import Checkpoints
    from ..core.paths import Allowlist
    from ..ops.guard import desk_relative
    from ..ops.turns import snapshot_in_turn
    from ..workspace import Workspace

    cps = Workspace(workspace).desk(name)  # describes it; Checkpoints.open only to snapshot
    if not cps.desk_directory.is_dir():
        raise HookError(
            f'no desk {name!r} in {workspace} (expected the folder {cps.desk_directory}); '
            'pass --desk or set CHECKPOINTS_DESK',
            blocks=kind == BEFORE_TOOL,
        )
    inside = [r for r in (desk_relative(cps.desk_directory, p) for p in paths) if r is not None]
    if not inside:
        return None
    allowlist = Allowlist(cps.effective_tracked_paths())
    tracked = [path for path in inside if allowlist.covers(path)]
    if not tracked:
        return None
    if kind == AFTER_TOOL:
        return f'sealed desk {name!r} as {cps.seal()} after {tool}'
    cps = Checkpoints.open(cps.repository_directory, cps.desk_directory)  # applies retention
    reason = f'before {tool} {" ".join(tracked)}'
    label_tool = f'{harness}:{tool}'
    word = session_word(session)
    if word is None or session is None:
        new_id = cps.snapshot(reason, tool=label_tool, paths=tracked)
        return f'checkpoint {new_id or "unchanged"} of desk {name!r} before {tool}'
    turn, label = read_turn(workspace, session) or (word, '')
    new_id = snapshot_in_turn(cps, turn, reason, label=label, tool=label_tool, paths=tracked)
    return f'checkpoint {new_id or "unchanged"} of desk {name!r} before {tool} (turn {turn})'


# -- the process -----------------------------------------------------------------------------


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


def parser() -> argparse.ArgumentParser:
    cli = argparse.ArgumentParser(
        prog='checkpoints hook',
        description='Checkpoint a desk from a Claude Code or Gemini CLI hook event on stdin.',
    )
    cli.add_argument('--workspace', type=Path, help='the workspace (else found from the cwd)')
    cli.add_argument('--desk', help='the desk (else the one the file or cwd is in, else main)')
    cli.add_argument(
        '--harness',
        choices=HARNESSES,
        help='whose conventions to answer with (default: told by the event name)',
    )
    cli.add_argument(
        '--strict',
        action='store_true',
        help='block a write tool (exit 2) when its checkpoint cannot be taken',
    )
    cli.add_argument('-v', '--verbose', action='store_true', help='say what was done on stderr')
    return cli


def main(argv: Sequence[str] | None = None) -> int:
    """Reads one event from stdin, acts on it, prints what the harness expects; the exit status."""
    try:
        args = parser().parse_args(argv)
    except SystemExit as stop:  # argparse's usage error is 2, which would block every tool
        return OK if stop.code in (0, None) else NON_BLOCKING
    options = Options(args.workspace, args.desk, args.harness, args.strict, args.verbose)
    if sys.stdin.isatty():
        print(
            'checkpoints hook: reading one hook event (JSON) from stdin; register this command '
            'as a Claude Code or Gemini CLI hook instead of running it here (Ctrl-D ends)',
            file=sys.stderr,
        )
    try:
        raw = sys.stdin.buffer.read(MAX_EVENT_BYTES + 1)
    except OSError as error:
        raw = b''
        print(f'checkpoints hook: cannot read stdin: {error}', file=sys.stderr)
    reply = run(raw, options)
    if reply.stdout:
        sys.stdout.write(reply.stdout)
        sys.stdout.flush()
    if reply.stderr:
        sys.stderr.write(reply.stderr)
        sys.stderr.flush()
    return reply.code


if __name__ == '__main__':
    sys.exit(main())
