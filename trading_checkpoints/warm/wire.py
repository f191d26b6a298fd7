"""What client and server say to each other over the socket.

The client sends one request, with its stdin, stdout and stderr attached as ``SCM_RIGHTS``
ancillary data to its first bytes:

    length (8 ASCII digits) | fields joined by NUL

fields: ``tc1``, the umask (decimal), the folder, the number of arguments, the arguments, then
the environment as ``NAME=VALUE`` items; all as the bytes the operating system gave the client
(``os.fsencode``), so names that are not UTF-8 travel unchanged.

The server's child answers with lines: ``pid N`` once it has taken the command (from then on
the client forwards the signals it receives to pid N and must not run the command itself), then
``exit N`` when the command ends.
"""

from __future__ import annotations

import os

MAGIC = b'tc1'
LENGTH_DIGITS = 8
MAX_REQUEST = 4 * 1024 * 1024


class Request:
    """A command to run: the client's umask, folder, arguments and environment."""

    __slots__ = ('argv', 'environment', 'folder', 'umask')

    def __init__(
        self, umask: int, folder: bytes, argv: list[bytes], environment: dict[bytes, bytes]
    ) -> None:
        self.umask = umask
        self.folder = folder
        self.argv = argv
        self.environment = environment


def encode(argv: list[str], folder: str, umask: int) -> bytes:
    fields = [MAGIC, str(umask).encode(), os.fsencode(folder), str(len(argv)).encode()]
    fields.extend(os.fsencode(argument) for argument in argv)
    fields.extend(name + b'=' + value for name, value in os.environb.items())
    body = b'\0'.join(fields)
    return str(len(body)).zfill(LENGTH_DIGITS).encode() + body


def decode(body: bytes) -> Request:
    """The request in ``body`` (without its length); ValueError when it is not one."""
    fields = body.split(b'\0')
    if len(fields) < 4 or fields[0] != MAGIC:
        raise ValueError('not a request of this version')
    umask, folder, count = int(fields[1]), fields[2], int(fields[3])
    if not 0 <= umask <= 0o777 or not 0 <= count <= len(fields) - 4:
        raise ValueError('a malformed request')
    argv = fields[4 : 4 + count]
    environment = {}
    for item in fields[4 + count :]:
        name, equals, value = item.partition(b'=')
        if equals and name:
            environment[name] = value
    return Request(umask, folder, argv, environment)
