"""A harness's hook event: what it names (the event, the tool, the files or the command).

Both harnesses send one JSON object on stdin. Claude Code's events carry ``session_id``,
``transcript_path``, ``cwd``, ``permission_mode`` and ``hook_event_name``; Gemini CLI's the same
but ``permission_mode``, plus ``timestamp``. Tool events add ``tool_name`` and ``tool_input``
(and, after the tool, ``tool_response``); prompt events add ``prompt``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import CheckpointError

CLAUDE = 'claude'
GEMINI = 'gemini'
HARNESSES = (CLAUDE, GEMINI)

PROMPT, BEFORE_TOOL, AFTER_TOOL = 'prompt', 'before-tool', 'after-tool'
TOOL_FAILED, STOP = 'tool-failed', 'stop'

# hook_event_name -> (harness, what it means here)
EVENTS: dict[str, tuple[str, str]] = {
    'UserPromptSubmit': (CLAUDE, PROMPT),
    'PreToolUse': (CLAUDE, BEFORE_TOOL),
    'PostToolUse': (CLAUDE, AFTER_TOOL),
    'PostToolUseFailure': (CLAUDE, TOOL_FAILED),
    'Stop': (CLAUDE, STOP),
    'BeforeAgent': (GEMINI, PROMPT),
    'BeforeTool': (GEMINI, BEFORE_TOOL),
    'AfterTool': (GEMINI, AFTER_TOOL),
    'AfterAgent': (GEMINI, STOP),
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

# tool_name -> the tool_input fields that name the folder a shell command runs in (relative
# to the event's cwd), for the shell tools: Claude Code's Bash, Gemini CLI's run_shell_command.
SHELL_TOOLS: dict[str, tuple[str, ...]] = {
    'Bash': (),
    'run_shell_command': ('dir_path', 'directory'),
}

OK, NON_BLOCKING, BLOCKING = 0, 1, 2

MAX_EVENT_BYTES = 64 * 1024 * 1024  # a Write event carries the whole new file
MAX_PROGRAMS = 80
_SEPARATORS = frozenset({'&&', '||', ';', '|', '&', '(', ')', ';;', '|&', '`'})
# Shell words before a command (skipped), and those whose next words are no commands.
_KEYWORDS = frozenset(
    {'!', '{', '}', 'then', 'do', 'done', 'else', 'elif', 'fi', 'esac', 'if', 'while', 'until'}
    | {'time', 'exec', 'command', 'builtin', 'nohup'}
)
_NO_COMMAND_AFTER = frozenset({'for', 'case', 'select', 'function'})
_PUNCTUATION = frozenset('();<>|&')
_PROGRAM = re.compile(r'[A-Za-z0-9._+-]{1,32}')


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


def text(event: dict[str, Any], key: str) -> str | None:
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


def shell_folder(tool: str, tool_input: object, cwd: str | None) -> str | None:
    """The absolute folder a shell tool's command runs in: its own folder field resolved
    against the event's cwd, else the cwd (None when neither is absolute)."""
    folder = cwd if cwd and os.path.isabs(cwd) else None
    if isinstance(tool_input, dict):
        for name in SHELL_TOOLS.get(tool, ()):
            value = tool_input.get(name)
            if isinstance(value, str) and value and '\0' not in value:
                if os.path.isabs(value):
                    return os.path.normpath(value)
                return os.path.normpath(os.path.join(folder, value)) if folder else None
    return folder


def programs(command: object) -> str:
    """What a shell command runs, safe to keep in a checkpoint: the names of the programs its
    first line starts (``sed, mv``), at most 32 characters each, nothing else.

    A command line carries tokens and passwords (``curl -H "Authorization: ..."``, ``export
    KEY=...``, a URL with user info); none of its arguments, assignments or later lines (a
    here-document) is kept, and a name of more than 32 characters (what a token looks like)
    is left out too. The line is split as the shell splits it (``shlex``: quotes respected, so
    a ``|`` or ``;`` inside quotes separates nothing); a line that does not split (an open
    quote) keeps nothing.
    """
    if not isinstance(command, str):
        return 'a command'
    first = command.strip().split('\n', 1)[0]
    lexer = shlex.shlex(first, posix=True, punctuation_chars=True)
    lexer.commenters = '#'
    lexer.whitespace_split = True
    try:
        words = list(lexer)
    except ValueError:
        return 'a command'
    names: list[str] = []
    starts = True  # the next word starts a command
    for word in words:
        if word in _SEPARATORS:
            starts = True
            continue
        if not starts or ('=' in word and not word.startswith('=')) or word in _KEYWORDS:
            continue  # an argument, an assignment (VAR=value cmd), a shell word before a command
        starts = False
        if word in _NO_COMMAND_AFTER:
            continue
        if set(word) <= _PUNCTUATION:
            continue  # a redirection (>, <<) where a command would start
        name = word.rsplit('/', 1)[-1]
        if _PROGRAM.fullmatch(name) and name not in names:
            names.append(name)
    shown = ''
    for name in names:
        longer = f'{shown}, {name}' if shown else name
        if len(longer) > MAX_PROGRAMS:
            break
        shown = longer
    return shown or 'a command'
