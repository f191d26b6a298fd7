"""Where the warm server listens: a socket in a folder only this user can enter, named after the
code it serves and the context it serves in.

Imported by the client on every command, so it uses nothing beyond ``os``, ``sys`` and
``zlib`` (loaded before ``main`` runs, or nearly free) and the modules below.

The folder is the user's private one (``core/private.py``). Two names in it:

- the **slot** (:func:`slot`), what a client knows of itself without reading any other file:
  the interpreter and its options, the import path, the package's folder, and the shared part
  of its context (``context.py``: namespaces, root, credentials, control groups). The server
  started for a slot lists, once it has imported everything, every module file it imported in
  ``server-<slot>.files`` (the manifest);
- the **socket**, ``server-<fingerprint>.sock``: the fingerprint (``core/installation.py``) of
  the manifest's files, as the client finds them now, in that slot. A client whose files
  differ from those the server imported (an upgrade of any dependency, an edit in a checkout,
  another copy of a library on the import path) computes another name, finds no server there
  and starts one; the old server, left without clients, goes away.

A client whose import path holds a relative entry (the ``''`` of ``python -c``: its current
folder) has no slot: what it imports depends on the folder it runs in, which the modules a
server imported beforehand cannot follow; it runs its commands itself.
"""

from __future__ import annotations

import os
import sys

from ..core import installation, private
from . import context

FOLDER_NAME = private.FOLDER_NAME
PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MANIFEST = 'server-{slot}.files'
SOCKET = 'server-{fingerprint}.sock'
MANIFEST_HEADER = 'trading-checkpoints server files 1'


def slot() -> str | None:
    """This process's slot (see the module notes), None when it has none."""
    if not all(os.path.isabs(entry) for entry in sys.path):
        return None
    found = context.facts()
    if found is None:
        return None
    text = '\0'.join(
        [installation.interpreter(), '\n'.join(sys.path), PACKAGE, context.shared(found)]
    )
    return installation.digest(text)


class Location:
    """Where a client finds its server: the folder, the slot, and the socket (None until a
    server of the slot has listed its files)."""

    __slots__ = ('folder', 'slot', 'socket')

    def __init__(self, folder: str, slot: str, socket: str | None) -> None:
        self.folder = folder
        self.slot = slot
        self.socket = socket


def locate(create: bool = False) -> Location | None:
    """This process's server's location, None when it can have no server (no slot, no
    private folder, a path too long for a socket)."""
    name = slot()
    if name is None:
        return None
    folder = private.private_folder(create)
    if folder is None:
        return None
    files = read_manifest(manifest_path(folder, name))
    if files is None:
        return Location(folder, name, None)
    path = socket_path(folder, installation.fingerprint(files, name))
    if len(os.fsencode(path)) > private.MAX_SOCKET_PATH:
        return None
    return Location(folder, name, path)


def manifest_path(folder: str, name: str) -> str:
    return os.path.join(folder, MANIFEST.format(slot=name))


def socket_path(folder: str, fingerprint: str) -> str:
    return os.path.join(folder, SOCKET.format(fingerprint=fingerprint))


def manifest(files: list[str]) -> bytes:
    """The manifest's contents for ``files``."""
    return '\n'.join([MANIFEST_HEADER, *files, '']).encode('utf-8', 'surrogateescape')


def read_manifest(path: str) -> list[str] | None:
    """The files a manifest lists, None when there is none (or it is not one)."""
    try:
        with open(path, 'rb') as file:
            text = file.read().decode('utf-8', 'surrogateescape')
    except OSError:
        return None
    header, _, rest = text.partition('\n')
    if header != MANIFEST_HEADER:
        return None
    return rest.splitlines()


def interpreter_options() -> list[str]:
    """The options this interpreter was started with (``-E``, ``-X dev``...), to start the
    server alike: those before the script, or before ``-c``/``-m`` and what follows."""
    original = getattr(sys, 'orig_argv', [])
    end = len(original) - len(sys.argv)
    if end < 1 or end > len(original):
        return []
    options = original[1:end]
    if options and options[-1].startswith('-') and options[-1][-1:] in ('c', 'm'):
        options = options[:-1]  # ``-c CODE`` / ``-m MODULE``: CODE stands where the script would
    return options
