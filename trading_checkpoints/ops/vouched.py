"""A no-op snapshot or a clean status answered by a running ``checkpoints watch``, without a walk.

The watcher (``agent/vouchwatch.py``, asked through ``desk/vouch.py``) keeps a record made by
the last walk that found the desk equal to the newest checkpoint: that walk's answer
(``external``, ``basis``, ``skipped``) and everything the answer depended on besides the desk
(:func:`state`: the branch head, the seal, the repository's config, the stat cache file, the
tracked paths, the size limit and the desk). It hands the record back only while no change to a
tracked path reached it since, every change made before the question included. The record
serves when the state read now is the same; then the walk would find the desk unchanged and
give the same answer (nothing it reads differs), and that answer is given.

When a tracked path changed since the record and the watcher knows in which folders, and
the state read now is still the record's (the stat cache above all: it is the one the clean
walk found the desk equal to), a scan walks only those folders (:meth:`Asked.since`,
``desk/narrow.py``) and takes the rest from the stat cache.

With every answer the watcher hands out a token; a walk made after it that finds the desk
clean reports the record under that token (:meth:`Asked.report`), and so does a snapshot that
committed what such a walk found (:meth:`Asked.report_commit`). No watcher, or any doubt: a
plain walk, and nothing else differs.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

from ..desk import statcache, vouch
from ..desk.narrow import Since
from ..store.config import read_bytes
from ..store.repo import ShadowRepo
from . import external, journal
from .session import ReadSession

Answer = tuple[tuple[str, ...], str, tuple[tuple[str, str], ...]]  # external, basis, skipped


class Asked:
    """What the watcher answered one snapshot or status (nothing when there is no watcher)."""

    def __init__(self, session: ReadSession) -> None:
        self.session = session
        config = session.config
        self.name = vouch.key(config.desk, config.repository)
        answer = None if self.name is None else vouch.ask(self.name, session.allowlist.entries)
        answer = answer or {}
        self.record: dict[str, Any] | None = answer.get('clean')
        self.token: int | None = answer.get('token')
        self.changed: dict[str, Any] | None = answer.get('since')

    def answer(self, head: bytes) -> Answer | None:
        """The answer the walk would give, when the watcher's record serves (see the module
        notes), else None."""
        record = self.record
        repo = self.session.repo
        if record is None or record.get('state') != state(self.session, head):
            return None
        if journal.pending(repo.path) or repo.read_head_again() != head:
            return None  # a restore began, or the branch moved, since the watcher answered
        try:
            found = record['answer']
            return (
                tuple(str(path) for path in found['external']),
                str(found['basis']),
                tuple((str(path), str(why)) for path, why in found['skipped']),
            )
        except (KeyError, TypeError, ValueError):
            return None

    def since(self, head: bytes) -> Since | None:
        """What changed since the record, when the watcher knows it and everything else the
        record's walk depended on is as it was (see the module notes), else None."""
        changed = self.changed
        if changed is None:
            return None
        record = changed.get('record')
        if not isinstance(record, dict) or record.get('state') != state(self.session, head):
            return None
        if journal.pending(self.session.repo.path) or self.session.repo.read_head_again() != head:
            return None
        try:
            touched = frozenset(_texts(changed['folders']))
            skipped = tuple((str(path), str(why)) for path, why in record['answer']['skipped'])
        except (KeyError, TypeError, ValueError):
            return None
        return Since(touched, skipped)

    def state(self, head: bytes) -> dict[str, Any] | None:
        """The :func:`state` before a walk, when there is a watcher to report to."""
        return None if self.token is None else state(self.session, head)

    def report(self, head: bytes, answer: Answer, before: dict[str, Any] | None) -> None:
        """A walk made after the token found the desk equal to ``head`` and gave ``answer``;
        ``before``: the :func:`state` read before the walk. Unless that state moved meanwhile,
        the watcher keeps the record, when no change reached it since the token."""
        if self.name is None or self.token is None or before is None:
            return
        now = state(self.session, head)
        if now != before or self.session.repo.read_head_again() != head:
            return
        self._send(now, answer)

    def report_commit(self, session: ReadSession, head: bytes, answer: Answer) -> None:
        """A scan made after the token was committed as ``head``, ``session`` holding the lock
        (which holds still what :func:`state` reads); ``answer``: what a no-op snapshot would
        answer now. The watcher keeps the record when no change reached it since the token."""
        if self.name is None or self.token is None:
            return
        self._send(state(session, head), answer)

    def _send(self, now: dict[str, Any], answer: Answer) -> None:
        """Hands the watcher the record: the state the answer depended on, and the answer."""
        assert self.name is not None and self.token is not None
        external_paths, basis, skipped = answer
        record = {
            'state': now,
            'answer': {
                'external': list(external_paths),
                'basis': basis,
                'skipped': [list(item) for item in skipped],
            },
        }
        vouch.report(self.name, self.token, record)


def state(session: ReadSession, head: bytes) -> dict[str, Any]:
    """What a no-op's answer depends on besides the desk's files, as it is on disk now."""
    repo: ShadowRepo = session.repo
    seal = repo.read_ref_again(external.SEAL_REF)
    return {
        'head': head.decode('ascii'),
        'seal': None if seal is None else seal.decode('ascii'),
        'config': hashlib.sha1(read_bytes(repo.path)).hexdigest(),
        'cache': _identity(str(statcache.file_in(repo.path))),
        'entries': list(session.allowlist.entries),
        'limit': session.desk.max_file_size,
        'desk': os.fsdecode(session.desk.context),
    }


def _texts(items: object) -> list[str]:
    if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
        raise ValueError('not a list of paths')
    return items


def _identity(path: str) -> list[int] | None:
    try:
        info = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return [info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns]
