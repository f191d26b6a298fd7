"""The harness's settings: install and uninstall the hook command.

``install`` merges the hook entries into a Claude Code or Gemini CLI settings file (a prompt
opens a turn; before and after a write or shell tool, a failed tool, the end of the agent's
answer) with an absolute command, so a harness started without this virtualenv on its PATH
still finds it: the running interpreter with the ``checkpoints-hook`` script beside it
(``checkpoints hook`` without the console script's own start), else the ``checkpoints``
console script there, else that interpreter with ``-m trading_checkpoints``. The command names
the workspace it acts on (``--workspace ABS``) unless installed for every project. Every other
key of the file is kept, and its text with them (see ``settingsfile``); a second install
writes nothing. ``uninstall`` removes the entries whose command runs this hook, in any
spelling an earlier version wrote, and only those.

Where: ``--settings FILE``; else ``--global`` (``~/.claude/settings.json``,
``~/.gemini/settings.json``); else the project settings of the folder the harness is started
in, which each harness reads there: ``.claude/settings.local.json`` (the local ones, not
shared) and ``.gemini/settings.json``.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import InvalidSettingError
from . import jsonc, settingsfile
from .events import CLAUDE, GEMINI, SHELL_TOOLS, WRITE_TOOLS

PACKAGE = 'trading_checkpoints'
HOOK_SCRIPT = 'checkpoints-hook'  # bin/checkpoints-hook, installed beside the console script

# The events each harness gets, and the matcher of the tool events (None: no matcher). A
# failed or refused tool (Claude Code's PostToolUseFailure; Gemini CLI has no such event and
# calls AfterTool) and the end of the agent's answer (Stop, AfterAgent) close what the tool's
# first event opened.
CLAUDE_TOOLS = ('Write', 'Edit', 'MultiEdit', 'NotebookEdit', 'Bash')
GEMINI_TOOLS = ('write_file', 'replace', 'run_shell_command')
ENTRIES: dict[str, list[tuple[str, str | None]]] = {
    CLAUDE: [
        ('UserPromptSubmit', None),
        ('PreToolUse', '|'.join(CLAUDE_TOOLS)),
        ('PostToolUse', '|'.join(CLAUDE_TOOLS)),
        ('PostToolUseFailure', '|'.join(CLAUDE_TOOLS)),
        ('Stop', None),
    ],
    GEMINI: [
        ('BeforeAgent', None),
        ('BeforeTool', '|'.join(GEMINI_TOOLS)),
        ('AfterTool', '|'.join(GEMINI_TOOLS)),
        ('AfterAgent', None),
    ],
}
NAMES = {CLAUDE: 'Claude Code', GEMINI: 'Gemini CLI'}
assert set(CLAUDE_TOOLS + GEMINI_TOOLS) == set(WRITE_TOOLS) | set(SHELL_TOOLS)

GLOBAL_SETTINGS = {CLAUDE: ('.claude', 'settings.json'), GEMINI: ('.gemini', 'settings.json')}
PROJECT_SETTINGS = {
    CLAUDE: ('.claude', 'settings.local.json'),
    GEMINI: ('.gemini', 'settings.json'),
}


def program() -> list[str]:
    """The absolute command that runs ``checkpoints`` with this installation."""
    interpreter = Path(sys.executable).absolute()
    script = interpreter.parent / 'checkpoints'
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [str(interpreter), '-m', PACKAGE]


def hook_program() -> list[str]:
    """The absolute command that runs ``checkpoints hook`` with this installation: this
    interpreter and the ``checkpoints-hook`` script beside it (the interpreter named, so the
    script's own first line does not matter), else :func:`program` and ``hook``."""
    interpreter = Path(sys.executable).absolute()
    script = interpreter.parent / HOOK_SCRIPT
    if script.is_file():
        return [str(interpreter), str(script)]
    return [*program(), 'hook']


def command_line(harness: str, workspace: Path | None = None) -> str:
    """The hook command a settings file gets (shell words, quoted where needed), bound to
    ``workspace`` when one is given."""
    bound = ['--workspace', str(workspace.absolute())] if workspace is not None else []
    return shlex.join([*hook_program(), '--harness', harness, *bound])


def bound_workspace(command: str) -> Path | None:
    """The workspace a hook command names (``--workspace DIR``), if any."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    for at, word in enumerate(words):
        if word == '--workspace' and at + 1 < len(words):
            return Path(words[at + 1])
        if word.startswith('--workspace='):
            return Path(word.split('=', 1)[1])
    return None


def is_ours(command: object) -> bool:
    """Whether a settings file's hook command runs this hook (any path, any spelling)."""
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    if not words:
        return False
    first = os.path.basename(words[0])
    if first == HOOK_SCRIPT:
        rest = ['hook', *words[1:]]
    elif (
        first.startswith('python') and len(words) > 1 and os.path.basename(words[1]) == HOOK_SCRIPT
    ):
        rest = ['hook', *words[2:]]  # an interpreter running the script
    elif len(words) < 2:
        return False
    elif first == 'checkpoints':
        rest = words[1:]
    elif len(words) > 2 and words[1] == '-m' and words[2] in (PACKAGE, f'{PACKAGE}.agent.hooks'):
        rest = words[3:] if words[2] == PACKAGE else ['hook', *words[3:]]
    else:
        return False
    return bool(rest) and rest[0] == 'hook' and not set(rest[1:2]) & {'install', 'uninstall'}


def settings_file(harness: str, settings: Path | None, everywhere: bool, folder: Path) -> Path:
    """The settings file to change (see the module notes); ``folder``: where the harness is
    started."""
    if settings is not None:
        return settings.expanduser().absolute()
    if everywhere:
        return global_settings(harness)
    return folder.absolute().joinpath(*PROJECT_SETTINGS[harness])


def global_settings(harness: str) -> Path:
    return Path.home().joinpath(*GLOBAL_SETTINGS[harness])


def project_settings(harness: str, folder: Path) -> list[Path]:
    """The project settings files a harness started in ``folder`` reads."""
    names = ['settings.json', 'settings.local.json'] if harness == CLAUDE else ['settings.json']
    return [folder.absolute() / f'.{harness}' / name for name in names]


def harness_of(data: object) -> str | None:
    """The harness whose events this hook's entries in the settings are registered for."""
    events = set(ours_in(data))
    for harness, entries in ENTRIES.items():
        if events & {event for event, _ in entries}:
            return harness
    return None


# -- merging ------------------------------------------------------------------------------


def merged(data: dict[str, Any], harness: str, command: str) -> dict[str, Any]:
    """The settings with this hook's entries (any older spelling of them replaced)."""
    data = without_ours(data)
    hooks = data.setdefault('hooks', {})
    if not isinstance(hooks, dict):
        raise InvalidSettingError(
            'its "hooks" is not an object; fix it by hand first', setting='hooks', source=''
        )
    for event, matcher in ENTRIES[harness]:
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise InvalidSettingError(
                f'its "hooks.{event}" is not a list; fix it by hand first',
                setting=f'hooks.{event}',
                source='',
            )
        group: dict[str, Any] = {'matcher': matcher} if matcher else {}
        group['hooks'] = [{'type': 'command', 'command': command}]
        groups.append(group)
    return data


def without_ours(data: dict[str, Any]) -> dict[str, Any]:
    """The settings with every hook entry that runs this hook removed (and the groups and
    events left empty by that); everything else as it was."""
    data = json.loads(json.dumps(data))  # a copy
    hooks = data.get('hooks')
    if not isinstance(hooks, dict):
        return data
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept_groups = []
        for group in groups:
            entries = group.get('hooks') if isinstance(group, dict) else None
            if not isinstance(entries, list):
                kept_groups.append(group)
                continue
            kept = [e for e in entries if not (isinstance(e, dict) and is_ours(e.get('command')))]
            if len(kept) == len(entries):
                kept_groups.append(group)
            elif kept:
                kept_groups.append({**group, 'hooks': kept})
        if kept_groups:
            hooks[event] = kept_groups
        elif groups:
            del hooks[event]  # emptied here: it held only ours
    if not hooks:
        del data['hooks']
    return data


def ours_in(data: object) -> dict[str, list[str]]:
    """Event -> the matchers of this hook's entries in settings (``''`` for no matcher)."""
    found: dict[str, list[str]] = {}
    hooks = data.get('hooks') if isinstance(data, dict) else None
    if not isinstance(hooks, dict):
        return found
    for event, groups in hooks.items():
        for group in groups if isinstance(groups, list) else ():
            entries = group.get('hooks') if isinstance(group, dict) else None
            for entry in entries if isinstance(entries, list) else ():
                if isinstance(entry, dict) and is_ours(entry.get('command')):
                    found.setdefault(event, []).append(str(group.get('matcher') or ''))
    return found


def commands_in(data: object) -> list[str]:
    """The commands of this hook's entries in settings."""
    found = []
    hooks = data.get('hooks') if isinstance(data, dict) else None
    for groups in hooks.values() if isinstance(hooks, dict) else ():
        for group in groups if isinstance(groups, list) else ():
            entries = group.get('hooks') if isinstance(group, dict) else None
            for entry in entries if isinstance(entries, list) else ():
                if isinstance(entry, dict) and is_ours(entry.get('command')):
                    found.append(entry['command'])
    return found


# -- the file -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    """What install or uninstall did (or, dry, would do) to a settings file.

    Attributes:
        path: The settings file.
        before: Its text before (None: it did not exist).
        after: Its text after (None: unchanged).
        backup: Where its old text was copied (None: nothing was copied).
        real: Where its bytes are (the file its link leads to, else ``path``).
    """

    path: Path
    before: str | None
    after: str | None
    backup: Path | None = None
    real: Path | None = None

    @property
    def changed(self) -> bool:
        return self.after is not None


def change(
    path: Path,
    edit: Callable[[dict[str, Any]], dict[str, Any]],
    dry_run: bool,
    by_hand: Callable[[], str],
) -> Change:
    """Applies ``edit`` (settings -> settings) to a settings file; writes only a real change.
    ``by_hand``: what to do by hand when a comment is in the way of the edit."""
    file = settingsfile.read(path)
    try:
        new = edit(file.data)
    except InvalidSettingError as error:
        raise InvalidSettingError(f'{path}: {error}', setting=error.setting, source=path) from None
    if new == file.data and file.text is not None:
        return Change(path, file.text, None, real=file.real)
    if file.text is None and new == {}:
        return Change(path, None, None)  # nothing to remove from a file that is not there
    try:
        after = settingsfile.new_text(file, new)
    except jsonc.CommentInTheWay as error:
        raise InvalidSettingError(
            f'{path}: {error}; nothing was changed. {by_hand()}', setting='hooks', source=path
        ) from None
    if dry_run:
        return Change(path, file.text, after, real=file.real)
    backup = settingsfile.write(file, after)
    return Change(path, file.text, after, backup, file.real)


def install(
    harness: str, path: Path, dry_run: bool = False, workspace: Path | None = None
) -> Change:
    command = command_line(harness, workspace)

    def by_hand() -> str:
        wanted = merged({}, harness, command)['hooks']
        entries = json.dumps(wanted, indent=2, ensure_ascii=False)
        return f'Add these entries to its "hooks" by hand (beside your own):\n{entries}'

    return change(path, lambda data: merged(data, harness, command), dry_run, by_hand)


def uninstall(path: Path, dry_run: bool = False) -> Change:
    def by_hand() -> str:
        found = settingsfile.read(path).data
        commands = '\n'.join(sorted(set(commands_in(found))))
        return f'Remove the hook entries running this command by hand:\n{commands}'

    return change(path, without_ours, dry_run, by_hand)
