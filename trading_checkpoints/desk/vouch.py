"""Asking a running ``checkpoints watch`` whether the desk changed, instead of walking it.

The watcher of a desk (``agent/vouchwatch.py``) listens on a Unix socket in the user's private
folder, as the warm server does (``core/private.py``: a real folder of this user that nobody
else may enter). The socket's name is keyed by the desk's real path, device and inode and the
repository's real path, so a desk moved, replaced or given another repository finds no
watcher. The connecting side checks the listening process's user (``SO_PEERCRED``) as the
watcher checks its callers'.

One message each way per connection, typed and versioned in ``desk/vouchprotocol.py``:

- :func:`ask`: the watcher makes a cookie file (in its own folder beside the socket, never in
  the desk), waits until its own event queue delivers the cookie's event, so that every change
  made before the question was sent has been seen, and replies with a token naming this moment
  and, when no change to a tracked path arrived since the desk was last known clean, the
  record of that state (``clean``). When the desk changed since the record, and the watcher
  knows where, the reply holds instead that record and the folders in which a tracked entry
  was made, changed, removed or moved since (``changed``); a caller whose state is the
  record's walks only those (``desk/narrow.py``).
- :func:`report`: a walk that began after a token was given found the desk equal to the newest
  checkpoint; the watcher keeps the record only when the token is its own and no change
  arrived between the token and the report's own cookie, and answers once it decided. The
  caller waits for that answer: a hook returns only then, so the write its tool makes at once
  reaches the watcher after the record, as a change since it (a narrowed walk), not between
  the token and the cookie (the record dropped: a walk of everything).

What the watcher cannot see, the caller reads itself into the record's state and compares:
:func:`mounts` (the mount table's entries for the desk; none is used when something is mounted
inside the desk) and the stat numbers of the multiply-linked files the watcher names. The
watcher itself starts over when the desk's entries changed (:func:`desk_mounts`): a folder
unmounted inside the desk uncovers a folder it never watched.

Every failure (no folder, no socket, a refused connection, another user, no answer within
:data:`TIMEOUT`, an answer that does not parse) is None: the caller walks.
"""

from __future__ import annotations

import os
import stat
import sys
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ..core import private
from .folders import mount_table
from .vouchprotocol import Ask, Kept, Record, Reply, Report, Token, decode, encode, read_line

if TYPE_CHECKING:
    import _socket as socket

TIMEOUT = 0.05  # seconds for the whole exchange


def key(desk: str | os.PathLike[str], repository: str | os.PathLike[str]) -> str | None:
    """The name a desk's watcher listens under: its real path, device and inode, and the real
    path of its repository; None when the desk is not a folder."""
    real = os.path.realpath(desk)
    try:
        info = os.stat(real, follow_symlinks=False)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode):
        return None
    text = f'{real}\0{info.st_dev}\0{info.st_ino}\0{os.path.realpath(repository)}'
    data = text.encode('utf-8', 'surrogateescape')
    return f'{zlib.crc32(data):08x}{zlib.adler32(data):08x}'


def socket_path(name: str, create: bool = False) -> str | None:
    """The socket of the watcher keyed ``name``, or None when there is no safe folder."""
    return private.socket_path(f'watch-{name}.sock', create)


def ask(name: str, entries: tuple[str, ...]) -> Reply | None:
    """The watcher's reply for the tracked paths ``entries`` (see the module notes); None when
    there is no watcher or any doubt."""
    with _connection(name) as connection:
        if connection is None:
            return None
        try:
            connection.sendall(encode(Ask(tuple(entries))))
            reply = decode(read_line(connection, time.monotonic() + TIMEOUT))
        except (OSError, ValueError):
            return None
    return reply if isinstance(reply, Reply) else None


def report(name: str, token: Token, record: Record) -> bool:
    """Tells the watcher that a walk begun after ``token`` found the desk as ``record`` says,
    and waits until it decided (see the module notes); whether it keeps the record (False
    too when there is no watcher or no answer within :data:`TIMEOUT`)."""
    with _connection(name) as connection:
        if connection is None:
            return False
        try:
            connection.sendall(encode(Report(token, record)))
            answer = decode(read_line(connection, time.monotonic() + TIMEOUT))
        except (OSError, ValueError):
            return False
    return isinstance(answer, Kept) and answer.kept


def mounts(desk: str) -> tuple[str, ...] | None:
    """The mount table's lines for the desk's real path ``desk`` and each folder above it, in
    the table's order; None when there is no table or something is mounted inside the desk
    (what is mounted there is not the folder the watcher watches)."""
    found = desk_mounts(desk)
    inside = desk.rstrip('/') + '/'
    if found is None or any(point.startswith(inside) for point, _ in found):
        return None
    return tuple(line for _, line in found)


def desk_mounts(desk: str) -> list[tuple[str, str]] | None:
    """The mount table's entries (mount point, line) for the desk's real path ``desk``, each
    folder above it and everything mounted inside it, in the table's order; None when there is
    no table."""
    table = mount_table()
    if table is None:
        return None
    inside = desk.rstrip('/') + '/'
    return [
        (point, os.fsdecode(line))
        for point, line in table
        if point.startswith(inside) or inside.startswith(point.rstrip('/') + '/')
    ]


@contextmanager
def _connection(name: str) -> Iterator[socket.socket | None]:
    """A connection to the watcher keyed ``name``, closed after the block; None when there is
    none (no Linux, no private folder, no socket, nobody of this user listening)."""
    connection = None
    if sys.platform.startswith('linux'):  # the watcher's record needs inotify
        path = socket_path(name)
        if path is not None and _is_socket(path):  # else nothing is opened
            connection = _connect(path)
    try:
        yield connection
    finally:
        if connection is not None:
            connection.close()


def _connect(path: str) -> socket.socket | None:
    """A connection to the socket at ``path`` when the socket, its folder and its listener are
    this user's (``private.connect``), else None."""
    try:
        return private.connect(path, TIMEOUT)
    except OSError:
        return None


def _is_socket(path: str) -> bool:
    try:
        return stat.S_ISSOCK(os.lstat(path).st_mode)
    except OSError:
        return False
