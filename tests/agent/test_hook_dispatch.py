"""Each hook event handled in this process (``hooks.run``), fed the events the real harnesses sent
(``hook_events/real/``), on real desks: what each event does, the line ``--verbose`` says, what
the harness is answered, and how a failure is reported. The hook command itself, as a process,
is tested in ``test_hooks.py``; these run where mutation testing sees them."""

from __future__ import annotations

import errno
import json
import os
import re
import resource
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers import HOOK_EVENTS
from helpers.builders import write

from trading_checkpoints import Checkpoints
from trading_checkpoints.agent.hooks import Options, Reply, run
from trading_checkpoints.agent.hooks.dispatch import reason
from trading_checkpoints.agent.hooks.lastevent import FAILED, last_event
from trading_checkpoints.agent.hooks.place import session_file
from trading_checkpoints.ops import calls
from trading_checkpoints.workspace import Workspace

REAL = HOOK_EVENTS / 'real'
SESSIONS = {
    'claude': '5d57f2df-ff97-4d01-b306-14d2f3e0c1c9',
    'gemini': 'c116fc4d-6520-4a9d-95f5-659d404cd4c4',
}
ID = r'[0-9a-f]{7,}'


def real(name: str, project: Path, **changes: Any) -> bytes:
    """A saved real event with the test's folders in it (and top-level fields changed)."""
    text = (REAL / f'{name}.json').read_text()
    text = text.replace('${PROJECT}', str(project)).replace('${HOME}', str(project.parent))
    data = json.loads(text.replace('${PROJECT_SLUG}', 'project'))
    data.update(changes)
    return json.dumps(data).encode()


def hook(raw: bytes, **options: Any) -> Reply:
    return run(raw, Options(**options))


def said(reply: Reply) -> str:
    """What ``--verbose`` said was done (the one line, without its prefix)."""
    assert reply.code == 0, reply
    assert reply.stderr.startswith('checkpoints hook: ') and reply.stderr.count('\n') == 1, reply
    return reply.stderr.removeprefix('checkpoints hook: ').removesuffix('\n')


def desk_of(workspace: Path, name: str = 'main') -> Checkpoints:
    return Workspace(workspace).desk(name)


def shell(project: Path, payload: bytes) -> None:
    """Runs the event's command as the harness would (in its folder)."""
    event = json.loads(payload)
    folder = event['tool_input'].get('dir_path', '')
    subprocess.run(['bash', '-c', event['tool_input']['command']], cwd=project / folder, timeout=60)


@pytest.fixture
def workspace(project: Path) -> Path:
    """The README's layout with notes/old.md on desk main, as the real runs had it."""
    write(project, 'workspace/desks/main/notes/old.md', 'old\n')
    return project / 'workspace'


def test_a_claude_turn_of_a_write_and_a_shell_command(project: Path, workspace: Path) -> None:
    cps = desk_of(workspace)
    opened = said(hook(real('claude-UserPromptSubmit', project), verbose=True))
    turn = opened.removeprefix('opened turn ')
    assert re.fullmatch(rf'{SESSIONS["claude"]}-\d{{8}}T\d{{6}}', turn), opened
    assert cps.list() == [], 'opening a turn takes no checkpoint'

    before = said(hook(real('claude-write-PreToolUse', project), verbose=True))
    [first] = cps.list()
    assert before == (f"checkpoint {first.checkpoint_id} of desk 'main' before Write (turn {turn})")
    assert (first.reason, first.tool, first.paths) == (
        'before Write notes/new.md',
        'claude:Write',
        ('notes/new.md',),
    )
    assert first.turn == turn
    [call] = calls.open_calls(cps.repository_directory, SESSIONS['claude'])
    assert (call.call_id, call.tool) == (f'{SESSIONS["claude"]}/toolu_0002', 'claude:Write')

    write(workspace, 'desks/main/notes/new.md', 'new\n')
    after = hook(real('claude-write-PostToolUse', project), verbose=True)
    assert after.stdout == '', 'Claude Code is told nothing'
    assert re.fullmatch(rf"sealed desk 'main' as {ID} after Write", said(after)), after
    assert calls.open_calls(cps.repository_directory, SESSIONS['claude']) == []
    assert cps.status().basis == 'sealed'

    # The desk as the write left it, before the command.
    command = real('claude-shell-PreToolUse', project)
    sealed = said(hook(command, verbose=True))
    assert sealed == f"checkpoint {cps.list(1)[0].checkpoint_id} of desk 'main' before Bash"
    shell(project, command)
    captured = said(hook(real('claude-shell-PostToolUse', project), verbose=True))
    newest = cps.list(1)[0]
    assert captured == (
        f"checkpoint {newest.checkpoint_id} of desk 'main' after Bash: notes/shell.md"
    )
    assert (newest.reason, newest.tool, newest.turn) == ('after Bash: echo', 'claude:Bash', turn)
    assert hook(real('claude-Stop', project), verbose=True) == Reply(0), 'nothing at work'
    assert hook(command, verbose=True) == Reply(0), 'nothing changed since: no checkpoint'
    [record] = [last_event(workspace, 'claude')]
    assert record is not None
    assert (record.event, record.tool, record.outcome) == ('PostToolUse', 'Bash', captured)


