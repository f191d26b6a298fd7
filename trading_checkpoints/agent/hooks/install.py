"""The harness's settings: install, uninstall and doctor for the hook command.

``install`` merges three hook entries into a Claude Code or Gemini CLI settings file (a prompt
opens a turn; before and after a write or shell tool) with an absolute command, so a harness
started without this virtualenv on its PATH still finds it: the running interpreter with the
``checkpoints-hook`` script beside it (``checkpoints hook`` without the console script's own
start), else the ``checkpoints`` console script there, else that interpreter with
``-m trading_checkpoints``. Every
other key of the file is kept; an existing file is copied aside first (``<name>.<time>.bak``)
and replaced through a temporary file (the target of a symlink is what is written); a second
install writes nothing. ``uninstall`` removes the entries whose command runs this hook, and
only those. ``doctor`` says what a harness would see.

Where: ``--settings FILE``; else ``--global`` (``~/.claude/settings.json``,
``~/.gemini/settings.json``); else the workspace's own (``.claude/settings.local.json``, the
local project settings Claude Code does not share, and ``.gemini/settings.json``).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ...errors import CheckpointError, FileAccessError, InvalidSettingError
from .events import CLAUDE, GEMINI, SHELL_TOOLS, WRITE_TOOLS

PACKAGE = 'trading_checkpoints'
HOOK_SCRIPT = 'checkpoints-hook'  # bin/checkpoints-hook, installed beside the console script

# The events each harness gets, and the matcher of the tool events (None: no matcher).
CLAUDE_TOOLS = ('Write', 'Edit', 'MultiEdit', 'NotebookEdit', 'Bash')
GEMINI_TOOLS = ('write_file', 'replace', 'run_shell_command')
ENTRIES: dict[str, list[tuple[str, str | None]]] = {
    CLAUDE: [
        ('UserPromptSubmit', None),
        ('PreToolUse', '|'.join(CLAUDE_TOOLS)),
        ('PostToolUse', '|'.join(CLAUDE_TOOLS)),
    ],
    GEMINI: [
        ('BeforeAgent', None),
        ('BeforeTool', '|'.join(GEMINI_TOOLS)),
        ('AfterTool', '|'.join(GEMINI_TOOLS)),
    ],
}
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


def command_line(harness: str) -> str:
    """The hook command a settings file gets (shell words, quoted where needed)."""
    return shlex.join([*hook_program(), '--harness', harness])


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


def settings_file(
    harness: str, settings: Path | None, everywhere: bool, workspace: Path | None
) -> Path:
    """The settings file to change (see the module notes)."""
    if settings is not None:
        return settings.expanduser().absolute()
    if everywhere:
        return Path.home().joinpath(*GLOBAL_SETTINGS[harness])
    if workspace is None:
        raise CheckpointError(
            'no workspace found from the current folder for the project settings; run it in '
            'the workspace, pass --workspace DIR, or --global for every project'
        )
    return workspace.absolute().joinpath(*PROJECT_SETTINGS[harness])


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
    """

    path: Path
    before: str | None
    after: str | None
    backup: Path | None = None

    @property
    def changed(self) -> bool:
        return self.after is not None


def read_settings(path: Path) -> tuple[str | None, dict[str, Any]]:
    """A settings file's text (None when absent) and its object ({} for an empty file)."""
    try:
        text = path.read_text(encoding='utf-8')
    except FileNotFoundError:
        return None, {}
    except (OSError, UnicodeDecodeError) as error:
        raise FileAccessError(f'cannot read {path}: {error}', path=path, action='read') from error
    if not text.strip():
        return text, {}
    try:
        data = json.loads(text)
    except ValueError as error:
        raise InvalidSettingError(
            f'{path} is not valid JSON ({error}); nothing was changed',
            setting='settings',
            source=path,
        ) from None
    if not isinstance(data, dict):
        raise InvalidSettingError(
            f'{path} does not hold a JSON object; nothing was changed',
            setting='settings',
            source=path,
        )
    return text, data


