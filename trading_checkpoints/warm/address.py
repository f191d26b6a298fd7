"""Where the warm server listens: a socket in a folder only this user can enter, named after the
code it serves.

Imported by the client on every command, so it uses nothing beyond ``os``, ``sys`` and
``zlib`` (all loaded before ``main`` runs, or nearly free).

The folder is ``$XDG_RUNTIME_DIR/trading-checkpoints`` (a per-user folder the session manager
makes), else ``<tmp>/trading-checkpoints-<uid>``. Either is used only when it is a real folder
(not a symlink), owned by this user and closed to everyone else (mode ``0700``): in a shared
``/tmp`` another user could otherwise create the folder first and serve our commands. The
server also checks each connecting process's user (``SO_PEERCRED``).

The socket's name carries a fingerprint of the installation: the interpreter, the package's
folder, and the size and modification time of each of its modules. A client whose code differs
from the server's (an upgrade, an edit in a checkout) computes another name and so never talks
to a server running other code; the old server, left without clients, goes away.
"""

from __future__ import annotations

import os
import stat
import sys
import zlib

FOLDER_NAME = 'trading-checkpoints'
# AF_UNIX socket paths are limited to 108 bytes on Linux (104 on the BSDs).
MAX_SOCKET_PATH = 100
PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fingerprint(package: str = PACKAGE) -> str:
    """A short name for the code this process runs: interpreter, package folder, and every
    module's size and modification time."""
    parts = [sys.executable, package, sys.version]
    pending = [package]
    while pending:
        folder = pending.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
        except OSError:
            continue
        for entry in entries:
            if entry.name == '__pycache__':
                continue
            if entry.is_dir(follow_symlinks=False):
                pending.append(entry.path)
            elif entry.name.endswith('.py'):
                info = entry.stat(follow_symlinks=False)
                parts.append(f'{entry.path}:{info.st_size}:{info.st_mtime_ns}')
    text = '\n'.join(parts).encode('utf-8', 'surrogateescape')
    return f'{zlib.crc32(text):08x}{zlib.adler32(text):08x}'


def private_folder(create: bool) -> str | None:
    """The user's private folder for sockets, or None when there is no safe one."""
    runtime = os.environ.get('XDG_RUNTIME_DIR')
    if runtime and os.path.isabs(runtime) and _private(runtime):
        base = runtime
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
    if not _private(folder):
        return None
    if base is not None and not _private(base):
        return None
    return folder


def socket_path(create: bool = False) -> str | None:
    """The server's socket for this installation, or None when it cannot have one."""
    folder = private_folder(create)
    if folder is None:
        return None
    path = os.path.join(folder, f'server-{fingerprint()}.sock')
    return path if len(os.fsencode(path)) <= MAX_SOCKET_PATH else None


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
