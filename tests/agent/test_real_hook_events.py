"""The hook parser reads the events the real harnesses sent (``hook_events/real/``, captured from
Claude Code and Gemini CLI by ``helpers/harness/capture.py``): what each names, the tool, the
files it writes, the folder a shell command runs in, the event's folder and its session.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import HOOK_EVENTS

from trading_checkpoints.agent.hooks.events import (
    EVENTS,
    SHELL_TOOLS,
    WRITE_TOOLS,
    parse_event,
    shell_folder,
    target_paths,
    text,
)

REAL = HOOK_EVENTS / 'real'
PROJECT = Path('/home/someone/project')
DESK = PROJECT / 'workspace' / 'desks' / 'main'
NOTES = DESK / 'notes'

# file -> (tool, files it writes, folder its command runs in, the event's cwd)
TOOL_EVENTS: dict[str, tuple[str, list[Path], Path | None, Path]] = {
    'claude-write-PreToolUse': ('Write', [NOTES / 'new.md'], None, PROJECT),
    'claude-write-PostToolUse': ('Write', [NOTES / 'new.md'], None, PROJECT),
    'claude-edit-PreToolUse': ('Edit', [NOTES / 'old.md'], None, PROJECT),
    'claude-edit-PostToolUse': ('Edit', [NOTES / 'old.md'], None, PROJECT),
    'claude-read-PreToolUse': ('Read', [], None, PROJECT),
    'claude-read-PostToolUse': ('Read', [], None, PROJECT),
    'claude-shell-PreToolUse': ('Bash', [], PROJECT, PROJECT),
    'claude-shell-PostToolUse': ('Bash', [], PROJECT, PROJECT),
    'claude-shell-fails-PreToolUse': ('Bash', [], PROJECT, PROJECT),
    'claude-shell-fails-PostToolUseFailure': ('Bash', [], PROJECT, PROJECT),
    # Claude Code's shell keeps its folder: the event after ``cd`` carries the new one.
    'claude-cd-PreToolUse': ('Bash', [], PROJECT, PROJECT),
    'claude-cd-PostToolUse': ('Bash', [], DESK, DESK),
    # A relative path is made absolute (against the shell's folder) before the hook sees it.
    'claude-write-relative-PreToolUse': ('Write', [NOTES / 'relative.md'], None, DESK),
    'claude-write-relative-PostToolUse': ('Write', [NOTES / 'relative.md'], None, DESK),
    'claude-not-allowed-PreToolUse': ('Write', [NOTES / 'new.md'], None, PROJECT),
    'claude-not-allowed-PermissionRequest': ('Write', [NOTES / 'new.md'], None, PROJECT),
    'claude-hook-denies-PreToolUse': ('Write', [NOTES / 'new.md'], None, PROJECT),
    'gemini-write-BeforeTool': ('write_file', [NOTES / 'new.md'], None, PROJECT),
    'gemini-write-AfterTool': ('write_file', [NOTES / 'new.md'], None, PROJECT),
    'gemini-edit-BeforeTool': ('replace', [NOTES / 'old.md'], None, PROJECT),
    'gemini-edit-AfterTool': ('replace', [NOTES / 'old.md'], None, PROJECT),
    'gemini-edit-fails-BeforeTool': ('replace', [NOTES / 'old.md'], None, PROJECT),
    'gemini-edit-fails-AfterTool': ('replace', [NOTES / 'old.md'], None, PROJECT),
    'gemini-read-BeforeTool': ('read_file', [], None, PROJECT),
    'gemini-read-AfterTool': ('read_file', [], None, PROJECT),
    'gemini-shell-BeforeTool': ('run_shell_command', [], PROJECT, PROJECT),
    'gemini-shell-AfterTool': ('run_shell_command', [], PROJECT, PROJECT),
    'gemini-shell-fails-BeforeTool': ('run_shell_command', [], PROJECT, PROJECT),
    'gemini-shell-fails-AfterTool': ('run_shell_command', [], PROJECT, PROJECT),
    'gemini-shell-in-desk-BeforeTool': ('run_shell_command', [], DESK, PROJECT),
    'gemini-shell-in-desk-AfterTool': ('run_shell_command', [], DESK, PROJECT),
    # Gemini CLI passes a relative path on as the model wrote it: relative to the project.
    'gemini-write-relative-BeforeTool': ('write_file', [NOTES / 'relative.md'], None, PROJECT),
    'gemini-write-relative-AfterTool': ('write_file', [NOTES / 'relative.md'], None, PROJECT),
    'gemini-hook-denies-BeforeTool': ('write_file', [NOTES / 'new.md'], None, PROJECT),
}
OTHER_EVENTS = {
    'claude': ['SessionStart', 'UserPromptSubmit', 'PostToolBatch', 'CwdChanged',
               'MessageDisplay', 'Stop', 'SessionEnd'],
    'gemini': ['SessionStart', 'BeforeAgent', 'BeforeModel', 'BeforeToolSelection',
               'AfterModel', 'PreCompress', 'AfterAgent', 'SessionEnd'],
}  # fmt: skip
# What the product acts on: a prompt opens a turn.
PROMPTS = {'claude': 'UserPromptSubmit', 'gemini': 'BeforeAgent'}


def real(name: str) -> dict:
    raw = (REAL / f'{name}.json').read_text()
    raw = raw.replace('${PROJECT}', str(PROJECT)).replace('${HOME}', '/home/someone')
    return parse_event(raw.encode())


def test_every_saved_event_is_checked_here():
    saved = {path.stem for path in REAL.glob('*.json')}
    named = set(TOOL_EVENTS) | {
        f'{harness}-{event}' for harness, events in OTHER_EVENTS.items() for event in events
    }
    assert saved == named


@pytest.mark.parametrize('name', sorted(TOOL_EVENTS))
def test_a_tool_event_names_its_tool_files_and_folders(name: str):
    tool, files, folder, cwd = TOOL_EVENTS[name]
    event = real(name)
    assert event['tool_name'] == tool
    assert text(event, 'cwd') == str(cwd)
    paths = target_paths(tool, event['tool_input'], text(event, 'cwd'))
    assert paths == [str(path) for path in files]
    assert (tool in WRITE_TOOLS) == bool(files)
    if tool in SHELL_TOOLS:
        assert shell_folder(tool, event['tool_input'], text(event, 'cwd')) == str(folder)
    else:
        assert folder is None


@pytest.mark.parametrize('harness', sorted(OTHER_EVENTS))
def test_one_run_carries_one_session_and_the_prompt(harness: str):
    start = real(f'{harness}-{PROMPTS[harness]}')
    assert EVENTS[start['hook_event_name']][0] == harness
    assert start['prompt'] == 'record the events'
    session = text(start, 'session_id')
    assert session
    main_run = [
        name
        for name in TOOL_EVENTS
        if name.startswith(harness) and 'not-allowed' not in name and 'hook-denies' not in name
    ]
    others = [f'{harness}-{event}' for event in OTHER_EVENTS[harness]]
    for name in main_run + others:
        assert text(real(name), 'session_id') == session, name


@pytest.mark.parametrize('name', sorted(TOOL_EVENTS))
def test_the_events_it_acts_on_are_told_apart_by_name(name: str):
    """Each event the product registers maps to the harness that sent it."""
    event = real(name)
    known = EVENTS.get(event['hook_event_name'])
    assert known is None or known[0] == name.split('-')[0]


def test_the_saved_events_hold_no_test_folder():
    for path in REAL.glob('*.json'):
        data = json.loads(path.read_text())
        assert '/tmp/' not in json.dumps(data).replace('.gemini/tmp/', ''), path.name
