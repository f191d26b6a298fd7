"""Taking a snapshot: the desk's tracked files committed if they changed since the newest one.

A snapshot first looks at the desk without the repository's lock (:func:`look`): when nothing
changed, nothing is written, and that answer is given without the lock. Otherwise the lock is
taken and the snapshot is taken under it (:func:`take`), from the scan already made when
nothing that scan depended on moved meanwhile, else from a new one.

Why an answer without the lock is sound: writers that hold the lock change the desk only in a
restore, which writes its record (``journal``) before touching the desk and removes it only
after moving the branch; and every write of the branch makes a new commit, so it never comes
back to an id it held. :func:`look` checks that no record exists before it reads anything,
and after it is done that still none exists and the branch is where it was; then no restore
wrote the desk between the two checks. It also checks then that the seal and the config are
what it read, so the snapshot is as if it ran, alone, at that last moment (the desk read as
any snapshot reads it, while agents may write). An interrupted restore (a record found) is
always completed under the lock first, and a no-op that must write (the stat cache refreshed,
an announcement, the tracked paths remembered, ``HEAD`` repaired) takes the lock too.

With ``checkpoints watch`` running on the desk, :func:`look` first asks it (``vouched``): when
no tracked path changed since a walk found the desk equal to the newest checkpoint, and nothing
else that walk's answer depended on moved, that answer is given without a walk; a walk that
finds the desk unchanged tells the watcher so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..core.ids import ShortId, short_id
from ..desk.narrow import Since
from ..desk.scan import LazyFiles, Scan
from ..desk.statcache import StatCache
from ..errors import CheckpointError, CorruptRepositoryError
from ..store import metadata
from ..store.config import read_bytes
from ..store.repo import ShadowRepo
from ..store.repofolder import head_is_sound
from . import calls, external, journal, vouched
from .deskconfig import DeskConfig
from .results import SnapshotResult
from .session import Change, LockedSession, ReadSession, open_reading


@dataclass
class Look:
    """What :func:`look` found without the lock.

    Attributes:
        answer: The result when nothing changed (no lock needed), else None.
        scan: The scan and the stat cache it was compared with (None: the answer came from
            a running watcher, without a scan).
        head: The branch when the scan began.
        setup: What the scan depended on besides the branch: the tracked paths, the size
            limit and the desk's stat cache context.
        asked: What a running watcher answered before the scan (None: no watcher asked).
    """

    answer: SnapshotResult | None
    scan: tuple[Scan, StatCache] | None
    head: bytes
    setup: tuple[object, ...]
    asked: vouched.Asked | None = None


def look(config: DeskConfig, message: str, announce: bool = True) -> Look | None:
    """Scans the desk without the lock; None when the snapshot must start under the lock.
    ``announce``: when nothing changed, the paths ``message`` declares are announced (see
    :func:`take`)."""
    repository = config.repository
    if journal.pending(repository) or not head_is_sound(repository):
        return None  # the record is completed, or HEAD repaired, under the lock first
    scanning = False
    try:
        with open_reading(config) as session:
            if session is None:
                return None  # created under the lock
            repo = session.repo
            if config.explicit and repo.tracked_paths() != config.requested.entries:
                return None  # remembered in the config under the lock
            head = repo.head()
            if head is None:
                return None
            # As read before the walk: a watcher's report reads the seal again, so the final
            # check compares with this, not with what the repository object read last.
            seal = external.seal_id(repo)

            def walk(since: Since | None) -> vouched.Walked[Look]:
                nonlocal scanning
                scanning = True
                # Reads only (fresh blobs stay in memory); only what changed since the
                # watcher's record, when it knows that.
                result, cache = session.scan(since=since)
                scanning = False
                found = Look(None, (result, cache), head, _setup(session))
                if not (_nothing_to_commit(result, cache, head) and not result.refreshed):
                    return vouched.Walked(found, None)
                attribution = external.attribute(session, LazyFiles(result), cache.trees[''])
                skipped = tuple(result.skipped)
                answer = vouched.Answer(attribution.external, attribution.basis, skipped)
                return vouched.Walked(found, answer)

            # A no-op that is to announce the write its message declares is never answered
            # by the watcher: the announcement is written under the lock.
            def quiet(_: vouched.Answer) -> bool:
                return not announce or external.announcement(repo, message) is None

            looked = vouched.look(session, head, walk, accept=quiet)
            if looked.known is not None:
                if _moved(repo, head, seal):
                    return None
                answer = SnapshotResult(None, *_fields(looked.known))
                return Look(answer, None, head, _setup(session))
            assert looked.walked is not None
            found, clean = looked.walked.found, looked.walked.clean
            found.asked = looked.asked
            if clean is None or not quiet(clean):
                return found  # committed, or the announcement written, under the lock
            if _moved(repo, head, seal):
                return None  # a restore, a snapshot, a seal or a config write ran meanwhile
            found.answer = SnapshotResult(None, *_fields(clean))
            return found
    except CheckpointError as error:
        if scanning and not isinstance(error, CorruptRepositoryError):
            raise  # the desk's errors are the same under the lock, which changes nothing first
        return None  # the repository's are met again under the lock, or were passing


def _fields(answer: vouched.Answer) -> tuple[tuple[str, ...], str, tuple[tuple[str, str], ...]]:
    """A no-op snapshot's answer as :class:`SnapshotResult`'s fields after the id."""
    return answer.external, answer.basis, tuple(answer.skipped)


def _moved(repo: ShadowRepo, head: bytes, seal: bytes | None) -> bool:
    """Whether anything :func:`look` read of the repository changed since: a restore record
    appeared, or the branch, the seal (``seal`` as read before the walk) or the config is not
    what it was."""
    if journal.pending(repo.path) or repo.read_head_again() != head:
        return True
    if external.seal_id(repo, again=True) != seal:
        return True
    return read_bytes(repo.path) != repo.config.data


def take(
    session: LockedSession,
    message: str,
    earlier: Look | None = None,
    announce: bool = True,
    start: bool = False,
    since: Since | None = None,
) -> SnapshotResult:
    """Commits the desk if it changed; says what was left out and what changed externally.

    ``earlier``: a scan made without the lock, used when it still holds (see :func:`_reusable`);
    else the desk is scanned again (narrowed by a running watcher). When nothing changed, no
    checkpoint is made, and the paths the message declares are kept as an announcement (see
    ``external.announce``), so the write that follows is attributed; not with ``announce``
    False (a shell command's: its call on record says who is at work). With ``start`` (a
    turn's start) the newest checkpoint's files are committed again under ``message`` when
    nothing changed (:func:`_mark`), so the turn's start is on the branch either way. A
    running watcher is told what the desk now is, so the next snapshot need not walk it all.
    ``since``: without a watcher that knows what changed, only these folders are walked (a
    write tool's, once its turn has begun: ``declared.py``); the calls on record then stay on
    it, since what they wrote elsewhere is not in this checkpoint.
    """
    record = calls.load(session.repo.path)
    reusable = None if earlier is None else _reusable(session, earlier, record)
    if reusable is not None:
        assert earlier is not None
        scanned = vouched.Recorded(*reusable, earlier.asked)
    else:
        scanned = vouched.recorded_scan(session, since)
    result, cache = scanned.scan, scanned.cache
    attribution = external.attribute(session, LazyFiles(result), session.tree_of(result, cache))
    sealed = _with_seal_time(session.repo, message)
    sha = session.commit(result, cache, sealed, writes(session, attribution, message, record))
    if sha is not None:
        if not scanned.partial:
            calls.settle(session, record, result.started_ns)
    elif start:
        sha = _mark(session, message, cache)
    elif announce:
        external.announce(session, message)
    if scanned.asked is not None:
        _report_commit(session, scanned.asked, result, cache, sha or cache.commit)
    recovery = session.recovery
    return SnapshotResult(
        checkpoint_id=short_id(sha),
        external=attribution.external,
        basis=attribution.basis,
        skipped=tuple(result.skipped),
        recovered=str(recovery) if recovery else None,
    )


def _mark(session: LockedSession, message: str, cache: StatCache) -> bytes:
    """Commits the newest checkpoint's files again under ``message``, after a scan found the
    desk equal to that checkpoint (``session.commit`` made nothing: ``cache`` then names it);
    the stat cache is moved to the new commit, whose files are the same, so the next snapshot
    is still a no-op without the lock."""
    assert cache.commit == session.repo.head() and '' in cache.trees
    sha = session.commit_tree(cache.trees[''], [], message)
    cache.commit = sha
    session.save_cache(cache)
    return sha


def writes(
    session: ReadSession,
    attribution: external.Attribution,
    message: str,
    record: Mapping[str, calls.Call] | None = None,
) -> Callable[[list[Change]], list[tuple[str, str]]]:
    """The trailers recording which of a commit's changed files which agent turn wrote.

    The agent's tool calls on record (``record``: see ``calls``) decide first: a path a call
    wrote for certain is that call's turn's, a path several may have written is recorded as
    uncertain for each. The paths no call explains are credited as without the record, to the
    turn the seal or the newest checkpoint names (``external.writer``): the ones not changed
    outside the agent, and those it wrote that someone else changed afterwards (the state the
    agent left differs from both the newest checkpoint and the desk there).

    A commit taken in the same turn, when the turn names no session (the library's and the
    MCP server's turns, whose tool calls may run in parallel, each sealing when it is done),
    credits every change to the turn, as the turn's own writes in between. None are recorded
    when no turn is known.
    """

    def pairs(changes: list[Change]) -> list[tuple[str, str]]:
        found = calls.credit(record or {}, [(path, new) for path, _, new in changes])
        rest = set(found.unknown)
        writer = external.writer(session.repo)  # read before the branch moves
        if writer is not None and rest:
            paths = [path for path, _, _ in changes if path in rest]
            if writer.session is None and metadata.writer_of(message) == writer:
                found.wrote.setdefault(writer, set()).update(paths)
            else:
                outside, left = set(attribution.external), attribution.left
                # Changed outside the agent after the agent had changed it: the state the
                # agent left differs from the newest checkpoint there too.
                then = {
                    path
                    for path, old, _ in changes
                    if path in rest and path in outside and left.get(path) != old
                }
                ours = {path for path in paths if path not in outside}
                found.wrote.setdefault(writer, set()).update(ours | then)
                found.changed_after.setdefault(writer, set()).update(then)
        return credit_pairs(found)

    return pairs


def credit_pairs(found: calls.Credit) -> list[tuple[str, str]]:
    """The trailers of a credit: a group per writer, in a stable order."""
    pairs: list[tuple[str, str]] = []
    writers = {*found.wrote, *found.uncertain}
    for writer in sorted(writers, key=lambda w: (w.turn, w.session or '')):
        # A group naming no path still says who was at work: the changes are no turn's.
        wrote = found.wrote.get(writer, set())
        maybe = found.uncertain.get(writer, set())
        after = found.changed_after.get(writer, set())
        pairs += metadata.written_pairs(writer, wrote, after, maybe)
    return pairs


def _with_seal_time(repo: ShadowRepo, message: str) -> str:
    """The message of a commit that supersedes the seal of an agent's write, with when the
    seal was made (``Checkpoint-Sealed-At``)."""
    when = external.sealed_write_time(repo)
    return message if when is None else metadata.with_trailer(message, metadata.SEALED_AT, when)


def _nothing_to_commit(result: Scan, cache: StatCache, head: bytes) -> bool:
    """The desk is what the stat cache says, and the cache is the newest checkpoint's."""
    return result.unchanged and cache.commit == head and '' in cache.trees


def _report_commit(
    session: LockedSession, asked: vouched.Asked, result: Scan, cache: StatCache, sha: bytes
) -> None:
    """Tells the watcher asked before the scan that the desk, as scanned, is the new commit
    ``sha`` (unless the scan kept an entry of the newest checkpoint for a file it left out:
    then the desk is not that commit), with what a no-op snapshot would answer now."""
    if result.carried or cache.commit != sha or '' not in cache.trees:
        return
    attribution = external.attribute(session, LazyFiles(result), cache.trees[''])
    answer = vouched.Answer(attribution.external, attribution.basis, tuple(result.skipped))
    asked.report_commit(session, sha, answer, result)


def _setup(session: ReadSession) -> tuple[object, ...]:
    return (session.allowlist.entries, session.desk.max_file_size, session.desk.context)


def _reusable(
    session: LockedSession, earlier: Look, record: Mapping[str, calls.Call]
) -> tuple[Scan, StatCache] | None:
    """The scan made without the lock, when it serves under it as a scan made now would.

    It does when nothing moved that it depended on: no restore was completed or is pending
    (a restore writes the desk only while its record exists), the branch (every commit, a
    restore's too, moves it) and the tracked paths, size limit and desk are the same; no call
    on ``record`` ended after the scan began (the credit takes what an ended call left as what
    the scan saw, and settling drops it); and every blob that changed is at hand (a scan
    without the store keeps fresh blobs in memory only up to a budget and hashes large files
    without keeping them).
    """
    repo = session.repo
    if earlier.scan is None:  # the answer came from a watcher: there is no scan
        return None
    if session.recovery is not None or journal.pending(repo.path):
        return None
    if repo.head() != earlier.head or _setup(session) != earlier.setup:
        return None
    result, _ = earlier.scan
    if any(call.ended is not None and call.ended >= result.started_ns for call in record.values()):
        return None
    held = all(
        sha in result.new_blobs or repo.contains(sha)
        for _, sha in result.entries(result.changed).values()
    )
    return earlier.scan if held else None


@dataclass(frozen=True)
class Capture:
    """What :func:`capture` recorded: the new checkpoint (None: nothing had changed) and the
    paths it changed."""

    checkpoint_id: ShortId | None
    paths: tuple[str, ...] = ()


def capture(
    session: LockedSession,
    subject: str,
    tool: str,
    writer: metadata.Writer | None,
    call_id: str | None = None,
    scanned: vouched.Recorded | None = None,
) -> Capture:
    """Commits the changes made since the newest checkpoint as a change already made
    (``Checkpoint-Action: captured``, the changed paths as ``Checkpoint-Path``), then seals.

    With ``writer`` (a shell command seen through the hooks, the call ``call_id`` of the
    record) the changes are that turn's, less those other calls on record explain (another
    session's write that landed meanwhile is that session's; a path both may have written is
    uncertain: see ``calls``), and the state is sealed as the state it left. Without
    (``checkpoints watch``) the changes are credited as a snapshot credits them; when an
    agent's write was announced and not yet sealed, it is announced again on the new
    checkpoint (the agent may still be writing), else the state is sealed. Nothing is
    committed when nothing changed; a turn's capture then only seals. ``scanned``: the desk
    scanned to record in this session (:func:`vouched.recorded_scan`; the watcher it asked is
    told what the desk is once sealed), else a walk of everything.
    """
    repo = session.repo
    scanned = scanned or vouched.Recorded(*session.scan(record=True))
    result, cache = scanned.scan, scanned.cache
    attribution = external.attribute(session, LazyFiles(result), session.tree_of(result, cache))
    pending = None if writer is not None else external.in_flight(repo)
    record = dict(calls.load(repo.path))
    if writer is not None:
        call_id = call_id or calls.new_id()
        if call_id not in record or not record[call_id].open:
            # Not on record (its pre-event was not seen): at work since the newest checkpoint.
            record[call_id] = calls.Call(call_id, writer, tool, calls.SHELL, began=0)
    credit = writes(session, attribution, '', record)
    changed: list[str] = []

    def pairs(changes: list[Change]) -> list[tuple[str, str]]:
        changed.extend(sorted(path for path, _, _ in changes))
        found = [(metadata.PATH, path) for path in changed]
        return [*found, *credit(changes), (metadata.ACTION, metadata.CAPTURED)]

    turn, by = (writer.turn, writer.session) if writer is not None else (None, None)
    message = metadata.compose(subject, tool, None, turn, by)
    sha = session.commit(result, cache, message, pairs)
    calls.settle(session, record, result.started_ns, ending=call_id)
    if sha is None and (writer is None or external.seal_id(repo) == repo.head()):
        return Capture(None)
    if pending is not None:
        external.reannounce(session, pending)
    else:
        external.mark_sealed(session)
    if scanned.asked is not None:  # after the seal, which a no-op's answer depends on
        _report_commit(session, scanned.asked, result, cache, sha or cache.commit)
    return Capture(short_id(sha), tuple(changed))


def settled(config: DeskConfig) -> bool:
    """Whether the desk equals the newest checkpoint and the seal names that checkpoint, read
    without the lock (see :func:`look` for why that answer is sound): a capture would then
    do nothing."""
    repository = config.repository
    if journal.pending(repository) or not head_is_sound(repository):
        return False
    try:
        with open_reading(config) as session:
            if session is None:
                return False
            repo = session.repo
            head = repo.head()
            if head is None or external.seal_id(repo) != head:
                return False
            result, cache = session.scan()
            if not _nothing_to_commit(result, cache, head) or result.refreshed:
                return False
            return not _moved(repo, head, head)  # the seal named the head
    except CheckpointError:
        return False
