"""The MCP server's start one step at a time, in this process (``agent/mcpstart.py``): the folder
the answers are kept in, the kept answers' file, the messages' ids and keys, the handshake
answered from kept lines (over real pipes in place of stdin and stdout) and what the relay
learns from the SDK's lines. ``test_mcp_start.py`` runs whole servers as processes."""

from __future__ import annotations

import json
import os
import select
import stat
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers.flushes import FLUSH, RENAME, recording
from helpers.stdio import DEADLINE, piped

from trading_checkpoints.agent import mcpstart
from trading_checkpoints.agent.mcpstart import Answers, Handover, Relay, Wire

CLIENT = {'name': 'test-client', 'version': '1'}
INITIALIZE = {
    'jsonrpc': '2.0',
    'id': 1,
    'method': 'initialize',
    'params': {'protocolVersion': '2025-06-18', 'capabilities': {}, 'clientInfo': CLIENT},
}
INITIALIZED = {'jsonrpc': '2.0', 'method': 'notifications/initialized'}
TOOLS = {'jsonrpc': '2.0', 'id': 2, 'method': 'tools/list'}


def tools_list(request_id: int) -> bytes:
    return line({**TOOLS, 'id': request_id})


def line(message: dict) -> bytes:
    return json.dumps(message).encode() + b'\n'


def key(message: dict) -> str:
    found = mcpstart.request_key(message)
    assert found is not None
    return found


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path / 'cache'))
    return tmp_path / 'cache'


# -- the folder --------------------------------------------------------------------------------


def test_the_folder_is_made_private_and_used_only_when_private(cache: Path) -> None:
    folder = cache / mcpstart.FOLDER
    assert mcpstart.cache_folder(create=False) is None
    assert mcpstart.cache_folder(create=True) == str(folder)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    folder.chmod(0o750)
    assert mcpstart.cache_folder(create=False) is None, 'others may enter'
    folder.chmod(0o701)
    assert mcpstart.cache_folder(create=True) is None
    folder.rmdir()
    folder.symlink_to(cache)
    assert mcpstart.cache_folder(create=True) is None, 'a link'
    folder.unlink()
    folder.write_text('a file')
    assert mcpstart.cache_folder(create=True) is None


def test_the_folder_is_under_home_without_an_absolute_xdg_cache_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv('HOME', str(tmp_path / 'home'))
    for value in ('relative/cache', ''):
        monkeypatch.setenv('XDG_CACHE_HOME', value)
        expected = tmp_path / 'home' / '.cache' / mcpstart.FOLDER
        assert mcpstart.cache_folder(create=True) == str(expected)
    monkeypatch.delenv('XDG_CACHE_HOME')
    assert mcpstart.cache_folder(create=False) == str(expected)


# -- the kept answers --------------------------------------------------------------------------


@pytest.fixture
def answers(cache: Path) -> Answers:
    loaded = Answers.load('the context', create=True)
    assert loaded is not None and loaded.clients == {}
    loaded.files = [sys.executable]  # a file long settled
    return loaded


def test_answers_kept_are_loaded_again_for_the_same_context(answers: Answers, cache: Path):
    answers.keep('client', 'tools/list null', '"result":{}}')
    assert os.path.dirname(answers.path) == str(cache / mcpstart.FOLDER)
    assert os.path.basename(answers.path).startswith('mcp-')
    kept = json.loads(Path(answers.path).read_text())
    assert kept['format'] == mcpstart.FORMAT and kept['context'] == 'the context'
    assert kept['files'] == [sys.executable] and kept['clients'] == {
        'client': {'tools/list null': '"result":{}}'}
    }
    again = Answers.load('the context')
    assert again is not None and again.path == answers.path
    assert again.answer('client', 'tools/list null') == '"result":{}}'
    assert again.answer('client', 'other') is None and again.answer('other', 'x') is None
    other = Answers.load('another context')
    assert other is not None and other.path != answers.path and other.clients == {}