def test_a_gemini_turn_answers_json_every_time(project: Path, workspace: Path) -> None:
    cps = desk_of(workspace)
    prompt = hook(real('gemini-BeforeAgent', project), verbose=True)
    assert prompt.stdout == '{}\n' and said(prompt).startswith(f'opened turn {SESSIONS["gemini"]}-')
    before = hook(real('gemini-write-BeforeTool', project), verbose=True)
    [first] = cps.list()
    assert before.stdout == '{}\n'
    assert said(before).startswith(f"checkpoint {first.checkpoint_id} of desk 'main' before ")
    assert (first.tool, first.paths) == ('gemini:write_file', ('notes/new.md',))
    [call] = calls.open_calls(cps.repository_directory, SESSIONS['gemini'])
    assert not call.call_id.startswith(SESSIONS['gemini']), 'Gemini CLI gives no id of the call'
    write(workspace, 'desks/main/notes/new.md', 'new\n')
    after = hook(real('gemini-write-AfterTool', project))
    assert after == Reply(0, '{}\n'), 'nothing said without --verbose'
    assert cps.status().basis == 'sealed'

    # A command run in a desk folder named relative to the project.
    command = real('gemini-shell-in-desk-BeforeTool', project)
    assert hook(command) == Reply(0, '{}\n')
    shell(project, command)
    captured = said(hook(real('gemini-shell-in-desk-AfterTool', project), verbose=True))
    newest = cps.list(1)[0]
    assert captured == (
        f"checkpoint {newest.checkpoint_id} of desk 'main' after run_shell_command: notes/here.md"
    )
    assert hook(real('gemini-AfterAgent', project)) == Reply(0, '{}\n')


def test_a_command_that_failed_is_captured_and_a_person_s_edit_snapshotted_first(
    project: Path, workspace: Path
) -> None:
    cps = desk_of(workspace)
    before = said(hook(real('claude-shell-fails-PreToolUse', project), verbose=True))
    [first] = cps.list()
    assert before == f"checkpoint {first.checkpoint_id} of desk 'main' before Bash"
    assert first.reason == 'before Bash: echo, exit'
    shell(project, real('claude-shell-fails-PreToolUse', project))
    failed = said(hook(real('claude-shell-fails-PostToolUseFailure', project), verbose=True))
    newest = cps.list(1)[0]
    assert failed == f"checkpoint {newest.checkpoint_id} of desk 'main' after Bash: notes/old.md"
    assert newest.checkpoint_id != first.checkpoint_id


def test_more_than_five_changed_files_are_cut_short(project: Path, workspace: Path) -> None:
    cps = desk_of(workspace)
    command = 'for n in 1 2 3 4 5 6; do echo $n > workspace/desks/main/notes/n$n.md; done'
    tool_input = {'command': command, 'description': 'six files'}
    assert hook(real('claude-shell-PreToolUse', project, tool_input=tool_input)).code == 0
    subprocess.run(['bash', '-c', command], cwd=project, check=True, timeout=60)
    done = hook(real('claude-shell-PostToolUse', project, tool_input=tool_input), verbose=True)
    newest = cps.list(1)[0]
    shown = ', '.join(f'notes/n{n}.md' for n in range(1, 6))
    assert said(done) == (
        f"checkpoint {newest.checkpoint_id} of desk 'main' after Bash: {shown} ..."
    )
    assert newest.reason == 'after Bash: echo'


def test_a_stop_closes_the_write_left_at_work(project: Path, workspace: Path) -> None:
    cps = desk_of(workspace)
    assert hook(real('claude-UserPromptSubmit', project)).code == 0
    assert hook(real('claude-write-PreToolUse', project)).code == 0
    assert len(calls.open_calls(cps.repository_directory, SESSIONS['claude'])) == 1
    stopped = said(hook(real('claude-Stop', project), verbose=True))
    assert stopped == 'closed the calls left at work in main'
    assert calls.open_calls(cps.repository_directory, SESSIONS['claude']) == []
    assert hook(real('claude-Stop', project), verbose=True) == Reply(0), 'nothing left'


def test_the_next_prompt_closes_what_the_last_turn_left(project: Path, workspace: Path) -> None:
    cps = desk_of(workspace)
    assert hook(real('gemini-BeforeAgent', project)).code == 0
    assert hook(real('gemini-write-BeforeTool', project)).code == 0
    opened = said(hook(real('gemini-BeforeAgent', project), verbose=True))
    assert opened.startswith('opened turn ')
    assert calls.open_calls(cps.repository_directory, SESSIONS['gemini']) == []


def test_a_write_tool_closes_the_session_s_last_write_not_its_commands(
    project: Path, workspace: Path
) -> None:
    cps = desk_of(workspace)
    assert hook(real('claude-shell-PreToolUse', project)).code == 0
    assert hook(real('claude-write-PreToolUse', project)).code == 0
    write(workspace, 'desks/main/notes/new.md', 'new\n')
    assert hook(real('claude-edit-PreToolUse', project)).code == 0  # the write got no after
    at_work = calls.open_calls(cps.repository_directory, SESSIONS['claude'])
    assert [call.tool for call in at_work] == ['claude:Bash', 'claude:Edit']


def test_an_event_outside_any_workspace_does_nothing(tmp_path: Path) -> None:
    elsewhere = tmp_path / 'elsewhere'
    write(elsewhere, 'notes/old.md', 'old\n')
    for name in (
        'claude-UserPromptSubmit',
        'claude-write-PreToolUse',
        'claude-shell-PreToolUse',
        'claude-Stop',
    ):
        assert hook(real(name, elsewhere), verbose=True) == Reply(0)
    assert hook(real('gemini-write-BeforeTool', elsewhere)) == Reply(0, '{}\n')
    assert sorted(p.name for p in elsewhere.iterdir()) == ['notes'], 'no workspace made'


def test_a_tool_that_writes_nothing_and_other_events_do_nothing(
    project: Path, workspace: Path
) -> None:
    for name in ('claude-read-PreToolUse', 'claude-SessionStart', 'claude-PostToolBatch'):
        assert hook(real(name, project), verbose=True) == Reply(0)
    assert hook(real('gemini-read-BeforeTool', project), verbose=True) == Reply(0, '{}\n')
    assert desk_of(workspace).list() == []
    # A prompt without a session groups nothing: no turn is opened.
    assert hook(real('claude-UserPromptSubmit', project, session_id=None), verbose=True) == Reply(0)
    assert not (workspace / '.checkpoints').exists()


