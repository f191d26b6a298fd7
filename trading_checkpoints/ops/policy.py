"""A desk's policy: the paths the agent may read but not change, and the size budgets it is told
about.

The policy is kept in the desk's repository config, beside the tracked paths it refines, never
in the desk (where the agent writes)::

    [checkpoints]
        protected = notes/risk-limits.md
        protected = skills/agent
    [budget "Memory.md"]
        bytes = 20480
    [budget "memory"]
        tokens = 5000

Why the config and not a file of its own in the repository folder: the config already has the
one reader that treats it as untrusted (``store/config``: no link followed, no include, size
capped, errors that never print a value) and the one writer that edits it line by line, reads
the result back and replaces it atomically, under the desk's lock; ``checkpoints.tracked``, whose
paths the protected ones must lie in, is there; git reads it too (``git config --get-all
checkpoints.protected``). A file of its own would need a second format, reader and writer. Like
the tracked paths, the policy stays with the repository: a clone or a pull does not carry it.

Paths are desk-relative, as tracked paths are, and matched by the same rule (``core.paths.
Allowlist``): a folder covers what is below it at a component boundary. A protected path must be
tracked (a change is put back from a checkpoint, which holds only tracked files); a budget too
(its size is the tracked files at or below it: regular files and symlinks, never followed).
``--tokens N`` is kept as given and counted as ``4 * N`` bytes (a token is about four bytes of
English text).

The policy binds the agent, never a person: the hooks deny an agent's write tool aimed at a
protected path and put back what its shell command changed there, the library's guards raise
:class:`ProtectedPathError`, and restores made for the agent (the MCP server's,
``Checkpoints.for_agent``) refuse to change one (:func:`refuse`); a person's ``checkpoints
restore`` does not ask.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..core.paths import Allowlist, path_problem
from ..desk.folders import DeskFolders
from ..desk.walk import walk
from ..errors import (
    BadPathError,
    CorruptRepositoryError,
    InvalidArgumentError,
    ProtectedPathError,
)
from ..store import config as repo_config
from ..store.config import RepoConfig
from .deskconfig import DeskConfig
from .session import LockedSession
from .storageuse import size_text

SECTION, PROTECTED = b'checkpoints', b'protected'
BUDGET, BYTES, TOKENS = b'budget', b'bytes', b'tokens'
BYTES_PER_TOKEN = 4
MAX_BUDGET = 1 << 50


@dataclass(frozen=True)
class Budget:
    """A size budget: ``path`` (a file or folder) may hold ``limit`` bytes; ``tokens`` when it
    was given in tokens (``limit`` is then ``4 * tokens``)."""

    path: str
    limit: int
    tokens: int | None = None

    def describe(self) -> str:
        if self.tokens is not None:
            return f'{self.tokens:,} token{"" if self.tokens == 1 else "s"}'
        return size_text(self.limit)


@dataclass(frozen=True)
class BudgetUse:
    """A budget and what its path holds now (bytes)."""

    budget: Budget
    size: int

    @property
    def over(self) -> bool:
        return self.size > self.budget.limit

    def held(self) -> str:
        """What the path holds: ``24.0 KiB``, or ``about 6,144 tokens (24.0 KiB)``."""
        size = size_text(self.size)
        if self.budget.tokens is not None:
            return f'about {self.size // BYTES_PER_TOKEN:,} tokens ({size})'
        return size

    def describe(self) -> str:
        """``24.0 KiB of 20.0 KiB``."""
        return f'{self.held()} of {self.budget.describe()}'

    def notice(self) -> str:
        """What the agent is told when it is over: ``Memory.md is 24.0 KiB, its budget is
        20.0 KiB: condense it``."""
        budget = self.budget
        return f'{budget.path} is {self.held()}, its budget is {budget.describe()}: condense it'

    def to_dict(self) -> dict[str, object]:
        budget = self.budget
        return {
            'path': budget.path,
            'bytes': budget.limit,
            'tokens': budget.tokens,
            'size': self.size,
            'over': self.over,
        }


@dataclass(frozen=True)
class Policy:
    """What a desk's repository config says: the protected paths (as an allowlist's entries)
    and the budgets."""

    protected: tuple[str, ...] = ()
    budgets: tuple[Budget, ...] = ()

    @functools.cached_property
    def matcher(self) -> Allowlist | None:
        """The tracked paths' matcher, over the protected paths (None: none)."""
        return Allowlist(self.protected) if self.protected else None

    def covering(self, path: str) -> str | None:
        """The protected entry at or above desk-relative ``path``, or None."""
        if self.matcher is None or not self.matcher.covers(path):
            return None
        return next(entry for entry in self.protected if Allowlist([entry]).covers(path))


