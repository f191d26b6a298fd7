"""Blame: for every line of a file, the checkpoint that introduced it, its time, and who wrote it.

The file's versions are read along the branch's first parents, oldest first (from the oldest
checkpoint kept up to the one asked for, then, for the desk, the agent's sealed write and the
desk itself); each line carries the origin of the version that first held it through a diff of
every version against the one before. Who made a version is what ``credits`` reads in the
checkpoint that holds it:

- ``agent``: a turn wrote it (its id, session, the tool as far as recorded, and the turn's
  prompt label); also a write a tool announced outside any turn (declared paths, no turn);
- ``uncertain``: a turn wrote the file, and someone else changed it again before the
  checkpoint (or another writer at work at the same time may have written it), so its lines
  are either's;
- ``watch``: recorded by ``checkpoints watch`` and written by no turn (a process no hook sees,
  or a person);
- ``outside``: written by no turn, recorded by a snapshot (a person, or another process);
- ``unknown``: already there in the oldest checkpoint kept, or put back by a restore of an
  entry whose writer the history no longer shows.

A restore, undo or redo introduces nothing: the lines it puts back keep the origins they had
in the version it restores (when that version's blame is still at hand; else they are credited
to whoever wrote the entry it put back).

Why not ``dulwich.annotate``: it walks every parent ordered by commit date, where a desk's
history is its first-parent chain and clocks may disagree; it names the commit whose diff shows
a line, so a restore would be the author of every line it puts back; it reads every commit,
tree and blob as dulwich objects and diffs whole files, from the first commit on; and only the
store imports dulwich. Its idea is kept: a walk oldest first carrying each line's origin
through a diff of each version against the one before (its ``update_lines``), here with the
lines the two versions share at both ends matched before difflib sees the rest.
"""

from __future__ import annotations

import difflib
from collections import OrderedDict
from contextlib import closing
from dataclasses import dataclass, replace

try:  # pydantic (the MCP SDK) reads TypedDicts from typing_extensions on Python < 3.12
    from typing_extensions import TypedDict
except ImportError:  # pragma: no cover - typing_extensions comes with the mcp extra
    from typing import TypedDict

from ..core.ids import short_id
from ..core.trees import SYMLINK_MODE, TREE_MODE, FileEntry
from ..desk.scan import LazyFiles
from ..errors import InvalidArgumentError, NoCheckpointsError, NotInCheckpointError
from ..store import metadata
from ..store.commitinfo import CommitInfo
from ..store.metadata import Writer
from ..store.repo import ShadowRepo
from . import credits, external, history
from .listing import walk
from .prompts import label_of
from .session import ReadSession

AGENT, UNCERTAIN, WATCH, OUTSIDE, UNKNOWN = 'agent', 'uncertain', 'watch', 'outside', 'unknown'
CHECKPOINT, SEAL, DESK = 'checkpoint', 'seal', 'desk'  # what holds a line's first version
WATCH_TOOL = 'watch'  # the tool ``checkpoints watch`` records its captures with

# Versions larger than this are not diffed: every line of the next version counts as new.
LINE_LIMIT = history.TEXT_DIFF_LIMIT
# A difference larger than this (lines times lines) is taken as a rewrite, not diffed.
MATCH_LIMIT = 4_000_000
# How many versions' blame is kept for the restores that may put them back.
KEPT_VERSIONS = 256


class BlameLineForm(TypedDict):
    line: int
    text: str
    checkpoint: str | None
    created_at: str | None
    reason: str | None
    state: str
    who: str
    turn: str | None
    session: str | None
    tool: str | None
    label: str | None


class BlameForm(TypedDict):
    path: str
    checkpoint: str | None
    lines: list[BlameLineForm]


@dataclass(frozen=True)
class Author:
    """Who wrote a line (see the module notes for ``kind``); ``label`` is the turn's prompt."""

    kind: str
    turn: str | None = None
    session: str | None = None
    tool: str | None = None
    label: str | None = None