def _text(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + '\n'


def change(path: Path, edit: Any, dry_run: bool) -> Change:
    """Applies ``edit`` (settings -> settings) to a settings file; writes only a real change."""
    before, data = read_settings(path)
    try:
        new = edit(data)
    except InvalidSettingError as error:
        raise InvalidSettingError(f'{path}: {error}', setting=error.setting, source=path) from None
    if new == data and before is not None:
        return Change(path, before, None)
    if before is None and new == {}:
        return Change(path, None, None)  # nothing to remove from a file that is not there
    after = _text(new)
    if dry_run:
        return Change(path, before, after)
    target = path.resolve() if path.is_symlink() else path
    backup = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        if before is not None:
            backup = _backup_name(target)
            shutil.copy2(target, backup)
        _write(target, after)
    except OSError as error:
        raise FileAccessError(
            f'cannot write {target}: {error.strerror or error}', path=target, action='write'
        ) from error
    return Change(path, before, after, backup)


def _backup_name(path: Path) -> Path:
    """``<name>.<time>.bak``, with a number added when that one exists (never overwritten)."""
    stamp = datetime.now().strftime('%Y%m%d-%H%M%S')
    backup = path.with_name(f'{path.name}.{stamp}.bak')
    number = 1
    while backup.exists() or backup.is_symlink():
        number += 1
        backup = path.with_name(f'{path.name}.{stamp}-{number}.bak')
    return backup


def _write(path: Path, text: str) -> None:
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    temporary = path.with_name(f'.{path.name}.{os.getpid()}.tmp')
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, 'w', encoding='utf-8') as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    finally:
        if temporary.exists():
            temporary.unlink()


def install(harness: str, path: Path, dry_run: bool = False) -> Change:
    command = command_line(harness)
    return change(path, lambda data: merged(data, harness, command), dry_run)


def uninstall(path: Path, dry_run: bool = False) -> Change:
    return change(path, without_ours, dry_run)


# -- doctor --------------------------------------------------------------------------------


@dataclass
class Finding:
    """One line of the doctor's report: what was looked at, what was seen, and whether it is
    a problem a harness would run into."""

    topic: str
    seen: str
    problem: bool = False


@dataclass
class Report:
    findings: list[Finding] = field(default_factory=list)

    def add(self, topic: str, seen: str, problem: bool = False) -> None:
        self.findings.append(Finding(topic, seen, problem))

    @property
    def problems(self) -> int:
        return sum(finding.problem for finding in self.findings)


def runs(command: str) -> str | None:
    """Why a hook command would not run from a harness (a shell with a bare PATH), or None."""
    env = {key: value for key, value in os.environ.items() if not key.startswith('PYTHON')}
    env['PATH'] = os.defpath
    try:
        done = subprocess.run(
            ['/bin/sh', '-c', f'{command} --help'],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return str(error)
    if done.returncode == 0:
        return None
    last = done.stderr.decode(errors='replace').strip().splitlines()[-1:] or ['']
    return f'exit status {done.returncode}: {last[0]}'


def doctor(
    workspace: Path | None, folder: Path, desk: str | None, files: Iterable[tuple[str, Path]]
) -> Report:
    """What a harness started in ``folder`` would see: the hook entries in each settings file,
    whether their command runs, the workspace and desk found, the last event handled."""
    from .place import last_event

    report = Report()
    installed = False
    for harness, path in files:
        try:
            _, data = read_settings(path)
        except CheckpointError as error:
            report.add(harness, str(error), problem=True)
            continue
        found = ours_in(data)
        switch = data.get('hooksConfig')
        if isinstance(switch, dict) and switch.get('enabled') is False:
            report.add(harness, f'hooks are switched off in {path} (hooksConfig.enabled)', True)
        if not found:
            report.add(harness, f'not installed in {path}')
            continue
        installed = True
        wanted = {event for event, _ in ENTRIES[harness]}
        missing = sorted(wanted - set(found))
        shell = any(
            tool in matcher
            for matchers in found.values()
            for matcher in matchers
            for tool in SHELL_TOOLS
        )
        note = f'installed in {path}: {", ".join(sorted(found))}'
        if not shell:
            note += ' (shell commands are not hooked: install again to add them)'
        report.add(
            harness,
            note + (f'; missing {", ".join(missing)}' if missing else ''),
            problem=bool(missing),
        )
        for command in sorted(set(commands_in(data))):
            why = runs(command)
            report.add(
                'command',
                f'{command}: ' + ('runs' if why is None else f'fails ({why})'),
                problem=why is not None,
            )
    if not installed:
        report.add(
            'hooks', 'installed nowhere: checkpoints hook install --harness claude', problem=True
        )
    if workspace is None:
        report.add('workspace', f'none at or above {folder}: events from there are ignored')
        return report
    report.add('workspace', f'{workspace} (found from {folder})')
    if desk is not None:
        desk_folder = workspace / 'desks' / desk
        state = (
            'its folder exists'
            if desk_folder.is_dir()
            else 'no folder yet (made on the first write)'
        )
        report.add('desk', f'{desk}: {state}')
    last = last_event(workspace)
    if last is None:
        report.add('last event', 'none handled yet')
    else:
        tool = f' {last["tool"]}' if last['tool'] else ''
        report.add(
            'last event',
            f'{last["time"]} {last["event"]}{tool}: {last["outcome"]}',
            problem=last['outcome'].startswith('failed'),
        )
    return report
