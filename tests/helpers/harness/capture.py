"""Every hook event the real harnesses send, recorded by ``recorder.py`` in scripted runs.

``python3 tests/helpers/harness/capture.py`` runs the scenarios below with both pinned harnesses
and rewrites ``tests/helpers/hook_events/real/``: one file per event, named
``<harness>-<step>-<Event>.json`` for a tool's events and ``<harness>-<Event>.json`` for the
others, with the run's folders written ``${PROJECT}`` (where the harness started, holding
``workspace/desks/main``), ``${HOME}`` and ``${PROJECT_SLUG}`` (Claude Code's name for the
project's transcript folder). ``record`` is also what ``tests/harness/test_payloads.py`` runs to
compare the live events with the saved ones.

Each step is one model reply; the events between the request that got it and the next request
are that step's.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __name__ == '__main__':  # run as a script: make ``helpers`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from helpers import HOOK_EVENTS
from helpers.harness.driver import CLAUDE, GEMINI, HARNESSES, Harness, prepare_home, run
from helpers.harness.model import Call

RECORDER = Path(__file__).resolve().with_name('recorder.py')
SAVED = HOOK_EVENTS / 'real'
DESK = Path('workspace', 'desks', 'main')

CLAUDE_EVENTS = (
    'SessionStart', 'UserPromptSubmit', 'PreToolUse', 'PermissionRequest', 'PermissionDenied',
    'PostToolUse', 'PostToolUseFailure', 'PostToolBatch', 'Notification', 'MessageDisplay',
    'Stop', 'StopFailure', 'SubagentStart', 'SubagentStop', 'PreCompact', 'PostCompact',
    'SessionEnd', 'CwdChanged', 'FileChanged', 'InstructionsLoaded', 'ConfigChange',
    'UserPromptExpansion', 'Setup', 'DirectoryAdded',
)  # fmt: skip
GEMINI_TOOL_EVENTS = ('BeforeTool', 'AfterTool')
GEMINI_EVENTS = (
    'SessionStart', 'BeforeAgent', 'BeforeModel', 'BeforeToolSelection', 'AfterModel',
    'AfterAgent', 'Notification', 'PreCompress', 'SessionEnd',
)  # fmt: skip


@dataclass(frozen=True)
class Step:
    """One model reply: its label and its tool calls, made from the harness and the project."""

    label: str
    calls: Callable[[Harness, Path], list[Call]]


@dataclass(frozen=True)
class Scenario:
    name: str
    steps: Sequence[Step]
    replies: dict[str, Any] = field(default_factory=dict)  # recorder.py's REPLIES
    options: dict[str, Any] = field(default_factory=dict)  # driver.run's


def _in_desk(project: Path, name: str) -> Path:
    return project / DESK / 'notes' / name


MAIN_STEPS = [
    Step('write', lambda h, p: [h.write(_in_desk(p, 'new.md'), 'new\n')]),
    Step('edit', lambda h, p: [h.edit(_in_desk(p, 'old.md'), 'old', 'edited')]),
    Step('read', lambda h, p: [h.read(_in_desk(p, 'old.md'))]),
    Step('shell', lambda h, p: [h.shell(f'echo shell > {DESK}/notes/shell.md')]),
    Step('shell-fails', lambda h, p: [h.shell(f'echo partial >> {DESK}/notes/old.md; exit 1')]),
    Step('edit-fails', lambda h, p: [h.edit(_in_desk(p, 'old.md'), 'not there', 'x')]),
]
CLAUDE_STEPS = [
    *MAIN_STEPS,
    Step('cd', lambda h, p: [h.shell(f'cd {DESK}')]),
    Step('write-relative', lambda h, p: [h.write('notes/relative.md', 'relative\n')]),
]
GEMINI_STEPS = [
    *MAIN_STEPS,
    Step(
        'shell-in-desk',
        lambda h, p: [
            Call(
                'run_shell_command',
                {'command': 'echo here > notes/here.md', 'description': 'x', 'dir_path': str(DESK)},
            )
        ],
    ),
    Step('write-relative', lambda h, p: [h.write(f'{DESK}/notes/relative.md', 'relative\n')]),
]
WRITE = [Step('write', lambda h, p: [h.write(_in_desk(p, 'new.md'), 'new\n')])]
DENY = {
    'claude': {
        'PreToolUse:Write': {
            'stdout': {
                'hookSpecificOutput': {
                    'hookEventName': 'PreToolUse',
                    'permissionDecision': 'deny',
                    'permissionDecisionReason': 'denied by a hook',
                }
            }
        }
    },
    'gemini': {'BeforeTool:write_file': {'stdout': {'decision': 'deny', 'reason': 'denied'}}},
}
SCENARIOS = {
    'claude': [
        Scenario('main', CLAUDE_STEPS),
        Scenario('not-allowed', WRITE, options={'allowed_tools': 'Read'}),
        Scenario('hook-denies', WRITE, replies=DENY['claude']),
    ],
    'gemini': [
        Scenario('main', GEMINI_STEPS),
        Scenario('hook-denies', WRITE, replies=DENY['gemini']),
    ],
}


def recording_settings(harness: Harness, log: Path, replies: Path | None) -> dict[str, Any]:
    """Settings that run the recorder for every event the harness has."""
    command = f'{sys.executable} {RECORDER} {log}' + (f' {replies}' if replies else '')
    hook = [{'type': 'command', 'command': command}]
    if harness is CLAUDE:
        return {'hooks': {event: [{'matcher': '*', 'hooks': hook}] for event in CLAUDE_EVENTS}}
    hooks: dict[str, Any] = {
        event: [{'matcher': '.*', 'hooks': hook}] for event in GEMINI_TOOL_EVENTS
    }
    # A matcher on a lifecycle event is compared with its trigger: none, or it never fires.
    hooks.update({event: [{'hooks': hook}] for event in GEMINI_EVENTS})
    return {'hooks': hooks}


def recorded(log: Path) -> list[dict[str, Any]]:
    """The recorder's records, in the order the hooks started."""
    records = [json.loads(path.read_text()) for path in log.glob('*.json')]
    return sorted(records, key=lambda record: record['start'])


