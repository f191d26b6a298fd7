"""The hook command's own steps in this process (``agent/hooks/process.py``): its options, stdin
as a real file, a pipe or a terminal, what it writes and its exit status, Ctrl-C (a real SIGINT)
and a harness that stopped reading. ``test_hooks.py`` runs the same command as a process."""

from __future__ import annotations

import contextlib
import gc
import io
import json
import os
import signal
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import HOOK_EVENTS
from helpers.builders import write

from trading_checkpoints.agent.hooks.events import MAX_EVENT_BYTES
from trading_checkpoints.agent.hooks.process import INTERRUPTED, main, parser
from trading_checkpoints.workspace import Workspace


@pytest.fixture
def stdin(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[callable]:
    """Puts a real file with the given bytes on stdin."""
    opened = []

    def put(data: bytes) -> None:
        path = tmp_path / f'stdin-{len(opened)}'
        path.write_bytes(data)
        handle = open(path)  # noqa: SIM115 - closed below
        opened.append(handle)
        monkeypatch.setattr(sys, 'stdin', handle)

    yield put
    for handle in opened:
        handle.close()


def gemini_prompt(workspace: Path) -> bytes:
    raw = (HOOK_EVENTS / 'real' / 'gemini-BeforeAgent.json').read_text()
    return raw.replace('${PROJECT}', str(workspace.parent)).replace('${HOME}', '/nowhere').encode()


def test_the_options_reach_the_event(stdin, capsys, workspace: Path, desk: Path) -> None:
    write(desk, 'notes/a.md', 'a\n')
    raw = (HOOK_EVENTS / 'real' / 'claude-edit-PreToolUse.json').read_text()
    raw = raw.replace('${PROJECT}', '/nowhere').replace('${HOME}', '/nowhere')
    raw = raw.replace('/nowhere/workspace/desks/main/notes/old.md', str(desk / 'notes' / 'a.md'))
    stdin(raw.encode())
    code = main(['--workspace', str(workspace), '--desk', 'main', '--harness', 'gemini', '-v'])
    out, err = capsys.readouterr()
    [taken] = Workspace(workspace).desk('main').list()
    assert (code, out) == (0, '{}\n'), err
    assert err.startswith(f'checkpoints hook: checkpoint {taken.checkpoint_id} ')
    stdin(raw.encode())
    assert main(['--workspace', str(workspace), '--desk', 'research', '--strict']) == 2
    out, err = capsys.readouterr()
    assert out == '' and err.startswith("checkpoints hook: no desk 'research' in ")
    assert err.endswith('(blocked: --strict)\n')


def test_the_parser_s_defaults_and_help(capsys) -> None:
    args = parser().parse_args([])
    assert (args.workspace, args.desk, args.harness, args.strict, args.verbose) == (
        None,
        None,
        None,
        False,
        False,
    )
    assert parser().prog == 'checkpoints hook'
    assert main(['--help']) == 0
    out, _ = capsys.readouterr()
    assert out.startswith('usage: checkpoints hook ') and '`checkpoints hook install' in out
    for flag in ('--workspace', '--desk', '--harness', '--strict', '--verbose'):
        assert flag in out


def test_a_bad_command_line_never_blocks(capsys) -> None:
    assert main(['--harness', 'codex']) == 1
    assert 'invalid choice' in capsys.readouterr().err


def test_an_event_with_nothing_to_do_writes_nothing(stdin, capsys, tmp_path: Path) -> None:
    stdin(b'{"hook_event_name": "SessionStart", "cwd": "/"}')
    assert main([]) == 0
    assert capsys.readouterr() == ('', '')
    stdin(b'')
    assert main(['--strict']) == 2
    assert capsys.readouterr().err == (
        'checkpoints hook: no hook event on stdin (expected one JSON object) (blocked: --strict)\n'
    )


def test_gemini_s_answer_is_written_out(stdin, capsys, workspace: Path, desk: Path) -> None:
    stdin(gemini_prompt(workspace))
    assert main([]) == 0
    assert capsys.readouterr() == ('{}\n', '')


def test_stdin_that_cannot_be_read_is_told_and_no_event(
    monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    ours, theirs = socket.socketpair()
    ours.send(b'unread')
    theirs.close()  # closed with our bytes unread: reading ours fails (ECONNRESET)
    with open(ours.detach()) as reset:
        monkeypatch.setattr(sys, 'stdin', reset)
        assert main([]) == 1
    assert capsys.readouterr().err.splitlines() == [
        'checkpoints hook: cannot read stdin: [Errno 104] Connection reset by peer',
        'checkpoints hook: no hook event on stdin (expected one JSON object)',
    ]


def test_a_terminal_on_stdin_is_told_what_the_command_waits_for(
    monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    leader, follower = os.openpty()
    os.write(leader, b'{"hook_event_name": "Stop"}\n\x04')
    with open(follower) as terminal:
        monkeypatch.setattr(sys, 'stdin', terminal)
        assert main([]) == 0
    os.close(leader)
    assert capsys.readouterr().err == (
        'checkpoints hook: reading one hook event (JSON) from stdin; register this command as a '
        'Claude Code or Gemini CLI hook instead of running it here (Ctrl-D ends)\n'
    )


def test_ctrl_c_while_reading_ends_it_with_130(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    reading, writing = os.pipe()
    # Python's own Ctrl-C, whatever handler the test runner put in place.
    runner_s = signal.signal(signal.SIGINT, signal.default_int_handler)
    with open(reading) as pipe:
        monkeypatch.setattr(sys, 'stdin', pipe)
        timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
        closed = threading.Lock()

        def close_once() -> None:
            if closed.acquire(blocking=False):
                os.close(writing)

        unstuck = threading.Timer(30, close_once)  # no signal seen: the read ends, failing
        gc.disable()  # a collection's callback (hypothesis has one) would swallow the Ctrl-C
        timer.start()
        unstuck.start()
        try:
            assert main([]) == INTERRUPTED == 130
        finally:
            timer.join()
            gc.enable()
            unstuck.cancel()
            close_once()
            signal.signal(signal.SIGINT, runner_s)
    assert capsys.readouterr().err == 'checkpoints hook: interrupted\n'


def test_a_harness_that_stopped_reading_gets_1_and_nothing_more(
    stdin, monkeypatch: pytest.MonkeyPatch, capsys, workspace: Path, desk: Path
) -> None:
    stdin(gemini_prompt(workspace))
    reading, writing = os.pipe()
    os.close(reading)
    closed = open(writing, 'w')  # noqa: SIM115 - its close fails too: closed below
    monkeypatch.setattr(sys, 'stdout', closed)
    assert main([]) == 1
    monkeypatch.setattr(sys, 'stdout', io.StringIO())
    with contextlib.suppress(BrokenPipeError):
        closed.close()
    assert capsys.readouterr().err == ''


def test_the_workspace_option_is_where_the_event_acts(
    stdin, capsys, workspace: Path, desk: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    away = tmp_path_factory.mktemp('away')  # the event's folder: in no workspace
    stdin(gemini_prompt(away / 'workspace'))
    assert main(['--workspace', str(workspace), '-v']) == 0
    out, err = capsys.readouterr()
    assert out == '{}\n' and err.startswith('checkpoints hook: opened turn c116fc4d-')


def test_an_event_of_the_largest_size_is_read_whole(stdin, capsys, tmp_path: Path) -> None:
    event = {'hook_event_name': 'SessionStart', 'cwd': str(tmp_path), 'padding': ''}
    event['padding'] = 'x' * (MAX_EVENT_BYTES - len(json.dumps(event)))
    raw = json.dumps(event).encode()
    assert len(raw) == MAX_EVENT_BYTES
    stdin(raw)
    assert main(['--strict']) == 0
    assert capsys.readouterr() == ('', '')