@pytest.mark.parametrize(
    'change',
    [
        {'format': mcpstart.FORMAT + 1},
        {'context': 'another'},
        {'fingerprint': 'stale'},
        {'clients': []},
        {'files': 3},
    ],
)
def test_answers_kept_otherwise_are_none(answers: Answers, change: dict):
    answers.keep('client', 'k', 'v')
    kept = json.loads(Path(answers.path).read_text())
    kept.update(change)
    Path(answers.path).write_text(json.dumps(kept))
    again = Answers.load('the context')
    assert again is not None and again.clients == {}


def test_a_damaged_file_is_none_and_no_folder_no_answers(answers: Answers, cache: Path):
    Path(answers.path).write_text('{"format": ')
    again = Answers.load('the context')
    assert again is not None and again.clients == {}
    (cache / mcpstart.FOLDER).chmod(0o755)
    assert Answers.load('the context') is None


def test_answers_kept_for_a_path_that_is_no_utf_8_are_loaded_again(cache: Path) -> None:
    """The package's path is part of the context, and a path's byte that is no UTF-8 is a lone
    surrogate in Python (``os.fsdecode``): kept, it reads back the same."""
    context = os.fsdecode(b'/opt/caf\xe9') + '\0the context'
    answers = Answers.load(context, create=True)
    assert answers is not None
    answers.files = [sys.executable]
    answers.keep('client', 'k', '"result":"caf\u00e9"}')
    again = Answers.load(context)
    assert again is not None and again.answer('client', 'k') == '"result":"caf\u00e9"}'


def test_answers_are_loaded_from_no_folder_made_unless_asked(cache: Path) -> None:
    assert Answers.load('the context') is None
    assert not cache.exists()


def test_the_newest_clients_are_kept_first_at_most_eight(answers: Answers):
    for number in range(10):
        answers.keep(f'c{number}', 'k', str(number))
    answers.keep('c5', 'k2', 'again')
    kept = json.loads(Path(answers.path).read_text())['clients']
    assert list(kept) == ['c5', 'c9', 'c8', 'c7', 'c6', 'c4', 'c3', 'c2']
    assert kept['c5'] == {'k': '5', 'k2': 'again'}
    answers.forget('c9')
    assert 'c9' not in json.loads(Path(answers.path).read_text())['clients']
    os.unlink(answers.path)
    answers.forget('nobody')
    assert not os.path.exists(answers.path), 'nothing forgotten: nothing written'


def test_answers_are_kept_without_a_flush(answers: Answers) -> None:
    """A cache, lost it is learnt again: a server keeping answers waits for no disk."""
    with recording() as events:
        answers.keep('client', 'k', 'v')
    assert [event.target for event in events if event.kind == RENAME] == [answers.path]
    assert FLUSH not in [event.kind for event in events]


def test_answers_are_not_written_while_a_module_is_too_young(answers: Answers, tmp_path: Path):
    young = tmp_path / 'young.py'
    young.write_text('')
    answers.files = [str(young)]
    answers.keep('client', 'k', 'v')
    assert not os.path.exists(answers.path)


def test_answers_are_not_written_once_the_folder_is_not_private(answers: Answers, cache: Path):
    (cache / mcpstart.FOLDER).chmod(0o755)
    answers.keep('client', 'k', 'v')
    assert not os.path.exists(answers.path)


def test_answers_learnt_from_files_loaded_when_none_are_given(cache: Path):
    answers = Answers.load('c', create=True)
    assert answers is not None and answers.files is None
    answers.keep('client', 'k', 'v')
    assert answers.files is not None and mcpstart.__file__ in answers.files


def test_a_write_that_fails_keeps_nothing_and_raises_nothing(answers: Answers):
    os.mkdir(answers.path)  # a folder where the file goes
    answers.keep('client', 'k', 'v')
    assert os.path.isdir(answers.path)


# -- messages ----------------------------------------------------------------------------------


def test_a_message_is_a_json_rpc_object() -> None:
    assert mcpstart.parse(line(INITIALIZE)) == INITIALIZE
    assert mcpstart.parse(b'[{"jsonrpc": "2.0"}]') is None
    assert mcpstart.parse(b'{"jsonrpc": "1.0"}') is None
    assert mcpstart.parse(b'{"id": 1}') is None
    assert mcpstart.parse(b'not json') is None