def _play(harness: Harness, scenario: Scenario, base: Path) -> dict[str, dict[str, Any]]:
    project, home, log = base / 'project', base / 'home', base / 'log'
    (project / DESK / 'notes').mkdir(parents=True)
    (project / DESK / 'notes' / 'old.md').write_text('old\n')
    home.mkdir()
    log.mkdir()
    prepare_home(home, [project])
    replies = None
    if scenario.replies:
        replies = base / 'replies.json'
        replies.write_text(json.dumps(scenario.replies))
    settings = project.joinpath(*harness.project_settings[:1], 'settings.json')
    settings.parent.mkdir()
    settings.write_text(json.dumps(recording_settings(harness, log, replies), indent=2))
    script = [step.calls(harness, project) for step in scenario.steps]
    done = run(harness, project, home, 'record the events', [*script, 'done'], **scenario.options)
    if done.code != 0:
        raise RuntimeError(f'{harness.name} {scenario.name} failed:\n{done}')
    times = [request.time for request in done.conversation()]
    events: dict[str, dict[str, Any]] = {}
    for record in recorded(log):
        event = record['event']
        step = sum(time < record['start'] for time in times) - 1  # the reply it follows
        if 'tool_name' in event and 0 <= step < len(scenario.steps):
            label = scenario.steps[step].label if scenario.name == 'main' else scenario.name
            name = f'{harness.name}-{label}-{event["hook_event_name"]}'
        elif scenario.name == 'main':
            name = f'{harness.name}-{event["hook_event_name"]}'
        else:
            continue
        events.setdefault(name, _sanitized(event, project, home))
    return events


def _sanitized(event: dict[str, Any], project: Path, home: Path) -> dict[str, Any]:
    text = json.dumps(event)
    slugs = sorted(p.name for p in (home / '.claude' / 'projects').glob('*') if p.is_dir())
    for slug in slugs:
        text = text.replace(slug, '${PROJECT_SLUG}')
    return json.loads(text.replace(str(project), '${PROJECT}').replace(str(home), '${HOME}'))


def record(harness: Harness) -> dict[str, dict[str, Any]]:
    """Every event of every scenario of ``harness``, by saved name."""
    events: dict[str, dict[str, Any]] = {}
    for scenario in SCENARIOS[harness.name]:
        base = Path(tempfile.mkdtemp(prefix='capture-'))
        try:
            events.update(_play(harness, scenario, base))
        finally:
            shutil.rmtree(base, ignore_errors=True)
    return events


def main() -> int:
    SAVED.mkdir(exist_ok=True)
    for harness in (CLAUDE, GEMINI):
        events = record(harness)
        for old in SAVED.glob(f'{harness.name}-*.json'):
            old.unlink()
        for name, event in sorted(events.items()):
            (SAVED / f'{name}.json').write_text(json.dumps(event, indent=2) + '\n')
        print(f'{harness.name}: {len(events)} events saved in {SAVED}')
    return 0


if __name__ == '__main__':
    assert set(HARNESSES) == set(SCENARIOS)
    sys.exit(main())
