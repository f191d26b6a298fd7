"""The folders a write tool's hooks look at: its declared paths' and an earlier seal's.

A write tool names the paths it writes. Once it has run, its seal (``external.seal``) records
the state the agent left: the newest checkpoint, which the hook before the tool took, with the
tool's writes, and not what a person changed meanwhile elsewhere on the desk. So the seal's scan
walks only these folders (:func:`since`, a :class:`~..desk.narrow.Since`):

- each folder from a declared path's own up to its tracked entry: a folder the write made in
  any of them is found in its parent's listing and walked whole;
- each folder in which a seal still current on the newest checkpoint differs from it: another
  session's write sealed since that checkpoint, which this seal replaces and must keep.

Everything else comes from the stat cache, which matches the newest checkpoint (when it does
not, the scan walks everything: ``ReadSession.scan``). A person's edit there stays out of the
agent's state, and the next snapshot reports it as made outside the agent
(``external.attribute``); on a desk of 10,000 files the seal lists a few folders instead of
walking them all.

The checkpoint before a write tool walks the same folders once its turn has begun (the turn's
first write walks the whole desk: the turn's start holds all of it), when the write can change
no file outside them (:func:`narrowable`): no symbolic link on a declared path's way (a write
through one lands elsewhere) and no file there with another name (a hard link). Every file the
tool writes is then in the checkpoint before it, as it was; a person's edit elsewhere is
checkpointed by the next snapshot that walks the whole desk (a shell command's, the next
turn's first), as made outside the agent.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from ..core.paths import path_problem
from ..core.trees import TREE_MODE, folders_of
from ..desk.narrow import Since
from ..store import metadata
from ..store.repo import ShadowRepo
from . import external
from .session import ReadSession


def since(session: ReadSession, paths: Sequence[str]) -> Since:
    """What a seal after a write tool that declared ``paths`` (desk-relative) walks."""
    allowlist = session.allowlist
    touched: set[str] = set()
    for path in paths:
        if path_problem(path) is None and allowlist.covers(path):
            touched.update(folder for folder in folders_of(path) if allowlist.covers(folder))
    repo = session.repo
    head = repo.head()
    seal = external.current_seal(repo, head)
    if head is not None and seal is not None:
        if metadata.action_of(seal.message) != external.ANNOUNCE:
            touched |= differing_folders(repo, seal.tree, repo.commit_info(head).tree)
    return Since(frozenset(touched), ())


def narrowable(desk: Path, paths: Sequence[str]) -> bool:
    """Whether a write to ``paths`` (desk-relative) can change no file outside their folders:
    some paths, each one a desk can hold, with no symbolic link on its way from the desk, and
    naming no file or a regular file of one name. Read without the lock: what a person changes
    afterwards, as after any walk, is the next snapshot's."""
    if not paths:
        return False
    root = os.path.realpath(desk)
    for path in paths:
        if path_problem(path) is not None:
            return False
        full = os.path.join(root, path)
        if os.path.realpath(full) != full:
            return False  # a link on the way (or the path itself one)
        try:
            found = os.lstat(full)
        except FileNotFoundError:
            continue  # a new file, in folders without links
        except OSError:
            return False
        if not stat.S_ISREG(found.st_mode) or found.st_nlink != 1:
            return False
    return True


def differing_folders(repo: ShadowRepo, left: bytes, right: bytes) -> set[str]:
    """The folders whose trees differ between the desk's trees ``left`` and ``right``: descends
    only into subfolders both hold and hold differently (a subfolder on one side only, or a
    file on the other, differs in its parent's listing). A name no desk path can have is
    passed over: it names nothing to walk. Folders wait on a list, not on the call stack: a
    desk may nest deeper than Python recurses."""
    found: set[str] = set()
    pending = [(left, right, '')]
    while pending:
        left, right, folder = pending.pop()
        if left == right:
            continue
        found.add(folder)
        theirs = {name: (mode, sha) for name, mode, sha in repo.tree_entries(right)}
        for name, mode, sha in repo.tree_entries(left):
            other = theirs.get(name)
            if mode != TREE_MODE or other is None or other[0] != TREE_MODE or other[1] == sha:
                continue
            try:
                path = f'{folder}/{name.decode()}' if folder else name.decode()
            except UnicodeDecodeError:
                continue
            if path_problem(path) is None:
                pending.append((sha, other[1], path))
    return found
