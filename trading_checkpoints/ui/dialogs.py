"""The browser's confirmation: a restore's or an undo's exact plan, shown before anything is
changed, answered with ``y`` (go ahead) or ``n`` / Esc (cancel)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static


class Confirm(ModalScreen[bool]):
    """A plan and a question; dismissed with True (``y``) or False (``n``, Esc)."""

    DEFAULT_CSS = """
    Confirm { align: center middle; }
    Confirm > VerticalScroll {
        width: 80%; height: auto; max-height: 80%;
        border: thick $warning; background: $surface; padding: 1 2;
    }
    """
    BINDINGS = [
        Binding('y', 'answer(True)', 'Go ahead'),
        Binding('n', 'answer(False)', 'Cancel'),
        Binding('escape', 'answer(False)', 'Cancel', show=False),
    ]

    def __init__(self, plan: Text) -> None:
        super().__init__()
        self.plan = plan

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(self.plan, id='plan')

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
