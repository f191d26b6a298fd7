"""Telling the agent's own changes apart from edits made afterwards by someone else.

The *sealed state* is the state the agent (or a restore) left the desk in:

- ``Checkpoints.seal()``, called once a write tool has run, records the desk as it is now in a
  commit outside the branch, referenced by ``refs/checkpoints/sealed`` (so git keeps its
  objects and real git can inspect it). Its parent is the newest checkpoint at sealing time.
- The hooks' seal after a write tool (``toolcalls.after_write``) records the newest checkpoint
  with what the tool wrote: its scan walks only the folders of the paths the tool named
  (``declared.py``), so a person's edit elsewhere meanwhile is not sealed.
- Every restore, undo and redo seals the state it wrote (the ref then names the newest
  checkpoint itself).

A seal holds while the newest checkpoint is the one it was made on (a later snapshot supersedes
it). Against that state, any difference in the desk — by content, not by mtime — is an
*external* change. A file over the size limit is not stored (the seal's tree carries the
newest checkpoint's entry for it, as a snapshot's does); the seal names its content in a
``Checkpoint-Oversize`` trailer instead, so a file the agent grew past the limit is still the
agent's: a restore that keeps changes made outside the agent reverts it.

Without a current seal, the newest checkpoint's declared paths (``snapshot(..., paths=[...])``)
tell which changes the agent announced: changes elsewhere are external. When the newest
checkpoint declared nothing and nothing was sealed, the product cannot tell who changed what,
and reports the attribution as ``unknown`` (no external paths).

A snapshot that finds nothing changed makes no checkpoint, so the paths it declares would be
lost (and an older seal would wrongly still hold): it moves the seal to an *announcement* — a
commit with the newest checkpoint's tree and the declared paths (``Checkpoint-Action:
announce``) — so the write that follows is attributed to the agent. The announcement is kept
in a small file beside the seal ref, not stored (``announced.py``): while it stands on the
ref's value it is the seal, and every move of the ref removes it (:func:`seal_id` names the
seal either way).

Who the agent is: the turn (and session) named by the announcement, else by the seal, else by
the newest checkpoint when it was taken before an agent's write (:func:`writer`). A seal made
over an announcement keeps the announcement's turn, so the write between the two stays the
turn's. Snapshots record, with the changes they hold, which of them that turn wrote.

Seal commits are reachable only from ``refs/checkpoints/sealed`` (one at a time, no reflog);
superseded ones become unreachable objects that ``git gc``/prune may drop. An announcement
too large for its file is stored and referenced as a seal is.
"""

from __future__ import annotations

import os
import posixpath
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, unquote

from ..core.trees import BLOB_MODES, FileEntry, build_trees
from ..desk.scan import Scan, read_entry
from ..desk.statcache import StatCache, StatKey, is_racy, stat_key
from ..errors import CheckpointError
from ..store import metadata
from ..store.commitinfo import CommitInfo
from ..store.repo import ShadowRepo
from . import announced, calls
from .session import LockedSession, ReadSession

SEAL_REF = b'refs/checkpoints/sealed'
ANNOUNCE = announced.ACTION
RESTORED_STATE = 'restored-state'  # a seal of the newest checkpoint without the files it kept

SEALED = 'sealed'  # measured against a seal (explicit, or left by a restore/undo/redo)
DECLARED = 'declared'  # measured against the newest checkpoint and the paths it declared
UNKNOWN = 'unknown'  # no seal and no declared paths: cannot attribute changes
NONE = 'none'  # no checkpoint yet

# A file over the size limit as a seal found it: ``MODE SHA STAT PATH`` (the stat as
# ``size:mtime:ctime:inode:mode`` when it may be trusted later, else ``-``; the path quoted).
OVERSIZE = 'Checkpoint-Oversize'
_SHA = re.compile(r'[0-9a-f]{40}')


@dataclass(frozen=True)
class Attribution:
    """Which of the desk's current changes were made outside the agent.

    Attributes:
        basis: ``sealed``, ``declared``, ``unknown`` or ``none`` (see the module notes).
        external: Paths whose content differs from the state the agent left, sorted.
        left: The files of the state the agent left, when they were read (for ``sealed`` the
            seal's, for ``declared`` the newest checkpoint's); empty otherwise.
    """

    basis: str
    external: tuple[str, ...] = ()
    left: Mapping[str, FileEntry] = field(default_factory=dict)


