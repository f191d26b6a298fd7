"""A no-op snapshot or a clean status answered by a running ``checkpoints watch``, without a walk.

The watcher (``agent/vouchwatch.py``, asked through ``desk/vouch.py``) keeps a record made by
the last walk that found the desk equal to the newest checkpoint: that walk's answer and
everything the answer depended on besides the desk's files (:func:`state`: the branch head,
the seal, the repository's config, the stat cache file, the tracked paths, the size limit, the
desk, the mount table's entries for the desk, and the stat numbers of the multiply-linked
tracked files, whose writes through a name outside the desk reach no watcher). It hands the
record back only while no change to a tracked path reached it since, every change made before
the question included. The record serves when the state read now is the same; then the walk
would find the desk unchanged and give the same answer (nothing it reads differs), and that
answer is given. Nothing serves while something is mounted inside the desk.

When a tracked path changed since the record and the watcher knows in which folders, and
the state read now is still the record's (the stat cache above all: it is the one the clean
walk found the desk equal to; the seal aside, which no scan reads), a scan walks only those
folders (``desk/narrow.py``) and takes the rest from the stat cache: a snapshot's, a status's,
and a seal's (:func:`recorded_scan`).

:func:`look` runs that sequence for a snapshot and for ``status``: ask, take the answer or
walk, report a clean walk under the token the watcher handed out before it began. A snapshot
that committed what such a walk found reports the commit under the lock
(:meth:`Asked.report_commit`). No watcher, or any doubt: a plain walk, and nothing else
differs.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Generic, TypeVar

from ..desk import statcache, vouch
from ..desk.folders import DeskFolders
from ..desk.narrow import Since
from ..desk.scan import Scan
from ..desk.statcache import StatCache, StatKey
from ..desk.vouchprotocol import Answer, Record, Reply, State
from ..errors import CheckpointError
from ..store.config import read_bytes
from . import external, journal
from .session import LockedSession, ReadSession

T = TypeVar('T')


@dataclass(frozen=True)
class Walked(Generic[T]):
    """What a walk found (``found``), and what a no-op snapshot answers when the walk found the
    desk equal to the head it was given (``clean``; None otherwise)."""

    found: T
    clean: Answer | None


@dataclass(frozen=True)
class Looked(Generic[T]):
    """What :func:`look` gave: the watcher's answer (``known``, no walk made) or the walk's
    (``walked``, with the watcher asked before it, to report a commit to; None: there is
    none)."""

    known: Answer | None
    walked: Walked[T] | None
    asked: Asked | None


def look(
    session: ReadSession,
    head: bytes,
    walk: Callable[[Since | None], Walked[T]],
    *,
    accept: Callable[[Answer], bool],
) -> Looked[T]:
    """The desk's watcher's answer for ``head``, when its record serves and ``accept`` takes
    the answer; else the walk's (``walk`` is given what changed since the record, when the
    watcher knows it, to walk only that), reported to the watcher when it found the desk clean.
    """
    asked = Asked.of(session)
    if asked is None:
        return Looked(None, walk(None), None)
    before = asked.state(head)
    known = asked.answer(head, before)
    if known is not None and accept(known):
        return Looked(known, None, None)  # nothing is committed: nothing to report
    walked = walk(asked.since(head, before))
    if walked.clean is not None:
        asked.report(head, walked.clean, before)
    return Looked(None, walked, asked)


@dataclass(frozen=True)
class Recorded:
    """A scan made to record (:func:`recorded_scan`), the stat cache it was compared with, the
    watcher asked before it (to report a commit of the scan to; None: there is none), and
    whether it walked only the folders the caller named (``partial``: changes elsewhere may
    have been left for a later walk)."""

    scan: Scan
    cache: StatCache
    asked: Asked | None = None
    partial: bool = False


def recorded_scan(session: LockedSession, fallback: Since | None = None) -> Recorded:
    """A scan that stores the blobs it reads (a seal's, a capture's), walking only what changed
    since the watcher's record when the watcher knows that (:meth:`Asked.since`), else
    ``fallback`` when given (the folders a write tool's paths lie in: ``declared.since``; the
    watcher is then told nothing), else everything."""
    head = session.repo.head()
    asked = Asked.of(session)  # with no checkpoint yet, only to report the first
    since = None if asked is None or head is None else asked.since(head, asked.state(head))
    if since is None and fallback is not None and head is not None:
        result, cache = session.scan(record=True, since=fallback)
        return Recorded(result, cache, None, partial=True)
    result, cache = session.scan(record=True, since=since)
    return Recorded(result, cache, asked)


def seal(session: LockedSession) -> bytes:
    """``external.seal`` of the desk scanned by :func:`recorded_scan` (narrowed by a running
    watcher); returns the seal's commit."""
    scanned = recorded_scan(session)
    return external.seal(session, (scanned.scan, scanned.cache))


