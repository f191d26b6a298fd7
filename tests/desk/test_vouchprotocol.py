"""The watcher protocol's messages: what one end encodes the other decodes to the same typed
message, and anything else (another version, another shape, a wrong type anywhere, a line
cut short or too long) is refused with ``ValueError``, never half read."""

from __future__ import annotations

import json
import socket
import threading
import time
from typing import Any

import pytest

from trading_checkpoints.desk import vouchprotocol as protocol
from trading_checkpoints.desk.vouchprotocol import (
    Answer,
    Ask,
    Changed,
    Record,
    Reply,
    Report,
    State,
    Token,
)

STATE = State(
    head='a' * 40,
    seal=None,
    config='b' * 40,
    cache=(1, 2, 3, 4, 5),
    entries=('notes', 'Memory.md'),
    limit=1024,
    desk='/desk\0notes\0Memory.md',
    mounts=('22 1 8:1 / / rw - ext4 /dev/sda1 rw',),
    linked=(('notes/a.md', (10, 20, 30, 40, 0o100644)), ('notes/gone.md', None)),
)
RECORD = Record(STATE, Answer(('notes/a.md',), 'sealed', (('notes/big.bin', 'too large'),)))
TOKEN = Token('0123456789abcdef', 7)
MESSAGES = [
    Ask(('notes', 'Memory.md')),
    Ask(()),
    Reply(TOKEN, ()),
    Reply(TOKEN, ('notes/a.md',), clean=RECORD),
    Reply(TOKEN, (), changed=Changed(RECORD, ('', 'notes'))),
    Report(TOKEN, RECORD),
    Report(TOKEN, Record(State('c' * 40, 'd' * 40, '', None, (), 0, '', None, ()), RECORD.answer)),
]


@pytest.mark.parametrize('message', MESSAGES, ids=lambda message: type(message).__name__)
def test_every_message_comes_back_as_it_was_sent(message: protocol.Message) -> None:
    line = protocol.encode(message)
    assert line.endswith(b'\n') and line.count(b'\n') == 1
    assert protocol.decode(line) == message
    body = json.loads(line)
    assert (body['version'], body['type']) == (protocol.VERSION, type(message).__name__)


def encoded(message: protocol.Message) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(protocol.encode(message))
    return found