@dataclass(frozen=True)
class Origin:
    """The version that first held a line.

    Attributes:
        state: ``checkpoint``, ``seal`` (the agent's sealed write, not in a checkpoint yet) or
            ``desk`` (not recorded yet).
        checkpoint_id: The checkpoint's (or seal's) short id; None for the desk.
        created_at: When it was taken (ISO 8601 with offset); None for the desk.
        reason: Its subject; None for the desk.
        author: Who wrote it.
    """

    state: str
    checkpoint_id: str | None
    created_at: str | None
    reason: str | None
    author: Author


@dataclass(frozen=True)
class BlameLine:
    number: int
    text: str
    origin: Origin

    def to_dict(self) -> BlameLineForm:
        origin, author = self.origin, self.origin.author
        return BlameLineForm(
            line=self.number,
            text=self.text,
            checkpoint=origin.checkpoint_id,
            created_at=origin.created_at,
            reason=origin.reason,
            state=origin.state,
            who=author.kind,
            turn=author.turn,
            session=author.session,
            tool=author.tool,
            label=author.label,
        )


@dataclass(frozen=True)
class Blame:
    """Every line of ``path`` as checkpoint ``checkpoint_id`` holds it (None: the desk now),
    each with its origin."""

    path: str
    checkpoint_id: str | None
    lines: tuple[BlameLine, ...]

    def to_dict(self) -> BlameForm:
        return BlameForm(
            path=self.path,
            checkpoint=self.checkpoint_id,
            lines=[line.to_dict() for line in self.lines],
        )


def blame(session: ReadSession, path: str, checkpoint_id: str | None) -> Blame:
    """The blame of file ``path`` at ``checkpoint_id``, or in the desk now (None)."""
    repo = session.repo
    wanted = history.normalize_path(path, session.allowlist)
    head = repo.head()
    if head is None:
        raise NoCheckpointsError(f'no checkpoints yet in {repo.path}', repository=repo.path)
    start = repo.resolve(checkpoint_id) if checkpoint_id is not None else head
    # The agent's sealed write on the newest checkpoint; a seal a later checkpoint superseded
    # is blamed as any commit is, from its own history.
    seal = external.current_seal(repo, head)
    sealed = seal is not None and start != head and start == seal.sha.encode('ascii')
    tracker = _Tracker(repo, wanted)
    with closing(walk(repo.path, head if sealed else start)) as commits:
        chain = list(commits)
    previous = ''
    for position, info in enumerate(reversed(chain)):
        tracker.checkpoint(info, previous, first=position == 0)
        previous = info.message
    if checkpoint_id is None:
        label = 'the desk'
        entry = _desk(session, tracker, chain[0])
    else:
        label = checkpoint_id.strip()
        if sealed:  # the agent's sealed write (as --at finds it), on the newest checkpoint
            _sealed(repo, tracker, chain[0], credits.unrecorded(repo, chain[0].tree, ()))
        entry = tracker.entry
    _require_file(tracker, entry, label)
    lines = tracker.lines
    return Blame(
        wanted,
        short_id(start) if checkpoint_id is not None else None,
        tuple(
            BlameLine(number, line.decode('utf-8', 'replace'), tracker.origins[index])
            for number, (line, index) in enumerate(zip(lines, tracker.marks, strict=True), 1)
        ),
    )


def _desk(session: ReadSession, tracker: _Tracker, head: CommitInfo) -> FileEntry | None:
    """Carries the blame on to the desk: the agent's sealed write, then the rest."""
    repo = session.repo
    path = tracker.path
    found, cache = session.scan()
    outside = external.attribute(session, LazyFiles(found), session.known_tree(found, cache))
    since = credits.unrecorded(repo, head.tree, outside.external)
    _sealed(repo, tracker, head, since)
    entry = found.files.get(path)
    if entry is not None and entry[0] == SYMLINK_MODE:
        entry = None
    if entry is None or entry == tracker.entry:
        tracker.change(entry, _origin(DESK, None, Author(UNKNOWN)), None)
        return entry
    credit = since.credit(path, entry)
    writers = credits.writers_of(credit)
    if writers:
        author = _agent(credit, writers, '', head.message, tracker.labels)
    elif outside.basis == external.UNKNOWN:
        author = Author(UNKNOWN)  # nothing records what the agent wrote since
    elif since.sealed is None and path not in since.outside:
        tool = credits.declared_tool(head.message, path)
        author = Author(AGENT, tool=tool) if tool is not None else Author(OUTSIDE)
    else:
        author = Author(OUTSIDE)
    data = session.desk.reader(found)(path, entry[1])
    tracker.change(entry, _origin(DESK, None, author), credit, data)
    return entry


