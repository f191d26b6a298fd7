"""dulwich's repository object, opened without letting it parse the config itself.

dulwich's ``Repo`` parses the config again (and would follow includes): it is opened here, by
:func:`open_dulwich`, with a config built from the vetted one (see :mod:`.config.reader`), and with
the repository's folder given as its control and common directory, so no ``.git`` file or
``commondir`` file inside it can redirect it elsewhere. The files dulwich reads by name on
opening (``shallow``, ``info/grafts``, ``objects/info/alternates``, the packs) are checked first
(``gitfiles.check_before_opening``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import CorruptRepositoryError
from .config.reader import RepoConfig, load
from .gitfiles import check_before_opening

if TYPE_CHECKING:
    from dulwich.config import ConfigFile
    from dulwich.repo import Repo


# dulwich's Repo, opened with a vetted config (a subclass made on first use, with dulwich)
_DULWICH_REPO: Callable[[str, ConfigFile], Repo] | None = None


def open_dulwich(path: str | os.PathLike[str], config: RepoConfig | None = None) -> Repo:
    """dulwich's ``Repo`` for a bare repository, never reading its config file itself.

    It gets a config built from the vetted one (format version only: nothing in it can change
    how objects are written), and the repository's folder as its control and common folder,
    so neither a ``.git`` file nor a ``commondir`` file inside it is followed.
    """
    from dulwich.config import ConfigFile
    from dulwich.errors import FileFormatException, NotGitRepository

    global _DULWICH_REPO
    if config is None:
        config = load(path, missing_ok=True)
    if _DULWICH_REPO is None:
        from dulwich.repo import Repo

        class _VettedRepo(Repo):
            _vetted_config: ConfigFile

            def __init__(self, root: str, vetted: ConfigFile) -> None:
                self._vetted_config = vetted
                super().__init__(controldir=root, commondir=root, bare=True)

            def get_config(self) -> ConfigFile:
                return self._vetted_config

        _DULWICH_REPO = _VettedRepo
    vetted = ConfigFile()
    version = config.value(b'core', b'repositoryformatversion')
    vetted.set(b'core', b'repositoryformatversion', (version or b'0').strip())
    vetted.set(b'core', b'bare', True)
    # No path: should anything in dulwich try to write this config back, it fails loudly
    # instead of replacing the repository's config with this minimal one.
    root = os.path.abspath(os.fspath(path))  # dulwich joins a relative commondir twice
    if not (
        os.path.isdir(os.path.join(root, 'objects')) and os.path.isdir(os.path.join(root, 'refs'))
    ):
        raise CorruptRepositoryError(
            f'{root} is not a git repository (no objects or refs folder)', path=root
        )
    check_before_opening(root)
    try:
        return _DULWICH_REPO(root, vetted)
    except (OSError, NotGitRepository) as error:
        reason = getattr(error, 'strerror', None) or type(error).__name__
        raise CorruptRepositoryError(
            f'cannot open the repository {root}: {reason}', path=root
        ) from error
    except (ValueError, KeyError, IndexError, FileFormatException) as error:
        # FileFormatException (or IndexError, for a line of only whitespace): a damaged
        # ``shallow`` (or ``info/grafts``) file, which dulwich parses on opening. Its message
        # quotes the bad line, which may be anything (a planted copy of a credentials file):
        # only its kind is told.
        raise CorruptRepositoryError(
            f'cannot open the repository {root}: its shallow or info/grafts file is '
            f'malformed ({type(error).__name__})',
            path=root,
        ) from error
