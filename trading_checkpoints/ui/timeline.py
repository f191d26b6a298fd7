"""The history as the browser shows it: newest first, read a page at a time through the
library (``Checkpoints.page``), consecutive checkpoints of one turn grouped into a run.

Only the pages the person scrolled to are read, so a history of any length opens at once;
:meth:`Timeline.changed` compares the branch's newest commit with the one shown, the cheap
question a timer asks to notice new checkpoints.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..checkpoints import Checkpoint, Checkpoints
from ..core.ids import CommitId
from ..ops.prompts import labels

PAGE_SIZE = 200


@dataclass(frozen=True)
class Row:
    """One checkpoint of the timeline, with its full id (what the library takes)."""

    checkpoint: Checkpoint
    full_id: CommitId


@dataclass
class Run:
    """Consecutive checkpoints of one turn (newest first); ``turn`` None: outside any turn,
    a run of one."""

    turn: str | None
    rows: list[Row] = field(default_factory=list)


class Timeline:
    """The loaded part of one desk's history, newest first, in runs."""

    def __init__(self, checkpoints: Checkpoints, page_size: int = PAGE_SIZE) -> None:
        self.checkpoints = checkpoints
        self.page_size = page_size
        self.runs: list[Run] = []
        self.rows: list[Row] = []
        self.next: CommitId | None = None
        self.started = False
        self.labels: dict[str, str] = {}  # each turn's prompt, once looked up
        self.looked_up: set[str] = set()

    @property
    def complete(self) -> bool:
        """Whether every checkpoint is loaded (the oldest kept is among the rows)."""
        return self.started and self.next is None

    @property
    def head(self) -> CommitId | None:
        return self.rows[0].full_id if self.rows else None

    def reload(self) -> None:
        """Forgets what was loaded and reads the first page again."""
        self.runs, self.rows, self.next, self.started = [], [], None, False
        self.load_more()

    def load_more(self) -> list[Row]:
        """Reads the next page (the first one, the first time); returns its rows."""
        if self.complete:
            return []
        page = self.checkpoints.page(self.page_size, self.next if self.started else None)
        self.started, self.next = True, page.next
        added = [Row(c, full) for c, full in zip(page.checkpoints, page.ids, strict=True)]
        for row in added:
            turn = row.checkpoint.turn
            if turn is None or not self.runs or self.runs[-1].turn != turn:
                self.runs.append(Run(turn))
            self.runs[-1].rows.append(row)
        self.rows.extend(added)
        self.look_up_labels({row.checkpoint.turn for row in added if row.checkpoint.turn})
        return added

    def look_up_labels(self, turns: set[str]) -> None:
        """Reads the prompts of the turns not looked up yet (see ``ops.prompts.labels``)."""
        wanted = turns - self.looked_up
        if wanted:
            self.labels.update(labels(self.checkpoints.repository_directory, wanted))
            self.looked_up |= wanted

    def label(self, turn: str | None) -> str | None:
        """A turn's prompt, when it has one."""
        return None if turn is None else self.labels.get(turn)

    def index_of(self, checkpoint_id: str) -> int | None:
        """The index of the row of checkpoint ``checkpoint_id`` (its short id), reading further
        pages as needed; None when no row has it."""
        index = 0
        while True:
            while index < len(self.rows):
                if self.rows[index].checkpoint.checkpoint_id == checkpoint_id:
                    return index
                index += 1
            if not self.load_more():
                return None

    def changed(self) -> bool:
        """Whether the branch moved since the rows were read (new checkpoints, a prune)."""
        newest = self.checkpoints.page(1)
        return (newest.ids[0] if newest.ids else None) != self.head

    def matches(self, row: Row, text: str) -> bool:
        """Whether ``text`` (any case) is in the checkpoint's reason, tool or declared paths,
        or in the path of a file it changed."""
        wanted = text.casefold()
        checkpoint = row.checkpoint
        declared = [checkpoint.reason, checkpoint.tool or '', *checkpoint.paths]
        if any(wanted in words.casefold() for words in declared):
            return True
        changes = self.checkpoints.introduced(row.full_id, patches=False).changes
        return any(wanted in change.path.casefold() for change in changes)

    def find(self, text: str, after: int) -> int | None:
        """The index of the first row past ``after`` that :meth:`matches` ``text``, reading
        further pages as needed; None when no older checkpoint matches."""
        index = after + 1
        while True:
            while index < len(self.rows):
                if self.matches(self.rows[index], text):
                    return index
                index += 1
            if not self.load_more():
                return None