def _sealed(
    repo: ShadowRepo, tracker: _Tracker, head: CommitInfo, since: credits.Unrecorded
) -> None:
    """Carries the blame on to the agent's write sealed since the newest checkpoint, if any."""
    seal = since.sealed
    if seal is not None:
        entry = _entry_at(repo, seal.tree, tracker.path)
        credit = since.sealed_credit(tracker.path, entry)  # the calls on record first
        author = _author(credit, seal, head.message, tracker.path, tracker.labels)
        if author.tool is None and isinstance(credit, Writer):  # the call's, as recorded
            author = replace(author, tool=since.tool_of(credit, tracker.path))
        tracker.change(entry, _origin(SEAL, seal, author), credit)


def _require_file(tracker: _Tracker, entry: FileEntry | None, label: str) -> None:
    path = tracker.path
    if entry is None:
        where = 'the desk holds' if label == 'the desk' else f'checkpoint {label} holds'
        raise NotInCheckpointError(f'{where} no file {path!r}', path=path, checkpoint=label)
    if tracker.binary:
        raise InvalidArgumentError(
            f'{path!r} is a binary file in {label}: it has no lines to blame',
            name='path',
            value=path,
        )


class _Tracker:
    """One file's versions, oldest first, each line with the index of its origin."""

    def __init__(self, repo: ShadowRepo, path: str) -> None:
        self.repo = repo
        self.path = path
        self.entry: FileEntry | None = None
        self.tree: bytes | None = None
        self.lines: list[bytes] = []
        self.marks: list[int] = []
        self.binary = False
        self.origins: list[Origin] = []
        self.labels: dict[str, str] = {}
        self.seen: dict[tuple[str, FileEntry | None], credits.Credit] = {}
        self.kept: OrderedDict[bytes, tuple[list[bytes], list[int]]] = OrderedDict()

    def checkpoint(self, info: CommitInfo, previous: str, *, first: bool) -> None:
        """The checkpoint ``info`` (``previous``: the message of the one before it)."""
        label = label_of(info.message)
        turn = metadata.parse(info.message).turn if label is not None else None
        if label is not None and turn is not None:
            self.labels.setdefault(turn, label)
        if info.tree == self.tree:
            return
        self.tree = info.tree
        entry = _entry_at(self.repo, info.tree, self.path)
        if entry == self.entry:
            return
        if first:  # what it holds was there before: who wrote it is not on record
            self.change(entry, _origin(CHECKPOINT, info, Author(UNKNOWN)), None)
            return
        credit = credits.of_checkpoint(info.message, previous, self.seen)(self.path, entry)
        author = _author(credit, info, previous, self.path, self.labels)
        restored = metadata.action_of(info.message) in credits.RESTORING
        self.change(entry, _origin(CHECKPOINT, info, author), credit, restored=restored)

    def change(
        self,
        entry: FileEntry | None,
        origin: Origin,
        credit: credits.Credit,
        data: bytes | None = None,
        *,
        restored: bool = False,
    ) -> None:
        """The file became ``entry`` (``data``: its bytes, when not in the store) in the
        version ``origin`` names, written by ``credit``; ``restored``: put back by a restore."""
        if entry == self.entry:
            return
        self.seen[(self.path, entry)] = credit
        self.entry = entry
        if entry is None:
            self.lines, self.marks, self.binary = [], [], False
            return
        if restored and entry[1] in self.kept:
            lines, marks = self.kept[entry[1]]
            self.lines, self.marks, self.binary = lines, marks, False
            self.kept.move_to_end(entry[1])
            return
        content = self.repo.read_blob(entry[1]) if data is None else data
        self.binary = b'\0' in content
        lines = [] if self.binary else content.splitlines()
        self.origins.append(origin)
        mark = len(self.origins) - 1
        if len(content) > LINE_LIMIT or not self.lines:
            marks = [mark] * len(lines)
        else:
            marks = carry(self.lines, self.marks, lines, mark)
        self.lines, self.marks = lines, marks
        self.kept[entry[1]] = (lines, marks)
        if len(self.kept) > KEPT_VERSIONS:
            self.kept.popitem(last=False)


