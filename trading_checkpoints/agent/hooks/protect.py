"""The desk's policy, as the hooks hold the agent to it, and the answers that tell the agent.

- Before a write tool aimed at a protected path (``ops/protectmatch.py``: as written, through
  symlinks and ``..``, or the same file): denied, nothing recorded; the agent is told why.
- Before a shell command that would change the policy or the checkpoint repositories
  (:func:`refuse_command`): denied. A tripwire, not a sandbox: it reads the command's words;
  a command that builds them at run time (a variable, a script file, another language) is
  not seen, and is undone afterwards only where it changed a protected path.
- After a shell command: what it changed at a protected path is put back
  (``ops/putback.py``) and the agent told.
- After a write tool or shell command that changed a budgeted path now past its budget: the
  agent is told, once per turn and path (:func:`budget_notices`).

:class:`Answer` gathers what the event's answer says and :meth:`Answer.stdout` writes it in
the harness's own terms (see ``tests/helpers/hook_events/real/README.md``): Claude Code's
``PreToolUse`` ``permissionDecision: "deny"``, ``PostToolUse`` ``decision: "block"`` and
``additionalContext``; Gemini CLI's ``BeforeTool`` ``decision: "deny"``, ``AfterTool``
``decision: "block"`` and ``additionalContext``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.durability import write_atomically
from ...core.paths import Allowlist
from ...errors import CheckpointError
from .events import (
    AFTER_TOOL,
    BEFORE_TOOL,
    GEMINI,
    TOOL_FAILED,
    shell_words,
    simple_commands,
)
from .place import desk_holding, read_small, session_file, turn_of

if TYPE_CHECKING:
    from ...checkpoints import Checkpoints
    from ...ops.policy import BudgetUse

# The checkpoints verbs that change the policy or what is tracked unless given only these words
# (then they list it), and the hook verb's subcommands that change the hooks.
POLICY_VERBS = frozenset({'protect', 'budget', 'track'})
LISTING = frozenset({'--json', '-h', '--help'})
HOOK_CHANGES = frozenset({'install', 'uninstall'})
_VALUED = frozenset({'--desk', '--workspace'})
PROGRAMS = frozenset({'checkpoints', 'trading_checkpoints'})
REPOSITORIES = '.checkpoints'
MAX_DEPTH = 3  # bash -c '...' inside bash -c '...'
_RUNS_TEXT = frozenset({'-c', 'eval'})  # what runs the next word as a command line
_VERB_TEXT = re.compile(r'checkpoints\b.*\b(protect|budget|track|hook)\b')
TOLD = 'told.json'


@dataclass
class Answer:
    """What an event's answer tells the harness: deny the tool (before it), block (after it:
    the tool ran, its result is replaced by the reason or the reason added to it), and
    additional context for the model."""

    deny: list[str] = field(default_factory=list)
    block: list[str] = field(default_factory=list)
    context: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.deny or self.block or self.context)

    def stdout(self, harness: str | None, event: str, kind: str) -> str:
        """The JSON line the harness reads ('' or ``{}`` when there is nothing to say)."""
        out: dict[str, Any] = {}
        if kind == BEFORE_TOOL and self.deny:
            reason = ' '.join(self.deny)
            if harness == GEMINI:
                out = {'decision': 'deny', 'reason': reason}
            else:
                out = {
                    'hookSpecificOutput': {
                        'hookEventName': event,
                        'permissionDecision': 'deny',
                        'permissionDecisionReason': reason,
                    }
                }
        elif kind in (AFTER_TOOL, TOOL_FAILED):
            context = list(self.context)
            if self.block and kind == AFTER_TOOL:
                out = {'decision': 'block', 'reason': ' '.join(self.block)}
            else:
                context = self.block + context  # a failed tool's event has no block decision
            if context:
                out['hookSpecificOutput'] = {
                    'hookEventName': event,
                    'additionalContext': ' '.join(context),
                }
        if out:
            return json.dumps(out) + '\n'
        return '{}\n' if harness == GEMINI else ''


# -- before a write tool ---------------------------------------------------------------------


def refuse_write(
    workspace: Path, targets: Iterable[tuple[str, Sequence[str]]], raw: Sequence[str]
) -> str | None:
    """Why a write is denied (None: it is not): a target a desk's policy protects. Every desk
    a target may reach is asked (the desks ``targets`` name, and the one each path as the tool
    named it, ``raw``, resolves into), with every spelling of every target."""
    from ...ops.policy import read
    from ...ops.protectmatch import denial, hits
    from ...workspace import Workspace, desk_name_problem

    asked: dict[str, list[str]] = {}
    for name, paths in targets:
        asked.setdefault(name, []).extend(paths)
    for path in raw:
        reached = desk_holding(workspace, os.path.realpath(path))
        if reached is not None and desk_name_problem(reached) is None:
            asked.setdefault(reached, [])
    reasons = []
    for name, paths in asked.items():
        cps = Workspace(workspace).desk(name)
        if not cps.desk_directory.is_dir():
            continue
        found = hits(cps.desk_directory, read(cps.repository_directory), [*raw, *paths])
        if found:
            reasons.append(denial(found, name))
    return ' '.join(reasons) or None


# -- before a shell command ------------------------------------------------------------------


def refuse_command(command: object, depth: int = 0) -> str | None:
    """Why a shell command is denied (None: it is not): it names the checkpoint repositories'
    folder (``.checkpoints``), or runs a checkpoints verb that changes the policy, what is
    tracked or the hooks (``protect``, ``budget``, ``track`` with paths, ``--remove`` or
    ``--reset``; ``hook install``/``uninstall``), also in the text a shell's ``-c`` or
    ``eval`` runs."""
    if not isinstance(command, str):
        return None
    if REPOSITORIES in command:
        return _repositories()
    for line in command.replace('\\\n', ' ').split('\n'):
        words = shell_words(line)
        if words is None:  # an open quote: judged by its text
            found = _VERB_TEXT.search(line)
            if found:
                return _verb(found.group(1))
            continue
        for simple in simple_commands(words):
            if any(REPOSITORIES in word for word in simple):
                return _repositories()
            verb = _policy_verb(simple)
            if verb is not None:
                return _verb(verb)
            if depth < MAX_DEPTH:
                for before, word in zip(['', *simple[:-1]], simple, strict=True):
                    if before in _RUNS_TEXT or simple[0] in _RUNS_TEXT:  # bash -c '...'
                        nested = refuse_command(word, depth + 1)
                        if nested is not None:
                            return nested
    return None


def _policy_verb(words: list[str]) -> str | None:
    """The policy-changing checkpoints verb a simple command runs, if any."""
    for at, word in enumerate(words):
        if os.path.basename(word).split('.')[0] not in PROGRAMS:
            continue
        rest = _without_target_options(words[at + 1 :])
        if rest and rest[0] in POLICY_VERBS and not set(rest[1:]) <= LISTING:
            return rest[0]
        if rest[:1] == ['hook'] and rest[1:2] and rest[1] in HOOK_CHANGES:
            return f'hook {rest[1]}'
    return None


def _without_target_options(words: list[str]) -> list[str]:
    """``words`` less ``--desk NAME``, ``--workspace DIR`` (and their ``=`` spellings)."""
    out, skip = [], False
    for word in words:
        if skip:
            skip = False
        elif word in _VALUED:
            skip = True
        elif not word.startswith(tuple(f'{option}=' for option in _VALUED)):
            out.append(word)
    return out


def _repositories() -> str:
    return (
        'This command names the checkpoint repositories (.checkpoints): their history and '
        "the desk's policy are a person's to change, so the checkpoints hook denies it. Read "
        'the history with the checkpoints commands (list, log, diff, show) instead.'
    )


def _verb(verb: str) -> str:
    listing = f' `checkpoints {verb}` alone lists what is set.' if verb in POLICY_VERBS else ''
    return (
        f'`checkpoints {verb}` changes what the checkpoints hooks hold you to (protected '
        "paths, budgets, tracked paths, the hooks): that is a person's act, so the checkpoints "
        f'hook denies it.{listing}'
    )


# -- after a shell command -------------------------------------------------------------------


def put_back_text(desk: str, paths: Sequence[str]) -> str:
    """What the agent is told when its command's change to protected paths was put back."""
    shown = ', '.join(paths[:5]) + (' ...' if len(paths) > 5 else '')
    return (
        f'Your command changed {shown}, protected on desk {desk!r}: you may read it but not '
        'change it, so the checkpoints hook put it back as it was before the command. Leave '
        'it as it is.'
    )