@pytest.mark.parametrize(
    'value, token',
    [
        (1, b'1'),
        (-7, b'-7'),
        ('abc-1', b'"abc-1"'),
        ('', b'""'),
        (True, None),
        (1.5, None),
        (None, None),
        ('caf\u00e9', None),
        ('a\nb', None),
        ([1], None),
    ],
)
def test_an_id_as_the_sdk_writes_it(value: object, token: bytes | None) -> None:
    assert mcpstart.id_token(value) == token


def test_a_request_s_key_is_its_method_and_parameters() -> None:
    assert mcpstart.request_key(TOOLS) == 'tools/list null'
    params = {'b': 1, 'a': [1, 2]}
    assert mcpstart.request_key({'id': 'x', 'method': 'm', 'params': params}) == (
        'm {"a":[1,2],"b":1}'
    )
    assert mcpstart.request_key({'id': 1.5, 'method': 'm'}) is None
    assert mcpstart.request_key({'method': 'm'}) is None
    assert mcpstart.request_key({'id': 1, 'method': 3}) is None


def test_an_answer_s_rest_after_its_id_and_back() -> None:
    sdk = b'{"jsonrpc":"2.0","id":7,"result":{"tools":[]}}\r\n'
    assert mcpstart.answer_rest(sdk, 7) == '"result":{"tools":[]}}'
    assert mcpstart.answer_line('"result":{"tools":[]}}', 'q') == (
        b'{"jsonrpc":"2.0","id":"q","result":{"tools":[]}}\n'
    )
    assert mcpstart.answer_line('"result":1}', 1.5) == b'{"jsonrpc":"2.0","id":null,"result":1}\n'
    assert mcpstart.answer_rest(sdk, 8) is None
    assert mcpstart.answer_rest(sdk, 1.5) is None
    assert mcpstart.answer_rest(b'{"jsonrpc":"2.0","id":7,"error":{}}', 7) is None
    assert mcpstart.answer_rest(b'{"jsonrpc":"2.0","id":7,"result":"\xff"}', 7) is None
    # Only the line's end is cut: blanks before it are the SDK's bytes too.
    assert (
        mcpstart.answer_rest(b'{"jsonrpc":"2.0","id":7,"result":1} \t\r\n', 7) == '"result":1} \t'
    )


# -- the handshake over real pipes ---------------------------------------------------------------


def test_lines_are_read_whole_and_the_end_of_input_is_none() -> None:
    with piped() as stdio:
        wire = Wire()
        stdio.send(b'one\ntw')
        assert wire.line() == b'one\n'
        with pytest.raises(TimeoutError):
            wire.line(0.01)
        stdio.send(b'o\nthree', end=True)
        assert wire.line(5) == b'two\n'
        # At the end of input, in a thread: a reader that never ends fails the test.
        lines: list[bytes | None] = []
        reader = threading.Thread(target=lambda: lines.extend(wire.line() for _ in range(3)))
        reader.daemon = True
        reader.start()
        reader.join(DEADLINE)
        assert lines == [b'three', None, None]
        wire.write(b'x' * 50_000)
        assert stdio.written() == b'x' * 50_000


def kept_answers(answers: Answers) -> Answers:
    """The SDK's answers to the handshake, as a first server keeps them."""
    client = key(INITIALIZE)
    answers.keep(client, client, '"result":{"serverInfo":"s"}}')
    answers.keep(client, key(TOOLS), '"result":{"tools":[]}}')
    return answers


def test_the_handshake_is_answered_from_the_kept_lines(answers: Answers) -> None:
    with piped() as stdio:
        kept_answers(answers)
        stdio.send(line(INITIALIZE) + line(INITIALIZED) + line(TOOLS) + b'{"rest"')
        handover = mcpstart.handshake(Wire(), answers)
        assert handover is not None
        assert handover.replay == [line(INITIALIZE), line(INITIALIZED)]
        assert handover.rest == b'{"rest"' and handover.answered == 1
        assert handover.listed == [TOOLS]
        assert stdio.written() == (
            b'{"jsonrpc":"2.0","id":1,"result":{"serverInfo":"s"}}\n'
            b'{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}\n'
        )