def carry(old: list[bytes], marks: list[int], new: list[bytes], mark: int) -> list[int]:
    """The marks of ``new``'s lines: those it shares with ``old`` keep theirs, the others get
    ``mark``. The lines equal at both ends are matched first (an edit is usually small)."""
    start = _common(old, new, 0)
    end = _common(old[start:][::-1], new[start:][::-1], 0)
    middle_old = old[start : len(old) - end]
    middle_new = new[start : len(new) - end]
    out = marks[:start]
    if middle_old and middle_new and len(middle_old) * len(middle_new) <= MATCH_LIMIT:
        matcher = difflib.SequenceMatcher(None, middle_old, middle_new, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == 'equal':
                out.extend(marks[start + i1 : start + i2])
            elif tag != 'delete':
                out.extend([mark] * (j2 - j1))
    else:
        out.extend([mark] * len(middle_new))
    out.extend(marks[len(old) - end :] if end else [])
    return out


def _common(old: list[bytes], new: list[bytes], low: int) -> int:
    """How many lines ``old`` and ``new`` share at their start (halving: slices compare in C)."""
    high = min(len(old), len(new))
    while low < high:
        middle = (low + high + 1) // 2
        if old[:middle] == new[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _origin(state: str, info: CommitInfo | None, author: Author) -> Origin:
    if info is None:
        return Origin(state, None, None, None, author)
    return Origin(state, info.short_id, info.created_at, info.subject, author)


def _author(
    credit: credits.Credit, info: CommitInfo, previous: str, path: str, labels: dict[str, str]
) -> Author:
    """Who made a version (see the module notes), from the record of the checkpoint (or seal)
    holding it, ``info``, and of the one before it (``previous``)."""
    message = info.message
    writers = credits.writers_of(credit)
    if writers:
        return _agent(credit, writers, message, previous, labels)
    action = metadata.action_of(message)
    if action == metadata.CAPTURED and metadata.parse(message).tool == WATCH_TOOL:
        return Author(WATCH, tool=WATCH_TOOL)
    if action in credits.RESTORING:
        return Author(UNKNOWN)
    tool = credits.declared_tool(previous, path)
    return Author(AGENT, tool=tool) if tool is not None else Author(OUTSIDE)


def _agent(
    credit: credits.Credit,
    writers: tuple[Writer, ...],
    message: str,
    previous: str,
    labels: dict[str, str],
) -> Author:
    """The turn that wrote a version (or the turns that may have: ``t-1 or t-2``)."""
    kind = AGENT if credits.certain(credit) else UNCERTAIN
    if len(writers) > 1:
        turns = ' or '.join(writer.turn for writer in writers)
        sessions = ' or '.join(writer.session or '-' for writer in writers)
        return Author(kind, turns, sessions)
    writer = writers[0]
    tool = credits.tool_of(message, previous, writer)
    return Author(kind, writer.turn, writer.session, tool, labels.get(writer.turn))


def _entry_at(repo: ShadowRepo, tree: bytes, path: str) -> FileEntry | None:
    """The file (or symlink: None, it has no lines) a tree holds at ``path``, or None."""
    names = path.encode('utf-8', 'surrogateescape').split(b'/')
    sha, mode = tree, TREE_MODE
    for name in names:
        if mode != TREE_MODE:
            return None
        found = [(m, s) for n, m, s in repo.tree_entries(sha) if n == name]
        if len(found) != 1:
            return None
        mode, sha = found[0]
    if mode == TREE_MODE or mode == SYMLINK_MODE:
        return None
    return (mode, sha)


def describe(author: Author) -> str:
    """Who, in a few words: ``turn t-8 (write_file)``, ``watch``, ``outside the agent``."""
    if author.kind in (AGENT, UNCERTAIN):
        tool = f' ({author.tool})' if author.tool else ''
        who = f'turn {author.turn}{tool}' if author.turn else f'the agent{tool}'
        return who if author.kind == AGENT else f'{who} or someone else'
    return {
        WATCH: 'seen by watch',
        OUTSIDE: 'outside the agent',
        UNKNOWN: 'unknown',
    }.get(author.kind, author.kind)
