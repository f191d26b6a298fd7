"""``checkpoints hook doctor``: what a harness started in a folder would see.

For each harness asked about: the settings files it reads there (the folder's project settings
and the user's; or the one file named, checked for the harness whose events it holds), the
hook entries in them and the events missing, whether the hook command runs from a shell with
a bare PATH, the workspace the command is bound to (else the one found from the folder) and
the desk, and the last event the hook handled and the last that failed, with its error text.
A problem is what a harness would run into; the report never suggests installing the hooks
of a harness it was not asked about.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import CheckpointError
from ...workspace import desk_at
from . import settingsfile
from .events import GEMINI, HARNESSES, SHELL_TOOLS
from .install import (
    ENTRIES,
    NAMES,
    bound_workspace,
    commands_in,
    global_settings,
    harness_of,
    ours_in,
    project_settings,
)
from .lastevent import FAILED, HANDLED, LastEvent, last_event


@dataclass
class Finding:
    """One line of the doctor's report: what was looked at, what was seen, and whether it is
    a problem a harness would run into."""

    topic: str
    seen: str
    problem: bool = False


@dataclass
class Report:
    """The findings, and the hook commands installed for each harness."""

    findings: list[Finding] = field(default_factory=list)
    commands: dict[str, list[str]] = field(default_factory=dict)

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


def doctor(harness: str | None, folder: Path, settings: Path | None, found: Path | None) -> Report:
    """The report for ``harness`` (None: both) started in ``folder``; ``settings``: check
    only this file; ``found``: the workspace found from the folder (the verbs' rule)."""
    report = Report()
    if settings is not None:
        checked = _check_named(report, harness, settings)
        asked = [checked] if checked is not None else []
    else:
        asked = [harness] if harness is not None else list(HARNESSES)
        installed = [name for name in asked if _check_folder(report, name, folder)]
        if not installed:
            _installed_nowhere(report, asked, folder)
        elif harness is None:
            asked = installed
    commands = sorted({command for name in asked for command in report.commands.get(name, [])})
    for command in commands:
        why = runs(command)
        report.add(
            'command',
            f'{command}: ' + ('runs' if why is None else f'fails ({why})'),
            problem=why is not None,
        )
    bound = sorted({str(path) for c in commands if (path := bound_workspace(c)) is not None})
    workspaces = [Path(path) for path in bound] or ([found] if found is not None else [])
    if not workspaces:
        where = f'none at or above {folder}, and no {folder / "workspace"}'
        report.add('workspace', f'{where}: events from there are ignored')
    for workspace in workspaces:
        _check_workspace(report, workspace, folder, asked, bound=bool(bound))
    return report


def _check_named(report: Report, harness: str | None, path: Path) -> str | None:
    """Checks the one file named, for ``harness`` or else the harness whose events it holds;
    returns that harness (None when it cannot be told)."""
    try:
        data = settingsfile.read(path).data
    except CheckpointError as error:
        report.add(harness or 'settings', str(error), problem=True)
        return None
    harness = harness or harness_of(data) or _named_for(path)
    if harness is None:
        report.add(
            'settings',
            f'no hooks of checkpoints in {path}: checkpoints hook install --harness claude '
            f'(or gemini) --settings {path}',
            problem=True,
        )
        return None
    if not _check_file(report, harness, path, data):
        report.add(
            harness,
            f'not installed in {path}: checkpoints hook install --harness {harness} '
            f'--settings {path}',
            problem=True,
        )
    return harness


def _named_for(path: Path) -> str | None:
    """The harness a settings file's folder is named for (``.claude/``, ``.gemini/``)."""
    folder = path.parent.name
    return next((name for name in HARNESSES if folder == f'.{name}'), None)


def _check_folder(report: Report, harness: str, folder: Path) -> bool:
    """Checks the files ``harness`` reads when started in ``folder``; whether any has the
    hooks."""
    installed = False
    project = project_settings(harness, folder)
    for path in [*project, global_settings(harness)]:
        try:
            data = settingsfile.read(path).data
        except CheckpointError as error:
            report.add(harness, str(error), problem=True)
            continue
        if _check_file(report, harness, path, data):
            installed = True
            if harness == GEMINI and path in project and not gemini_trusts(folder):
                report.add(harness, untrusted(folder, path), problem=True)
        elif os.path.lexists(path):
            report.add(harness, f'not installed in {path}')
    return installed


TRUSTED_FOLDERS = ('.gemini', 'trustedFolders.json')


def untrusted(folder: Path, path: Path) -> str:
    listed = Path.home().joinpath(*TRUSTED_FOLDERS)
    return (
        f'Gemini CLI ignores {path}: {folder} is not a trusted folder (trust it when Gemini '
        f'CLI asks, or add "{folder}": "TRUST_FOLDER" to {listed})'
    )


def gemini_trusts(folder: Path) -> bool:
    """Whether Gemini CLI started in ``folder`` reads its project settings: the folder is
    trusted (the longest matching rule of ``~/.gemini/trustedFolders.json``; a
    ``TRUST_PARENT`` rule trusts its folder's parent), or folder trust is switched off."""
    if os.environ.get('GEMINI_CLI_TRUST_WORKSPACE') == 'true':
        return True
    try:
        user = settingsfile.read(global_settings(GEMINI)).data
        rules = settingsfile.read(Path.home().joinpath(*TRUSTED_FOLDERS)).data
    except CheckpointError:
        return False
    security = user.get('security')
    trust = security.get('folderTrust') if isinstance(security, dict) else None
    if isinstance(trust, dict) and trust.get('enabled') is False:
        return True
    here = os.path.realpath(folder)
    best, level = -1, None
    for rule, value in rules.items():
        effective = os.path.dirname(rule) if value == 'TRUST_PARENT' else rule
        base = os.path.realpath(effective)
        if (here == base or here.startswith(base.rstrip(os.sep) + os.sep)) and len(rule) > best:
            best, level = len(rule), value
    return level in ('TRUST_FOLDER', 'TRUST_PARENT')


def _installed_nowhere(report: Report, asked: list[str], folder: Path) -> None:
    started = ' or '.join(NAMES[name] for name in asked)
    install = ' or '.join(f'checkpoints hook install --harness {name}' for name in asked)
    report.add(
        asked[0] if len(asked) == 1 else 'hooks',
        f'installed nowhere: not in the settings {started} started in {folder} reads; run '
        f'{install} there',
        problem=True,
    )


def _check_file(report: Report, harness: str, path: Path, data: dict) -> bool:
    found = ours_in(data)
    switch = data.get('hooksConfig')
    if isinstance(switch, dict) and switch.get('enabled') is False:
        report.add(harness, f'hooks are switched off in {path} (hooksConfig.enabled)', True)
    if not found:
        return False
    wanted = {event for event, _ in ENTRIES[harness]}
    missing = sorted(wanted - set(found))
    matchers = [matcher for kept in found.values() for matcher in kept]
    shell = any(tool in matcher for matcher in matchers for tool in SHELL_TOOLS)
    note = f'installed in {path}: {", ".join(sorted(found))}'
    if not shell:
        note += ' (shell commands are not hooked: install again to add them)'
    if missing:
        note += f'; missing {", ".join(missing)} (install again to add them)'
    report.add(harness, note, problem=bool(missing))
    report.commands.setdefault(harness, []).extend(commands_in(data))
    return True


def _check_workspace(
    report: Report, workspace: Path, folder: Path, harnesses: list[str], bound: bool
) -> None:
    origin = 'bound in the hook command' if bound else f'found from {folder}'
    if not workspace.is_dir():
        report.add('workspace', f'{workspace} ({origin}) is not a folder', problem=bound)
        return
    report.add('workspace', f'{workspace} ({origin})')
    desk = desk_at(workspace, folder) or desk_at(os.path.realpath(workspace), folder) or 'main'
    folder_state = (
        'its folder exists'
        if (workspace / 'desks' / desk).is_dir()
        else 'no folder yet (made on the first write)'
    )
    report.add('desk', f'{desk}: {folder_state}')
    for harness in harnesses:
        handled = last_event(workspace, harness, HANDLED)
        failed = last_event(workspace, harness, FAILED)
        if handled is None:
            report.add('last event', f'{harness}: none handled yet')
        else:
            report.add('last event', f'{harness}: {_line(handled)}')
        if failed is not None:
            recent = handled is None or failed.time > handled.time
            report.add('last failed', f'{harness}: {_line(failed)}', problem=recent)


def _line(last: LastEvent) -> str:
    tool = f' {last.tool}' if last.tool else ''
    return f'{last.time} {last.event}{tool}: {last.outcome}'