def test_a_write_without_a_session_is_a_plain_snapshot(project: Path, workspace: Path) -> None:
    raw = real('claude-edit-PreToolUse', project, session_id=None)
    done = said(hook(raw, verbose=True))
    [only] = desk_of(workspace).list()
    assert done == f"checkpoint {only.checkpoint_id} of desk 'main' before Edit"
    assert only.turn is None and only.tool == 'claude:Edit'


def test_a_write_into_a_new_desk_folder_makes_the_desk(project: Path, workspace: Path) -> None:
    target = str(workspace / 'desks' / 'research' / 'notes' / 'new.md')
    raw = real('claude-write-PreToolUse', project, tool_input={'file_path': target})
    done = said(hook(raw, verbose=True))
    assert (workspace / 'desks' / 'research').is_dir()
    assert done.endswith(f"of desk 'research' before Write (turn {SESSIONS['claude']})")
    assert desk_of(workspace, 'main').list() == []
    # After a tool into a desk that does not exist, or before one into a hidden folder: nothing.
    for name, folder in (
        ('claude-write-PostToolUse', 'archive'),
        ('claude-write-PreToolUse', '.hidden'),
    ):
        target = str(workspace / 'desks' / folder / 'notes' / 'new.md')
        assert hook(real(name, project, tool_input={'file_path': target}), verbose=True) == Reply(0)
        assert not (workspace / 'desks' / folder).exists()


def test_an_untracked_target_takes_no_checkpoint(project: Path, workspace: Path) -> None:
    target = str(workspace / 'desks' / 'main' / 'data.bin')
    raw = real('claude-write-PreToolUse', project, tool_input={'file_path': target})
    assert hook(raw, verbose=True) == Reply(0)
    assert desk_of(workspace).list() == []


def test_a_write_through_a_symlink_snapshots_the_desk_it_leads_into(
    project: Path, workspace: Path
) -> None:
    write(workspace, 'desks/research/notes/shared.md', 'shared\n')
    (workspace / 'desks' / 'main' / 'notes' / 'shared.md').symlink_to(
        workspace / 'desks' / 'research' / 'notes' / 'shared.md'
    )
    target = str(workspace / 'desks' / 'main' / 'notes' / 'shared.md')
    raw = real('claude-edit-PreToolUse', project, tool_input={'file_path': target})
    done = said(hook(raw, verbose=True))
    [main] = desk_of(workspace, 'main').list()
    [research] = desk_of(workspace, 'research').list()
    assert done == (
        f"checkpoint {main.checkpoint_id} of desk 'main' before Edit (turn {SESSIONS['claude']}); "
        f"checkpoint {research.checkpoint_id} of desk 'research' before Edit "
        f'(turn {SESSIONS["claude"]})'
    )
    assert research.paths == ('notes/shared.md',)
    # A desk named on the command line is the only one.
    write(workspace, 'desks/research/notes/shared.md', 'changed\n')
    raw = real('claude-edit-PreToolUse', project, tool_input={'file_path': target}, session_id=None)
    assert said(hook(raw, desk='main', verbose=True)).endswith("of desk 'main' before Edit")
    assert len(desk_of(workspace, 'research').list()) == 1


def test_a_command_concerns_every_desk_unless_one_is_named(project: Path, workspace: Path) -> None:
    write(workspace, 'desks/research/notes/a.md', 'a\n')
    write(workspace, 'desks/.hidden/notes/a.md', 'a\n')
    raw = real('claude-shell-PreToolUse', project)
    done = said(hook(raw, verbose=True))
    [main] = desk_of(workspace, 'main').list()
    [research] = desk_of(workspace, 'research').list()
    assert done == (
        f"checkpoint {main.checkpoint_id} of desk 'main' before Bash; "
        f"checkpoint {research.checkpoint_id} of desk 'research' before Bash"
    )
    write(workspace, 'desks/research/notes/a.md', 'b\n')
    write(workspace, 'desks/main/notes/old.md', 'newer\n')
    named = said(hook(raw, desk='research', verbose=True))
    assert named.startswith('checkpoint ') and "desk 'research'" in named and 'main' not in named
    assert len(desk_of(workspace, 'main').list()) == 1


def test_a_missing_desk_fails_and_blocks_only_a_strict_write(
    project: Path, workspace: Path
) -> None:
    raw = real('claude-write-PreToolUse', project)
    folder = workspace / 'desks' / 'research'
    message = (
        f"checkpoints hook: no desk 'research' in {workspace} (expected the folder {folder}); "
        'pass --desk or set CHECKPOINTS_DESK'
    )
    assert hook(raw, desk='research') == Reply(1, '', message + '\n')
    assert hook(raw, desk='research', strict=True) == Reply(
        2, '', f'{message} (blocked: --strict)\n'
    )
    after = real('claude-write-PostToolUse', project)
    assert hook(after, desk='research', strict=True).code == 1, 'the tool ran: nothing to block'
    failed = last_event(workspace, 'claude', FAILED)
    assert failed is not None and failed.outcome == message.removeprefix('checkpoints hook: ')
    assert (failed.event, failed.tool) == ('PostToolUse', 'Write')