@pytest.mark.parametrize(
    'after',
    [
        {'jsonrpc': '2.0', 'id': 3, 'method': 'tools/call'},
        {'jsonrpc': '2.0', 'id': 3, 'method': 'prompts/list'},  # not kept
        {'jsonrpc': '2.0', 'id': 3, 'method': 'notifications/initialized'},
    ],
)
def test_anything_else_after_initialized_goes_to_the_sdk(answers: Answers, after: dict) -> None:
    with piped() as stdio:
        kept_answers(answers)
        stdio.send(line(INITIALIZE) + line(INITIALIZED) + line(after))
        handover = mcpstart.handshake(Wire(), answers)
        assert handover is not None
        assert handover.replay == [line(INITIALIZE), line(INITIALIZED), line(after)]
        assert handover.listed == [] and handover.answered == 1


def test_a_listing_before_initialized_or_a_request_as_initialized_goes_to_the_sdk(
    answers: Answers,
) -> None:
    with piped() as stdio:
        kept_answers(answers)
        asked = {**INITIALIZED, 'id': 9}
        stdio.send(line(INITIALIZE) + line(TOOLS) + line(asked))
        handover = mcpstart.handshake(Wire(), answers)
        assert handover is not None and handover.replay == [line(INITIALIZE), line(TOOLS)]
        assert handover.rest == line(asked)


def test_a_line_that_is_no_message_after_initialize_goes_to_the_sdk(answers: Answers) -> None:
    with piped() as stdio:
        kept_answers(answers)
        stdio.send(line(INITIALIZE) + b'garbage\n')
        handover = mcpstart.handshake(Wire(), answers)
        assert handover is not None and handover.replay == [line(INITIALIZE), b'garbage\n']


@pytest.mark.parametrize(
    'first',
    [
        line({**INITIALIZE, 'params': {'clientInfo': {'name': 'other'}}}),
        line(TOOLS),
        line({**INITIALIZE, 'id': 1.5}),
        b'garbage\n',
        line({'jsonrpc': '2.0', 'id': 1, 'result': {}}),
    ],
)
def test_a_first_line_not_kept_goes_to_the_sdk_unanswered(answers: Answers, first: bytes) -> None:
    with piped() as stdio:
        kept_answers(answers)
        stdio.send(first + b'more', end=True)
        handover = mcpstart.handshake(Wire(), answers)
        assert handover is not None
        assert (handover.replay, handover.rest, handover.answered) == ([first], b'more', None)
        assert stdio.written() == b''


def test_a_client_that_leaves_ends_the_handshake(answers: Answers) -> None:
    with piped() as stdio:
        kept_answers(answers)
        stdio.send(b'', end=True)
        assert mcpstart.handshake(Wire(), answers) is None
    with piped() as other:
        other.send(line(INITIALIZE), end=True)
        assert mcpstart.handshake(Wire(), answers) is None


# -- what the relay learns -----------------------------------------------------------------------


def sdk_answer(request_id: object, result: str) -> bytes:
    return mcpstart.answer_line(f'"result":{result}}}', request_id).rstrip(b'\n')


def test_the_relay_learns_the_sdk_s_handshake(answers: Answers) -> None:
    relay = Relay(answers, Handover([]))
    assert relay.drop is None and relay.phase == 'start'
    assert relay.end.startswith(b'\0end ') and relay.end.endswith(b'\n')
    assert relay._look_in(line(INITIALIZE).rstrip()) == b''
    assert (relay.client, relay.phase) == (key(INITIALIZE), 'initialize')
    assert relay._look_in(line(INITIALIZED).rstrip()) == b''
    assert relay.phase == 'ready'
    assert relay._look_in(line(TOOLS).rstrip()) == b''
    assert relay._look_out(sdk_answer(1, '{"serverInfo":"s"}'))
    assert relay._look_out(b'{"jsonrpc":"2.0","method":"notifications/x"}')
    assert relay._look_out(sdk_answer(2, '{"tools":[]}'))
    assert answers.answer(key(INITIALIZE), key(INITIALIZE)) == '"result":{"serverInfo":"s"}}'
    assert answers.answer(key(INITIALIZE), key(TOOLS)) == '"result":{"tools":[]}}'
    assert relay._look_in(b'{"jsonrpc":"2.0","id":4,"method":"tools/call"}') == b''
    assert relay.phase == 'done'
    assert relay._look_in(line(TOOLS).rstrip()) == b'' and relay.phase == 'done'
    assert relay._look_out(sdk_answer(4, '{}')), 'not expected: passed on'


