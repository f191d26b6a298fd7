"""The desk's policy verbs of the ``Checkpoints`` facade: protected paths and size budgets.

A mixin of :class:`~trading_checkpoints.Checkpoints` (kept apart so the facade's module stays
one page per topic); each verb checks its arguments, opens a session and hands it to
``ops/policy.py``, which says where the policy is kept and what it binds.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import replace
from typing import TypeVar

from .ops import deskconfig, engine, policy
from .ops.deskconfig import DeskConfig
from .ops.policy import Budget, BudgetUse

__all__ = ['Budget', 'BudgetUse', 'PolicyVerbs']

_Self = TypeVar('_Self', bound='PolicyVerbs')


def _paths(paths: Sequence[str] | str) -> list[str]:
    return [paths] if isinstance(paths, str) else list(paths)


class PolicyVerbs:
    """Protected paths (the agent may read them but not change them) and size budgets (the
    agent is told when a write takes a path past its budget). Changing them is a person's act:
    the MCP server has no tool for it, and the hooks deny an agent's shell command that would."""

    desk_config: DeskConfig

    def protect(self, paths: Sequence[str] | str) -> tuple[str, ...]:
        """Protects files or folders (desk-relative, tracked) from the agent's writes; returns
        every protected path. A folder covers everything below it.

        Example::

            checkpoints.protect(['notes/risk-limits.md', 'skills/agent'])
        """
        return self._change_protected(_paths(paths), [])

    def unprotect(self, paths: Sequence[str] | str) -> tuple[str, ...]:
        """Stops protecting paths (each must be one of :meth:`protected`); returns the rest."""
        return self._change_protected([], _paths(paths))

    def protected(self) -> tuple[str, ...]:
        """The protected paths (``()`` when none, or before the first checkpoint)."""
        return policy.read(self.desk_config.repository).protected

    def _change_protected(self, added: list[str], removed: list[str]) -> tuple[str, ...]:
        deskconfig.check_desk(self.desk_config, must_exist=False)
        with engine.locked(self.desk_config, verb='protect') as session:
            return policy.protect(session, added, removed)

    def budget(self, path: str, size: int | None = None, *, tokens: int | None = None) -> Budget:
        """Sets the size budget of a tracked file or folder: ``size`` bytes, or ``tokens``
        tokens (counted as four bytes each). When a hooked write takes it past the budget, the
        write goes ahead and the agent is told (once per turn)."""
        policy.check_budget(size, tokens)
        deskconfig.check_desk(self.desk_config, must_exist=False)
        with engine.locked(self.desk_config, verb='budget') as session:
            return policy.set_budget(session, path, size, tokens)

    def remove_budget(self, path: str) -> None:
        """Drops the budget of ``path``."""
        engine.require_repository(self.desk_config)
        with engine.locked(self.desk_config, verb='budget') as session:
            policy.remove_budget(session, path)

    def budgets(self) -> list[BudgetUse]:
        """Each budget with what its path holds now (``over`` when past it)."""
        return policy.uses(self.desk_config)

    def for_agent(self: _Self) -> _Self:
        """This desk as the agent's own tools should see it (the MCP server's): a restore,
        undo, redo or turn's rewind that would change a protected path raises
        ``ProtectedPathError`` and changes nothing. A person's restores are not bound."""
        bound = copy.copy(self)
        bound.desk_config = replace(self.desk_config, for_agent=True)
        return bound
