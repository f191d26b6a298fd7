"""Where the warm server listens: a socket in a folder only this user can enter, named after the
code it serves.

Imported by the client on every command, so it uses nothing beyond ``os``, ``sys``, ``stat``
and ``zlib`` (all loaded before ``main`` runs, or nearly free).

The folder is the user's private one (``core/private.py``: a real folder of this user that
nobody else may enter, so another user cannot serve our commands); the server also checks each
connecting process's user (``SO_PEERCRED``).

The socket's name carries a fingerprint of the installation: the interpreter, the package's
folder, and the size and modification time of each of its modules. A client whose code differs
from the server's (an upgrade, an edit in a checkout) computes another name and so never talks
to a server running other code; the old server, left without clients, goes away.
"""

from __future__ import annotations

import os
import sys
import zlib

from ..core import private

FOLDER_NAME = private.FOLDER_NAME
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


def socket_path(create: bool = False) -> str | None:
    """The server's socket for this installation, or None when it cannot have one."""
    return private.socket_path(f'server-{fingerprint()}.sock', create)