def test_the_relay_checks_the_listings_answered_from_kept_lines(answers: Answers) -> None:
    kept_answers(answers)
    listed = [TOOLS, {'jsonrpc': '2.0', 'id': 3, 'method': 'prompts/list', 'params': {}}]
    relay = Relay(answers, Handover([line(INITIALIZE)], answered=1, listed=listed))
    assert relay.drop == b'1'
    relay._look_in(line(INITIALIZE).rstrip())
    assert relay.expected == {}, 'its answer was sent already'
    checks = relay._look_in(line(INITIALIZED).rstrip())
    assert checks == (
        b'{"jsonrpc": "2.0", "id": "trading-checkpoints-check-0", "method": "tools/list"}\n'
        b'{"jsonrpc": "2.0", "id": "trading-checkpoints-check-1", "method": "prompts/list", '
        b'"params": {}}\n'
    )
    # The SDK's answer to the initialize already answered is dropped, and learnt.
    assert not relay._look_out(sdk_answer(1, '{"serverInfo":"new"}'))
    assert relay.drop is None
    assert answers.answer(key(INITIALIZE), key(INITIALIZE)) == '"result":{"serverInfo":"new"}}'
    # The checks' answers are learnt, not passed on.
    assert not relay._look_out(sdk_answer('trading-checkpoints-check-1', '{"prompts":[]}'))
    assert answers.answer(key(INITIALIZE), key(listed[1])) == '"result":{"prompts":[]}}'
    error = b'{"jsonrpc":"2.0","id":"trading-checkpoints-check-0","error":{"code":1}}'
    assert not relay._look_out(error)
    assert answers.clients == {}, 'a kept answer the SDK no longer gives: all forgotten'


def test_a_line_like_an_answer_that_is_a_request_is_passed_on(answers: Answers) -> None:
    relay = Relay(answers, Handover([]))
    relay._look_in(line(INITIALIZE).rstrip())
    request = b'{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage"}'
    assert relay._look_out(request)
    assert relay._look_out(b'{"jsonrpc":"2.0","id":1,not json')
    assert answers.clients == {}


def relay_at(answers: Answers, *lines: bytes, handover: Handover | None = None) -> Relay:
    """A relay that has seen the client's ``lines``."""
    relay = Relay(answers, handover or Handover([]))
    for each in lines:
        relay._look_in(each.rstrip(b'\n'))
    return relay


@pytest.mark.parametrize(
    'lines',
    [
        pytest.param([b'not json'], id='no-message'),
        pytest.param([line(TOOLS)], id='a-listing-first'),
        pytest.param([line(INITIALIZED)], id='a-notification-first'),
        pytest.param([line(INITIALIZE), line(TOOLS)], id='a-listing-before-initialized'),
        pytest.param([line(INITIALIZE), b'{"jsonrpc":"2.0","id":1,"result":{}}'], id='a-result'),
        pytest.param(
            [line(INITIALIZE), line(INITIALIZED), line(INITIALIZE), line(TOOLS)],
            id='initialize-again',
        ),
    ],
)
def test_a_handshake_out_of_order_is_followed_no_further(answers: Answers, lines: list[bytes]):
    relay = relay_at(answers, *lines)
    assert relay.phase == 'done'
    assert relay.client in ('', key(INITIALIZE))


