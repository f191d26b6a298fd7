"""The user's private folder for the Unix sockets of the warm server and the watchers, and the
checks made on each end of a connection.

The folder is ``$XDG_RUNTIME_DIR/trading-checkpoints`` (a per-user folder the session manager
makes), else ``<tmp>/trading-checkpoints-<uid>``. Either is used only when it is a real folder
(not a symlink), owned by this user and closed to everyone else (mode ``0700``): in a shared
``/tmp`` another user could otherwise create the folder first and listen in our place.

Both ends check the other. :func:`connect`, the one way a client reaches a server here (the
warm server's client, a watcher's), sends nothing before it knows that the socket is this
user's, in a folder that is this user's and closed to others, and that the process listening
is this user's (``SO_PEERCRED``): a folder swapped under the client's feet (another user may
rename folders in a world-writable folder without the sticky bit) still leads to a listener
of the wrong user, which is refused. A server checks each connecting process's user with
:func:`peer_credentials`.

Imported by the console script's client on every command: ``os``, ``stat`` and the socket's
C core (``_socket``; ``socket`` itself imports ``enum`` and ``selectors``) only.
"""

from __future__ import annotations

import _socket
import os
import stat
import sys

TYPE_CHECKING = False  # as ``typing``'s, without importing it (2 ms of every command's start)
if TYPE_CHECKING:
    import socket

FOLDER_NAME = 'trading-checkpoints'
# AF_UNIX socket paths are limited to 108 bytes on Linux (104 on the BSDs).
MAX_SOCKET_PATH = 100


def private_folder(create: bool) -> str | None:
    """The user's private folder for sockets, or None when there is no safe one."""
    runtime = os.environ.get('XDG_RUNTIME_DIR')
    if runtime and os.path.isabs(runtime) and _private(runtime):
        base: str | None = runtime
        folder = os.path.join(runtime, FOLDER_NAME)
    else:
        base = None
        folder = os.path.join(_temporary_root(), f'{FOLDER_NAME}-{os.getuid()}')
    if create:
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass
        except OSError:
            return None
    if not _private(folder) or (base is not None and not _private(base)):
        return None
    return folder


def socket_path(name: str, create: bool = False) -> str | None:
    """The socket file ``name`` in the private folder, or None when there is no safe folder or
    the path would be too long for a socket."""
    folder = private_folder(create)
    if folder is None:
        return None
    path = os.path.join(folder, name)
    return path if len(os.fsencode(path)) <= MAX_SOCKET_PATH else None


def listen(path: str, backlog: int) -> tuple[socket.socket, tuple[int, int]]:
    """A socket listening at ``path`` (whatever was there removed first: the caller holds
    whatever makes it the one to listen there), readable and writable by this user only; with
    the socket file's device and inode, to tell later whether it is still ours."""
    import socket

    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        listener.bind(path)
    finally:
        os.umask(old)
    listener.listen(backlog)
    info = os.lstat(path)
    return listener, (info.st_dev, info.st_ino)


class NotPrivate(PermissionError):
    """The socket, its folder or the process listening on it is not this user's alone."""


def connect(path: str, timeout: float) -> _socket.socket:
    """A connection to the socket at ``path``, made only when the socket file and its folder
    are this user's (the folder closed to others) and the process listening is this user's;
    ``NotPrivate`` when one is not, another ``OSError`` when there is no listener (none at
    ``path``, or no answer within ``timeout`` seconds). The connection keeps that timeout."""
    folder = os.path.dirname(path)
    info = os.lstat(path)
    if not stat.S_ISSOCK(info.st_mode) or info.st_uid != os.getuid() or not _private(folder):
        raise NotPrivate(f'{path} is not a private socket of this user')
    connection = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        connection.settimeout(timeout)
        connection.connect(path)
        credentials = peer_credentials(connection)
        if credentials is None or credentials[1] != os.getuid():
            raise NotPrivate(f"the process listening at {path} is not this user's")
    except BaseException:
        connection.close()
        raise
    return connection


def peer_credentials(connection: _socket.socket) -> tuple[int, int, int] | None:
    """The pid, user and group of the process at the other end of a Unix socket (for a
    listener, the process that listened), None where the system does not say."""
    option = getattr(_socket, 'SO_PEERCRED', None)
    if option is None:
        return None
    try:
        raw = connection.getsockopt(_socket.SOL_SOCKET, option, 12)
    except OSError:
        return None
    pid = int.from_bytes(raw[0:4], sys.byteorder, signed=True)
    uid = int.from_bytes(raw[4:8], sys.byteorder)
    gid = int.from_bytes(raw[8:12], sys.byteorder)
    return pid, uid, gid


def peer_uid(connection: socket.socket) -> int | None:
    """The user of the process at the other end of a Unix socket, None where unknown."""
    credentials = peer_credentials(connection)
    return None if credentials is None else credentials[1]


def _private(folder: str) -> bool:
    """A real folder (not a symlink) of this user that nobody else may enter or change."""
    try:
        info = os.lstat(folder)
    except OSError:
        return False
    return (
        stat.S_ISDIR(info.st_mode)
        and info.st_uid == os.getuid()
        and stat.S_IMODE(info.st_mode) & 0o077 == 0
    )


def _temporary_root() -> str:
    for name in ('TMPDIR', 'TEMP', 'TMP'):
        value = os.environ.get(name)
        if value and os.path.isabs(value) and os.path.isdir(value):
            return value
    return '/tmp'
