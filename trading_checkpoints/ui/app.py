"""``checkpoints browse``: the Textual application.

One screen: the timeline on the left (newest first, a turn's checkpoints folded under it, with
the turn's prompt), the selected checkpoint on the right (its fields, the files it changed, its
diff against the one before it, highlighted; a file's history or who wrote each of its lines),
the storage line and the keys at the bottom. Every read and write goes through the library
(``Checkpoints``), with its lock and checks; a restore, an undo or a redo shows its dry-run
plan (or the refusal the run would meet) and waits for ``y`` first, as ``checkpoints undo``
and ``redo`` decide. A timer compares the branch's newest commit with the one shown and
reloads the timeline when checkpoints were added or pruned meanwhile.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Footer, Header, Input, OptionList, Static, Tree
from textual.widgets.tree import TreeNode

from ..checkpoints import Checkpoints, RestoreResult
from ..errors import CheckpointError
from ..ops.results import Diff
from ..ops.storageuse import describe
from . import views
from .dialogs import Confirm
from .timeline import PAGE_SIZE, Row, Run, Timeline

MORE = 'more'
"""The data of the timeline's last line while older pages are unread: reaching it reads one."""

Node = TreeNode[Row | Run | str]
BACK = {'restore': 'u undoes it', 'undo': 'U redoes it', 'redo': 'u undoes it'}
"""The key that takes a step back once it is done, by the step's action."""
HISTORY = 100
"""How many of a file's checkpoints its history shows (``h``)."""


