"""The MCP server's handshake answered before the SDK is imported (``agent/mcpstart.py``): the
SDK's own bytes, kept per installation, default desk and client, then the connection handed to
the SDK as if it had read it all; nothing kept is used where it cannot be trusted.

A server run with ``sys.modules['mcp.server'] = None`` cannot start the SDK's server: when it
still answers, the answers came from what was kept. Every server here has the ``sitecustomize``
that does it on its import path (``blocker_folder``), and it does it only when told
(:data:`BLOCK`): the import path is part of the installation the answers are kept for."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from helpers import ROOT
from helpers.builders import checkpoints_in, write
from helpers.cli import start
from helpers.processes import environment

from trading_checkpoints.agent import mcpstart
from trading_checkpoints.core import installation

mcp = pytest.importorskip('mcp', reason="the MCP SDK is not installed (pip install '.[mcp]')")

from helpers.mcpclient import Session, field, run_server  # noqa: E402 - after the importorskip

CLIENT = {'name': 'test-client', 'version': '1'}
INSTALL_HINT = "error: the MCP server needs the optional 'mcp' extra"


def initialize(request_id: object = 1, client: dict[str, str] = CLIENT) -> dict[str, Any]:
    return {
        'jsonrpc': '2.0',
        'id': request_id,
        'method': 'initialize',
        'params': {'protocolVersion': '2025-06-18', 'capabilities': {}, 'clientInfo': client},
    }


INITIALIZED = {'jsonrpc': '2.0', 'method': 'notifications/initialized'}


def tools_list(request_id: object = 2) -> dict[str, Any]:
    return {'jsonrpc': '2.0', 'id': request_id, 'method': 'tools/list'}


HANDSHAKE = [initialize(), INITIALIZED, tools_list()]


def lines(*messages: dict[str, Any]) -> bytes:
    return b''.join(json.dumps(message).encode() + b'\n' for message in messages)


class Served(NamedTuple):
    status: int
    stdout: bytes
    stderr: str


BLOCK = 'TC_TEST_BLOCK_MCP_SERVER'
SITE = 'TC_TEST_MCP_SITE'  # the import path the servers are given before the checkout


def serve(
    workspace: Path,
    cache: Path,
    *messages: dict[str, Any],
    blocked: bool = False,
    desk: str = '',
    after: Callable[[], object] = lambda: None,
) -> Served:
    """``checkpoints mcp`` given ``messages``; its input ends once every request is answered,
    and ``after()`` returned. ``blocked``: the SDK's server cannot be imported."""
    env = {
        'XDG_CACHE_HOME': str(cache),
        'PYTHONPATH': os.pathsep.join([os.environ[SITE], str(ROOT)]),
        BLOCK: '1' if blocked else None,
    }
    options = ['--desk', desk] if desk else []
    pipe = subprocess.PIPE
    process = start(
        *options, 'mcp', workspace=workspace, env=env, stdin=pipe, stdout=pipe, stderr=pipe
    )
    assert process.stdin and process.stdout and process.stderr
    watchdog = threading.Timer(120, process.kill)
    watchdog.start()
    try:
        process.stdin.write(lines(*messages))
        process.stdin.flush()
        answers = []
        for _ in [message for message in messages if 'id' in message and 'method' in message]:
            answers.append(process.stdout.readline())
            if not answers[-1]:
                break
        after()
        process.stdin.close()
        answers.append(process.stdout.read())
        errors = process.stderr.read().decode()
        status = process.wait()
    finally:
        watchdog.cancel()
    return Served(status, b''.join(answers), errors)


def kept_files(cache: Path) -> list[Path]:
    return sorted((cache / mcpstart.FOLDER).glob('mcp-*.json'))


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / 'cache'


@pytest.fixture(scope='session')
def blocker_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder whose ``sitecustomize`` makes the SDK's server package unimportable when
    :data:`BLOCK` is set; given time to settle (a module changed moments before a server
    imports it keeps the server from keeping its answers)."""
    folder = tmp_path_factory.mktemp('blocker')
    module = folder / 'sitecustomize.py'
    module.write_text(
        f"import os, sys\nif os.environ.get('{BLOCK}'):\n    sys.modules['mcp.server'] = None\n"
    )
    time.sleep(installation.RACY_SECONDS)  # a module changed moments ago keeps nothing kept
    return folder


@pytest.fixture(autouse=True)
def blocker(blocker_folder: Path, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Every server of the test gets the blocking ``sitecustomize`` on its path; passed as
    ``blocked=blocker``, it blocks."""
    monkeypatch.setenv(SITE, str(blocker_folder))
    return True