def test_the_relay_compares_the_sdk_s_answers_with_the_kept_ones(answers: Answers) -> None:
    """The same answers again are not written again, and an error where an answer was kept
    forgets the client's answers: for the initialize answered already (its answer dropped)
    and for a listing the client asks after the handshake."""
    kept_answers(answers)
    answered = Handover([line(INITIALIZE)], answered=1)
    relay = relay_at(answers, line(INITIALIZE), line(INITIALIZED), line(TOOLS), handover=answered)
    os.unlink(answers.path)
    assert not relay._look_out(sdk_answer(1, '{"serverInfo":"s"}'))
    assert relay._look_out(sdk_answer(2, '{"tools":[]}'))
    assert not os.path.exists(answers.path), 'the same answers: nothing written'
    relay._look_in(tools_list(3).rstrip(b'\n'))
    assert relay._look_out(b'{"jsonrpc":"2.0","id":3,"error":{"code":1}}')
    assert json.loads(Path(answers.path).read_text())['clients'] == {}, 'forgotten'
    for failed in (b'{"jsonrpc":"2.0","id":1,"error":{"code":1}}', b'{"jsonrpc":"2.0","id":1,no'):
        kept_answers(answers)
        relay = relay_at(answers, line(INITIALIZE), handover=answered)
        assert not relay._look_out(failed)
        assert answers.clients == {}, 'the initialize answered from kept lines: forgotten'


def test_lines_the_relay_cannot_match_are_passed_on_and_change_nothing_kept(answers: Answers):
    kept_answers(answers)
    relay = relay_at(answers, line(INITIALIZE), line(INITIALIZED), line(TOOLS))
    assert relay._look_out(b'{"jsonrpc":"2.0","id":2,not json')
    assert relay._look_out(sdk_answer(9, '{}')), 'an id not asked'
    assert relay._look_out(b'{"id":2,"jsonrpc":"2.0","result":{}}'), 'not as the SDK writes'
    assert answers.answer(key(INITIALIZE), key(TOOLS)) == '"result":{"tools":[]}}'
    assert relay._look_out(sdk_answer(2, '{"tools":[1]}'))
    assert answers.answer(key(INITIALIZE), key(TOOLS)) == '"result":{"tools":[1]}}', 'learnt'
    # A request of the SDK's with the id of one the client asked is no answer to it.
    relay._look_in(tools_list(3).rstrip(b'\n'))
    assert relay._look_out(b'{"jsonrpc":"2.0","id":3,"method":"roots/list"}')
    assert answers.answer(key(INITIALIZE), key(TOOLS)) == '"result":{"tools":[1]}}'


def read_all(fd: int, size: int | None = None) -> bytes:
    """What a pipe gives until its end (or ``size`` bytes), for at most the deadline."""
    chunks = []
    deadline = time.monotonic() + DEADLINE
    while size is None or sum(map(len, chunks)) < size:
        if not select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
            return b''.join(chunks) + b' (and no end)'
        chunk = os.read(fd, 65536 if size is None else size - sum(map(len, chunks)))
        if not chunk:
            break
        chunks.append(chunk)
    if size is None:
        os.close(fd)
    return b''.join(chunks)


def to_sdk(relay: Relay, *pieces: bytes) -> tuple[int, int, threading.Thread]:
    """The relay's reader started on real pipes, the client's ``pieces`` sent first (a moment
    apart: each read alone, unless the reader is slower): the client's and the SDK's ends."""
    wire_in, client = os.pipe()
    sdk, feed = os.pipe()
    reader = threading.Thread(target=relay._to_sdk, args=(wire_in, feed), daemon=True)
    reader.start()
    for piece in pieces:
        os.write(client, piece)
        time.sleep(0.2)
    return client, sdk, reader


def test_the_client_s_bytes_reach_the_sdk_in_order_with_the_checks(answers: Answers) -> None:
    """What the SDK reads: the lines read before it (the handshake replayed), the checks of the
    listings answered from kept lines right after ``initialized``, the bytes read beyond
    them, then the client's own bytes as they come (a line in pieces followed whole, and
    once the handshake is over, each piece passed on at once)."""
    kept_answers(answers)
    listing, ping = tools_list(3), line({'jsonrpc': '2.0', 'id': 4, 'method': 'ping'})
    handover = Handover([line(INITIALIZE), line(INITIALIZED)], listing[:15], 1, [TOOLS])
    relay = Relay(answers, handover)
    pieces = [listing[15:] + ping[:10], ping[10:] + b'{"last": ', b'"line"}\n', b'{"after']
    client, sdk, reader = to_sdk(relay, *pieces[:2])
    assert list(relay.expected) == [b'"trading-checkpoints-check-0"', b'3']
    check = b'{"jsonrpc": "2.0", "id": "trading-checkpoints-check-0", "method": "tools/list"}\n'
    before = line(INITIALIZE) + line(INITIALIZED) + check + listing + ping + b'{"last": '
    assert read_all(sdk, len(before)) == before, 'passed on before the client sends more'
    for piece in pieces[2:]:
        os.write(client, piece)
    os.close(client)
    reader.join(DEADLINE)
    assert read_all(sdk) == b''.join(pieces[2:])
    assert relay.phase == 'done'