# -- reading ------------------------------------------------------------------------------


def read(repository: Path) -> Policy:
    """The policy in a desk's repository config (none: an empty policy). A value that is not
    a usable path or size is refused (``CorruptRepositoryError`` naming the line, never the
    value): a policy must never be half read."""
    return of_config(repo_config.load(repository, missing_ok=True))


def of_config(config: RepoConfig) -> Policy:
    protected = []
    for setting in config.all(SECTION, PROTECTED):
        path = _vetted_path(setting.value, config, setting.line, 'checkpoints.protected')
        protected.append(path)
    budgets = []
    for subsection in config.subsections(BUDGET):
        path = _vetted_path(subsection, config, None, 'a [budget "PATH"] section')
        given = config.get(BUDGET, TOKENS, subsection) or config.get(BUDGET, BYTES, subsection)
        if given is None:
            continue  # a section without a value: no budget
        number = _whole_number(given.value)
        if number is None:
            raise CorruptRepositoryError(
                f'{config.where(given)}: the budget of {path!r} is not a whole number of at '
                'least 1',
                path=config.path,
            )
        tokens = number if given.name == TOKENS else None
        budgets.append(Budget(path, number * (BYTES_PER_TOKEN if tokens else 1), tokens))
    return Policy(Allowlist(protected).entries if protected else (), tuple(budgets))


def _vetted_path(value: bytes | None, config: RepoConfig, line: int | None, key: str) -> str:
    text = None if value is None else _text(value).rstrip('/')
    problem = 'no value' if text is None else path_problem(text)
    if problem:
        where = f'{config.path} (line {line})' if line is not None else str(config.path)
        raise CorruptRepositoryError(
            f'{key} in {where} is not a usable desk path: it has {problem}', path=config.path
        )
    assert text is not None
    return text


def _text(value: bytes) -> str:
    return value.decode('utf-8', 'surrogateescape')  # a name that is not UTF-8 kept as it is


def _bytes(path: str) -> bytes:
    return path.encode('utf-8', 'surrogateescape')


def _whole_number(value: bytes | None) -> int | None:
    """The number a budget's value holds (None: none, or out of bounds). Its length is
    bounded before it is read: ``int`` of thousands of digits is refused, or slow."""
    if value is None:
        return None  # a bare key
    text = value.strip()
    if not text.isdigit() or len(text) > 16 or not 1 <= int(text) <= MAX_BUDGET:
        return None
    return int(text)


# -- changing it (a person's act) ------------------------------------------------------------


def normalized(tracked: Allowlist, paths: Iterable[str], what: str) -> list[str]:
    """``paths`` as desk-relative entries, each checked to be tracked."""
    out = []
    for raw in paths:
        if not isinstance(raw, str):
            raise InvalidArgumentError(
                f'a {what} path must be a string, not {type(raw).__name__}', name='paths', value=raw
            )
        path = _entry(raw)
        problem = path_problem(path)
        if problem:
            raise BadPathError(f'{raw!r} is not a usable desk path: it has {problem}', raw)
        if not tracked.covers(path):
            raise BadPathError(
                f'{path!r} is not tracked (tracked paths: {", ".join(tracked.entries)}); a '
                f'{what} path must be, so a change to it can be told and put back',
                raw,
            )
        out.append(path)
    return out


def _entry(raw: str) -> str:
    """A path as a person typed it, as an entry: ``/`` for ``\\``, no ``./`` before it, no
    ``/`` after it."""
    path = raw.replace('\\', '/').strip()
    while path.startswith('./'):
        path = path[2:]
    return path.rstrip('/')