def attribute(
    session: ReadSession, desk: Mapping[str, FileEntry], desk_tree: bytes | None = None
) -> Attribution:
    """Compares the desk (a scan's files) with the state the agent left.

    Declared paths may be desk-relative (``notes/a.md``, ``./notes/a.md``) or absolute paths
    inside the desk. ``desk_tree``, the desk's tree id when known without building it, lets an
    unchanged desk skip reading the state the agent left.
    """
    repo = session.repo
    head = repo.head()
    if head is None:
        return Attribution(NONE)
    seal = current_seal(repo, head)
    if seal is not None and metadata.action_of(seal.message) != ANNOUNCE:
        if desk_tree is not None and desk_tree == seal.tree:
            return Attribution(SEALED)
        left, _ = session.flatten(seal.tree)
        unstored = oversize_of(seal)
        changed = tuple(
            path
            for path in _differing(left, desk)
            if path not in unstored or unstored[path][0] != desk.get(path)
        )
        return Attribution(SEALED, _not_by_calls(session, desk, changed), left)
    head_info = seal or repo.commit_info(head)
    declared = metadata.parse(head_info.message).paths
    if not declared:
        return Attribution(UNKNOWN)
    desk_directory = session.config.desk
    declared = tuple(
        path for path in (_relative(item, desk_directory) for item in declared) if path
    )
    if not declared:
        return Attribution(UNKNOWN)
    if desk_tree is not None and desk_tree == head_info.tree:
        return Attribution(DECLARED)
    left, _ = session.flatten(head_info.tree)
    changed = tuple(
        path
        for path in _differing(left, desk)
        if not any(path == item or path.startswith(item + '/') for item in declared)
    )
    return Attribution(DECLARED, _not_by_calls(session, desk, changed), left)


def _not_by_calls(
    session: ReadSession, desk: Mapping[str, FileEntry], changed: tuple[str, ...]
) -> tuple[str, ...]:
    """``changed`` less the paths an agent's tool call on record wrote for certain (several
    calls announced at once, or another session's write: see ``calls``)."""
    if not changed:
        return changed
    record = calls.load(session.repo.path)
    if not record:
        return changed
    explained = calls.credit(record, [(path, desk.get(path)) for path in changed]).explained()
    return tuple(path for path in changed if path not in explained)


def _relative(declared: str, desk_directory: Path | None) -> str | None:
    """A declared path as a desk-relative one, or None when it lies outside the desk."""
    path = declared.replace('\\', '/').strip()
    if desk_directory is not None and os.path.isabs(path):
        root = os.path.realpath(desk_directory)
        full = os.path.realpath(path)
        if full != root and not full.startswith(root.rstrip(os.sep) + os.sep):
            return None
        path = os.path.relpath(full, root).replace(os.sep, '/')
    path = posixpath.normpath(path.strip('/') or '.')  # './a/', 'a/./b', 'a/../..'
    return None if path in ('.', '..') or path.startswith('../') else path


def _differing(left: Mapping[str, FileEntry], desk: Mapping[str, FileEntry]) -> tuple[str, ...]:
    return tuple(sorted(path for path in set(left) | set(desk) if left.get(path) != desk.get(path)))


def seal(session: LockedSession, scanned: tuple[Scan, StatCache] | None = None) -> bytes:
    """Records the desk as the state the agent left; returns the seal's commit.

    ``scanned``: the desk's scan, made in this session to record (else a walk of everything;
    the hooks' seal after a write tool walks only the folders it wrote in: ``declared.py``).
    Over an announcement, the seal keeps the announcement's turn and session (the writer). Each
    file over the size limit is read (in chunks) to name its content in the seal, unless the
    previous seal named it and its stat has not changed since.
    """
    repo = session.repo
    result, cache = session.scan(record=True) if scanned is None else scanned
    head = repo.head()
    tree, built = session.built_trees(result, cache)
    unstored = _oversize_values(session, result)
    pairs = list(unstored)
    earlier = current_seal(repo, head)
    if earlier is not None and metadata.action_of(earlier.message) == ANNOUNCE:
        found = metadata.writer_of(earlier.message)
        if found is not None:
            pairs = [(metadata.TURN, found.turn), (metadata.SESSION, found.session or ''), *pairs]
    message = metadata.message('sealed: the state the agent left', pairs)
    if head is not None and not unstored and repo.commit_info(head).tree == tree:
        _move_seal(repo, head)
        return head
    if earlier is not None and (earlier.tree, earlier.message) == (tree, message):
        return earlier.sha.encode()  # the same state sealed again
    commit = repo.make_commit(tree, head, message)
    # One pack append (the blobs and folders the branch lacks, and the seal), flushed before
    # the ref names it, as a snapshot's commit is.
    repo.write_objects([*session.new_objects(result, built), commit])
    _move_seal(repo, commit.id)
    return commit.id