# -- budgets ---------------------------------------------------------------------------------


def budget_notices(
    workspace: Path, session: str | None, desk: str, cps: Checkpoints, touched: Iterable[str]
) -> list[str]:
    """The budgets past their limit at or above a ``touched`` path (desk-relative), each told
    once per turn of the session (every time without a session)."""
    from ...ops.policy import read, uses

    policy = read(cps.repository_directory)
    touched = list(touched)
    budgets = [b for b in policy.budgets if any(Allowlist([b.path]).covers(p) for p in touched)]
    if not budgets or not cps.desk_directory.is_dir():
        return []
    over = [use for use in uses(cps.desk_config, policy) if use.over and use.budget in budgets]
    return _once_per_turn(workspace, session, desk, over)


def _once_per_turn(
    workspace: Path, session: str | None, desk: str, over: list[BudgetUse]
) -> list[str]:
    notices = {f'{desk}\0{use.budget.path}': f'{use.notice()} (desk {desk!r}).' for use in over}
    turn = turn_of(workspace, session)
    if not notices or session is None or turn is None:
        return list(notices.values())
    path = session_file(workspace, session, TOLD, create=True)
    told = _told(path, turn[0])
    fresh = [key for key in notices if key not in told]
    if fresh:
        state = {'turn': turn[0], 'told': sorted(set(told) | set(fresh))[:200]}
        try:
            write_atomically(path, json.dumps(state).encode(), durable=False)
        except (OSError, CheckpointError):
            pass  # told again next time: better than never
    return [notices[key] for key in fresh]


def _told(path: Path, turn: str) -> list[str]:
    try:
        data = read_small(path)
        state = json.loads(data) if data else {}
    except (ValueError, OSError):
        return []
    if not isinstance(state, dict) or state.get('turn') != turn:
        return []
    told = state.get('told')
    return [key for key in told if isinstance(key, str)] if isinstance(told, list) else []