def protect(
    session: LockedSession, added: Sequence[str], removed: Sequence[str]
) -> tuple[str, ...]:
    """Adds and removes protected paths; the protected paths now."""
    added_paths = normalized(session.allowlist, added, 'protected')
    removed_paths = normalized(session.allowlist, removed, 'protected')
    current = list(of_config(session.repo.config).protected)
    for path in removed_paths:
        if path not in current:
            raise BadPathError(
                f'{path!r} is not one of the protected paths ({", ".join(current) or "none"})',
                path,
            )
        current.remove(path)
    for path in added_paths:
        if current and Allowlist(current).covers(path):
            continue  # already covered
        current = [entry for entry in current if not Allowlist([path]).covers(entry)]
        current.append(path)
    values = [_bytes(entry) for entry in current]
    written = repo_config.set_values(session.repo.path, SECTION, PROTECTED, values)
    return of_config(written).protected


def check_budget(limit: int | None, tokens: int | None) -> int:
    """The number of a budget given in bytes or in tokens (one of them), checked."""
    if (limit is None) == (tokens is None):
        raise InvalidArgumentError(
            'give a budget in bytes or in tokens (one of them)', name='size', value=limit
        )
    number = limit if tokens is None else tokens
    if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= MAX_BUDGET:
        raise InvalidArgumentError(
            f'a budget must be a whole number of at least 1, not {number!r}',
            name='tokens' if tokens is not None else 'size',
            value=number,
        )
    return number


def set_budget(session: LockedSession, path: str, limit: int | None, tokens: int | None) -> Budget:
    """Sets the budget of ``path``: ``limit`` bytes, or ``tokens`` tokens."""
    number = check_budget(limit, tokens)
    [entry] = normalized(session.allowlist, [path], 'budget')
    key, other = (TOKENS, BYTES) if tokens is not None else (BYTES, TOKENS)
    where, sub = session.repo.path, _bytes(entry)
    repo_config.set_values(where, BUDGET, other, [], subsection=sub)
    repo_config.set_values(where, BUDGET, key, [str(number).encode()], subsection=sub)
    return Budget(entry, number * (BYTES_PER_TOKEN if tokens is not None else 1), tokens)


def remove_budget(session: LockedSession, path: str) -> None:
    """Drops the budget of ``path`` (``BadPathError`` when it has none)."""
    entry = _entry(path)
    known = [budget.path for budget in of_config(session.repo.config).budgets]
    if entry not in known:
        raise BadPathError(f'{entry!r} has no budget (budgets: {", ".join(known) or "none"})', path)
    repo_config.remove_section(session.repo.path, BUDGET, _bytes(entry))


# -- budgets, measured -----------------------------------------------------------------------


def uses(config: DeskConfig, policy: Policy | None = None) -> list[BudgetUse]:
    """Each budget with the size its path holds now (0 when absent)."""
    policy = read(config.repository) if policy is None else policy
    if not policy.budgets:
        return []
    found = []
    with DeskFolders(config.desk) as folders:
        for budget in policy.budgets:
            found.append(BudgetUse(budget, size_of(folders, budget.path)))
    return found


def size_of(folders: DeskFolders, path: str) -> int:
    """The bytes of the regular files and symlinks at or below ``path`` (never followed)."""
    skipped: list[tuple[str, str]] = []
    _, numbers = walk(folders, Allowlist([path]), skipped)
    return sum(numbers[0::5])  # st_size is the first of the five numbers of each file


# -- restores for the agent ------------------------------------------------------------------


def refuse(config: RepoConfig, paths: Iterable[str], action: str) -> None:
    """Raises :class:`ProtectedPathError` when any of ``paths`` (what a restore made for the
    agent would write or delete) is protected."""
    policy = of_config(config)
    if policy.matcher is None:
        return
    hit = {path: policy.covering(path) for path in paths}
    hit = {path: entry for path, entry in hit.items() if entry is not None}
    if hit:
        entries = sorted({entry for entry in hit.values() if entry is not None})
        shown = ', '.join(sorted(hit)[:5]) + (' ...' if len(hit) > 5 else '')
        raise ProtectedPathError(
            f'refusing to {action}: it would change {shown}, protected on this desk '
            f'({", ".join(entries)}); a person may change it (checkpoints protect lists them)',
            paths=sorted(hit),
            protected=entries,
        )
