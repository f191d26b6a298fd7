"""Whole MCP servers started by ``agent/mcpstart.py``'s ``serve`` in this process, the SDK's own
server behind the relay, over real pipes in place of fds 0 and 1: what the client reads before
it ends its input, what the relay learns into the kept answers, and the fds it puts back.

The kept answers are taken as learnt from a file long settled (the interpreter), as
``test_mcp_start_steps.py``'s do: the modules of a checkout changed moments ago would keep a
server from keeping them (``test_mcp_start.py`` runs real servers, whose answers depend on it)."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import sys
import termios
import threading
import time
from pathlib import Path

import pytest
from helpers.builders import checkpoints_in, new_workspace, write
from helpers.stdio import DEADLINE, Stdio, piped

from trading_checkpoints.agent import mcpstart
from trading_checkpoints.agent.mcpstart import Answers

pytest.importorskip('mcp', reason="the MCP SDK is not installed (pip install '.[mcp]')")

CONTEXT = 'the context'
INITIALIZE = {
    'jsonrpc': '2.0',
    'id': 1,
    'method': 'initialize',
    'params': {
        'protocolVersion': '2025-06-18',
        'capabilities': {},
        'clientInfo': {'name': 'test-client', 'version': '1'},
    },
}
INITIALIZED = {'jsonrpc': '2.0', 'method': 'notifications/initialized'}


def line(message: dict) -> bytes:
    return json.dumps(message).encode() + b'\n'


def tools_list(request_id: object) -> bytes:
    return line({'jsonrpc': '2.0', 'id': request_id, 'method': 'tools/list'})


HANDSHAKE = line(INITIALIZE) + line(INITIALIZED) + tools_list(2)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path / 'cache'))
    load = Answers.load.__func__  # type: ignore[attr-defined]

    def settled(cls: type[Answers], context: str, create: bool = False) -> Answers | None:
        loaded = load(cls, context, create)
        if loaded is not None:
            loaded.files = [sys.executable]  # learnt from a file long settled
        return loaded

    monkeypatch.setattr(Answers, 'load', classmethod(settled))
    return tmp_path / 'cache'


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return new_workspace(tmp_path / 'ws')


def kept(cache: Path) -> dict[str, str]:
    """The answers kept for the one client."""
    [path] = (cache / mcpstart.FOLDER).glob('mcp-*.json')
    [answers] = json.loads(path.read_text())['clients'].values()
    return answers


def serve(workspace: Path, pieces: list[bytes], count: int) -> tuple[list[dict], bytes]:
    """``serve`` run with the client's ``pieces``, until the client read ``count`` answers (or
    gave up waiting) and ended its input: the answers it read by then, and everything the
    server wrote."""
    from trading_checkpoints.agent.mcp import build_server

    with piped() as stdio, pytest.MonkeyPatch.context() as patch:
        # The SDK reads and writes through sys.stdin and sys.stdout: the real fds 0 and 1.
        patch.setattr(sys, 'stdin', open(0, closefd=False))  # noqa: SIM115
        patch.setattr(sys, 'stdout', open(1, 'w', closefd=False))  # noqa: SIM115
        pipes = os.fstat(0).st_ino, os.fstat(1).st_ino
        client = threading.Thread(target=stdio.converse, args=(pieces, count), daemon=True)
        client.start()
        failed: list[BaseException] = []

        def run() -> None:
            try:
                mcpstart.serve(lambda: build_server(workspace), CONTEXT)
            except BaseException as error:  # re-raised in the test
                failed.append(error)

        # In a thread of its own: a server that never ends fails the test instead of hanging it.
        server = threading.Thread(target=run, daemon=True)
        server.start()
        server.join(2 * DEADLINE)
        assert not server.is_alive(), 'the server never ended'
        if failed:
            raise failed[0]
        assert (os.fstat(0).st_ino, os.fstat(1).st_ino) == pipes, 'fds 0 and 1 put back'
        client.join(DEADLINE + 10)
        read = [json.loads(each) for each in stdio.before_end.splitlines()]
        return read, stdio.read + stdio.written()


def test_a_server_learns_the_handshake_sent_a_piece_at_a_time(workspace: Path, cache: Path):
    """The initialize request cut in two (read in two chunks unless the relay is slower), then
    the rest: the SDK gets the request whole, and its answers are learnt."""
    first = line(INITIALIZE)
    read, written = serve(workspace, [first[:40], first[40:], HANDSHAKE[len(first) :]], 2)
    assert [answer['id'] for answer in read] == [1, 2]
    assert 'tools' in read[1]['result']
    answers = kept(cache)
    listing = next(rest for key, rest in answers.items() if key.startswith('tools/list '))
    assert written.splitlines()[1] == b'{"jsonrpc":"2.0","id":2,' + listing.encode()
    assert len(answers) == 2


def test_a_kept_handshake_is_handed_to_the_sdk_which_answers_the_rest(
    workspace: Path, cache: Path
) -> None:
    """The handshake answered from kept lines (the listing tampered with), the client's later
    requests (read with the handshake, and after) answered by the SDK, a long answer among them
    whole; the SDK's own listing replaces the tampered one, and its answers to what was
    answered already never reach the client."""
    big = 'x' * 150_000  # an answer longer than a pipe holds: read in pieces
    write(workspace / 'desks' / 'main', 'notes/big.md', big)
    made = checkpoints_in(workspace).snapshot('big')
    serve(workspace, [HANDSHAKE], 2)
    learnt = kept(cache)
    [path] = (cache / mcpstart.FOLDER).glob('mcp-*.json')
    file = json.loads(path.read_text())
    [answers] = file['clients'].values()
    [listing] = [key for key in answers if key.startswith('tools/list ')]
    answers[listing] = answers[listing].replace('List the desks', 'Tampered: list the desks')
    path.write_text(json.dumps(file))

    ping = line({'jsonrpc': '2.0', 'id': 3, 'method': 'ping'})
    show = {'name': 'show_file', 'arguments': {'path': 'notes/big.md', 'checkpoint_id': made}}
    call = line({'jsonrpc': '2.0', 'id': 5, 'method': 'tools/call', 'params': show})
    read, written = serve(workspace, [HANDSHAKE + ping + tools_list(4), call], 5)
    assert [answer['id'] for answer in read] == [1, 2, 3, 4, 5]
    assert 'Tampered: list the desks' in json.dumps(read[1])
    assert 'Tampered' not in json.dumps(read[3]) and 'tools' in read[3]['result']
    assert read[2]['result'] == {} and big in json.dumps(read[4]['result'])
    assert len(written.splitlines()) == 5
    assert kept(cache) == learnt, 'the SDK listing kept again'


def test_an_answer_whose_write_a_signal_cuts_short_is_written_whole(
    workspace: Path, cache: Path
) -> None:
    """A signal caught while the relay writes a long answer to a client that reads slowly (a
    write to a full pipe then returns having written part of it): the rest follows."""
    big = 'x' * 150_000
    write(workspace / 'desks' / 'main', 'notes/big.md', big)
    made = checkpoints_in(workspace).snapshot('big')
    show = {'name': 'show_file', 'arguments': {'path': 'notes/big.md', 'checkpoint_id': made}}
    call = line({'jsonrpc': '2.0', 'id': 3, 'method': 'tools/call', 'params': show})
    from trading_checkpoints.agent.mcp import build_server

    def client(stdio: Stdio) -> None:
        stdio.send(HANDSHAKE + call)
        for _ in range(200):  # until the long answer fills the pipe
            waiting = fcntl.ioctl(stdio.stdout, termios.FIONREAD, b'\0' * 4)
            if int.from_bytes(waiting, sys.byteorder) >= 60_000:
                break
            time.sleep(0.05)
        [writer] = [each for each in threading.enumerate() if '_to_client' in each.name]
        assert writer.ident is not None
        signal.pthread_kill(writer.ident, signal.SIGUSR1)  # caught: the write is cut short
        stdio.converse([], 3)

    caught = signal.signal(signal.SIGUSR1, lambda *_: None)
    try:
        with piped() as stdio, pytest.MonkeyPatch.context() as patch:
            patch.setattr(sys, 'stdin', open(0, closefd=False))  # noqa: SIM115
            patch.setattr(sys, 'stdout', open(1, 'w', closefd=False))  # noqa: SIM115
            reader = threading.Thread(target=client, args=(stdio,), daemon=True)
            reader.start()
            mcpstart.serve(lambda: build_server(workspace), CONTEXT)
            reader.join(DEADLINE + 10)
            read = stdio.before_end.splitlines()
    finally:
        signal.signal(signal.SIGUSR1, caught)
    assert [json.loads(each)['id'] for each in read] == [1, 2, 3]
    assert big in json.loads(read[2])['result']['structuredContent']['content']
