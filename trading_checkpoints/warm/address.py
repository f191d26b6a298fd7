"""Where the warm server listens: a socket in a folder only this user can enter, named after the
code it serves and the context it serves in.

Imported by the client on every command, so it uses nothing beyond ``os``, ``sys`` and
``zlib`` (loaded before ``main`` runs, or nearly free) and the modules below.

The folder is the user's private one (``core/private.py``). Two names in it:

- the **slot** (:func:`slot`), what a client knows of itself without reading any other file:
  the interpreter and its options, the import path, the package's folder, and the shared part
  of its context (``context.py``: namespaces, root, credentials, control groups). The server
  started for a slot writes, once it has imported everything, ``server-<slot>.files`` (the
  manifest);
- the **socket**, ``server-<fingerprint>.sock``: the fingerprint (``core/installation.py``) of
  every module file and folder the server imported. A *listed* manifest lists them, and the
  client fingerprints them as it finds them now: a client whose files differ from those the
  server imported (an upgrade of any dependency, an edit in a checkout, another copy of a
  library on the import path) computes another name, finds no server there and starts one;
  the old server, left without clients, goes away. A *watched* manifest names the socket:
  the server watches those files itself and stops, refusing every client, at the first change
  (``watched.py``), so the client reads nothing more.

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
MANIFEST_HEADER = 'trading-checkpoints server 2'
LISTED, WATCHED = 'listed', 'watched'


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
    manifest = read_manifest(manifest_path(folder, name))
    if manifest is None:
        return Location(folder, name, None)
    kind, listed = manifest
    if kind == WATCHED:
        path = os.path.join(folder, listed[0])
    else:
        path = socket_path(folder, installation.fingerprint(listed, name))
    if len(os.fsencode(path)) > private.MAX_SOCKET_PATH:
        return None
    return Location(folder, name, path)


def manifest_path(folder: str, name: str) -> str:
    return os.path.join(folder, MANIFEST.format(slot=name))


def socket_path(folder: str, fingerprint: str) -> str:
    return os.path.join(folder, SOCKET.format(fingerprint=fingerprint))


def listed(files: list[str]) -> bytes:
    """A listed manifest's contents: the server's ``files``."""
    return '\n'.join([MANIFEST_HEADER, LISTED, *files, '']).encode('utf-8', 'surrogateescape')


def watched(socket: str) -> bytes:
    """A watched manifest's contents: the server's socket (its path, in the folder)."""
    return '\n'.join([MANIFEST_HEADER, WATCHED, os.path.basename(socket), '']).encode()


def read_manifest(path: str) -> tuple[str, list[str]] | None:
    """A manifest's kind (listed or watched) and what it holds (the files; the socket's name),
    None when there is none (or it is not one)."""
    try:
        with open(path, 'rb') as file:
            lines = file.read().decode('utf-8', 'surrogateescape').splitlines()
    except OSError:
        return None
    if lines[:1] != [MANIFEST_HEADER] or len(lines) < 2:
        return None
    kind, rest = lines[1], lines[2:]
    if kind == WATCHED and len(rest) == 1 and _is_socket_name(rest[0]):
        return kind, rest
    if kind == LISTED:
        return kind, rest
    return None


def _is_socket_name(name: str) -> bool:
    middle = name.removeprefix('server-').removesuffix('.sock')
    return len(middle) == 16 and all(c in '0123456789abcdef' for c in middle) and name != middle


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
