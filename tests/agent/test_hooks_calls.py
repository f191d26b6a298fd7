"""Several writers at once on one desk, as the hooks see them: each tool call's window, who is
credited with what, and what ``restore-turn`` puts back.

Each event runs the hook command in a process of its own, as a harness runs it, with Claude
Code's payloads (``tool_use_id`` names each call); the real harnesses are driven in
``tests/harness/``.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from helpers.builders import write
from helpers.hookrun import event, hook, ok

from trading_checkpoints import Checkpoints
from trading_checkpoints.errors import TurnConflictError
from trading_checkpoints.store import metadata
from trading_checkpoints.store.repo import ShadowRepo
from trading_checkpoints.workspace import Workspace

A = 'aaaaaaaa-1111-4000-8000-000000000001'
B = 'bbbbbbbb-2222-4000-8000-000000000002'


class Session:
    """One agent session's hook events, from a folder of the workspace (or beside it)."""

    def __init__(self, workspace: Path, session: str, cwd: Path | None = None) -> None:
        self.workspace = workspace
        self.session = session
        self.cwd = cwd or workspace
        self.calls = 0

    def _event(self, name: str, **fields: object) -> bytes:
        base = event('claude_pre_tool_use_write.json', self.workspace)
        data = json.loads(base)
        data.pop('tool_name'), data.pop('tool_input'), data.pop('tool_use_id')
        data.update(hook_event_name=name, session_id=self.session, cwd=str(self.cwd), **fields)
        return json.dumps(data).encode()

    def prompt(self, text: str) -> None:
        ok(hook(self._event('UserPromptSubmit', prompt=text)))

    def stop(self) -> None:
        ok(hook(self._event('Stop', stop_hook_active=False)))

    def call(self, tool: str, **tool_input: str) -> str:
        self.calls += 1
        call_id = f'toolu_{self.session[:8]}_{self.calls:03d}'
        self.pre(tool, call_id, **tool_input)
        return call_id

    def pre(self, tool: str, call_id: str, **tool_input: str) -> None:
        event = self._event(
            'PreToolUse', tool_name=tool, tool_input=tool_input, tool_use_id=call_id
        )
        ok(hook(event))

    def post(self, tool: str, call_id: str, *, failed: bool = False, **tool_input: str) -> None:
        name = 'PostToolUseFailure' if failed else 'PostToolUse'
        event = self._event(name, tool_name=tool, tool_input=tool_input, tool_use_id=call_id)
        ok(hook(event))


def desk_of(workspace: Path, name: str = 'main') -> Checkpoints:
    return Workspace(workspace).desk(name)


def started(workspace: Path, files: dict[str, str], name: str = 'main') -> Checkpoints:
    cps = desk_of(workspace, name)
    for path, text in files.items():
        write(cps.desk_directory, path, text)
    cps.snapshot('start')
    return cps


def groups(cps: Checkpoints) -> tuple[metadata.Written, ...]:
    """Who the newest checkpoint says made its changes."""
    repo = ShadowRepo.open(cps.repository_directory)
    assert repo is not None
    try:
        head = repo.head()
        assert head is not None
        return metadata.written_groups(repo.commit_info(head).message)
    finally:
        repo.close()


def turn_of(cps: Checkpoints, session: str) -> str:
    [turn] = [t.turn_id for t in cps.turns(None) if t.turn_id.startswith(session[:8])]
    return turn


def bash(cwd: Path, command: str) -> None:
    subprocess.run(['bash', '-c', command], cwd=cwd, check=True, timeout=60)


def test_another_sessions_write_inside_a_shell_window_stays_that_sessions(
    workspace: Path, desk: Path
) -> None:
    cps = started(workspace, {'Memory.md': 'v0\n'})
    a, b = Session(workspace, A), Session(workspace, B)
    a.prompt('A: rewrite the memory')
    b.prompt('B: add a note')
    command = 'echo by-a > desks/main/Memory.md'
    shell = a.call('Bash', command=command)  # A's command starts ...
    write_b = b.call('Write', file_path=str(desk / 'notes/b.md'))
    write(desk, 'notes/b.md', 'by B\n')  # ... B's Write lands while it runs ...
    b.post('Write', write_b, file_path=str(desk / 'notes/b.md'))
    bash(workspace, command)  # ... and the command writes its own file
    a.post('Bash', shell, command=command)

    by_turn = {g.writer.turn: g.paths for g in groups(cps)}
    turn_a, turn_b = turn_of(cps, A), turn_of(cps, B)
    assert by_turn.get(turn_a) == {'Memory.md'}, by_turn
    assert 'notes/b.md' not in by_turn.get(turn_a, set())

    rewound = cps.restore_turn(turn_a)  # A's work goes, B's stays
    assert rewound.written == ('Memory.md',) and rewound.deleted == ()
    assert (desk / 'Memory.md').read_text() == 'v0\n'
    assert (desk / 'notes/b.md').read_text() == 'by B\n'
    rewound = cps.restore_turn(turn_b)  # and B's own rewind finds its file
    assert rewound.deleted == ('notes/b.md',)