class Browser(App[None]):
    """The browser of one desk's checkpoints (see the module notes)."""

    TITLE = 'checkpoints browse'
    CSS = """
    #main { height: 1fr; }
    #timeline { width: 55%; border-right: solid $primary-darken-2; overflow-x: hidden; }
    #side { width: 45%; }
    #summary { height: auto; padding: 0 1; border-bottom: solid $primary-darken-2; }
    #files { height: auto; max-height: 8; border: none; }
    #diff { padding: 0 1; }
    #search { display: none; }
    #search.shown { display: block; }
    #storage { height: 1; padding: 0 1; color: $text-muted; }
    """
    BINDINGS = [
        Binding('j', 'down', 'Down', show=False),
        Binding('k', 'up', 'Up', show=False),
        Binding('slash', 'search', 'Search'),
        Binding('n', 'search_next', 'Next match', show=False),
        Binding('d', 'desk_diff', 'Diff with desk'),
        Binding('h', 'file_history', 'File history'),
        Binding('b', 'blame', 'Blame'),
        Binding('r', 'restore', 'Restore'),
        Binding('u', 'undo', 'Undo'),
        Binding('U,ctrl+r', 'redo', 'Redo'),
        Binding('escape', 'to_timeline', 'Timeline', show=False),
        Binding('q', 'quit', 'Quit'),
    ]

    def __init__(
        self,
        checkpoints: Checkpoints,
        *,
        page_size: int = PAGE_SIZE,
        poll: float = 1.0,
        storage: bool = True,
        start: str | None = None,
    ) -> None:
        """``page_size`` checkpoints are read at a time; every ``poll`` seconds (0: never) the
        branch is checked for new checkpoints; ``storage`` False leaves the size unmeasured
        (a fixed line, for pictures of the screen that must not depend on the disk);
        ``start``: the checkpoint (short id) selected first, instead of the newest."""
        super().__init__()
        self.checkpoints = checkpoints
        self.start = start
        self.storage = storage
        self.timeline = Timeline(checkpoints, page_size)
        self.poll = poll
        self.sub_title = checkpoints.desk_directory.name
        self.shown = 0
        self.run_nodes: dict[int, Node] = {}
        self.row_nodes: dict[str, Node] = {}
        self.more: Node | None = None
        self.query_text = ''
        self.diff: Diff | None = None

    # -- layout and loading -----------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id='main'):
            tree: Tree[Row | Run | str] = Tree('checkpoints', id='timeline')
            tree.show_root = False
            tree.guide_depth = 2
            yield tree
            with Vertical(id='side'):
                yield Static(id='summary')
                yield OptionList(id='files')
                with VerticalScroll(id='diff-pane'):
                    yield Static(id='diff')
        yield Input(
            placeholder='search reasons and paths; Enter finds the next older match', id='search'
        )
        yield Static('Storage: not measured', id='storage')
        yield Footer()

    @property
    def timeline_tree(self) -> Tree[Row | Run | str]:
        return self.query_one('#timeline', Tree)

    def on_mount(self) -> None:
        self.load(reset=True)
        self.timeline_tree.focus()
        if self.timeline.rows:
            self.call_after_refresh(self.select_start)
        self.measure()
        if self.poll > 0:
            self.set_interval(self.poll, self.refresh_if_changed)

    def load(self, reset: bool = False) -> None:
        """Reads the first page again (``reset``) or the next one, and shows its rows."""
        try:
            if reset:
                self.timeline.reload()
                self.timeline_tree.clear()
                self.shown, self.run_nodes, self.row_nodes, self.more = 0, {}, {}, None
            else:
                self.timeline.load_more()
        except CheckpointError as error:
            self.report(error)
            return
        self.show_rows()
        if not self.timeline.rows:
            self.query_one('#summary', Static).update(Text('No checkpoints yet.'))

    def show_rows(self) -> None:
        """Adds the rows read since the last call to the tree, under their turns."""
        tree = self.timeline_tree
        if self.more is not None:
            self.more.remove()
            self.more = None
        position = 0
        for run in self.timeline.runs:
            end = position + len(run.rows)
            if end > self.shown:
                new = run.rows[max(self.shown - position, 0) :]
                parent = tree.root
                if run.turn is not None:
                    node = self.run_nodes.get(id(run))
                    label = views.run_label(run, self.timeline.label(run.turn))
                    if node is None:
                        node = tree.root.add(label, data=run, expand=True)
                        self.run_nodes[id(run)] = node
                    else:
                        node.set_label(label)
                    parent = node
                for row in new:
                    label = views.row_label(row.checkpoint)
                    self.row_nodes[row.full_id] = parent.add_leaf(label, data=row)
            position = end
        self.shown = len(self.timeline.rows)
        if not self.timeline.complete:
            hint = Text('... older checkpoints: move here to read them', style='dim')
            self.more = tree.root.add_leaf(hint, data=MORE)

    def refresh_if_changed(self) -> None:
        """The timer: reloads the timeline when the branch moved, keeping the selection."""
        try:
            moved = self.timeline.changed()
        except CheckpointError:
            return
        if not moved:
            return
        selected = self.selected()
        self.load(reset=True)
        node = self.row_nodes.get(selected.full_id) if selected is not None else None
        if node is not None:
            self.call_after_refresh(self.timeline_tree.move_cursor, node)
        self.measure()

    def measure(self) -> None:
        """The storage line, measured in a thread (``status`` scans the desk)."""
        if self.storage:
            self.run_worker(self.storage_line, thread=True, exclusive=True, group='storage')

    def storage_line(self) -> None:
        try:
            storage = self.checkpoints.status().storage
            line = f'Storage: {"no checkpoints yet" if storage is None else describe(storage)}'
        except CheckpointError as error:
            line = f'Storage: {views.plain(str(error))}'
        self.call_from_thread(self.query_one('#storage', Static).update, Text(line))

    # -- what the cursor is on --------------------------------------------------------------

    def selected(self) -> Row | None:
        node = self.timeline_tree.cursor_node
        return node.data if node is not None and isinstance(node.data, Row) else None

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted[Row | Run | str]) -> None:
        data = event.node.data
        if data == MORE:
            self.load()
        elif isinstance(data, Row):
            self.show_checkpoint(data)
        elif isinstance(data, Run):
            self.show_run(data)

    def on_tree_node_selected(self, event: Tree.NodeSelected[Row | Run | str]) -> None:
        if isinstance(event.node.data, Row):
            self.query_one('#diff-pane').focus()

    def show_checkpoint(self, row: Row) -> None:
        try:
            diff = self.checkpoints.introduced(row.full_id)
        except CheckpointError as error:
            self.report(error)
            return
        prompt = self.timeline.label(row.checkpoint.turn)
        self.query_one('#summary', Static).update(views.header(row.checkpoint, prompt))
        self.show_diff(diff)

    def show_run(self, run: Run) -> None:
        summary = views.run_label(run, self.timeline.label(run.turn))
        summary.append('\nEnter or space folds and unfolds the turn.', style='dim')
        self.query_one('#summary', Static).update(summary)
        self.query_one('#files', OptionList).clear_options()
        self.query_one('#diff', Static).update('')
        self.diff = None

    def show_diff(self, diff: Diff, title: str | None = None) -> None:
        self.diff = diff
        files = self.query_one('#files', OptionList)
        files.clear_options()
        files.add_options([views.file_line(change) for change in diff.changes])
        files.highlighted = 0 if diff.changes else None
        self.query_one('#diff', Static).update(
            views.diff_view(diff, title or views.diff_title(diff))
        )
        self.query_one('#diff-pane', VerticalScroll).scroll_home(animate=False)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        if self.diff is None or event.option_index >= len(self.diff.changes):
            return
        change = self.diff.changes[event.option_index]
        one = Diff(self.diff.from_id, self.diff.to_id, (change,))
        self.query_one('#diff', Static).update(views.diff_view(one, views.diff_title(one)))
        self.query_one('#diff-pane').focus()

    # -- keys -------------------------------------------------------------------------------

    def action_down(self) -> None:
        self.move('down')

    def action_up(self) -> None:
        self.move('up')

    def move(self, way: str) -> None:
        focused = self.focused or self.timeline_tree
        for name in (f'action_cursor_{way}', f'action_scroll_{way}'):
            action = getattr(focused, name, None)
            if action is not None:
                action()
                return

    def action_to_timeline(self) -> None:
        search = self.query_one('#search', Input)
        search.remove_class('shown')
        self.timeline_tree.focus()

    def action_search(self) -> None:
        search = self.query_one('#search', Input)
        search.add_class('shown')
        search.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.query_text = event.value.strip()
        self.action_to_timeline()
        self.action_search_next()

    def action_search_next(self) -> None:
        if not self.query_text:
            return
        selected = self.selected()
        after = -1
        if selected is not None:
            after = next(i for i, r in enumerate(self.timeline.rows) if r is selected)
        try:
            found = self.timeline.find(self.query_text, after)
        except CheckpointError as error:
            self.report(error)
            return
        self.show_rows()
        if found is None:
            self.notify(f'no older checkpoint matches {self.query_text!r}', severity='warning')
            return
        node = self.row_nodes[self.timeline.rows[found].full_id]
        if node.parent is not None:
            node.parent.expand()
        self.call_after_refresh(self.timeline_tree.move_cursor, node)

    def action_desk_diff(self) -> None:
        row = self.selected()
        if row is None:
            return
        try:
            diff = self.checkpoints.diff(row.full_id)
        except CheckpointError as error:
            self.report(error)
            return
        self.show_diff(diff)
        self.query_one('#diff-pane').focus()

    def highlighted_file(self, key: str, what: str) -> str | None:
        """The path of the file highlighted in the file list (the first one until Tab moves
        there and another is chosen); None, and a note, when no file is listed."""
        files = self.query_one('#files', OptionList)
        index = files.highlighted
        if self.diff is None or index is None or index >= len(self.diff.changes):
            self.notify(f'select a checkpoint first: {key} shows {what} of one of its files')
            return None
        return self.diff.changes[index].path

    def action_file_history(self) -> None:
        """The checkpoints that changed the file highlighted in the file list."""
        path = self.highlighted_file('h', 'the history')
        if path is None:
            return
        try:
            entries = self.checkpoints.log(path, HISTORY)
        except CheckpointError as error:
            self.report(error)
            return
        self.query_one('#diff', Static).update(views.file_history(path, entries, HISTORY))
        self.query_one('#diff-pane', VerticalScroll).scroll_home(animate=False)

    def action_blame(self) -> None:
        """Who wrote each line of the file highlighted in the file list, as the checkpoint
        shown holds it (the desk, after ``d``)."""
        path = self.highlighted_file('b', 'who wrote each line')
        if path is None or self.diff is None:
            return
        try:
            blame = self.checkpoints.blame(path, self.diff.to_id)
        except CheckpointError as error:
            self.report(error)
            return
        self.query_one('#diff', Static).update(views.blame_view(blame))
        self.query_one('#diff-pane', VerticalScroll).scroll_home(animate=False)

    def select_start(self) -> None:
        """Puts the cursor on the checkpoint to start from (``start``), else the newest."""
        index = self.timeline.index_of(self.start) if self.start is not None else None
        if index is None:
            self.timeline_tree.move_cursor_to_line(0)
            return
        self.show_rows()
        node = self.row_nodes[self.timeline.rows[index].full_id]
        if node.parent is not None:
            node.parent.expand()
        self.call_after_refresh(self.timeline_tree.move_cursor, node)

    def action_restore(self) -> None:
        row = self.selected()
        if row is None:
            return
        checkpoint = row.checkpoint.checkpoint_id
        self.confirm(
            f'Restore the desk to checkpoint {checkpoint}?',
            lambda dry_run: self.checkpoints.restore_with_result(row.full_id, dry_run=dry_run),
        )

    def action_undo(self) -> None:
        """The command line's ``undo``: the agent's last step back."""
        self.confirm('Undo the last step?', lambda dry_run: self.checkpoints.undo(dry_run=dry_run))

    def action_redo(self) -> None:
        """The command line's ``redo``: the last undo reversed."""
        self.confirm('Redo the last undo?', lambda dry_run: self.checkpoints.redo(dry_run=dry_run))

    def confirm(self, question: str, step: Callable[[bool], RestoreResult]) -> None:
        """Shows ``step``'s dry-run plan (or the refusal the run would meet); runs it for real
        on ``y``."""
        try:
            plan = step(True)
        except CheckpointError as error:
            self.report(error)
            return

        def answered(yes: bool | None) -> None:
            if not yes:
                self.notify('nothing was changed')
                return
            try:
                done = step(False)
            except CheckpointError as error:
                self.report(error)
                return
            self.notify(
                f'{done.action}: the desk holds checkpoint {done.target_id}; the files before '
                f'are checkpoint {done.before_id} ({BACK[done.action]})'
            )
            self.refresh_if_changed()

        back = BACK[plan.action].split()[0]
        self.push_screen(Confirm(views.plan_text(plan, question, back)), answered)

    def report(self, error: CheckpointError) -> None:
        self.notify(views.plain(str(error)), severity='error', timeout=10)


def run(checkpoints: Checkpoints, start: str | None = None) -> int:
    """Runs the browser in this terminal until ``q`` (the cursor first on checkpoint ``start``,
    when given); the exit status."""
    app = Browser(checkpoints, start=start)
    app.run()
    return app.return_code or 0
