"""The allowlist: which desk paths are tracked, and which paths we accept from a repository.

Paths are POSIX-style strings relative to the desk (``memory/a.md``). An allowlist entry names a
file or a folder; a folder covers everything below it at a path-component boundary, so
``memory`` covers ``memory/a.md`` but never ``memory_extra/a.md``.
"""

from __future__ import annotations

import functools
import os
import posixpath
from collections.abc import Iterable
from pathlib import Path

from ..errors import BadPathError, InvalidArgumentError, UnsafeCheckpointError

TRACKED_PATHS: tuple[str, ...] = ('Memory.md', 'memory', 'notes', 'skills/agent')

# Names a tree must never hold: they would escape the desk or write into a git directory.
_FORBIDDEN_COMPONENTS = frozenset({'', '.', '..'})


@functools.lru_cache(maxsize=4096)  # names repeat across folders and restores
def _component_problem(component: str) -> str | None:
    """Why one path component is unacceptable, or None when it is fine."""
    if component in _FORBIDDEN_COMPONENTS:
        return f'a {component!r} component' if component else 'an empty component'
    # Case-folded and stripped of trailing dots/spaces, as Windows and macOS would see it.
    if component.rstrip('. ').lower() == '.git':
        return 'a .git component'
    if '\0' in component or '\n' in component or '\r' in component:
        return 'a NUL or newline character'
    if '\\' in component:
        return 'a backslash'
    return None


def component_problem(name: str) -> str | None:
    """Why one name (a path component) is unacceptable, or None when it is fine."""
    return _component_problem(name)


def path_problem(path: str) -> str | None:
    """Why ``path`` cannot be a desk-relative path we read or write, or None when it is fine."""
    if not path:
        return 'an empty path'
    if path.startswith('/') or (len(path) > 1 and path[1] == ':'):
        return 'an absolute path'
    for component in path.split('/'):
        problem = _component_problem(component)
        if problem:
            return problem
    return None


def desk_relative(desk: Path | str, path: str) -> str | None:
    """``path`` (relative to the desk, or absolute) as a desk-relative POSIX path, or None
    when it lies outside the desk or cannot be a desk path."""
    if not path:
        return None
    text = path.replace('\\', '/') if os.sep == '\\' else path
    if os.path.isabs(text):
        full = os.path.abspath(text)
        for base in (os.path.abspath(desk), os.path.realpath(desk)):
            if full == base or full.startswith(base.rstrip(os.sep) + os.sep):
                text = os.path.relpath(full, base).replace(os.sep, '/')
                break
        else:
            return None
    relative = posixpath.normpath(text)
    if relative == '.' or path_problem(relative):
        return None
    return relative


class Allowlist:
    """Decides which desk-relative paths are tracked."""

    def __init__(self, entries: Iterable[str]) -> None:
        normalized: list[str] = []
        for raw in entries:
            if not isinstance(raw, str):
                raise InvalidArgumentError(
                    f'tracked path {raw!r} is not a string', name='tracked_paths', value=raw
                )
            entry = raw.replace('\\', '/').rstrip('/')
            problem = path_problem(entry)
            if problem:
                raise BadPathError(f'tracked path {raw!r} is not usable: it has {problem}', raw)
            if entry not in normalized:
                normalized.append(entry)
        if not normalized:
            raise InvalidArgumentError(
                'the list of tracked paths is empty', name='tracked_paths', value=()
            )
        # An entry inside another is redundant and would be scanned twice.
        self.entries: tuple[str, ...] = tuple(
            entry
            for entry in normalized
            if not any(entry != other and entry.startswith(other + '/') for other in normalized)
        )

    def __repr__(self) -> str:
        return f'Allowlist({list(self.entries)!r})'

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Allowlist) and sorted(self.entries) == sorted(other.entries)

    def __hash__(self) -> int:
        return hash(tuple(sorted(self.entries)))

    def covers(self, path: str) -> bool:
        """Whether ``path`` is an entry or lies below one."""
        return any(path == entry or path.startswith(entry + '/') for entry in self.entries)

    def is_ancestor(self, path: str) -> bool:
        """Whether ``path`` is a folder above an entry (``skills`` for ``skills/agent``)."""
        return any(entry.startswith(path + '/') for entry in self.entries)


def check_tree_path(path: str, allowlist: Allowlist) -> None:
    """Refuses a path read from a repository that we must never write."""
    problem = path_problem(path)
    if problem:
        raise UnsafeCheckpointError(
            f'the checkpoint holds an unsafe path {path!r}: {problem}', entry=path
        )
    if not allowlist.covers(path):
        raise UnsafeCheckpointError(
            f'the checkpoint holds {path!r}, which is outside the tracked paths '
            f'{", ".join(allowlist.entries)}',
            entry=path,
        )
