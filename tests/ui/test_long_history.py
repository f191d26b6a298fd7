"""A 10,000-checkpoint history in the browser: it opens on the first page only, reads one more
page each time the cursor reaches the end, and a search reads pages only until it finds."""

from __future__ import annotations

import asyncio
from pathlib import Path

from helpers.builders import write
from textual.widgets import Tree

from trading_checkpoints import Checkpoints
from trading_checkpoints.store import metadata
from trading_checkpoints.store.repo import ShadowRepo
from trading_checkpoints.ui.app import Browser
from trading_checkpoints.ui.timeline import PAGE_SIZE

COUNT = 10_000


def long_history(cps: Checkpoints, desk: Path) -> None:
    """One real snapshot, then ``COUNT`` commits of the same tree on top of it, written to the
    store in one pack (a snapshot each would take minutes)."""
    write(desk, 'Memory.md', '# Memory\n')
    cps.snapshot('the first')
    repo = ShadowRepo.open(cps.repository_directory)
    assert repo is not None
    try:
        head = repo.head()
        assert head is not None
        tree = repo.commit_info(head).tree
        commits, parent = [], head
        for number in range(COUNT):
            message = metadata.compose(f'step {number}', 'write_file', None, None)
            commit = repo.make_commit(tree, parent, message)
            commits.append(commit)
            parent = commit.id
        repo.write_objects(commits)
        repo.update_branch(head, parent, 'a long history')
    finally:
        repo.close()


def test_ten_thousand_checkpoints_are_read_a_page_at_a_time(cps: Checkpoints, desk: Path) -> None:
    long_history(cps, desk)

    async def main() -> None:
        app = Browser(cps, poll=0, storage=False)
        async with app.run_test(size=(120, 32)) as pilot:
            await pilot.pause()
            assert len(app.timeline.rows) == PAGE_SIZE
            tree: Tree = app.query_one('#timeline', Tree)
            assert tree.cursor_node is not None
            assert tree.cursor_node.label.plain.endswith('step 9999  [write_file]')
            await pilot.press('end')
            assert len(app.timeline.rows) == 2 * PAGE_SIZE
            await pilot.press('home', 'slash', *'step 9444', 'enter')
            assert len(app.timeline.rows) == 3 * PAGE_SIZE  # read on to the page holding it
            assert tree.cursor_node is not None and 'step 9444' in tree.cursor_node.label.plain
            await pilot.press('q')
        assert app.return_code == 0

    asyncio.run(main())