class Asked:
    """What the desk's watcher replied to one snapshot or status."""

    def __init__(self, session: ReadSession, name: str, reply: Reply) -> None:
        self.session = session
        self.name = name
        self.reply = reply

    @classmethod
    def of(cls, session: ReadSession) -> Asked | None:
        """The watcher's reply, None when there is no watcher (or any doubt)."""
        config = session.config
        name = vouch.key(config.desk, config.repository)
        if name is None:
            return None
        reply = vouch.ask(name, session.allowlist.entries)
        return None if reply is None else cls(session, name, reply)

    def answer(self, head: bytes, now: State) -> Answer | None:
        """The answer the walk would give, when the watcher's record serves (see the module
        notes), else None; ``now``: the :meth:`state` read after the reply."""
        record = self.reply.clean
        return None if record is None or not self._holds(record, head, now) else record.answer

    def since(self, head: bytes, now: State) -> Since | None:
        """What changed since the record (nothing, when the watcher's reply is the record
        itself), when the watcher knows it and everything else the record's walk depended on
        is as it was (see the module notes), else None; ``now``: the :meth:`state` read after
        the reply. The seal is not compared: a scan never reads it (a no-op's answer does),
        so an agent's seal leaves the next scan narrowed."""
        changed = self.reply.changed
        record = self.reply.clean if changed is None else changed.record
        if record is None or not self._holds(record, head, now, seal=False):
            return None
        folders = () if changed is None else changed.folders
        return Since(frozenset(folders), record.answer.skipped)

    def state(self, head: bytes) -> State:
        """The :func:`state` now, with the multiply-linked files the watcher named."""
        return state(self.session, head, self.reply.linked)

    def report(self, head: bytes, answer: Answer, before: State) -> None:
        """A walk made after the token found the desk equal to ``head`` and gave ``answer``;
        ``before``: the :func:`state` read before the walk. Unless that state moved meanwhile,
        the watcher keeps the record, when no change reached it since the token."""
        now = self.state(head)
        if now != before or self.session.repo.read_head_again() != head:
            return
        self._send(now, answer)

    def report_commit(
        self, session: LockedSession, head: bytes, answer: Answer, scanned: Scan
    ) -> None:
        """``scanned``, a scan made after the token, was committed as ``head``; ``session``
        holds the lock, which holds still what :func:`state` reads of the repository (the
        multiply-linked files are compared with what the scan found). ``answer``: what a no-op
        snapshot would answer now. The watcher keeps the record when no change reached it
        since the token."""
        now = state(session, head, self.reply.linked)
        if all(key == scanned.key(path) for path, key in now.linked):
            self._send(now, answer)

    def _send(self, now: State, answer: Answer) -> None:
        """Hands the watcher the record, unless nothing may serve (a mount inside the desk) or
        a multiply-linked file changed too recently for its stat numbers to show a write in
        the same clock tick."""
        if now.mounts is None:
            return
        moment = time.time_ns()
        if any(key is not None and statcache.is_racy(key, moment) for _, key in now.linked):
            return
        vouch.report(self.name, self.reply.token, Record(now, answer))

    def _holds(self, record: Record, head: bytes, now: State, seal: bool = True) -> bool:
        """Whether the record's state is the state ``now`` (the seal left out unless
        ``seal``), with no restore begun and the branch not moved since the watcher replied."""
        then = record.state if seal else replace(record.state, seal=now.seal)
        if now.mounts is None or then != now:
            return False
        repo = self.session.repo
        return not journal.pending(repo.path) and repo.read_head_again() == head


def state(session: ReadSession, head: bytes, linked: tuple[str, ...]) -> State:
    """What a no-op's answer depends on besides the desk's files, as it is on disk now;
    ``linked``: the multiply-linked tracked files the watcher named."""
    repo = session.repo
    desk = session.desk
    seal = external.seal_id(repo, again=True)
    return State(
        head=head.decode('ascii'),
        seal=None if seal is None else seal.decode('ascii'),
        config=hashlib.sha1(read_bytes(repo.path)).hexdigest(),
        cache=_identity(str(statcache.file_in(repo.path))),
        entries=session.allowlist.entries,
        limit=desk.max_file_size,
        desk=os.fsdecode(desk.context),
        mounts=vouch.mounts(os.path.realpath(desk.path)),
        linked=tuple((path, _stat_key(desk.folders, path)) for path in linked),
    )


def _stat_key(folders: DeskFolders, path: str) -> StatKey | None:
    try:
        found = folders.lstat(path)
    except CheckpointError:
        return None
    return None if found is None else statcache.stat_key(found)


def _identity(path: str) -> tuple[int, int, int, int, int] | None:
    try:
        info = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
