"""The agent-integration verbs of ``Checkpoints``: guards, decorators and turns."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, TypeVar

from .deskhandle import DeskHandle
from .ops.results import RestoreResult, TurnInfo

if TYPE_CHECKING:
    from .ops.guard import Guard
    from .ops.turns import Turn

_F = TypeVar('_F', bound=Callable[..., Any])


class AgentVerbs(DeskHandle):
    """Snapshot before an agent's writes, and group its checkpoints by turn."""

    def before_write(
        self,
        tool: str | None = None,
        *,
        path_arg: str | Sequence[str] | None = 'path',
        strict: bool = False,
    ) -> Callable[[_F], _F]:
        """Decorator: snapshot before the decorated write tool runs (see ``guard.before_write``).

        Example::

            @checkpoints.before_write('write_file', path_arg='path')
            def write_file(path: str, content: str) -> None: ...
        """
        from .ops.guard import before_write

        return before_write(self, tool, path_arg=path_arg, strict=strict)

    def guard(
        self,
        action: str,
        *,
        tool: str | None = None,
        paths: Sequence[str] | str | None = None,
        strict: bool = False,
        turn: Turn | None = None,
    ) -> Guard:
        """Context manager: snapshot before the write in its block (see ``guard.Guard``).

        Example::

            with checkpoints.guard('write_file Memory.md'):
                (desk / 'Memory.md').write_text(text)
        """
        from .ops.guard import Guard

        return Guard(self, action, tool=tool, paths=paths, strict=strict, turn=turn)

    def turn(self, label: str = '', message_id: str | None = None) -> AbstractContextManager[Turn]:
        """Context manager: tag every checkpoint taken in its block with one turn id.

        Example::

            with checkpoints.turn('tidy the notes', message_id='msg_17') as turn:
                write_file('notes/a.md', '...')
        """
        from .ops.turns import open_turn

        return open_turn(self, label, message_id)

    def restore_turn(
        self,
        turn_id: str,
        dry_run: bool = False,
        force: bool = True,
        *,
        on_external: str | None = None,
    ) -> RestoreResult:
        """Puts the tracked files back as they were before turn ``turn_id`` began.

        ``force`` and ``on_external`` work as for :meth:`Checkpoints.restore`: with
        ``force=False`` only the agent's changes are reverted.
        """
        from .ops.turns import first_checkpoint

        target = first_checkpoint(self, turn_id)
        restore = self.restore_with_result  # type: ignore[attr-defined]
        return restore(target, dry_run=dry_run, force=force, on_external=on_external)

    def turns(self, limit: int | None = 20) -> list[TurnInfo]:
        """The recorded turns, newest first, each with its checkpoints (newest first)."""
        from .ops.turns import turns

        return turns(self, limit)