def test_a_line_without_its_end_reaches_the_sdk_at_the_end_of_input(answers: Answers) -> None:
    client, sdk, reader = to_sdk(Relay(answers, Handover([])), line(INITIALIZE)[:-1])
    os.close(client)
    reader.join(DEADLINE)
    assert read_all(sdk) == line(INITIALIZE)[:-1]


def test_the_sdk_s_lines_reach_the_client_until_the_end_line(answers: Answers) -> None:
    """What the client reads: the SDK's lines (a line in two pieces whole), the answer to the
    initialize answered already left out, every line before the end line, nothing after."""
    relay = relay_at(answers, line(INITIALIZE), handover=Handover([line(INITIALIZE)], answered=1))
    drain, sdk = os.pipe()
    client, wire_out = os.pipe()
    writer = threading.Thread(target=relay._to_client, args=(drain, wire_out), daemon=True)
    writer.start()
    read: list[bytes] = []
    reader = threading.Thread(target=lambda: read.append(read_all(client)), daemon=True)
    reader.start()
    long = sdk_answer(7, '"' + 'x' * 100_000 + '"') + b'\n'  # more than a pipe holds
    two = sdk_answer(5, '{}') + b'\n' + sdk_answer(6, '{}') + b'\n'
    os.write(sdk, sdk_answer(1, '{"serverInfo":"s"}') + b'\n' + two + long[:10])
    time.sleep(0.2)  # read alone, unless the writer is slower
    os.write(sdk, long[10:])
    time.sleep(0.2)  # passed on before the end line comes, unless the writer is slower
    last = sdk_answer(8, '{}') + b'\n' + sdk_answer(9, '{}') + b'\n'
    os.write(sdk, last + relay.end + sdk_answer(10, '{}') + b'\n')
    os.close(sdk)
    writer.join(DEADLINE)
    with pytest.raises(OSError):
        os.fstat(drain)  # closed by the writer as it ends
    os.close(wire_out)
    reader.join(DEADLINE)
    assert read == [two + long + last]


def test_the_same_answer_again_is_not_written_again(answers: Answers) -> None:
    kept_answers(answers)
    os.unlink(answers.path)
    relay = Relay(answers, Handover([]))
    relay._learn(key(INITIALIZE), '"result":{"tools":[]}}', sdk_answer(2, '{"tools":[]}'))
    assert not os.path.exists(answers.path)
    relay._learn(key(INITIALIZE), None, b'{"jsonrpc":"2.0","id":2,"error":{}}')
    assert not os.path.exists(answers.path), 'nothing kept to forget'


# -- the whole start, the real SDK in this process ----------------------------------------------


