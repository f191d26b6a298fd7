"""Asking a running ``checkpoints watch`` whether the desk changed, instead of walking it.

The watcher of a desk (``agent/vouchwatch.py``) listens on a Unix socket in the user's private
folder, as the warm server does (``core/private.py``: a real folder of this user that nobody
else may enter). The socket's
name is keyed by the desk's real path, device and inode and the repository's real path, so a
desk moved, replaced or given another repository finds no watcher. The connecting side checks
the listening process's user (``SO_PEERCRED``) as the watcher checks its callers'.

Two requests, one line of JSON each:

- ``ask``: the watcher makes a cookie file (in its own folder beside the socket, never in the
  desk), waits until its own event queue delivers the cookie's event, so that every change
  made before the request was sent has been seen, and answers with a ``token`` naming this
  moment and, when no change to a tracked path arrived since the desk was last known clean,
  the record of that state (``clean``: the branch head then, what the snapshot answered, what
  it depended on). A caller whose state differs from the record walks, and reports under the
  token. When the desk changed since the record, and the watcher knows where, the answer
  holds instead ``since``: the record and the folders in which a tracked entry was made,
  changed, removed or moved since (``folders``); a caller whose state is the record's walks
  only those (``desk/narrow.py``).
- ``clean``: a walk that began after a ``token`` was given found the desk equal to the newest
  checkpoint; the watcher keeps the record only when no change arrived between the token and
  the report's own cookie.

Every failure (no folder, no socket, a refused connection, another user, no answer within
:data:`TIMEOUT`, an answer that does not parse) is None: the caller walks.
"""

from __future__ import annotations

import os
import stat
import sys
import time
import zlib
from typing import TYPE_CHECKING, Any

from ..core import private

if TYPE_CHECKING:
    import _socket as socket

TIMEOUT = 0.05  # seconds for the whole exchange
MAX_ANSWER = 1 << 22

Record = dict[str, Any]


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


def ask(name: str, entries: tuple[str, ...]) -> Record | None:
    """The watcher's answer for the tracked paths ``entries``: ``{'token': n}``, with
    ``'clean': record`` when the desk is as the record found it, or ``'since': {'record':
    record, 'folders': [...]}`` when it knows where it changed since; None when there is no
    watcher or any doubt."""
    answer = _exchange(name, {'op': 'ask', 'entries': list(entries)}, wait=True)
    if not isinstance(answer, dict):
        return None
    if not isinstance(answer.get('token'), int):
        return None
    for field in ('clean', 'since'):
        if field in answer and not isinstance(answer[field], dict):
            return None
    return answer


def report(name: str, token: int, record: Record) -> None:
    """Tells the watcher that a walk begun after ``token`` found the desk clean (see the module
    notes); nothing is awaited."""
    _exchange(name, {'op': 'clean', 'token': token, 'record': record}, wait=False)


def _exchange(name: str, request: Record, *, wait: bool) -> object:
    if not sys.platform.startswith('linux'):
        return None  # the watcher's record needs inotify
    path = socket_path(name)
    if path is None or not _is_socket(path):
        return None  # no watcher: nothing more is imported or opened
    import json

    try:
        connection = private.connect(path, TIMEOUT)  # ours, and listened to by our user
    except OSError:
        return None
    try:
        connection.sendall(json.dumps(request).encode() + b'\n')
        if not wait:
            return None
        return json.loads(_line(connection, time.monotonic() + TIMEOUT))
    except (OSError, ValueError):
        return None
    finally:
        connection.close()


def _line(connection: socket.socket, deadline: float) -> bytes:
    """One line from the connection, given by ``deadline`` (else ``TimeoutError``)."""
    data = b''
    while not data.endswith(b'\n'):
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError('no answer in time')
        connection.settimeout(left)
        chunk = connection.recv(65536)
        if not chunk or len(data) > MAX_ANSWER:
            raise ValueError('no whole answer')
        data += chunk
    return data


def _is_socket(path: str) -> bool:
    try:
        return stat.S_ISSOCK(os.lstat(path).st_mode)
    except OSError:
        return False
