"""The current announcement, kept in a small file beside the seal ref instead of a commit.

An announcement (``external.announce``: an agent's tool is about to write the paths it names)
is a commit made on the newest checkpoint's tree. It lives only until the write is sealed or a
checkpoint supersedes it, and nothing else refers to it, so it is never stored as a git object:
``checkpoints/announced`` in the repository holds its raw bytes and the value of the seal ref
it stands on. Writing it is one small file replaced, never flushed, where storing the commit
took a pack append and a ref, each flushed (a pre-write event with nothing to checkpoint then
flushes nothing).

The record is the current announcement only while the seal ref holds the value it stands on
(``-``: no seal ref); every move of the seal ref removes it first (``external``), the removal
flushed, so it never outlives a seal or a restore's state written after it, even one naming
the same commit, power cut or not. Its id is the hash of its bytes, as git would name the
commit: a reader compares it as it compares the seal ref. Anything odd about the file
(missing, torn, another version, a link, too large, or a commit that is no announcement: not
its action, not one parent, not its parent's tree) means no announcement.

What a power cut can do, since nothing here is flushed: leave the previous record, none, or
a torn one (all read as no announcement where it no longer stands on the seal ref). Losing it
loses no checkpoint: the state before the write is the newest checkpoint, flushed when it was
made; only the write that follows is then attributed as the seal before it says (as outside
the agent), as after a seal lost the same way. A record never names a newest checkpoint that
is not on the disk: it is written after the branch names that checkpoint, and only counts
while the branch still does. (The record is trusted as the refs are: whoever can write it can
move them.)
"""

from __future__ import annotations

import hashlib

from ..errors import CheckpointError
from ..store import metadata
from ..store.commitinfo import CommitInfo, parse_commit
from ..store.repo import PRIVATE_DIR, ShadowRepo

NAME = f'{PRIVATE_DIR}/announced'
ACTION = 'announce'  # an announcement's ``Checkpoint-Action``
MAX_BYTES = 256 * 1024  # a larger announcement is stored as a commit, as before the record
_VERSION = b'announced 1'
_NO_SEAL = b'-'


def write(repo: ShadowRepo, stands_on: bytes | None, raw: bytes) -> bool:
    """Keeps the announcement ``raw`` (a commit's bytes) on the seal ref's value ``stands_on``
    (under the desk's lock); False when it cannot (too large, or something at the name that
    is not a file: the caller stores it as a commit instead). The first line names both,
    and the id, so a torn file is told apart."""
    header = b' '.join((_VERSION, stands_on or _NO_SEAL, _commit_id(raw)))
    if len(header) + 1 + len(raw) > MAX_BYTES:
        return False
    try:
        repo.write_private(NAME, header + b'\n' + raw)
    except CheckpointError:
        return False
    return True


def clear(repo: ShadowRepo) -> None:
    """Removes the record (under the desk's lock, before the seal ref moves); the removal is
    flushed when the repository is durable, so that a seal ref moved back to the value the
    record stood on never finds it again after a power cut. Nothing is done when there is no
    record as read through ``repo`` (under the lock, what it read holds), or only what reads
    as none (a folder at the name, say): most seals follow no announcement.

    Raises:
        CheckpointError: A record that still reads as one could not be removed.
    """
    if _data(repo, again=False) is None:
        return
    try:
        repo.write_private(NAME, None)
    except CheckpointError:
        if _data(repo, again=True) is not None:
            raise


def read(repo: ShadowRepo, ref: bytes, *, again: bool) -> tuple[bytes | None, CommitInfo | None]:
    """The value of the seal ref ``ref`` (None: no such ref), and the announcement standing on
    it (None when there is none or anything about it is odd). ``again``: as on the disk now,
    else as first read through ``repo``.

    The record is read before the ref. Every move of the ref removes the record first, so the
    two were on the disk together at one moment: when the record was read, or, if the ref
    moved after that (the record then stands on another value: no announcement), when it
    moved. Read the other way, a seal and a new announcement made between the two reads
    would pair the old ref with no announcement, a state that never was.
    """
    data = _data(repo, again=again)
    value = repo.read_ref_again(ref) if again else repo.read_ref(ref)
    return value, _parsed(repo, data, value)


def _parsed(repo: ShadowRepo, data: bytes | None, stands_on: bytes | None) -> CommitInfo | None:
    """The announcement the record's bytes ``data`` hold, when it stands on the seal ref's
    value ``stands_on``."""
    header, separator, raw = (data or b'').partition(b'\n')
    if not separator or not header.startswith(_VERSION + b' '):
        return None
    base, _, sha = header[len(_VERSION) + 1 :].partition(b' ')
    if base != (stands_on or _NO_SEAL) or sha != _commit_id(raw):
        return None
    try:
        info = parse_commit(sha, raw)
        # Only an announcement: one parent, its tree, this action (a record made to look like
        # a seal, or to hide a person's edit, is no announcement).
        if metadata.action_of(info.message) != ACTION or len(info.parents) != 1:
            return None
        if repo.commit_info(info.parents[0]).tree != info.tree:
            return None
    except (ValueError, CheckpointError):
        return None
    return info


def _data(repo: ShadowRepo, *, again: bool) -> bytes | None:
    """The record's bytes; None when it is missing, or not a regular file small enough."""
    try:
        return repo.read_private(NAME, MAX_BYTES, again=again)
    except CheckpointError:
        return None


def _commit_id(raw: bytes) -> bytes:
    """The id git gives a commit of raw bytes ``raw``."""
    return hashlib.sha1(b'commit %d\0' % len(raw) + raw).hexdigest().encode('ascii')
