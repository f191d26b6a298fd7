"""The browser driven headless through Textual's pilot, and what its panes show, for the tests
under ``tests/ui`` (import it after ``pytest.importorskip('textual')``)."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Awaitable, Callable
from typing import Any

from rich.console import Console
from rich.text import Text
from textual.pilot import Pilot
from textual.widgets import Static, Tree

from trading_checkpoints.ui.app import Browser
from trading_checkpoints.ui.timeline import Row, Run

Script = Callable[[Any, Pilot], Awaitable[None]]


def drive(app: Browser, script: Script, size: tuple[int, int] = (120, 36)) -> None:
    """Runs ``app`` headless and plays ``script`` on it; the app must have exited by the end."""

    async def main() -> None:
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await script(app, pilot)
            await pilot.pause()

    asyncio.run(main())


class Noted(Browser):
    """The browser, keeping the messages it shows as notifications."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.notes: list[str] = []

    def notify(self, message: str, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        self.notes.append(message)
        super().notify(message, *args, **kwargs)


def text_of(app: Browser, selector: str) -> str:
    """The plain text a ``Static`` shows now."""
    content = app.query_one(selector, Static).render()
    return content.plain if isinstance(content, Text) else str(content)


def diff_text(app: Browser) -> str:
    """The diff pane's text, rendered as a terminal would show it, colours left out."""
    console = Console(width=200, file=io.StringIO(), record=True, color_system=None)
    console.print(app.query_one('#diff', Static).content)
    return console.export_text()


def visible(app: Browser) -> list[str]:
    """The timeline's lines as shown: turn rows, checkpoint rows (indented under a turn)."""
    tree: Tree = app.query_one('#timeline', Tree)
    lines = []
    for line in range(tree.last_line + 1):
        node = tree.get_node_at_line(line)
        assert node is not None
        indent = '' if node.parent is tree.root else '  '
        lines.append(indent + node.label.plain)
    return lines


def cursor(app: Browser) -> Row | Run | str | None:
    node = app.query_one('#timeline', Tree).cursor_node
    return None if node is None else node.data