def writer(repo: ShadowRepo) -> metadata.Writer | None:
    """The turn whose changes the desk holds beyond the newest checkpoint, as far as is known:
    the one the current announcement or seal names, else the one the newest checkpoint was
    taken in when it was taken before an agent's write (not a restore, nor a capture)."""
    head = repo.head()
    if head is None:
        return None
    seal = current_seal(repo, head)
    if seal is not None:
        found = metadata.writer_of(seal.message)
        if found is not None or metadata.action_of(seal.message) == ANNOUNCE:
            return found
    info = repo.commit_info(head)
    if metadata.action_of(info.message) is not None:
        return None
    return metadata.writer_of(info.message)


def in_flight(repo: ShadowRepo) -> str | None:
    """The message of an agent's write that was announced and not yet sealed: the current
    announcement, or the newest checkpoint taken before a turn's write when nothing sealed it
    since; None otherwise."""
    head = repo.head()
    if head is None:
        return None
    seal = current_seal(repo, head)
    if seal is not None:
        return seal.message if metadata.action_of(seal.message) == ANNOUNCE else None
    info = repo.commit_info(head)
    if metadata.action_of(info.message) is None and metadata.writer_of(info.message):
        return info.message
    return None


def _oversize_values(session: LockedSession, result: Scan) -> list[tuple[str, str]]:
    """``Checkpoint-Oversize`` trailers naming the desk's files over the size limit."""
    if not result.oversize:
        return []
    folders = session.desk.folders
    known = oversize_of(last_seal(session.repo))
    pairs = []
    for path in sorted(result.oversize):
        st = folders.lstat(path)
        then = known.get(path)
        if st is not None and then is not None and then[1] == stat_key(st):
            entry, key = then
        else:
            started = time.time_ns()
            found = read_entry(folders, path)
            if found is None:
                continue
            entry, key = found
            if key is not None and is_racy(key, started):
                key = None  # changed just before it was read: a later change could keep it
        stat_text = '-' if key is None else ':'.join(str(number) for number in key)
        value = f'{entry[0]:o} {entry[1].decode()} {stat_text} {quote(path)}'
        pairs.append((OVERSIZE, value))
    return pairs


def oversize_of(seal: CommitInfo | None) -> dict[str, tuple[FileEntry, StatKey | None]]:
    """The files over the size limit a seal names: their entry, and their stat when it may be
    trusted. A malformed value is left out (the seal lives in the repository: untrusted)."""
    found: dict[str, tuple[FileEntry, StatKey | None]] = {}
    if seal is None:
        return found
    for value in metadata.trailer_values(seal.message).get(OVERSIZE, []):
        parts = value.split(' ')
        if len(parts) != 4 or not _SHA.fullmatch(parts[1]):
            continue
        mode_text, sha, stat_text, path = parts
        numbers = stat_text.split(':')
        if not mode_text.isdigit() or int(mode_text, 8) not in BLOB_MODES:
            continue
        key: StatKey | None = None
        if len(numbers) == 5 and all(number.isdigit() for number in numbers):
            key = tuple(int(number) for number in numbers)  # type: ignore[assignment]
        found[unquote(path)] = ((int(mode_text, 8), sha.encode()), key)
    return found


def seal_id(repo: ShadowRepo, *, again: bool = False) -> bytes | None:
    """The id of the newest seal (the current announcement's, when there is one), superseded
    or not, as read through ``repo`` (``again``: as on the disk now); what changes whenever
    the seal does."""
    ref, announcement = announced.read(repo, SEAL_REF, again=again)
    return ref if announcement is None else announcement.sha.encode('ascii')


def _move_seal(repo: ShadowRepo, sha: bytes) -> None:
    """Points the seal at ``sha``: the announcement's record goes first, so it never stands on
    a seal written after it (a crash between loses only the announcement)."""
    announced.clear(repo)
    repo.set_ref(SEAL_REF, sha)


def last_seal(repo: ShadowRepo) -> CommitInfo | None:
    """The newest seal (the current announcement, when there is one), superseded or not (what
    it says about a file's stat still holds); None when the seal ref names no readable commit
    (missing, or another kind of object)."""
    sha, announcement = announced.read(repo, SEAL_REF, again=False)
    if announcement is not None:
        return announcement
    if sha is None or not repo.contains(sha):
        return None
    try:
        return repo.commit_info(sha)
    except CheckpointError:
        return None


def sealed_write_time(repo: ShadowRepo) -> str | None:
    """When the agent's write the current seal records was sealed (None: no such seal, or it
    names the newest checkpoint itself): a checkpoint that supersedes it keeps that time, so
    the state after the write can be found at a moment (``heldat``)."""
    head = repo.head()
    seal = current_seal(repo, head)
    if seal is None or head is None or seal.sha.encode() == head:
        return None
    if metadata.action_of(seal.message) in (ANNOUNCE, RESTORED_STATE):
        return None
    return seal.created_at


