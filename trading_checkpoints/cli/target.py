"""Which workspace and desk a command acts on, and the commands it prints for the next step.

Precedence, highest first (like git's ``--git-dir`` > ``$GIT_DIR`` > discovery):

- workspace: ``--workspace`` (before or after the verb) > ``$CHECKPOINTS_WORKSPACE`` > the
  nearest folder at or above the current one holding ``desks/`` or ``.checkpoints/`` >
  ``./workspace``;
- desk: ``--desk`` > ``$CHECKPOINTS_DESK`` > the desk the current folder is in (inside
  ``desks/<name>`` of that workspace) > ``main``.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import CheckpointError, InvalidArgumentError, MissingDeskError, NoWorkspaceError
from ..workspace import (
    DESKS,
    REPOSITORIES,
    WORKSPACE_VARIABLE,
    Workspace,
    current_folder,
    desk_at,
    desk_name_problem,
    find_workspace,
    is_workspace,
    locate_workspace,
)

if TYPE_CHECKING:
    from ..checkpoints import Checkpoints
    from ..ops.listing import Lister

PROGRAM = 'checkpoints'
DESK_VARIABLE = 'CHECKPOINTS_DESK'
DEFAULT_DESK = 'main'

# Where the options --workspace and --desk leave their values (click's ctx.meta is shared by
# every nested context, so the one given after the verb overrides the one before it).
WORKSPACE_KEY = 'checkpoints.workspace'
DESK_KEY = 'checkpoints.desk'


@dataclass(frozen=True)
class Target:
    """One desk of one workspace, and where each of the two came from.

    Attributes:
        workspace: The workspace folder, absolute.
        desk: The desk's name (already validated).
        workspace_source: ``option``, ``environment``, ``found`` (discovered upward) or
            ``default`` (``./workspace``, which may not exist).
        desk_source: ``option``, ``environment``, ``folder`` (the current folder is in it)
            or ``default``.
        cwd: The folder the command was run from (for messages).
    """

    workspace: Path
    desk: str
    workspace_source: str
    desk_source: str
    cwd: Path

    @property
    def desk_directory(self) -> Path:
        return self.workspace / DESKS / self.desk

    @property
    def repository_directory(self) -> Path:
        return self.workspace / REPOSITORIES / f'{self.desk}.git'

    # -- the library objects (imported on use: --help never loads dulwich) ----------------

    def checkpoints(self) -> Checkpoints:
        """The desk's checkpoints, with the tracked paths its repository remembers."""
        from ..checkpoints import Checkpoints

        return Checkpoints(self.repository_directory, self.desk_directory)

    def lister(self) -> Checkpoints | Lister:
        """What `list` reads: the light listing (no dulwich, no engine), unless a restore left
        its journal, which the full library completes first."""
        from ..ops.listing import Lister, journal_pending

        if journal_pending(self.repository_directory):
            return self.checkpoints()
        return Lister(self.repository_directory)

    def opened(self) -> Checkpoints:
        """The desk's checkpoints, pruned to the limits stored in its repository."""
        from ..checkpoints import Checkpoints

        return Checkpoints.open(self.repository_directory, self.desk_directory)

    # -- checks ---------------------------------------------------------------------------

    def require_workspace(self) -> None:
        """A clear error unless the workspace folder exists."""
        where = self.workspace
        if where.is_dir():
            return
        if self.workspace_source == 'default':
            raise NoWorkspaceError(
                f'no workspace found: no folder holding {DESKS}/ or {REPOSITORIES}/ at or above '
                f'{self.cwd}, and no {where} (give --workspace DIR or set ${WORKSPACE_VARIABLE})',
                workspace=where,
            )
        origin = {'option': '--workspace', 'environment': f'${WORKSPACE_VARIABLE}'}.get(
            self.workspace_source, 'the workspace'
        )
        state = 'is not a folder' if where.exists() else 'does not exist'
        raise NoWorkspaceError(
            f'no workspace at {where}: it {state} (from {origin})', workspace=where
        )

    def require_desk(self) -> None:
        """A clear error unless the desk has a folder or a repository (a desk whose folder
        is gone but whose checkpoints remain still counts: it can be restored)."""
        self.require_workspace()
        folder, repository = self.desk_directory, self.repository_directory
        if folder.is_dir() or repository.is_dir():
            if folder.exists() and not folder.is_dir():
                raise MissingDeskError(
                    f'desk {self.desk!r} is not a folder: {folder}', desk=folder, name=self.desk
                )
            return
        if folder.exists() or folder.is_symlink():
            raise MissingDeskError(
                f'desk {self.desk!r} is not a folder: {folder}', desk=folder, name=self.desk
            )
        try:
            known = Workspace(self.workspace).desks()
        except CheckpointError:
            known = []
        others = f' (desks there: {", ".join(known)})' if known else ' (it has no desks yet)'
        if not is_workspace(self.workspace):
            others = f' (it holds neither {DESKS}/ nor {REPOSITORIES}/)'
        raise MissingDeskError(
            f'no desk {self.desk!r} in workspace {self.workspace}: neither {folder} nor '
            f'{repository} exists{others}',
            desk=folder,
            name=self.desk,
        )

    def require_desk_folder(self) -> None:
        """A clear error unless the desk's folder exists (what a snapshot reads)."""
        self.require_desk()
        if not self.desk_directory.is_dir():
            raise MissingDeskError(
                f'no desk folder {self.desk_directory} (desk {self.desk!r} has checkpoints '
                'only: restore one to bring the folder back)',
                desk=self.desk_directory,
                name=self.desk,
            )

    # -- saying where -----------------------------------------------------------------------

    @property
    def where(self) -> str:
        """The desk acted on, as messages name it: ``desk 'main'``, with the workspace when it
        did not come from the current folder (an option, the environment, ``./workspace``)."""
        if self.workspace_source == 'found':
            return f'desk {self.desk!r}'
        return f'desk {self.desk!r} of workspace {self.workspace}'

    def environment_notes(self) -> list[str]:
        """A line for each of $CHECKPOINTS_WORKSPACE and $CHECKPOINTS_DESK that chose another
        workspace or desk than the one the command runs from (which it would act on else)."""
        notes = []
        here = find_workspace(self.cwd) if self.workspace_source == 'environment' else None
        if here is not None and os.path.realpath(here) != os.path.realpath(self.workspace):
            notes.append(
                f'acting on workspace {self.workspace} from ${WORKSPACE_VARIABLE}, not on '
                f'{here} where you are (--workspace or unsetting it chooses)'
            )
        if self.desk_source == 'environment':
            inside = desk_at(self.workspace, self.cwd) or desk_at(
                os.path.realpath(self.workspace), self.cwd
            )
            if inside is not None and inside != self.desk:
                notes.append(
                    f'acting on desk {self.desk!r} from ${DESK_VARIABLE}, not on desk '
                    f'{inside!r} where you are (--desk or unsetting it chooses)'
                )
        return notes

    # -- follow-up commands ---------------------------------------------------------------

    def command(self, *words: str) -> str:
        """A command line for this same desk, safe to paste into a shell anywhere."""
        parts = [PROGRAM, '--workspace', str(self.workspace), '--desk', self.desk, *words]
        return ' '.join(shlex.quote(part) for part in parts)


def resolve(workspace_option: str | None, desk_option: str | None) -> Target:
    """The target named by the options, the environment and the current folder."""
    cwd = current_folder()
    root, workspace_source = locate_workspace(cwd, workspace_option)
    environment_desk = os.environ.get(DESK_VARIABLE) or None
    if desk_option is not None:
        desk, desk_source = desk_option, 'option'
    elif environment_desk is not None:
        problem = desk_name_problem(environment_desk)
        if problem:
            raise InvalidArgumentError(
                f'${DESK_VARIABLE}={environment_desk!r} is not a desk name (a plain folder '
                f'name, like "main"): {problem}',
                name=f'${DESK_VARIABLE}',
                value=environment_desk,
            )
        desk, desk_source = environment_desk, 'environment'
    else:
        inside = desk_at(root, cwd) or desk_at(os.path.realpath(root), cwd)
        desk, desk_source = (inside, 'folder') if inside else (DEFAULT_DESK, 'default')
    return Target(root, desk, workspace_source, desk_source, cwd)


def target_of(meta: dict) -> Target:
    """The target named by the options kept in a click context's ``meta``."""
    return resolve(meta.get(WORKSPACE_KEY), meta.get(DESK_KEY))