def test_a_path_both_may_have_written_is_uncertain_and_reverted_only_when_forced(
    workspace: Path, desk: Path
) -> None:
    cps = started(workspace, {'Memory.md': 'v0\n', 'notes/c.md': 'c0\n'})
    a, b = Session(workspace, A), Session(workspace, B)
    a.prompt('A: tidy')
    b.prompt('B: edit c')
    command = 'echo by-a > desks/main/notes/c.md'
    shell = a.call('Bash', command=command)
    write_b = b.call('Write', file_path=str(desk / 'notes/c.md'))
    write(desk, 'notes/c.md', 'by B\n')
    b.post('Write', write_b, file_path=str(desk / 'notes/c.md'))
    bash(workspace, command)  # A's command writes the same file after B
    a.post('Bash', shell, command=command)

    turn_a, turn_b = turn_of(cps, A), turn_of(cps, B)
    maybe = {g.writer.turn: g.maybe for g in groups(cps)}
    assert maybe.get(turn_a) == {'notes/c.md'} and maybe.get(turn_b) == {'notes/c.md'}
    for turn in (turn_a, turn_b):
        with pytest.raises(TurnConflictError) as refused:
            cps.restore_turn(turn)
        assert refused.value.paths == ('notes/c.md',)
    assert (desk / 'notes/c.md').read_text() == 'by-a\n', 'a refusal changes nothing'
    forced = cps.restore_turn(turn_a, force=True)
    assert forced.written == ('notes/c.md',) and (desk / 'notes/c.md').read_text() == 'c0\n'


@pytest.mark.parametrize('closed_by', ['Stop', 'next prompt', 'next tool call', 'failure'])
def test_a_denied_write_leaves_a_persons_later_edit_to_the_person(
    workspace: Path, desk: Path, closed_by: str
) -> None:
    cps = started(workspace, {'Memory.md': 'v0\n', 'notes/x.md': 'x0\n'})
    agent = Session(workspace, A)
    agent.prompt('edit x')
    denied = agent.call('Write', file_path=str(desk / 'notes/x.md'))  # never runs
    if closed_by == 'Stop':
        agent.stop()
    elif closed_by == 'next prompt':
        agent.prompt('something else')
    elif closed_by == 'next tool call':
        agent.call('Write', file_path=str(desk / 'Memory.md'))
    else:
        agent.post('Write', denied, failed=True, file_path=str(desk / 'notes/x.md'))
    write(desk, 'notes/x.md', 'a person\n')  # the person edits the file afterwards

    assert cps.status().external == ('notes/x.md',)
    cps.snapshot('later')
    [first_turn] = [t for t in cps.turns(None) if t.label == 'edit x']
    rewound = cps.restore_turn(first_turn.turn_id)
    assert 'notes/x.md' not in rewound.written + rewound.deleted
    assert (desk / 'notes/x.md').read_text() == 'a person\n'


def test_a_failed_write_that_changed_its_file_is_uncertain(workspace: Path, desk: Path) -> None:
    cps = started(workspace, {'Memory.md': 'v0\n'})
    agent = Session(workspace, A)
    agent.prompt('edit the memory')
    call = agent.call('Write', file_path=str(desk / 'Memory.md'))
    write(desk, 'Memory.md', 'half written')  # the tool failed part way (or a person wrote)
    agent.post('Write', call, failed=True, file_path=str(desk / 'Memory.md'))

    turn = turn_of(cps, A)
    assert {g.writer.turn: g.maybe for g in groups(cps)} == {turn: {'Memory.md'}}
    with pytest.raises(TurnConflictError) as refused:
        cps.restore_turn(turn)
    assert refused.value.paths == ('Memory.md',)
    assert cps.restore_turn(turn, force=True).written == ('Memory.md',)
    assert (desk / 'Memory.md').read_text() == 'v0\n'


