"""The agent's tool calls on a desk that no checkpoint has recorded yet: who may have written what.

A harness's hooks see each tool call twice: before it runs and after. Between the two, other
writers may work on the same desk: a second agent session, a person, ``checkpoints watch``.
So the commit that records a change must not credit it to whichever call happens to commit
it. The *call record* keeps, for one desk, each call whose effect no checkpoint holds yet:

- a **write** call (``Write``, ``Edit``, ``write_file``, ...) names its paths; when it ends it
  records what it left there (each path's entry, read then);
- a **shell** call (``Bash``, ``run_shell_command``) may write any path of any desk, from the
  moment it begins until it ends;
- a call the harness never answered (denied, failed, or the session moved on) is closed as
  **unfinished**, with the paths it named that did change meanwhile (it may have written them
  before it failed: nobody can tell).

:func:`credit` decides, for each path a commit changes, from the calls that could explain it:

1. A write call that ended and left exactly the entry the commit records wrote it (the newest
   such call; who else was at work does not matter: the content is what that call left).
2. A path one write call wrote that differs now from what it left was changed afterwards: by
   a call still at work then (uncertain, naming them all) or, when none was, by no call
   (``changed_after``: a person, as before).
3. Otherwise the calls that were at work and could have written it: open write calls naming
   it, shell calls, unfinished calls that named it. One call's turn alone wrote it; more than
   one turn, or an unfinished call, makes it *uncertain*: each of those turns may have written
   it, and ``restore-turn`` reverts it only when forced.
4. No call at all: the caller decides as without the record (the seal, the declared paths).

The record is ``checkpoints/calls`` in the repository: JSON lines (``begin`` and ``end``),
appended under the desk's lock and never flushed. Losing its last lines to a power cut loses
only who made a change: such changes are then credited as made outside the agent, so every
restore that keeps those keeps them, and no file is lost. Each commit rewrites it with only
the calls still at work (:func:`settle`). The repository is untrusted: a line that does not
parse, or names a path no tracked path allows, is left out; the file is read no further than
:data:`MAX_BYTES`, and a call open longer than :data:`MAX_OPEN_NS` counts as unfinished.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import secrets
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..core.paths import path_problem
from ..core.repofiles import RepoFile, append
from ..core.repofiles import check as check_file
from ..core.repofiles import read as read_file
from ..core.repofiles import replace as replace_file
from ..core.trees import FileEntry
from ..desk.scan import read_entry
from ..errors import CheckpointError
from ..store.metadata import Writer
from ..store.repo import PRIVATE_DIR
from .session import LockedSession

NAME = f'{PRIVATE_DIR}/calls'
MAX_BYTES = 1 << 20
MAX_OPEN_NS = 6 * 3600 * 10**9
MAX_PATHS = 64

WRITE, SHELL = 'write', 'shell'
WROTE, UNFINISHED = 'wrote', 'unfinished'
_SHA = re.compile(r'[0-9a-f]{40}')


@dataclass(frozen=True)
class Call:
    """One tool call of an agent session, as the record holds it.

    Attributes:
        call_id: The harness's id for the call (Claude Code's ``tool_use_id``), else one made up.
        writer: The turn (and session) the call belongs to.
        tool: The tool, as checkpoints name it (``claude:Write``).
        kind: ``write`` (it names ``paths``) or ``shell`` (any path).
        paths: The desk-relative paths a write call names.
        began: When it began (``time.time_ns()``).
        ended: When it ended, or None while it is at work.
        outcome: None while at work, then ``wrote`` or ``unfinished``.
        left: When ended: each of its paths' entry as it left them (None: absent); for an
            unfinished call, only the paths that changed since it began.
        before: Each named path's entry when it began (None: absent).
        inputs: A digest of what the call was given (never the input itself), to pair the
            hook after a call with the hook before it where the harness names no call id.
        base: For a shell call, the newest checkpoint when it began (hex; the desk as the
            command found it): what a protected path it changes is put back from.
    """

    call_id: str
    writer: Writer
    tool: str
    kind: str
    paths: tuple[str, ...] = ()
    began: int = 0
    ended: int | None = None
    outcome: str | None = None
    left: Mapping[str, FileEntry | None] = field(default_factory=dict)
    before: Mapping[str, FileEntry | None] = field(default_factory=dict)
    inputs: str = ''
    base: str = ''

    @property
    def open(self) -> bool:
        return self.ended is None

    def may_write(self, path: str) -> bool:
        """Whether the call may have written ``path`` (not looking at what it left)."""
        if self.kind == SHELL:
            return True
        return path in (self.left if self.outcome == UNFINISHED else self.paths)


@dataclass(frozen=True)
class Credit:
    """Who wrote the paths a commit changes, as far as the calls tell (see the module notes).

    Attributes:
        wrote: For each writer, the paths it wrote.
        changed_after: For each writer, the paths it wrote that someone (no call) changed after.
        uncertain: For each writer, the paths it may have written, where another may have too.
        unknown: The paths no call explains (the caller credits them as before).
    """

    wrote: dict[Writer, set[str]] = field(default_factory=dict)
    changed_after: dict[Writer, set[str]] = field(default_factory=dict)
    uncertain: dict[Writer, set[str]] = field(default_factory=dict)
    unknown: list[str] = field(default_factory=list)

    def explained(self) -> set[str]:
        """The paths some call wrote for certain, as they are now (not changed after)."""
        wrote: set[str] = set().union(*self.wrote.values())
        return wrote - set().union(*self.changed_after.values())


# -- reading and writing the record --------------------------------------------------------------


def load(repository: Path, *, now: int | None = None) -> dict[str, Call]:
    """The calls on record (by id, oldest first); {} when there is no record or it cannot be
    read. A call open longer than :data:`MAX_OPEN_NS` is returned as unfinished, ended when it
    reached that age (not now: the next commit then leaves it off the record, and a change
    made after that age is no longer put down to it)."""
    try:
        data = read_file(RepoFile(repository, NAME), MAX_BYTES)
    except CheckpointError:
        return {}
    calls: dict[str, Call] = {}
    for line in (data or b'').splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict):
            _fold(calls, item)
    now = time.time_ns() if now is None else now
    return {
        key: call
        if call.ended is not None or now - call.began < MAX_OPEN_NS
        else replace(call, ended=call.began + MAX_OPEN_NS, outcome=UNFINISHED, left={})
        for key, call in calls.items()
    }


def _clear_unreadable(record: RepoFile) -> None:
    """Empties a record that :func:`load` reads as none though it is there (too large, say):
    appended to, it would only grow, and every call on it would stay unread. One that cannot
    be replaced (a folder at its name) is left as it is, as before."""
    try:
        check_file(record, MAX_BYTES)
    except CheckpointError:
        with contextlib.suppress(CheckpointError):
            replace_file(record, b'', durable=False)


def _fold(calls: dict[str, Call], item: dict[str, object]) -> None:
    """Applies one line of the record (anything malformed is left out)."""
    call_id = item.get('id')
    if not isinstance(call_id, str) or not call_id or len(call_id) > 200:
        return
    when = item.get('t')
    if not isinstance(when, int) or isinstance(when, bool):
        return
    if item.get('op') == 'begin':
        turn, session, tool, kind = (item.get(k) for k in ('turn', 'session', 'tool', 'kind'))
        paths = _paths(item.get('paths'))
        if not isinstance(turn, str) or not turn or not isinstance(tool, str):
            return
        if kind not in (WRITE, SHELL) or paths is None:
            return
        if session is not None and not isinstance(session, str):
            return
        before = _entries(item.get('before')) or {}
        inputs, base = item.get('inputs'), item.get('base')
        writer = Writer(turn, session or None)
        calls[call_id] = Call(
            call_id,
            writer,
            tool,
            kind,
            paths,
            when,
            before=before,
            inputs=inputs if isinstance(inputs, str) and len(inputs) <= 64 else '',
            base=base if isinstance(base, str) and _SHA.fullmatch(base) else '',
        )
    elif item.get('op') == 'end':
        found = calls.get(call_id)
        outcome = item.get('outcome')
        left = _entries(item.get('left'))
        if found is None or outcome not in (WROTE, UNFINISHED) or left is None:
            return
        calls[call_id] = replace(found, ended=when, outcome=outcome, left=left)


def _paths(value: object) -> tuple[str, ...] | None:
    if not isinstance(value, list) or len(value) > MAX_PATHS:
        return None
    if not all(isinstance(path, str) and path_problem(path) is None for path in value):
        return None
    return tuple(value)


def _entries(value: object) -> dict[str, FileEntry | None] | None:
    if not isinstance(value, dict) or len(value) > MAX_PATHS:
        return None
    entries: dict[str, FileEntry | None] = {}
    for path, entry in value.items():
        if not isinstance(path, str) or path_problem(path) is not None:
            return None
        if entry is None:
            entries[path] = None
        elif (
            isinstance(entry, list)
            and len(entry) == 2
            and isinstance(entry[0], int)
            and isinstance(entry[1], str)
            and _SHA.fullmatch(entry[1])
        ):
            entries[path] = (entry[0], entry[1].encode('ascii'))
        else:
            return None
    return entries


def _line(item: dict[str, object]) -> bytes:
    return json.dumps(item, separators=(',', ':'), ensure_ascii=True).encode() + b'\n'


def _shown(entries: Mapping[str, FileEntry | None]) -> dict[str, object]:
    return {p: None if e is None else [e[0], e[1].decode('ascii')] for p, e in entries.items()}


def _begin_line(call: Call) -> dict[str, object]:
    return {
        'op': 'begin',
        'id': call.call_id,
        'turn': call.writer.turn,
        'session': call.writer.session,
        'tool': call.tool,
        'kind': call.kind,
        'paths': list(call.paths),
        'before': _shown(call.before),
        'inputs': call.inputs,
        'base': call.base,
        't': call.began,
    }


def _end_line(call: Call) -> dict[str, object]:
    return {
        'op': 'end',
        'id': call.call_id,
        'outcome': call.outcome,
        'left': _shown(call.left),
        't': call.ended,
    }


def new_id() -> str:
    """An id for a call whose harness names none."""
    return f'call-{secrets.token_hex(8)}'


# -- the hooks' side: a call begins and ends -----------------------------------------------------


def begin(
    session: LockedSession,
    call_id: str,
    writer: Writer,
    tool: str,
    paths: Sequence[str] | None,
    inputs: str = '',
) -> Call:
    """Records that a call begins: a write call naming ``paths`` (desk-relative), or a shell
    call (``paths`` None), given ``inputs`` (a digest). Taken after the checkpoint of the desk
    before it."""
    named = tuple(paths or ())[:MAX_PATHS]
    kind = SHELL if paths is None else WRITE
    before = _read_entries(session, named)
    head = session.repo.head() if kind == SHELL else None
    base = head.decode('ascii') if head is not None else ''
    now = time.time_ns()
    call = Call(
        call_id, writer, tool, kind, named, now, before=before, inputs=inputs[:64], base=base
    )
    append(RepoFile(session.repo.path, NAME), _line(_begin_line(call)))
    return call


def end(session: LockedSession, call_id: str, outcome: str = WROTE) -> Call | None:
    """Records that a write call ended (``wrote``: the harness says it ran; ``unfinished``:
    denied, failed or never answered) with what it left at its paths; the call, or None when
    the record holds no such call at work. (A shell call ends with the capture of what it
    changed: :func:`settle`.)"""
    found = load(session.repo.path).get(call_id)
    if found is None or not found.open:
        return None
    if found.kind == SHELL and outcome == WROTE:
        return None
    left = _read_entries(session, found.paths)
    if outcome == UNFINISHED:
        left = {p: e for p, e in left.items() if e != found.before.get(p)}
    ended = replace(found, ended=time.time_ns(), outcome=outcome, left=left)
    append(RepoFile(session.repo.path, NAME), _line(_end_line(ended)))
    return ended


def open_calls(repository: Path, session: str | None) -> list[Call]:
    """The calls of ``session`` still at work on the desk, oldest first."""
    return [
        call for call in load(repository).values() if call.open and call.writer.session == session
    ]


def find(
    repository: Path, session: str | None, tool: str, paths: Sequence[str], inputs: str = ''
) -> Call | None:
    """The oldest call of ``session`` at work with ``tool`` on ``paths``, given the same
    ``inputs`` when known (for a harness that names no call id)."""
    for call in open_calls(repository, session):
        if call.tool != tool or (call.kind == WRITE and set(call.paths) != set(paths)):
            continue
        if not inputs or not call.inputs or call.inputs == inputs:
            return call
    return None


def digest(session: str | None, given: object) -> str:
    """A digest of what a call was given, keyed by its session: enough to tell two calls
    apart, never the input itself (a command line may carry tokens)."""
    data = json.dumps(given, sort_keys=True, default=str).encode('ascii')  # escapes the rest
    key = (session or '').encode('utf-8', 'surrogatepass')[:64]
    return hashlib.blake2b(data, key=key, digest_size=8).hexdigest()


def _read_entries(session: LockedSession, paths: Iterable[str]) -> dict[str, FileEntry | None]:
    entries: dict[str, FileEntry | None] = {}
    for path in paths:
        found = read_entry(session.desk.folders, path)
        entries[path] = None if found is None else found[0]
    return entries


# -- the commit's side: credit, then settle ------------------------------------------------------


def credit(calls: Mapping[str, Call], changes: Sequence[tuple[str, FileEntry | None]]) -> Credit:
    """Who wrote each changed path (path, the entry the commit records), as far as the calls
    tell (see the module notes)."""
    found = Credit()
    ordered = sorted(calls.values(), key=lambda call: (call.ended or call.began, call.began))
    for path, entry in changes:
        wrote = [c for c in ordered if c.outcome == WROTE and path in c.left]
        suspects = [c for c in ordered if c.outcome != WROTE and c.may_write(path)]
        if wrote:
            last = max(wrote, key=lambda call: call.ended or 0)
            if last.left[path] == entry:
                found.wrote.setdefault(last.writer, set()).add(path)
                continue
            done = last.ended or 0
            suspects = [c for c in ordered if c is not last and c.may_write(path)]
            suspects = [c for c in suspects if c.ended is None or c.ended > done]
            if not suspects:  # changed after it, while no call was at work: by no call
                found.wrote.setdefault(last.writer, set()).add(path)
                found.changed_after.setdefault(last.writer, set()).add(path)
                continue
            if any(c.began < done for c in suspects):  # at work together: either came last
                suspects.append(last)
        _decide(found, path, suspects)
    return found


def _decide(found: Credit, path: str, suspects: list[Call]) -> None:
    """Credits ``path`` among the calls that may have written it: none (the caller decides),
    one turn's calls that ran to the end (that turn), else each of them as uncertain."""
    writers = {call.writer for call in suspects}
    if not suspects:
        found.unknown.append(path)
    elif len(writers) == 1 and all(call.outcome != UNFINISHED for call in suspects):
        found.wrote.setdefault(next(iter(writers)), set()).add(path)
    else:
        for writer in writers:
            found.uncertain.setdefault(writer, set()).add(path)


def settle(
    session: LockedSession, calls: Mapping[str, Call], seen_at: int, ending: str | None = None
) -> None:
    """After a commit (or a capture) whose scan began at ``seen_at``, under the lock: keeps on
    record only the calls at work then, less ``ending`` (the shell call that capture ended)."""
    kept = [
        call
        for call in calls.values()
        if call.call_id != ending and (call.ended is None or call.ended >= seen_at)
    ]
    record = RepoFile(session.repo.path, NAME)
    if len(kept) == len(calls):
        if not calls:
            _clear_unreadable(record)
        return
    lines = b''.join(
        _line(_begin_line(call)) + (b'' if call.ended is None else _line(_end_line(call)))
        for call in kept
    )
    replace_file(record, lines, durable=False)
