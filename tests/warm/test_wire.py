"""``warm/wire.py``: a request travels whole (arguments and environment as the bytes the system
gave the client, the streams' set-up), and anything else is refused."""

from __future__ import annotations

import io
import os
import types

import pytest

from trading_checkpoints.warm import wire


def stream(encoding: str, errors: str, line: bool, through: bool, raw: bool) -> object:
    buffer = io.FileIO(os.devnull, 'w') if raw else io.BytesIO()
    return types.SimpleNamespace(
        encoding=encoding, errors=errors, line_buffering=line, write_through=through, buffer=buffer
    )


def test_a_request_travels_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(os.environb, b'TC_WIRE', b'a=b\xff')
    argument = os.fsdecode(b'caf\xe9')  # not UTF-8: travels as the system's bytes
    body = wire.encode(
        ['/bin/checkpoints-hook', '--harness'],
        ['hook', argument, ''],
        [
            stream('utf-8', 'strict', False, False, False),
            stream('latin-1', 'surrogateescape', True, False, False),
            stream('ascii', 'backslashreplace', True, True, True),
        ],
    )
    length, body = int(body[: wire.LENGTH_DIGITS]), body[wire.LENGTH_DIGITS :]
    assert length == len(body)
    request = wire.decode(body)
    assert request.process_argv == [b'/bin/checkpoints-hook', b'--harness']
    assert request.argv == [b'hook', b'caf\xe9', b'']
    assert request.environment[b'TC_WIRE'] == b'a=b\xff'
    assert request.environment == dict(os.environb)
    described = [
        (s.encoding, s.errors, s.line_buffering, s.write_through, s.buffered)
        for s in request.streams
    ]
    assert described == [
        ('utf-8', 'strict', False, False, True),
        ('latin-1', 'surrogateescape', True, False, True),
        ('ascii', 'backslashreplace', True, True, False),
    ]


def test_a_stream_without_a_setup_is_described_as_pythons_default() -> None:
    assert wire.describe(object()) == [b'utf-8', b'strict', b'0', b'0', b'1']


@pytest.mark.parametrize(
    'body',
    [
        b'',
        b'tc1\x000\x000',
        b'tc2',
        b'tc2\x00x',
        b'tc2\x005\x00a',
        b'tc2\x000\x00-1',
        b'tc2\x000\x009',
        b'tc2\x000\x000\x00utf-8\x00strict\x000\x000',  # a stream's set-up cut short
        b'tc2\x000',  # the second list's count missing
        # a whole request of another version
        b'\x00'.join([b'tc1', b'0', b'0', *[b'utf-8', b'strict', b'0', b'0', b'1'] * 3]),
    ],
)
def test_anything_else_is_refused(body: bytes) -> None:
    with pytest.raises(ValueError):
        wire.decode(body)


def test_environment_items_without_a_name_or_a_value_sign_are_dropped() -> None:
    setup = [b'utf-8', b'strict', b'0', b'0', b'1'] * 3
    body = b'\x00'.join([wire.MAGIC, b'0', b'1', b'list', *setup, b'A=1', b'=2', b'B', b'C='])
    request = wire.decode(body)
    assert request.argv == [b'list']
    assert request.environment == {b'A': b'1', b'C': b''}


def test_a_request_may_end_with_its_last_list_or_its_last_stream() -> None:
    """Fields that end exactly where the body ends are all there: a request without
    environment items, and one without streams whose arguments end it."""
    setup = [b'utf-8', b'strict', b'0', b'1', b'1'] * 3
    request = wire.decode(b'\x00'.join([wire.MAGIC, b'1', b'prog', b'1', b'list', *setup]))
    assert (request.process_argv, request.argv, request.environment) == ([b'prog'], [b'list'], {})
    assert [stream.write_through for stream in request.streams] == [True] * 3
    bare = wire.decode(b'\x00'.join([wire.MAGIC, b'0', b'2', b'list', b'-v']), streams=0)
    assert (bare.argv, bare.streams, bare.environment) == ([b'list', b'-v'], [], {})
