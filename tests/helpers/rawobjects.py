"""Git objects written byte by byte, bypassing every check a writer would make.

A hostile repository is built from these: loose objects stored exactly as given (names with
slashes or ``..``, bad modes, missing objects, truncated trees), for the readers to refuse.
"""

from __future__ import annotations

import hashlib
import zlib
from pathlib import Path

BLOB = b'100644'
EXEC = b'100755'
LINK = b'120000'
TREE = b'40000'


def write_object(repo: Path, kind: bytes, body: bytes) -> str:
    """Stores a loose object exactly as given, with no validation at all."""
    raw = kind + b' ' + str(len(body)).encode() + b'\0' + body
    sha = hashlib.sha1(raw).hexdigest()
    folder = repo / 'objects' / sha[:2]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / sha[2:]).write_bytes(zlib.compress(raw))
    return sha


def blob(repo: Path, data: bytes) -> str:
    return write_object(repo, b'blob', data)


def tree(repo: Path, *entries: tuple[bytes, bytes, str]) -> str:
    body = b''.join(mode + b' ' + name + b'\0' + bytes.fromhex(sha) for mode, name, sha in entries)
    return write_object(repo, b'tree', body)


def commit(repo: Path, tree_sha: str, message: bytes = b'hostile\n') -> str:
    head = (repo / 'refs' / 'heads' / 'main').read_text().strip()
    body = (
        b'tree ' + tree_sha.encode() + b'\nparent ' + head.encode() + b'\n'
        b'author x <x@x> 1700000000 +0000\ncommitter x <x@x> 1700000000 +0000\n\n' + message
    )
    return write_object(repo, b'commit', body)


def in_notes(repo: Path, *entries: tuple[bytes, bytes, str]) -> str:
    """A root tree whose notes/ folder holds the given entries."""
    return tree(repo, (TREE, b'notes', tree(repo, *entries)))
