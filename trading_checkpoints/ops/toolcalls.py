"""A harness's tool call on a desk, from the hook before it to the hook after it.

Each function is one hook event's work on one desk (``agent/hooks`` decides which desks an
event concerns and calls these):

- :func:`before_write` (a write tool names its paths): a checkpoint of the desk as it is, in
  the session's turn (the turn's first one always, as the turn's start), then the call on
  record (``calls``), so whatever lands at those paths while it runs is credited to it. Once
  the turn has begun, only the folders of its paths are walked, when the write can change
  nothing outside them (``declared.py``).
- :func:`after_write`: the call's end, with what it left at its paths, and the desk sealed:
  the checkpoint before it with the call's writes (the folders of its paths walked again,
  ``declared.py``), not a person's edit made meanwhile elsewhere.
- :func:`before_shell` (a shell command may write any path of any desk): a checkpoint only
  when the desk changed (never an empty one: a command that only reads leaves no row), then
  the call on record.
- :func:`after_shell`: a checkpoint of what changed meanwhile, credited to the command's turn
  less what other calls explain (another session's write is that session's; a path both may
  have written is uncertain), labelled with the turn's prompt when it is the turn's first.
- :func:`unfinished`: a call the harness reports denied or failed, or one still at work when
  its session moves on (a new prompt, the agent stopping): closed as unfinished. A path it
  named that did not change is no longer the agent's (a person's later edit there stays the
  person's); a path that did change is uncertain, so ``restore-turn`` reverts it only when
  forced; what changed meanwhile is committed at once, so that window closes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ..core.ids import ShortId, short_id
from ..errors import CheckpointError
from ..store import metadata
from ..store.metadata import Writer
from . import calls, declared, deskconfig, engine, external, snapshot, turnindex, vouched
from .deskconfig import DeskConfig
from .session import LockedSession, open_reading
from .turns import CheckpointsLike, check_turn_id, labelled


@dataclass(frozen=True)
class ToolCall:
    """One tool call as the hooks see it.

    Attributes:
        call_id: The harness's id for it (Claude Code's ``tool_use_id``); None when the harness
            names none (the call is then found by its session, tool and paths).
        tool: The tool as checkpoints name it (``claude:Write``).
        writer: The session's turn (None without a session: plain snapshots, no record).
        label: The turn's prompt, for its first checkpoint.
        inputs: A digest of what the call was given (``calls.digest``), to pair its two
            hooks where the harness names no call id.
    """

    call_id: str | None
    tool: str
    writer: Writer | None
    label: str = ''
    inputs: str = ''


def before_write(
    checkpoints: CheckpointsLike, call: ToolCall, reason: str, paths: Sequence[str]
) -> ShortId | None:
    """The checkpoint before a write tool (None: nothing changed), and the call on record:
    the desk looked at without the lock, then one locked session for the checkpoint (the
    turn's start when its first) or the announcement, and the call."""
    writer = call.writer
    if writer is None:
        new_id = checkpoints.snapshot(reason, tool=call.tool, paths=paths)
        return None if new_id is None else ShortId(new_id)
    check_turn_id(writer.turn)
    config = checkpoints.desk_config
    deskconfig.check_desk(config, must_exist=True)
    message = metadata.compose(reason, call.tool, paths, writer.turn, writer.session)
    # Once the turn has begun, the folders of the paths walked under the lock (a few);
    # else the whole desk, without the lock, first.
    narrow = declared.narrowable(config.desk, paths) and _begun(config, writer.turn)
    earlier = None if narrow else snapshot.look(config, message)
    with engine.locked(config, light=True, verb='snapshot') as session:
        first = not turnindex.started(session.repo, writer.turn, remember=True)
        if first:  # the turn's start: labelled, and a checkpoint even of an unchanged desk
            reason = labelled(reason, call.label)
            message = metadata.compose(reason, call.tool, paths, writer.turn, writer.session)
        since = declared.since(session, paths) if narrow and not first else None
        # A turn's start on an unchanged desk is marked by a checkpoint declaring the paths:
        # an announcement on the checkpoint before it would be superseded at once.
        new_id = snapshot.take(session, message, earlier, start=first, since=since).checkpoint_id
        _begin(session, call, paths)
    return new_id


def _begun(config: DeskConfig, turn: str) -> bool:
    """Whether the turn has a checkpoint already, read without the lock (asked again under
    it); False when the repository cannot say (the look without the lock meets that too)."""
    try:
        with open_reading(config) as session:
            return session is not None and turnindex.started(session.repo, turn)
    except CheckpointError:
        return False


def after_write(config: DeskConfig, call: ToolCall, paths: Sequence[str]) -> ShortId:
    """The call's end on record, with what it left, and the desk sealed; the seal's id."""
    with engine.locked(config, light=True, verb='seal') as session:
        found = _find(session.repo.path, call, paths)
        if found is not None:
            calls.end(session, found, calls.WROTE)
        # The checkpoint the hook before took, with what the call wrote: the folders of its
        # paths, unless a write there can reach elsewhere (a hard link, a linked folder), as
        # the hook before judged it (``declared.py``); nothing else read again, racy or not.
        narrow = declared.narrowable(config.desk, paths)
        since = replace(declared.since(session, paths), reread_beside=False) if narrow else None
        scanned = session.scan(record=True, since=since)
        return short_id(external.seal(session, scanned))


def before_shell(config: DeskConfig, call: ToolCall, reason: str) -> ShortId | None:
    """A checkpoint of the desk when it changed (None: it did not; never a mark of the turn's
    start, as a write tool's first checkpoint is), in the session's turn, and the call on
    record: the desk looked at without the lock, then one locked session for both."""
    writer = call.writer
    if writer is None:
        return engine.take_snapshot(
            config, metadata.compose(reason, call.tool, None, None)
        ).checkpoint_id
    message = metadata.compose(reason, call.tool, None, writer.turn, writer.session)
    earlier = snapshot.look(config, message)
    with engine.locked(config, light=True, verb='snapshot') as session:
        new_id = None
        if earlier is None or earlier.answer is None:  # changed, or to be looked at again
            if not turnindex.started(session.repo, writer.turn, remember=True):
                reason = labelled(reason, call.label)  # should it be the turn's first checkpoint
                message = metadata.compose(reason, call.tool, None, writer.turn, writer.session)
            new_id = snapshot.take(session, message, earlier).checkpoint_id
        _begin(session, call, None)
    return new_id


def after_shell(config: DeskConfig, call: ToolCall, subject: str) -> snapshot.Capture:
    """A checkpoint of what changed since the command began (see the module notes); the call
    on record ends with it, found by its session, tool and input where the harness names no
    call id (Gemini CLI): left at work, it would explain every change until the turn ends."""
    if _find(config.repository, call, ()) is None and snapshot.settled(config):
        return snapshot.Capture(None)  # nothing changed since the checkpoint before it
    with engine.locked(config, light=True, verb='capture') as session:
        return capture_shell(session, call, subject)


def capture_shell(session: LockedSession, call: ToolCall, subject: str) -> snapshot.Capture:
    """:func:`after_shell`'s capture, in a session that holds the desk's lock."""
    writer = call.writer
    # Found under the lock: the hook after a twin command (same session, tool and input) may
    # have ended the call found without it, and this one's would stay at work.
    call_id = _find(session.repo.path, call, ())
    if writer is not None and not turnindex.started(session.repo, writer.turn, remember=True):
        subject = labelled(subject, call.label)
    scanned = vouched.recorded_scan(session)  # narrowed by a running watcher
    ending = call_id or call.call_id  # not on record: the capture records it, ended
    return snapshot.capture(session, subject, call.tool, writer, ending, scanned)


def unfinished(
    config: DeskConfig,
    call: ToolCall | None,
    session_id: str | None,
    paths: Sequence[str] = (),
    kind: str | None = None,
) -> snapshot.Capture | None:
    """Closes as unfinished ``call`` (denied or failed), or every call of ``session_id`` still
    at work (of ``kind`` only, when given; ``call`` None: the session moved on); None when
    there was none on record."""
    if not config.repository.is_dir():
        return None
    if not _closing(config.repository, call, session_id, kind, paths):
        return None
    with engine.locked(config, light=True, verb='close') as session:
        # Found again under the lock (see :func:`after_shell`).
        ids = _closing(session.repo.path, call, session_id, kind, paths)
        if not ids:
            return None
        closed = [calls.end(session, call_id, calls.UNFINISHED) for call_id in ids]
        if not any(c is not None and c.left for c in closed):
            if any(c is not None and c.kind == calls.WRITE for c in closed):
                _withdraw(session)
            if not any(c is not None and c.kind == calls.SHELL for c in closed):
                return snapshot.Capture(None)
        return snapshot.capture(session, 'after an unfinished tool call', 'hooks', None)


def _withdraw(session: LockedSession) -> None:
    """A write that did not happen is no longer announced: the desk as the agent left it is
    the newest checkpoint again (unless a seal of a write that did happen holds)."""
    repo = session.repo
    seal = external.current_seal(repo, repo.head())
    if seal is None or metadata.action_of(seal.message) == external.ANNOUNCE:
        external.mark_sealed(session)


def _begin(session: LockedSession, call: ToolCall, paths: Sequence[str] | None) -> None:
    assert call.writer is not None
    call_id = call.call_id or calls.new_id()
    calls.begin(session, call_id, call.writer, call.tool, paths, call.inputs)


def _closing(
    repository: Path,
    call: ToolCall | None,
    session_id: str | None,
    kind: str | None,
    paths: Sequence[str],
) -> list[str]:
    """The ids on record of the calls :func:`unfinished` closes."""
    if call is not None:
        found = _find(repository, call, paths)
        return [] if found is None else [found]
    at_work = calls.open_calls(repository, session_id)
    return [c.call_id for c in at_work if kind is None or c.kind == kind]


def _find(repository: Path, call: ToolCall, paths: Sequence[str]) -> str | None:
    """The id on record of the call: its own, else the oldest of its session at work with its
    tool on its paths."""
    if call.call_id is not None:
        return call.call_id if call.call_id in calls.load(repository) else None
    if call.writer is None:
        return None
    found = calls.find(repository, call.writer.session, call.tool, paths, call.inputs)
    return None if found is None else found.call_id