def test_a_damaged_repository_fails_as_a_checkpoint_a_seal_or_a_close(
    project: Path, workspace: Path
) -> None:
    (workspace / '.checkpoints').mkdir()
    repository = workspace / '.checkpoints' / 'main.git'
    repository.write_text('not a repository')
    target = workspace / 'desks' / 'main' / 'notes' / 'new.md'
    why = f'the checkpoint repository {repository} is not a folder'
    for name, verb in (
        ('claude-write-PreToolUse', 'checkpoint'),
        ('claude-write-PostToolUse', 'seal'),
    ):
        done = hook(real(name, project))
        assert done == Reply(
            1, '', f"checkpoints hook: could not {verb} desk 'main' for Write {target}: {why}\n"
        )
    assert hook(real('claude-write-PreToolUse', project), strict=True).code == 2
    assert hook(real('claude-write-PostToolUse', project), strict=True).code == 1
    shell_done = hook(real('claude-shell-PreToolUse', project), strict=True)
    assert shell_done == Reply(
        2,
        '',
        f"checkpoints hook: could not checkpoint desk 'main' for Bash (echo): {why} "
        '(blocked: --strict)\n',
    )


def test_a_file_where_the_hooks_keep_state_is_reported_with_its_path(
    project: Path, workspace: Path
) -> None:
    (workspace / '.checkpoints').write_text('a file, not a folder')
    record = session_file(workspace, SESSIONS['claude'], 'json')
    done = hook(real('claude-UserPromptSubmit', project), strict=True)
    assert done == Reply(1, '', f'checkpoints hook: Not a directory: {record}\n')


def test_a_session_record_that_cannot_be_read_fails_the_checkpoint_and_names_it(
    project: Path, workspace: Path
) -> None:
    record = session_file(workspace, SESSIONS['claude'], 'json', create=True)
    record.mkdir()
    target = workspace / 'desks' / 'main' / 'notes' / 'new.md'
    failed = f'{target}: Is a directory: {record}'
    done = hook(real('claude-write-PreToolUse', project), strict=True)
    assert done == Reply(
        2,
        '',
        f"checkpoints hook: could not checkpoint desk 'main' for Write {failed} "
        '(blocked: --strict)\n',
    )
    failure = real('claude-write-PostToolUse', project, hook_event_name='PostToolUseFailure')
    assert hook(failure, strict=True) == Reply(
        1, '', f"checkpoints hook: could not close a call of desk 'main' for Write {failed}\n"
    )
    prompt = hook(real('claude-UserPromptSubmit', project), strict=True)
    assert prompt == Reply(1, '', f'checkpoints hook: Is a directory: {record}\n')
    record.rmdir()
    record.symlink_to(workspace / 'desks' / 'main' / 'notes' / 'old.md')
    done = hook(real('claude-shell-PreToolUse', project), strict=True)
    assert done == Reply(
        2,
        '',
        "checkpoints hook: could not checkpoint desk 'main' for Bash (echo): "
        f'Too many levels of symbolic links: {record} (blocked: --strict)\n',
    )