def test_a_server_learns_the_handshake_and_the_next_answers_it_before_the_sdk(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two servers over real pipes in place of stdin and stdout, the SDK's own server run in
    this process: the first learns the SDK's answers, the second gives them before the SDK
    (when the modules were settled enough to keep them: the answers are the same either
    way)."""
    pytest.importorskip('mcp')
    from helpers.builders import new_workspace

    from trading_checkpoints.agent.mcp import build_server

    workspace = new_workspace(tmp_path / 'ws')
    handshake = line(INITIALIZE) + line(INITIALIZED) + line(TOOLS)
    said = []
    for _ in range(2):
        with piped() as stdio:
            # The SDK reads and writes through sys.stdin and sys.stdout: the real fds 0 and 1.
            monkeypatch.setattr(sys, 'stdin', open(0, closefd=False))  # noqa: SIM115
            monkeypatch.setattr(sys, 'stdout', open(1, 'w', closefd=False))  # noqa: SIM115
            stdio.send(handshake)
            client = threading.Thread(target=stdio.answered, args=(2,), daemon=True)
            client.start()
            mcpstart.serve(lambda: build_server(workspace), 'the context')
            client.join(30)
            said.append(stdio.read + stdio.written())
            monkeypatch.undo()
            monkeypatch.setenv('XDG_CACHE_HOME', str(cache))
    first, second = said
    assert first == second, 'the kept answers are the SDK own, byte for byte'
    answers = [json.loads(each) for each in first.splitlines()]
    assert [each['id'] for each in answers] == [1, 2]
    assert 'tools' in answers[1]['result']


def test_a_second_initialized_or_one_with_an_id_goes_to_the_sdk(answers: Answers) -> None:
    kept_answers(answers)
    with piped() as stdio:
        stdio.send(line(INITIALIZE) + line(INITIALIZED) + line(INITIALIZED) + line(TOOLS))
        handover = mcpstart.handshake(Wire(), answers)
        assert handover is not None and handover.listed == [] and handover.rest == line(TOOLS)
        assert handover.replay == [line(INITIALIZE), line(INITIALIZED), line(INITIALIZED)]
    with piped() as stdio:
        asked = {**INITIALIZED, 'id': 9}
        stdio.send(line(INITIALIZE) + line(asked), end=True)
        handover = mcpstart.handshake(Wire(), answers)
        assert handover is not None and handover.replay == [line(INITIALIZE), line(asked)]


def test_a_notification_other_than_initialized_first_goes_to_the_sdk(answers: Answers) -> None:
    kept_answers(answers)
    cancelled = {'jsonrpc': '2.0', 'method': 'notifications/cancelled', 'params': {}}
    with piped() as stdio:
        stdio.send(line(INITIALIZE) + line(cancelled) + line(INITIALIZED) + line(TOOLS))
        handover = mcpstart.handshake(Wire(), answers)
    assert handover is not None and handover.listed == []
    assert handover.replay == [line(INITIALIZE), line(cancelled)]


def test_the_listings_answered_are_handed_over(answers: Answers) -> None:
    kept_answers(answers)
    call = {'jsonrpc': '2.0', 'id': 3, 'method': 'tools/call'}
    with piped() as stdio:
        stdio.send(line(INITIALIZE) + line(INITIALIZED) + line(TOOLS) + line(call))
        handover = mcpstart.handshake(Wire(), answers)
    assert handover is not None and handover.listed == [TOOLS]
    assert handover.replay == [line(INITIALIZE), line(INITIALIZED), line(call)]


def test_a_slow_client_is_waited_for_until_a_listing_was_answered(answers: Answers) -> None:
    kept_answers(answers)
    with piped() as stdio:
        stdio.send(line(INITIALIZE))
        later = threading.Timer(0.3, stdio.send, (line(INITIALIZED) + line(TOOLS),))
        later.start()
        try:
            handover = mcpstart.handshake(Wire(), answers)
        finally:
            later.join()
    assert handover is not None and handover.listed == [TOOLS]


def test_answers_are_kept_where_they_were_loaded_from_only(
    answers: Answers, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: Path
) -> None:
    (cache / mcpstart.FOLDER).rmdir()  # removed since: made again
    answers.keep('client', 'k', 'v')
    assert os.path.isfile(answers.path)
    os.unlink(answers.path)
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path / 'elsewhere'))
    answers.keep('client', 'k', 'w')
    assert not os.path.exists(answers.path), 'the cache folder moved: kept nowhere'


def test_elsewhere_the_sdk_serves_alone(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without POSIX file modes no folder is private enough to keep answers in: the SDK's
    server is run as it is, and nothing is made (``os.name`` another system's for the call,
    on any system)."""
    ran = []

    class Server:
        def run(self) -> None:
            ran.append(True)

    with monkeypatch.context() as patched:
        patched.setattr(mcpstart.os, 'name', 'nt')
        mcpstart.serve(Server, 'the context')
    assert ran == [True] and not cache.exists()
