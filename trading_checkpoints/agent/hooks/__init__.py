"""Hook adapters: checkpoint a desk from an agent harness's hook events (JSON on stdin).

``checkpoints hook --harness claude`` (or ``python -m trading_checkpoints.agent.hooks``) is
registered as a command hook of Claude Code or Gemini CLI (``checkpoints hook install`` does
it). It reads one event and:

- ``UserPromptSubmit`` (Claude Code) / ``BeforeAgent`` (Gemini CLI): opens a turn for the
  session; the session's next snapshot is the turn's first checkpoint, labelled with the prompt
  (``checkpoints restore-turn`` rewinds what the turn wrote).
- ``PreToolUse`` / ``BeforeTool`` of a write tool whose target is a tracked file of the desk: a
  snapshot, with the tool, the desk-relative path, the session and its turn as metadata.
- ``PostToolUse`` / ``AfterTool`` of the same tools: ``seal`` (the state the agent left), so
  later edits by a person are told apart.
- the same events of a shell tool: a snapshot before, and after it a checkpoint of what the
  command changed, credited to the session's turn and sealed.
- anything else, or an event from a folder with no workspace above it: nothing, silently.

Write tools: Claude Code's ``Write``, ``Edit``, ``MultiEdit`` (``tool_input.file_path``) and
``NotebookEdit`` (``tool_input.notebook_path``); Gemini CLI's ``write_file`` and ``replace``
(``tool_input.file_path``). Shell tools: Claude Code's ``Bash`` and Gemini CLI's
``run_shell_command`` (``tool_input.command``; ``dir_path`` or ``directory`` the folder).

The modules: ``events`` (what an event names), ``place`` (workspace, desk, the session's turn),
``dispatch`` (what each event does), ``lastevent`` (the last event handled and failed, per
harness), ``process`` (the command: stdin, exit status); for the harness's settings,
``install`` (install, uninstall), ``settingsfile`` and ``jsonc`` (reading and editing a
settings file) and ``doctor``.
"""

from .dispatch import handle, run
from .events import (
    EVENTS,
    HARNESSES,
    SHELL_TOOLS,
    WRITE_TOOLS,
    HookError,
    Options,
    Reply,
    parse_event,
    programs,
    target_paths,
)
from .process import main, parser

__all__ = [
    'EVENTS',
    'HARNESSES',
    'SHELL_TOOLS',
    'WRITE_TOOLS',
    'HookError',
    'Options',
    'Reply',
    'handle',
    'main',
    'parse_event',
    'parser',
    'programs',
    'run',
    'target_paths',
]