def test_the_handshake_is_answered_with_the_sdks_own_bytes_without_the_sdk(
    workspace: Path, cache: Path, blocker: bool
) -> None:
    refused = serve(workspace, cache, *HANDSHAKE, blocked=blocker)
    assert refused.status == 1 and refused.stderr.startswith(INSTALL_HINT)

    learnt = serve(workspace, cache, *HANDSHAKE)
    assert learnt.status == 0, learnt.stderr
    first, listed = learnt.stdout.splitlines()
    assert json.loads(first)['id'] == 1 and json.loads(listed)['id'] == 2
    assert [tool['name'] for tool in json.loads(listed)['result']['tools']][0] == 'list_desks'

    kept = serve(workspace, cache, *HANDSHAKE, blocked=blocker)
    assert kept.status == 0, kept.stderr
    assert kept.stdout == learnt.stdout

    # Another request id each time: written as the SDK writes it, the rest byte for byte.
    other = serve(workspace, cache, initialize('a-1'), INITIALIZED, tools_list(7), blocked=blocker)
    assert other.status == 0, other.stderr
    assert other.stdout == learnt.stdout.replace(b'"id":1,', b'"id":"a-1",', 1).replace(
        b'"id":2,', b'"id":7,', 1
    )


@pytest.mark.parametrize(
    'messages',
    [
        pytest.param([{'jsonrpc': '2.0', 'id': 1, 'method': 'ping'}], id='no-initialize'),
        pytest.param([initialize(client={'name': 'another', 'version': '1'})], id='other-client'),
        pytest.param([initialize('tab\there')], id='an-id-not-written-alike'),
        pytest.param([initialize(), tools_list()], id='listed-before-initialized'),
        pytest.param(
            [initialize(), INITIALIZED, {'jsonrpc': '2.0', 'id': 3, 'method': 'tools/call'}],
            id='a-tool-call',
        ),
        pytest.param([initialize(), INITIALIZED, {'jsonrpc': '2.0'}], id='not-a-request'),
    ],
)
def test_anything_not_answered_before_goes_to_the_sdk_first(
    workspace: Path, cache: Path, messages: list[dict[str, Any]], blocker: bool
) -> None:
    assert serve(workspace, cache, *HANDSHAKE).status == 0
    handed = serve(workspace, cache, *messages, blocked=blocker)
    assert handed.status == 1 and handed.stderr.startswith(INSTALL_HINT)
    answered = serve(workspace, cache, *messages)
    assert answered.status == 0, answered.stderr


def test_answers_are_kept_per_default_desk(workspace: Path, cache: Path, blocker: bool) -> None:
    checkpoints_in(workspace, 'research')
    assert serve(workspace, cache, *HANDSHAKE).status == 0
    other = serve(workspace, cache, *HANDSHAKE, blocked=blocker, desk='research')
    assert other.status == 1, 'the tools describe the default desk: nothing kept for it'
    learnt = serve(workspace, cache, *HANDSHAKE, desk='research')
    assert b"default 'research'" in learnt.stdout
    kept = serve(workspace, cache, *HANDSHAKE, blocked=blocker, desk='research')
    assert kept.status == 0 and kept.stdout == learnt.stdout
    assert len(kept_files(cache)) == 2