def state_of(body: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = body['record']['state']
    return found


CHANGES = {
    'another version': lambda body: body.update(version=protocol.VERSION + 1),
    'the version as text': lambda body: body.update(version=str(protocol.VERSION)),
    'no version': lambda body: body.pop('version'),
    'no type': lambda body: body.pop('type'),
    'an unknown type': lambda body: body.update(type='Hello'),
    'a type that is no message': lambda body: body.update(type='State'),
    'a field missing': lambda body: body.pop('token'),
    'a field too many': lambda body: body.update(extra=None),
    'the token not an object': lambda body: body.update(token=[TOKEN.instance, 7]),
    'a generation as text': lambda body: body['token'].update(generation='7'),
    'a generation as a truth value': lambda body: body['token'].update(generation=True),
    'an instance as a number': lambda body: body['token'].update(instance=7),
    'a token field missing': lambda body: body['token'].pop('instance'),
    'the head missing': lambda body: state_of(body).pop('head'),
    'a seal as a number': lambda body: state_of(body).update(seal=1),
    'a cache of four numbers': lambda body: state_of(body).update(cache=[1, 2, 3, 4]),
    'a cache of six numbers': lambda body: state_of(body).update(cache=[1, 2, 3, 4, 5, 6]),
    'a cache number as text': lambda body: state_of(body).update(cache=[1, 2, 3, 4, '5']),
    'a cache as an object': lambda body: state_of(body).update(cache={'0': 1}),
    'entries as text': lambda body: state_of(body).update(entries='notes'),
    'an entry as a list': lambda body: state_of(body).update(entries=[['notes']]),
    'entries as null': lambda body: state_of(body).update(entries=None),
    'a limit as a float': lambda body: state_of(body).update(limit=1.5),
    'a limit as null': lambda body: state_of(body).update(limit=None),
    'a mount as a number': lambda body: state_of(body).update(mounts=[1]),
    'a linked pair of three': lambda body: state_of(body).update(linked=[['a', None, None]]),
    'a linked path as null': lambda body: state_of(body).update(linked=[[None, None]]),
    'an answer as a list': lambda body: body['record'].update(answer=[[], 'sealed', []]),
    'a skipped pair as text': lambda body: body['record']['answer'].update(skipped=['a']),
    'a basis as null': lambda body: body['record']['answer'].update(basis=None),
    'the record as null': lambda body: body.update(record=None),
}


@pytest.mark.parametrize('change', sorted(CHANGES))
def test_a_line_of_another_shape_is_refused(change: str) -> None:
    body = encoded(Report(TOKEN, RECORD))
    CHANGES[change](body)
    with pytest.raises(ValueError):
        protocol.decode(json.dumps(body).encode())


@pytest.mark.parametrize(
    'line',
    [
        b'',
        b'not json\n',
        b'[]\n',
        b'"Ask"\n',
        b'\xff\xfe\n',
        b'[' * 100_000 + b']' * 100_000,
        b'{"version": 1, "type": "Ask", "entries": ["a"]} trailing\n',
    ],
)
def test_a_line_that_is_no_message_is_refused(line: bytes) -> None:
    with pytest.raises(ValueError):
        protocol.decode(line)


def test_optional_parts_are_refused_when_of_another_shape() -> None:
    body = encoded(Reply(TOKEN, (), changed=Changed(RECORD, ('notes',))))
    for folders in ('notes', [1], None):
        body['changed']['folders'] = folders
        with pytest.raises(ValueError):
            protocol.decode(json.dumps(body).encode())
    body = encoded(Reply(TOKEN, ()))
    body['clean'] = {'state': None, 'answer': None}
    with pytest.raises(ValueError):
        protocol.decode(json.dumps(body).encode())


def pair() -> tuple[socket.socket, socket.socket]:
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)


def test_a_line_is_read_whole_across_chunks() -> None:
    ours, theirs = pair()
    with ours, theirs:
        line = protocol.encode(Ask(('x' * 100_000,)))

        def send() -> None:
            for start in range(0, len(line), 4096):
                theirs.sendall(line[start : start + 4096])
                time.sleep(0.001)

        sender = threading.Thread(target=send)
        sender.start()
        assert protocol.read_line(ours, time.monotonic() + 10) == line
        sender.join()


def test_a_line_cut_short_or_too_long_or_late_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    ours, theirs = pair()
    with ours:
        theirs.sendall(b'{"version": 1')
        theirs.close()
        with pytest.raises(ValueError):
            protocol.read_line(ours, time.monotonic() + 10)
    monkeypatch.setattr(protocol, 'MAX_LINE', 10)
    ours, theirs = pair()
    with ours, theirs:
        theirs.sendall(b'0123456789A')  # one more than allowed, and no end
        with pytest.raises(ValueError):
            protocol.read_line(ours, time.monotonic() + 10)
    ours, theirs = pair()
    with ours, theirs:
        theirs.sendall(b'012345678\n')  # exactly the limit, its end included
        assert protocol.read_line(ours, time.monotonic() + 1) == b'012345678\n'
        theirs.sendall(b'0123456789\n')
        with pytest.raises(ValueError):
            protocol.read_line(ours, time.monotonic() + 1)
    ours, theirs = pair()
    with ours, theirs:
        theirs.sendall(b'no end yet')
        with pytest.raises(TimeoutError):
            protocol.read_line(ours, time.monotonic() + 0.05)
    ours, theirs = pair()
    with ours, theirs:
        with pytest.raises(TimeoutError):
            protocol.read_line(ours, time.monotonic() - 1)  # no time left: nothing read
        theirs.sendall(b'x\n')
        assert protocol.read_line(ours, time.monotonic() + 1) == b'x\n'
