"""The user's private folder for the Unix sockets of the warm server and the watchers, and the
checks made on each end of a connection.

The folder is ``$XDG_RUNTIME_DIR/trading-checkpoints`` (a per-user folder the session manager
makes), else ``<tmp>/trading-checkpoints-<uid>``. Either is used only when it is a real folder
(not a symlink), owned by this user and closed to everyone else (mode ``0700``): in a shared
``/tmp`` another user could otherwise create the folder first and listen in our place. Each
end of a connection also checks the other's user (``SO_PEERCRED``).

Imported by the console script's client on every command: ``os`` and ``stat`` only at import
(``socket`` inside the functions that take one).
"""

from __future__ import annotations

import os
import stat
from typing import TYPE_CHECKING

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


def peer_uid(connection: socket.socket) -> int | None:
    """The user of the process at the other end of a Unix socket, None where unknown."""
    import socket
    import struct

    if not hasattr(socket, 'SO_PEERCRED'):
        return None
    try:
        raw = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize('3i'))
    except OSError:
        return None
    _, uid, _ = struct.unpack('3i', raw)
    return int(uid)


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
