"""The standard workspace layout: ``<root>/desks/<desk>`` and ``<root>/.checkpoints/<desk>.git``.

Example::

    workspace = Workspace('~/agent-workspace')
    research = workspace.desk('research')      # a Checkpoints for desks/research
    for name in workspace.desks():
        print(name, len(workspace.desk(name).list()))

    root = find_workspace()                    # like git: from the current folder upward
    desk = desk_at(root, Path.cwd()) if root else None   # 'research' inside desks/research

Nothing here imports dulwich until a desk's :class:`Checkpoints` is asked for.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .core.paths import TRACKED_PATHS
from .errors import FileAccessError, InvalidArgumentError, NoWorkspaceError

if TYPE_CHECKING:
    from .checkpoints import Checkpoints

DESKS = 'desks'
REPOSITORIES = '.checkpoints'
_SUFFIX = '.git'


def desk_name_problem(name: object) -> str | None:
    """Why ``name`` cannot be a desk name (a plain folder name), or None when it can."""
    if not isinstance(name, str) or not name:
        return 'it is empty' if name == '' else 'it is not a string'
    if name in ('.', '..'):
        return 'it is . or ..'
    if any(c in '/\\' or c < ' ' or '\x7f' <= c <= '\x9f' for c in name):
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
        from .checkpoints import Checkpoints

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
                raise FileAccessError(
                    f'cannot read {folder}: {error.strerror or error}', path=folder, action='read'
                ) from error
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
            raise InvalidArgumentError(
                f'{name!r} is not a desk name (a plain folder name): {problem}',
                name='desk',
                value=name,
            )


def is_workspace(folder: str | os.PathLike[str]) -> bool:
    """Whether ``folder`` holds ``desks/`` or ``.checkpoints/`` (the two halves of a workspace)."""
    for part in (DESKS, REPOSITORIES):
        try:
            if os.path.isdir(os.path.join(folder, part)):
                return True
        except (OSError, ValueError):  # unreadable, or a path no file system accepts
            continue
    return False


def find_workspace(start: str | os.PathLike[str] | None = None) -> Path | None:
    """The nearest workspace at or above ``start`` (default: the current folder), like git finds
    its repository: the first folder, walking up to the root, that holds ``desks/`` or
    ``.checkpoints/``. None when there is none. Symlinks in ``start`` are not resolved, so the
    answer is a folder the caller can name; the result is absolute.

    Example::

        find_workspace('/home/me/agent/workspace/desks/main/notes')
        # -> Path('/home/me/agent/workspace')
    """
    folder = Path(os.path.abspath(os.fspath(start) if start is not None else os.getcwd()))
    for candidate in (folder, *folder.parents):
        if is_workspace(candidate):
            return candidate
    return None


WORKSPACE_VARIABLE = 'CHECKPOINTS_WORKSPACE'
DEFAULT_WORKSPACE = 'workspace'


def locate_workspace(
    start: str | os.PathLike[str], option: str | os.PathLike[str] | None = None
) -> tuple[Path, str]:
    """The workspace a command started in ``start`` acts on, and where it came from: the one
    rule of every verb, the hooks and ``hook install``.

    ``option`` (``--workspace``) > ``$CHECKPOINTS_WORKSPACE`` > the nearest workspace at or
    above ``start`` (:func:`find_workspace`) > ``start/workspace``. The source is ``option``,
    ``environment``, ``found`` or ``default``; the default may not exist (a caller that must not
    create one checks :func:`is_workspace`). The result is absolute, symlinks not resolved.
    """
    if option is not None:
        return _absolute(option), 'option'
    named = os.environ.get(WORKSPACE_VARIABLE) or None
    if named is not None:
        return _absolute(named), 'environment'
    here = Path(os.path.abspath(os.fspath(start)))
    found = find_workspace(here)
    if found is not None:
        return found, 'found'
    return here / DEFAULT_WORKSPACE, 'default'


def _absolute(value: str | os.PathLike[str]) -> Path:
    path = os.path.expanduser(os.fspath(value))
    return Path(os.path.normpath(path if os.path.isabs(path) else current_folder() / path))


def current_folder() -> Path:
    """The current folder; a :class:`NoWorkspaceError` once it was removed (nothing relative
    can be found from it), rather than the system's bare error."""
    try:
        return Path(os.getcwd())
    except FileNotFoundError as error:
        raise NoWorkspaceError(
            'the current folder no longer exists: run from an existing folder, or give '
            '--workspace as an absolute path',
            workspace='.',
        ) from error


def desk_at(root: str | os.PathLike[str], path: str | os.PathLike[str]) -> str | None:
    """The name of the desk ``path`` lies in: inside ``<root>/desks/<name>`` or
    ``<root>/.checkpoints/<name>.git``; None elsewhere (including ``root`` and ``desks/``).

    Both paths are made absolute, not resolved. A folder whose name is no desk name (see
    :func:`desk_name_problem`) is no desk either: None.
    """
    base = Path(os.path.abspath(os.fspath(root)))
    here = Path(os.path.abspath(os.fspath(path)))
    try:
        parts = here.relative_to(base).parts
    except ValueError:
        return None
    if len(parts) < 2:
        return None
    if parts[0] == DESKS:
        name = parts[1]
    elif parts[0] == REPOSITORIES and parts[1].endswith(_SUFFIX):
        name = parts[1][: -len(_SUFFIX)]
    else:
        return None
    return name if desk_name_problem(name) is None else None