def mark_sealed(session: LockedSession) -> None:
    """After a restore: the newest checkpoint is the state the product left."""
    repo = session.repo
    head = repo.head()
    if head is not None:
        _move_seal(repo, head)


def seal_files(session: LockedSession, files: Mapping[str, FileEntry]) -> None:
    """Seals a given state (not the desk's): after a restore that kept files changed outside
    the agent, the state the agent left is the restored one with those files as it left them,
    so they still count as changed outside the agent afterwards."""
    trees, built = build_trees(dict(files), set(), {})
    message = metadata.message(
        'sealed: the restored state as the agent left it', [(metadata.ACTION, RESTORED_STATE)]
    )
    sha = session.commit_tree(trees[''], built, message, move_branch=False)
    _move_seal(session.repo, sha)


def agent_baseline(repo: ShadowRepo, head: bytes) -> bytes:
    """The newest checkpoint's tree as the agent left it: the tree of a restore's seal that
    kept files changed outside the agent, else the checkpoint's own."""
    seal = current_seal(repo, head)
    if seal is not None and metadata.action_of(seal.message) == RESTORED_STATE:
        return seal.tree
    return repo.commit_info(head).tree


def agent_view(desk: Mapping[str, FileEntry], attribution: Attribution) -> dict[str, FileEntry]:
    """The desk as the agent left it: every path changed outside the agent put back to the
    state the agent left (the desk itself when nothing could be told apart)."""
    view = dict(desk)
    for path in attribution.external:
        entry = attribution.left.get(path)
        if entry is None:
            view.pop(path, None)
        else:
            view[path] = entry
    return view


def current_seal(repo: ShadowRepo, head: bytes | None) -> CommitInfo | None:
    """The seal, if it was made on the newest checkpoint (else a later snapshot superseded it)."""
    info = last_seal(repo)
    if info is None or head is None or not repo.contains(info.tree):
        return None  # none, no commit, or its objects were pruned: as good as no seal
    if info.sha.encode() == head or (info.parents and info.parents[0] == head):
        return info
    return None


def announce(session: LockedSession, message: str) -> None:
    """After a snapshot that found nothing changed: the agent is about to write again.

    No checkpoint is made, so the paths it declares would be lost and the last seal would
    wrongly hold; instead the seal becomes an *announcement* on the newest checkpoint carrying
    the declared paths (skipped when the effective declaration is already the same).
    """
    repo = session.repo
    text = announcement(repo, message)
    if text is None:
        return
    head = repo.head()
    if head is None:
        return
    commit = repo.make_commit(repo.commit_info(head).tree, head, text)
    if announced.write(repo, repo.read_ref(SEAL_REF), commit.as_raw_string()):
        return
    repo.write_objects([commit])  # too large for the record, or no file can be made there
    _move_seal(repo, commit.id)


def reannounce(session: LockedSession, message: str) -> None:
    """Announces again, on the newest checkpoint, the write ``message`` announced (its tool,
    paths, turn and session): a checkpoint taken while an agent writes keeps it announced."""
    kept = (metadata.TOOL, metadata.PATH, metadata.TURN, metadata.SESSION)
    pairs = [(key, value) for key, value in metadata.trailers(message) if key in kept]
    subject = message.split('\n', 1)[0].strip() or 'announced'
    announce(session, metadata.message(subject, pairs))


def announcement(repo: ShadowRepo, message: str) -> str | None:
    """The message of the announcement :func:`announce` would write (reads only), or None
    when there is no checkpoint or the effective declaration is already the same."""
    head = repo.head()
    if head is None:
        return None
    declared = _declaration(message)
    seal = current_seal(repo, head)
    if seal is None:
        if _declaration(repo.commit_info(head).message, declared) == declared:
            return None
    elif (
        metadata.action_of(seal.message) == ANNOUNCE
        and _declaration(seal.message, declared) == declared
    ):
        return None
    existing = metadata.trailers(message)
    text = message.rstrip('\n') + ('\n' if existing else '\n\n')
    return text + f'{metadata.ACTION}: {ANNOUNCE}\n'


def _declaration(message: str, like: tuple[object, ...] | None = None) -> tuple[object, ...]:
    """What a message declares about the write that follows: its paths and, for a turn's
    write, its turn and session (compared only when ``like``, the new declaration, names a
    turn: a snapshot outside any turn keeps the writer it found). A session named without a
    turn names no writer."""
    meta = metadata.parse(message)
    if not meta.turn or (like is not None and like[1] is None):
        return (meta.paths, None, None)
    return (meta.paths, meta.turn, meta.session)
