"""What client and server say to each other over the socket.

The client sends one request:

    length (8 ASCII digits) | fields joined by NUL

fields: ``tc2``, the number of the client's ``sys.argv`` items and the items, the number of the
command's arguments and the arguments, how each standard stream is set up
(:data:`STREAM_FIELDS` each: encoding, errors, line buffering, write-through, buffered), then
the environment as ``NAME=VALUE`` items; all as the bytes the operating system gave the client
(``os.fsencode``), so names that are not UTF-8 travel unchanged. What the client cannot lie
about to its advantage (its folder, umask, limits, signals, namespaces, credentials) is not
sent: the server reads it from ``/proc`` (``context.py``).

With the request goes one descriptor (``SCM_RIGHTS``): the *token*, one end of a datagram
socket pair in whose queue the client's stdin, stdout and stderr wait (one datagram,
:data:`STREAMS`, the three descriptors attached). Whoever takes that datagram first decides:
the server's child that takes it runs the command; the client that takes it back (it holds the
token too) runs the command itself, or no one does; the kernel gives the datagram to exactly
one of them. So the client may give up at any moment (no answer in time, a signal) without a
race, and a server that never answers holds none of the client's descriptors, which a harness
waiting for the end of the client's output would otherwise wait on.

The child answers with lines: ``no REASON`` when it cannot be the client (it took nothing; the
client runs the command itself), else ``run N`` (its pid) once it took the streams and starts
the command, then ``exit N`` when the command ends; the server answers ``signal N`` when a
signal ended it.
"""

from __future__ import annotations

import os

MAGIC = b'tc2'
LENGTH_DIGITS = 8
MAX_REQUEST = 4 * 1024 * 1024
STREAM_FIELDS = 5
STREAMS = b'streams'


class Stream:
    """How a standard stream is set up in the client (as Python made it from its options)."""

    __slots__ = ('buffered', 'encoding', 'errors', 'line_buffering', 'write_through')

    def __init__(
        self, encoding: str, errors: str, line_buffering: bool, write_through: bool, buffered: bool
    ) -> None:
        self.encoding = encoding
        self.errors = errors
        self.line_buffering = line_buffering
        self.write_through = write_through
        self.buffered = buffered


class Request:
    """A command to run: the client's ``sys.argv``, the command's arguments, the standard
    streams' setup and the environment."""

    __slots__ = ('argv', 'environment', 'process_argv', 'streams')

    def __init__(
        self,
        process_argv: list[bytes],
        argv: list[bytes],
        streams: list[Stream],
        environment: dict[bytes, bytes],
    ) -> None:
        self.process_argv = process_argv
        self.argv = argv
        self.streams = streams
        self.environment = environment


def describe(stream: object) -> list[bytes]:
    """A standard text stream's setup, as the request's fields."""
    encoding = getattr(stream, 'encoding', None) or 'utf-8'
    errors = getattr(stream, 'errors', None) or 'strict'
    buffer = getattr(stream, 'buffer', None)
    flags = (
        getattr(stream, 'line_buffering', False),
        getattr(stream, 'write_through', False),
        type(buffer).__name__ != 'FileIO',
    )
    return [encoding.encode(), errors.encode(), *(b'1' if flag else b'0' for flag in flags)]


def encode(process_argv: list[str], argv: list[str], streams: list[object]) -> bytes:
    fields = [MAGIC]
    for items in (process_argv, argv):
        fields.append(str(len(items)).encode())
        fields.extend(os.fsencode(item) for item in items)
    for stream in streams:
        fields.extend(describe(stream))
    fields.extend(name + b'=' + value for name, value in os.environb.items())
    body = b'\0'.join(fields)
    return str(len(body)).zfill(LENGTH_DIGITS).encode() + body


def decode(body: bytes, streams: int = 3) -> Request:
    """The request in ``body`` (without its length); ValueError when it is not one."""
    fields = body.split(b'\0')
    if len(fields) < 2 or fields[0] != MAGIC:
        raise ValueError('not a request of this version')
    lists = []
    setup = 1
    for _ in range(2):
        count = int(fields[setup]) if setup < len(fields) else -1
        if not 0 <= count <= len(fields) - setup - 1:
            raise ValueError('a malformed request')
        lists.append(fields[setup + 1 : setup + 1 + count])
        setup += 1 + count
    if len(fields) < setup + streams * STREAM_FIELDS:
        raise ValueError('a malformed request')
    described = []
    for at in range(setup, setup + streams * STREAM_FIELDS, STREAM_FIELDS):
        encoding, errors, line, through, buffered = fields[at : at + STREAM_FIELDS]
        described.append(
            Stream(
                encoding.decode(), errors.decode(), line == b'1', through == b'1', buffered == b'1'
            )
        )
    environment = {}
    for item in fields[setup + streams * STREAM_FIELDS :]:
        name, equals, value = item.partition(b'=')
        if equals and name:
            environment[name] = value
    return Request(lists[0], lists[1], described, environment)