def test_a_dependency_changed_in_place_is_another_installation(
    workspace: Path, cache: Path, tmp_path: Path, blocker: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Answers learnt with a copy of a dependency on the import path (click, which the command
    imports) are not used once a module of that copy changes in place, keeping its size."""
    import click

    site = tmp_path / 'site'
    shutil.copytree(Path(click.__file__).parent, site / 'click')
    time.sleep(installation.RACY_SECONDS)  # the copy settles, as a real installation has
    monkeypatch.setenv(SITE, os.pathsep.join([os.environ[SITE], str(site)]))
    assert serve(workspace, cache, *HANDSHAKE).status == 0
    assert serve(workspace, cache, *HANDSHAKE, blocked=blocker).status == 0, 'kept and used'
    module = site / 'click' / 'utils.py'
    text = module.read_text()
    module.write_text(text.replace('def echo(', 'def echo (', 1)[:-1])  # the same size
    assert serve(workspace, cache, *HANDSHAKE, blocked=blocker).status == 1, 'not used'


def test_a_folder_others_may_enter_or_a_symlink_is_never_used(
    workspace: Path, cache: Path, tmp_path: Path, blocker: bool
) -> None:
    folder = cache / mcpstart.FOLDER
    folder.mkdir(parents=True, mode=0o755)
    folder.chmod(0o755)
    assert serve(workspace, cache, *HANDSHAKE).status == 0
    assert kept_files(cache) == [], 'nothing written where others may look'

    # Answers another user could have left there are not read either.
    shutil.rmtree(folder)
    assert serve(workspace, cache, *HANDSHAKE).status == 0
    [kept] = kept_files(cache)
    folder.chmod(0o755)
    assert serve(workspace, cache, *HANDSHAKE, blocked=blocker).status == 1

    elsewhere = tmp_path / 'elsewhere'
    folder.chmod(0o700)
    folder.rename(elsewhere)
    folder.symlink_to(elsewhere)
    assert serve(workspace, cache, *HANDSHAKE, blocked=blocker).status == 1


def test_a_kept_answer_unlike_the_sdks_is_replaced_by_it(
    workspace: Path, cache: Path, blocker: bool
) -> None:
    learnt = serve(workspace, cache, *HANDSHAKE)
    [path] = kept_files(cache)
    kept = json.loads(path.read_text())
    [answers] = kept['clients'].values()
    [listing] = [key for key in answers if key.startswith('tools/list ')]
    answers[listing] = answers[listing].replace('List the desks', 'Tampered: list the desks')
    path.write_text(json.dumps(kept))

    # The server answers from what is kept, then asks the SDK the same and keeps its answer.
    tampered = path.read_bytes()

    def relearnt() -> None:
        for _ in range(600):
            if path.read_bytes() != tampered:
                return
            time.sleep(0.1)

    ping = {'jsonrpc': '2.0', 'id': 3, 'method': 'ping'}
    answered = serve(workspace, cache, *HANDSHAKE, ping, after=relearnt)
    assert answered.status == 0, answered.stderr
    first, listed, pinged = answered.stdout.splitlines()  # the SDK's own answers dropped
    assert b'Tampered: list the desks' in listed and json.loads(pinged)['id'] == 3
    assert serve(workspace, cache, *HANDSHAKE, blocked=blocker).stdout == learnt.stdout


def test_a_session_goes_on_through_the_sdk_after_a_kept_handshake(
    workspace: Path, desk: Path, _answers_folder: Path
) -> None:
    write(desk, 'Memory.md', 'v1')
    # The server runs from the workspace with it first on its import path (``python -m``): a
    # folder of the import path changed moments ago keeps its answers from being kept.
    time.sleep(installation.RACY_SECONDS)
    seen: list[list[str]] = []

    async def script(client: Session) -> None:
        listed = await client.session.list_tools()
        seen.append([tool.name for tool in listed.tools])
        schema = field(listed.tools[0], 'input_schema', 'inputSchema')
        assert schema['type'] == 'object'
        made = await client.ok('snapshot', reason=f'run {len(seen)}')
        assert made['desk'] == 'main'
        checkpoints = (await client.ok('list_checkpoints'))['checkpoints']
        assert [row['reason'] for row in checkpoints][0] == f'run {len(seen)}'
        write(desk, 'Memory.md', f'v{len(seen) + 1}')

    run_server(workspace, script)  # learns, if no test of this worker did already
    assert kept_files(_answers_folder)
    run_server(workspace, script)  # answered from what was kept, then by the SDK
    assert seen[0] == seen[1] and 'restore' in seen[0]


def test_a_client_that_leaves_during_the_handshake_ends_the_server(
    workspace: Path, cache: Path, blocker: bool
) -> None:
    assert serve(workspace, cache, *HANDSHAKE).status == 0
    left = serve(workspace, cache, initialize(), blocked=blocker)
    assert left.status == 0 and len(left.stdout.splitlines()) == 1


def test_a_server_whose_client_stopped_reading_still_ends(workspace: Path, cache: Path) -> None:
    """A client that stops reading once its pipe is full, then ends its input: the server does
    not wait to write to it for ever, and leaves nothing running that does."""
    env = {'XDG_CACHE_HOME': str(cache)}
    pipe = subprocess.PIPE
    process = start('mcp', workspace=workspace, env=env, stdin=pipe, stdout=pipe)
    assert process.stdin and process.stdout
    try:
        process.stdin.write(lines(*HANDSHAKE, *(tools_list(number) for number in range(3, 7))))
        process.stdin.flush()
        # Until the pipe is nearly full (the first three answers: each listing is ~30 kB), then
        # a moment for the later answers to be written behind them.
        for _ in range(600):
            waiting = fcntl.ioctl(process.stdout.fileno(), termios.FIONREAD, b'\0' * 4)
            if int.from_bytes(waiting, sys.byteorder) >= 60_000:
                break
            time.sleep(0.05)
        else:
            pytest.fail('the answers never filled the pipe')
        time.sleep(0.5)
        process.stdin.close()
        assert process.wait(60) == 0
        assert json.loads(process.stdout.readline())['id'] == 1
    finally:
        process.kill()
        process.wait()


# An SDK's server that fails as it starts, before it reads a line.
FAILING = """
from trading_checkpoints.agent import mcpstart

class Failing:
    def run(self):
        raise SystemExit(3)

mcpstart.serve(Failing, 'the context')
"""


def test_a_server_that_fails_as_it_starts_ends_while_its_client_waits(cache: Path) -> None:
    """The SDK gone at once, the client's input still open: the process ends with the SDK's
    status, and nothing left reading the client keeps it alive."""
    env = environment({'XDG_CACHE_HOME': str(cache)})
    pipe = subprocess.PIPE
    command = [sys.executable, '-c', FAILING]
    process = subprocess.Popen(command, env=env, stdin=pipe, stdout=pipe, stderr=pipe)
    assert process.stdin
    try:
        process.stdin.write(lines(*HANDSHAKE))
        process.stdin.flush()
        assert process.wait(60) == 3
        assert (cache / mcpstart.FOLDER).is_dir(), 'the relay ran (its folder is made first)'
    finally:
        process.kill()
        process.wait()