def test_an_unexpected_error_is_one_line_unless_debugging(
    project: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A lone surrogate cannot name a file: no path can be made of it.
    raw = real('claude-write-PreToolUse', project)
    raw = raw.replace(b'notes/new.md', b'notes/\\ud800.md')
    done = hook(raw, strict=True)
    assert done.code == 2 and done.stdout == '', 'a strict write fails closed'
    assert done.stderr.startswith('checkpoints hook: unexpected UnicodeEncodeError: ')
    assert done.stderr.endswith(' (blocked: --strict)\n') and done.stderr.count('\n') == 1
    assert hook(raw).code == 1
    monkeypatch.setenv('CHECKPOINTS_DEBUG', '1')
    with pytest.raises(UnicodeEncodeError):
        hook(raw)


@pytest.mark.parametrize(
    'raw',
    [b'', b'[1]', b'{"tool_name": "Write"}', b'{"hook_event_name": "PreToolUse", '],
)
def test_an_unreadable_event_blocks_only_when_strict(raw: bytes) -> None:
    done = hook(raw)
    assert done.code == 1 and done.stdout == '' and done.stderr.startswith('checkpoints hook: ')
    assert hook(raw, strict=True).code == 2


def test_the_harness_option_chooses_the_answer_s_terms(project: Path, workspace: Path) -> None:
    raw = real('claude-edit-PreToolUse', project)
    assert hook(raw, harness='gemini') == Reply(0, '{}\n')
    assert hook(real('gemini-edit-BeforeTool', project), harness='claude') == Reply(0)


# -- found by mutation: each pins a step of agent/hooks/dispatch.py ---------------------------


def test_the_turn_is_labelled_with_the_prompt_and_each_event_recorded(
    project: Path, workspace: Path
) -> None:
    cps = desk_of(workspace)
    assert hook(real('claude-UserPromptSubmit', project)).code == 0
    handled = last_event(workspace, 'claude')
    assert handled is not None and (handled.event, handled.tool) == ('UserPromptSubmit', '')
    assert handled.outcome.startswith('opened turn ')
    assert hook(real('claude-write-PreToolUse', project)).code == 0
    [turn] = cps.turns()
    assert turn.label == 'record the events'
    [call] = calls.open_calls(cps.repository_directory, SESSIONS['claude'])
    tool_input = json.loads(real('claude-write-PreToolUse', project))['tool_input']
    assert call.inputs == calls.digest(SESSIONS['claude'], ['Write', tool_input])
    assert hook(real('claude-Stop', project)).code == 0
    stopped = last_event(workspace, 'claude')
    assert stopped is not None
    assert (stopped.event, stopped.outcome) == ('Stop', 'closed the calls left at work in main')
    # A prompt that is no string labels nothing.
    assert hook(real('claude-UserPromptSubmit', project, prompt=7)).code == 0
    write(workspace, 'desks/main/notes/new.md', 'new\n')
    assert hook(real('claude-edit-PreToolUse', project)).code == 0
    assert cps.turns()[0].label == ''


def test_a_shell_call_s_input_is_digested(project: Path, workspace: Path) -> None:
    cps = desk_of(workspace)
    raw = real('gemini-shell-BeforeTool', project)
    assert hook(raw).code == 0
    [call] = calls.open_calls(cps.repository_directory, SESSIONS['gemini'])
    tool_input = json.loads(raw)['tool_input']
    assert call.inputs == calls.digest(SESSIONS['gemini'], ['run_shell_command', tool_input])


def test_a_command_given_as_no_object_is_still_checkpointed(project: Path, workspace: Path) -> None:
    raw = real('claude-shell-PreToolUse', project, tool_input='echo x')
    done = said(hook(raw, verbose=True))
    [first] = desk_of(workspace).list()
    assert done == f"checkpoint {first.checkpoint_id} of desk 'main' before Bash"
    assert first.reason == 'before Bash: a command'


def test_a_command_s_folder_above_the_cwd_s_finds_the_workspace(project: Path) -> None:
    write(project, 'workspace/desks/main/notes/old.md', 'old\n')
    above = str(project.parent)
    for dir_path in ('project/workspace/desks/main', str(project / 'workspace' / 'desks')):
        raw = real('gemini-shell-in-desk-BeforeTool', project, cwd=above)
        data = json.loads(raw)
        data['tool_input']['dir_path'] = dir_path
        assert said(hook(json.dumps(data).encode(), verbose=True)).startswith('checkpoint ')
        write(project, 'workspace/desks/main/notes/old.md', f'{dir_path}\n')
    assert len(desk_of(project / 'workspace').list()) == 2
    # Without the folder, the cwd alone is no workspace: nothing.
    assert hook(real('gemini-shell-BeforeTool', project, cwd=above)) == Reply(0, '{}\n')


def test_the_workspace_is_the_cwd_s_before_the_file_s(project: Path, workspace: Path, tmp_path):
    other = tmp_path / 'other' / 'workspace'
    write(other, 'desks/main/notes/a.md', 'a\n')
    target = str(other / 'desks' / 'main' / 'notes' / 'a.md')
    raw = real(
        'claude-edit-PreToolUse', project, cwd=str(workspace), tool_input={'file_path': target}
    )
    assert hook(raw, verbose=True) == Reply(0), 'not a file of the cwd workspace'
    assert not (other / '.checkpoints').exists() and not (workspace / '.checkpoints').exists()
    # From a folder in no workspace, the file's own.
    away = real('claude-edit-PreToolUse', tmp_path, tool_input={'file_path': target})
    assert said(hook(away, verbose=True)).startswith('checkpoint ')
    assert len(desk_of(other).list()) == 1


def test_a_write_outside_every_desk_from_a_desk_s_folder_is_nothing(project: Path) -> None:
    (project / 'workspace' / 'desks' / 'main').rmdir()  # no desk main
    write(project, 'workspace/desks/research/notes/a.md', 'a\n')
    cwd = str(project / 'workspace' / 'desks' / 'research')
    target = str(project / 'workspace' / 'README.md')
    raw = real('claude-write-PreToolUse', project, cwd=cwd, tool_input={'file_path': target})
    assert hook(raw, verbose=True) == Reply(0)


def test_a_dangling_link_into_a_new_desk_makes_that_desk(project: Path, workspace: Path) -> None:
    link = workspace / 'desks' / 'main' / 'notes' / 'link.md'
    link.symlink_to(workspace / 'desks' / 'ghost' / 'notes' / 'x.md')
    raw = real('claude-write-PreToolUse', project, tool_input={'file_path': str(link)})
    done = said(hook(raw, verbose=True))
    assert (workspace / 'desks' / 'ghost').is_dir()
    assert done.endswith(f"of desk 'ghost' before Write (turn {SESSIONS['claude']})")


def test_a_write_through_a_hidden_folder_s_link_reaches_the_desk(
    project: Path, workspace: Path
) -> None:
    hidden = workspace / 'desks' / '.hidden'
    hidden.mkdir()
    (hidden / 'link.md').symlink_to(workspace / 'desks' / 'main' / 'notes' / 'old.md')
    raw = real('claude-edit-PreToolUse', project, tool_input={'file_path': str(hidden / 'link.md')})
    done = said(hook(raw, verbose=True))
    [taken] = desk_of(workspace).list()
    assert done == (
        f"checkpoint {taken.checkpoint_id} of desk 'main' before Edit (turn {SESSIONS['claude']})"
    )


def test_a_new_desk_s_folders_are_made_in_a_workspace_without_desks(tmp_path: Path) -> None:
    workspace = tmp_path / 'project' / 'workspace'
    (workspace / '.checkpoints').mkdir(parents=True)
    target = str(workspace / 'desks' / 'new' / 'notes' / 'a.md')
    raw = real('claude-write-PreToolUse', tmp_path / 'project', tool_input={'file_path': target})
    assert said(hook(raw, verbose=True)).endswith(
        f"of desk 'new' before Write (turn {SESSIONS['claude']})"
    )
    assert (workspace / 'desks' / 'new').is_dir()


def test_a_new_desk_another_hook_makes_at_the_same_moment_is_no_error(
    project: Path, workspace: Path
) -> None:
    from helpers.faults import armed

    folder = workspace / 'desks' / 'new'

    made: list[bool] = []

    def other_hook(event: str, args: tuple) -> None:
        if event == 'os.mkdir' and os.fsdecode(args[0]) == str(folder) and not made:
            made.append(True)
            os.mkdir(folder)  # the other session's hook, first

    target = str(folder / 'notes' / 'a.md')
    raw = real('claude-write-PreToolUse', project, tool_input={'file_path': target})
    with armed(other_hook):
        done = hook(raw, verbose=True)
    assert made, 'the other hook made it first'
    assert said(done).endswith(f"of desk 'new' before Write (turn {SESSIONS['claude']})")


def test_an_unchanged_desk_s_write_without_a_session_says_so(
    project: Path, workspace: Path
) -> None:
    raw = real('claude-edit-PreToolUse', project, session_id=None)
    assert said(hook(raw, verbose=True)).startswith('checkpoint ')
    assert said(hook(raw, verbose=True)) == "checkpoint unchanged of desk 'main' before Edit"
    [call] = calls.load(desk_of(workspace).repository_directory).values() or [None]
    assert call is None, 'no session: no call on record'


def test_a_call_id_is_the_session_s_and_at_most_100_characters(
    project: Path, workspace: Path
) -> None:
    long_id = 'toolu_' + 'x' * 150
    assert hook(real('claude-write-PreToolUse', project, tool_use_id=long_id)).code == 0
    [call] = calls.open_calls(desk_of(workspace).repository_directory, SESSIONS['claude'])
    assert call.call_id == f'{SESSIONS["claude"]}/{long_id[:100]}'


def test_a_failed_write_tool_is_closed(project: Path, workspace: Path) -> None:
    cps = desk_of(workspace)
    assert hook(real('claude-write-PreToolUse', project)).code == 0
    failed = real('claude-write-PostToolUse', project, hook_event_name='PostToolUseFailure')
    assert said(hook(failed, verbose=True)) == "closed the failed Write on desk 'main'"
    assert calls.open_calls(cps.repository_directory, SESSIONS['claude']) == []


def test_a_failed_write_tool_without_an_id_is_found_by_its_file(
    project: Path, workspace: Path
) -> None:
    cps = desk_of(workspace)
    failed = real('claude-write-PostToolUse', project, hook_event_name='PostToolUseFailure')
    assert hook(failed, verbose=True) == Reply(0), 'nothing on record: nothing closed'
    assert hook(real('claude-write-PreToolUse', project, tool_use_id=None)).code == 0
    failed = real(
        'claude-write-PostToolUse', project, hook_event_name='PostToolUseFailure', tool_use_id=None
    )
    assert said(hook(failed, verbose=True)) == "closed the failed Write on desk 'main'"
    assert calls.open_calls(cps.repository_directory, SESSIONS['claude']) == []


def test_the_session_s_calls_are_closed_in_every_desk(project: Path, workspace: Path) -> None:
    """A desk with nothing at work, or only a command, or no repository, is passed over."""
    write(workspace, 'desks/aaa/notes/a.md', 'a\n')  # no repository: nothing on record
    write(workspace, 'desks/archive/notes/a.md', 'a\n')
    write(workspace, 'desks/broken/notes/a.md', 'a\n')
    write(workspace, 'desks/research/notes/shared.md', 'shared\n')
    (workspace / 'desks' / 'main' / 'notes' / 'shared.md').symlink_to(
        workspace / 'desks' / 'research' / 'notes' / 'shared.md'
    )
    desks = ('archive', 'main', 'research')
    assert hook(real('claude-shell-PreToolUse', project), desk='archive').code == 0
    (workspace / '.checkpoints' / 'broken.git').write_text('not a repository')
    target = str(workspace / 'desks' / 'main' / 'notes' / 'shared.md')
    raw = real('claude-edit-PreToolUse', project, tool_input={'file_path': target})
    assert hook(raw).code == 0
    at_work = {d: calls.open_calls(desk_of(workspace, d).repository_directory, SESSIONS['claude'])
               for d in desks}  # fmt: skip
    assert {d: [c.tool for c in at_work[d]] for d in desks} == {
        'archive': ['claude:Bash'],
        'main': ['claude:Edit'],
        'research': ['claude:Edit'],
    }
    # The next write closes the write in both desks, not the command.
    again = real('claude-write-PreToolUse', project, tool_use_id='toolu_next')
    assert hook(again).code == 0
    assert [c.tool for c in calls.open_calls(desk_of(workspace, 'research').repository_directory,
                                             SESSIONS['claude'])] == []  # fmt: skip
    assert [c.tool for c in calls.open_calls(desk_of(workspace, 'archive').repository_directory,
                                             SESSIONS['claude'])] == ['claude:Bash']  # fmt: skip
    assert hook(raw).code == 0
    stopped = said(hook(real('claude-Stop', project), verbose=True))
    assert stopped == 'closed the calls left at work in archive, main, research'


def test_calls_that_cannot_be_closed_are_said(project: Path, workspace: Path) -> None:
    assert hook(real('claude-write-PreToolUse', project)).code == 0
    repository = workspace / '.checkpoints' / 'main.git'
    shutil.rmtree(repository / 'objects')
    (repository / 'objects').write_text('in the way')
    done = hook(real('claude-Stop', project), strict=True)
    assert done == Reply(
        1,
        '',
        "checkpoints hook: could not close a call of desk 'main' for the calls left at work: "
        f'cannot open the checkpoint repository {repository}: it has no objects or refs folder\n',
    )


def test_handle_answers_without_being_given_an_answer(project: Path, workspace: Path) -> None:
    from trading_checkpoints.agent.hooks import handle

    event = json.loads(real('claude-shell-PreToolUse', project))
    event['tool_input']['command'] = 'checkpoints protect notes'
    line = handle(event, Options())
    assert line is not None and line.startswith('denied Bash: `checkpoints protect` changes ')
    denied = last_event(workspace, 'claude')
    assert denied is not None and (denied.tool, denied.outcome) == ('Bash', line)


def test_a_denied_write_is_recorded_with_its_tool(project: Path, workspace: Path) -> None:
    desk_of(workspace).protect(['notes/old.md'])
    reply = hook(real('gemini-edit-BeforeTool', project))
    assert json.loads(reply.stdout)['decision'] == 'deny'
    denied = last_event(workspace, 'gemini')
    assert denied is not None and denied.tool == 'replace'
    assert denied.outcome == f'denied replace: {json.loads(reply.stdout)["reason"]}'


def test_a_write_into_a_protected_file_of_a_desk_named_by_its_text_is_denied(
    project: Path, workspace: Path, tmp_path: Path
) -> None:
    """A desk folder that is a link elsewhere: the desk the text names is asked too."""
    elsewhere = tmp_path / 'elsewhere'
    (workspace / 'desks' / 'main').rename(elsewhere)
    (workspace / 'desks' / 'main').symlink_to(elsewhere)
    desk_of(workspace).protect(['notes/old.md'])
    reply = hook(real('claude-edit-PreToolUse', project))
    assert json.loads(reply.stdout)['hookSpecificOutput']['permissionDecision'] == 'deny'


def test_a_desk_folder_in_the_way_of_a_new_desk_is_said_with_its_path(
    project: Path, workspace: Path
) -> None:
    (workspace / 'desks' / 'new').write_text('a file')
    target = workspace / 'desks' / 'new' / 'notes' / 'a.md'
    raw = real('claude-write-PreToolUse', project, tool_input={'file_path': str(target)})
    assert hook(raw, strict=True) == Reply(
        2,
        '',
        f"checkpoints hook: could not checkpoint desk 'new' for Write {target}: "
        f'File exists: {workspace / "desks" / "new"} (blocked: --strict)\n',
    )


def test_a_damaged_policy_is_said_in_full(project: Path, workspace: Path) -> None:
    desk_of(workspace).snapshot('start')
    config = workspace / '.checkpoints' / 'main.git' / 'config'
    config.unlink()
    config.mkdir()
    done = hook(real('claude-write-PreToolUse', project))
    assert done == Reply(
        1,
        '',
        f'checkpoints hook: could not read the policy for Write: {config} is not a regular file '
        '(a FIFO, a device or a folder); refusing to open it (remove it)\n',
    )


def test_a_command_s_change_to_protected_paths_is_put_back_and_said(
    project: Path, workspace: Path
) -> None:
    cps = desk_of(workspace)
    write(workspace, 'desks/main/notes/rules.md', 'rules\n')
    cps.snapshot('start')
    cps.protect(['notes/old.md', 'notes/rules.md'])
    cps.budget('notes/plan.md', 5)
    command = (
        'cd workspace/desks/main/notes; echo x >> old.md; echo x >> rules.md; '
        'echo a long plan > plan.md'
    )
    tool_input = {'command': command, 'description': 'x'}
    assert hook(real('claude-shell-PreToolUse', project, tool_input=tool_input)).code == 0
    subprocess.run(['bash', '-c', command], cwd=project, check=True, timeout=60)
    reply = hook(real('claude-shell-PostToolUse', project, tool_input=tool_input), verbose=True)
    assert re.fullmatch(
        rf"checkpoint {ID} of desk 'main' after Bash: notes/old.md, notes/plan.md, "
        "notes/rules.md; put back protected notes/old.md, notes/rules.md of desk 'main'",
        said(reply),
    ), reply
    answer = json.loads(reply.stdout)
    assert answer['reason'] == (
        "Your command changed notes/old.md, notes/rules.md, protected on desk 'main': you may "
        'read it but not change it, so the checkpoints hook put it back as it was before the '
        'command. Leave it as it is.'
    )
    assert answer['hookSpecificOutput']['additionalContext'] == (
        "notes/plan.md is 12 B, its budget is 5 B: condense it (desk 'main')."
    )
    assert (workspace / 'desks' / 'main' / 'notes' / 'old.md').read_text() == 'old\n'


def test_five_changed_files_are_named_in_full(project: Path, workspace: Path) -> None:
    cps = desk_of(workspace)
    command = 'for n in 1 2 3 4 5; do echo $n > workspace/desks/main/notes/n$n.md; done'
    tool_input = {'command': command, 'description': 'five files'}
    assert hook(real('claude-shell-PreToolUse', project, tool_input=tool_input)).code == 0
    subprocess.run(['bash', '-c', command], cwd=project, check=True, timeout=60)
    done = hook(real('claude-shell-PostToolUse', project, tool_input=tool_input), verbose=True)
    shown = ', '.join(f'notes/n{n}.md' for n in range(1, 6))
    assert (
        said(done)
        == f"checkpoint {cps.list(1)[0].checkpoint_id} of desk 'main' after Bash: {shown}"
    )


def short_of_descriptors(project: Path, tmp_path: Path, event: str) -> list[tuple[Path, Reply]]:
    """The hook's replies to ``event`` with the process's descriptors limited, from none free
    up to the first limit that is enough (at most 64), each on a copy of ``project`` (a call
    left on record by one try changes the next); with each copy's project folder."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    lowest = os.dup(0)
    os.close(lowest)
    replies = []
    for limit in range(lowest, lowest + 64):
        trial = tmp_path / f'limit-{limit}' / 'project'
        shutil.copytree(project, trial, symlinks=True)
        raw = real(event, trial)
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
        try:
            done = hook(raw, strict=True)
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        if done.code == 0:
            return replies
        replies.append((trial, done))
    raise AssertionError(f'{event} failed with 64 descriptors')


REASON = r"(?P<detail>(.+: )?(\[Errno 24\] )?Too many open files(: '?/[^:']+'?)?)"


def test_a_checkpoint_short_of_descriptors_says_the_systems_reason_and_the_file_if_named(
    project: Path, workspace: Path, tmp_path: Path
) -> None:
    """With the process's descriptors limited, each failing checkpoint is one line naming the
    desk and the tool and ending with the system's reason, after the file when the system named
    one (blocked under --strict); a folder's listing through its descriptor (``os.listdir(fd)``
    takes a descriptor of its own, and the system names no file) names the folder."""
    assert hook(real('claude-write-PreToolUse', project)).code == 0  # imports what it needs
    assert hook(real('claude-write-PostToolUse', project)).code == 0
    write(workspace, 'desks/main/notes/old.md', 'changed\n')
    details = []
    for trial, done in short_of_descriptors(project, tmp_path, 'claude-write-PreToolUse'):
        target = trial / 'workspace' / 'desks' / 'main' / 'notes' / 'new.md'
        line = re.compile(
            'checkpoints hook: could not (checkpoint desk .main. for '
            f'Write {re.escape(str(target))}|read the policy for Write): '
            rf'{REASON} \(blocked: --strict\)\n'
        )
        found = line.fullmatch(done.stderr)
        assert done.code == 2 and found is not None, done
        details.append(found['detail'])
    listing = re.compile(r'cannot list /.+/desks/main/notes: Too many open files')
    assert any(listing.fullmatch(detail) for detail in details), details
    assert '[Errno 24] Too many open files' not in details, 'every refusal names its file'


def test_a_prompt_short_of_descriptors_says_the_systems_reason_and_blocks_nothing(
    project: Path, workspace: Path, tmp_path: Path
) -> None:
    """A prompt's turn that cannot be read or written for want of descriptors: one line with
    the system's reason and the session's record, never blocking (a prompt writes nothing)."""
    assert hook(real('claude-UserPromptSubmit', project)).code == 0  # imports what it needs
    replies = short_of_descriptors(project, tmp_path, 'claude-UserPromptSubmit')
    said_lines = []
    for trial, done in replies:
        record = session_file(trial / 'workspace', SESSIONS['claude'], 'json')
        said_lines.append(done.stderr.replace(str(record), 'RECORD'))
        assert done.code == 1 and re.fullmatch(f'checkpoints hook: {REASON}\n', done.stderr)
    assert 'checkpoints hook: cannot write RECORD: Too many open files\n' in said_lines, replies


def test_a_desk_folder_removed_while_a_shell_commands_desks_are_checkpointed_stops_no_other(
    project: Path, workspace: Path
) -> None:
    """The desks listed with a folder a moment before: one removed meanwhile (here while the
    desk before it is checkpointed) is passed over, and the desks after it still get theirs."""
    from helpers.faults import armed

    for desk in ('a', 'b'):
        write(workspace, f'desks/{desk}/notes/x.md', f'{desk}\n')
    removed: list[bool] = []

    def remover(event: str, args: tuple) -> None:
        opened = event == 'open' and isinstance(args[0], (str, bytes))
        if opened and '/.checkpoints/a.git/' in os.fsdecode(args[0]) and not removed:
            removed.append(True)
            shutil.rmtree(workspace / 'desks' / 'b')

    with armed(remover):
        done = hook(real('claude-shell-PreToolUse', project), verbose=True)
    assert removed
    assert re.fullmatch(
        rf"checkpoint {ID} of desk 'a' before Bash; checkpoint {ID} of desk 'main' before Bash",
        said(done),
    ), done
    [before] = desk_of(workspace, 'main').list()
    assert before.reason == 'before Bash: echo'


def test_a_fifo_where_the_session_record_goes_fails_the_hook_at_once(
    project: Path, workspace: Path
) -> None:
    """A FIFO put where the session's record goes (a command the agent ran may make one) is
    refused without waiting for a writer: each hook of the session says so, and --strict
    blocks the write."""
    from helpers.faults import readers_let_go

    record = session_file(workspace, SESSIONS['claude'], 'json', create=True)
    os.mkfifo(record)
    with readers_let_go(record) as released:
        prompt = hook(real('claude-UserPromptSubmit', project), strict=True)
        write_done = hook(real('claude-write-PreToolUse', project), strict=True)
    assert released == [], 'a hook waited for a writer'
    assert prompt == Reply(1, '', f'checkpoints hook: Not a regular file: {record}\n')
    target = workspace / 'desks' / 'main' / 'notes' / 'new.md'
    assert write_done == Reply(
        2,
        '',
        f"checkpoints hook: could not checkpoint desk 'main' for Write {target}: "
        f'Not a regular file: {record} (blocked: --strict)\n',
    )


def test_a_failure_before_the_desk_is_known_blocks_only_a_strict_tools_first_hook(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A relative ``--workspace`` from a current folder since removed: the error names the
    problem, and ``--strict`` blocks the tool before it runs (it may have been a write), as a
    failed checkpoint does; after it, nothing is left to block."""
    gone = project.parent / 'gone'
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    message = (
        'checkpoints hook: the current folder no longer exists: run from an existing folder, '
        'or give --workspace as an absolute path'
    )
    prompt = real('claude-UserPromptSubmit', project)
    assert hook(prompt, workspace=Path('workspace'), strict=True) == Reply(1, '', message + '\n')
    for name in ('claude-write-PreToolUse', 'claude-shell-PreToolUse'):
        raw = real(name, project)
        assert hook(raw, workspace=Path('workspace')) == Reply(1, '', message + '\n')
        assert hook(raw, workspace=Path('workspace'), strict=True) == Reply(
            2, '', f'{message} (blocked: --strict)\n'
        )
    after = real('claude-write-PostToolUse', project)
    assert hook(after, workspace=Path('workspace'), strict=True) == Reply(1, '', message + '\n')


def test_a_system_error_is_said_as_its_reason_then_the_file_it_names() -> None:
    """Every hook line says a system error alike: ``os.listdir(fd)`` or a socket short of
    descriptors names no file; a refused open names one."""
    bare = OSError(errno.EMFILE, 'Too many open files')
    named = OSError(errno.EACCES, 'Permission denied', '/ws/desks/main/notes')
    assert reason(bare) == 'Too many open files'
    assert reason(named) == 'Permission denied: /ws/desks/main/notes'
    assert reason(OSError('no reason')) == 'no reason'
    assert reason(ValueError('not a system error')) == 'not a system error'
