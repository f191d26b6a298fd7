"""The standard workspace layout: ``<root>/desks/<desk>`` and ``<root>/.checkpoints/<desk>.git``.

Example::

    workspace = Workspace('~/agent-workspace')
    research = workspace.desk('research')      # a Checkpoints for desks/research
    for name in workspace.desks():
        print(name, len(workspace.desk(name).list()))
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from .checkpoints import Checkpoints
from .errors import CheckpointError
from .paths import TRACKED_PATHS

DESKS = 'desks'
REPOSITORIES = '.checkpoints'
_SUFFIX = '.git'


def desk_name_problem(name: object) -> str | None:
    """Why ``name`` cannot be a desk name (a plain folder name), or None when it can."""
    if not isinstance(name, str) or not name:
        return 'it is empty' if name == '' else 'it is not a string'
    if name in ('.', '..'):
        return 'it is . or ..'
    if any(c in name for c in '/\\\0\n\r'):
        return 'it holds a slash, a backslash or a control character'
    return None


class Workspace:
    """A folder holding desks and their checkpoint repositories.

    Attributes:
        root: The workspace folder.
        tracked_paths: The tracked paths given to every desk's :class:`Checkpoints`.
    """

    def __init__(self, root: str | os.PathLike[str], tracked_paths: Sequence[str] = TRACKED_PATHS):
        """Describes the workspace without touching the disk."""
        self.root = Path(root).expanduser()
        if isinstance(tracked_paths, str):
            tracked_paths = (tracked_paths,)
        self.tracked_paths = tuple(tracked_paths)

    def __repr__(self) -> str:
        return f'Workspace({str(self.root)!r})'

    def desk_directory(self, name: str) -> Path:
        """The folder of desk ``name``."""
        self._check(name)
        return self.root / DESKS / name

    def repository_directory(self, name: str) -> Path:
        """The checkpoint repository of desk ``name``."""
        self._check(name)
        return self.root / REPOSITORIES / f'{name}{_SUFFIX}'

    def desk(self, name: str, *, create: bool = False) -> Checkpoints:
        """The checkpoints of desk ``name``; ``create=True`` also makes its (empty) folder."""
        if create:
            self.desk_directory(name).mkdir(parents=True, exist_ok=True)
        return Checkpoints(
            self.repository_directory(name), self.desk_directory(name), self.tracked_paths
        )

    def desks(self) -> list[str]:
        """The names of the desks: folders in ``desks/`` and repositories in ``.checkpoints/``.

        A desk whose folder was removed but whose checkpoints remain is listed, so it can
        still be restored. Hidden folders (names starting with a dot) are left out.
        """
        names: set[str] = set()
        for folder, suffix in ((self.root / DESKS, ''), (self.root / REPOSITORIES, _SUFFIX)):
            try:
                entries = list(os.scandir(folder))
            except FileNotFoundError:
                continue
            except OSError as error:
                raise CheckpointError(f'cannot read {folder}: {error.strerror or error}') from error
            for entry in entries:
                if not entry.is_dir(follow_symlinks=False) or not entry.name.endswith(suffix):
                    continue
                name = entry.name[: len(entry.name) - len(suffix)] if suffix else entry.name
                if not name.startswith('.') and desk_name_problem(name) is None:
                    names.add(name)
        return sorted(names)

    def _check(self, name: str) -> None:
        problem = desk_name_problem(name)
        if problem:
            raise CheckpointError(f'{name!r} is not a desk name (a plain folder name): {problem}')