def test_two_writes_announced_together_are_both_credited(workspace: Path, desk: Path) -> None:
    """Two sessions announce their writes before either lands; a checkpoint taken while both
    are at work (``watch``'s, or any snapshot) credits each file to its own session."""
    from trading_checkpoints.ops import engine, snapshot

    cps = started(workspace, {'Memory.md': 'v0\n'})
    a, b = Session(workspace, A), Session(workspace, B)
    a.prompt('A writes a')
    b.prompt('B writes b')
    a.call('Write', file_path=str(desk / 'notes/a.md'))
    b.call('Write', file_path=str(desk / 'notes/b.md'))
    write(desk, 'notes/a.md', 'a\n')
    write(desk, 'notes/b.md', 'b\n')
    with engine.locked(cps.desk_config) as session:  # what `checkpoints watch` does
        snapshot.capture(session, 'watch: changed', 'watch', None)

    assert {g.writer.turn: g.paths for g in groups(cps)} == {
        turn_of(cps, A): {'notes/a.md'},
        turn_of(cps, B): {'notes/b.md'},
    }
    assert cps.status().external == ()


def test_a_shell_command_writing_a_sibling_desk_snapshots_it_first(
    workspace: Path, desk: Path
) -> None:
    started(workspace, {'Memory.md': 'm0\n'})
    research = started(workspace, {'Memory.md': 'r0\n'}, name='research')
    write(research.desk_directory, 'Memory.md', 'r1, unsaved by a person\n')
    agent = Session(workspace, A, cwd=desk)
    agent.prompt('copy a note over')
    command = 'echo from-main > ../research/Memory.md'
    call = agent.call('Bash', command=command)
    bash(desk, command)
    agent.post('Bash', call, command=command)

    [after, before, _] = research.list(3)
    assert research.show(before.checkpoint_id, 'Memory.md') == b'r1, unsaved by a person\n'
    assert after.action == 'captured' and after.paths == ('Memory.md',)
    rewound = research.restore_turn(turn_of(research, A))
    assert (research.desk_directory / 'Memory.md').read_text() == 'r1, unsaved by a person\n'
    assert rewound.written == ('Memory.md',)


def test_a_write_through_a_symlink_into_another_desk_snapshots_that_desk(
    workspace: Path, desk: Path
) -> None:
    started(workspace, {'Memory.md': 'm0\n'})
    research = started(workspace, {'notes/y.md': 'y0\n'}, name='research')
    write(research.desk_directory, 'notes/y.md', 'y1, unsaved by a person\n')
    (desk / 'notes').mkdir(exist_ok=True)
    os.symlink('../../research/notes/y.md', desk / 'notes/link.md')
    agent = Session(workspace, A)
    agent.prompt('write through the link')
    call = agent.call('Write', file_path=str(desk / 'notes/link.md'))
    write(research.desk_directory, 'notes/y.md', 'by the agent\n')
    agent.post('Write', call, file_path=str(desk / 'notes/link.md'))

    newest = research.list(1)[0]
    assert research.show(newest.checkpoint_id, 'notes/y.md') == b'y1, unsaved by a person\n'
    assert newest.paths == ('notes/y.md',) and newest.tool == 'claude:Write'
    assert research.status().external == ()


def test_the_readme_layout_captures_shell_writes(tmp_path: Path) -> None:
    """The agent started in the folder holding ./workspace (the README's layout)."""
    project = tmp_path / 'project'
    workspace = project / 'workspace'
    cps = started(workspace, {'Memory.md': 'v0\n'})
    agent = Session(workspace, A, cwd=project)
    agent.prompt('note the plan')
    command = 'mkdir -p workspace/desks/main/notes && echo plan > workspace/desks/main/notes/p.md'
    call = agent.call('Bash', command=command)
    bash(project, command)
    agent.post('Bash', call, command=command)

    newest = cps.list(1)[0]
    assert newest.action == 'captured' and newest.paths == ('notes/p.md',)
    [turn] = cps.turns()
    assert turn.label == 'note the plan' and newest.turn == turn.turn_id
    assert cps.status().external == ()
    cps.restore_turn(turn.turn_id)
    assert not (cps.desk_directory / 'notes/p.md').exists()
