"""The repository folder before it is opened: whether a repository was finished, and ``HEAD``.

``HEAD`` is read and written through ``core.repofiles``: a link or a FIFO there is never
followed, and counts as damaged (rewritten under the lock, like any other damaged ``HEAD``).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from ..core import repofiles
from ..core.repofiles import RepoFile
from ..errors import CheckpointError
from . import config as repo_config

BRANCH = b'refs/heads/main'

# What ``Path.exists`` takes for absent; any other error is raised, as it does.
_ABSENT = frozenset({errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP})


def file_mode(path: str) -> int | None:
    """The ``st_mode`` of ``path`` (symlinks followed), None when it is absent."""
    try:
        return os.stat(path).st_mode
    except OSError as error:
        if error.errno in _ABSENT:
            return None
        raise


def is_initialized(path: Path) -> bool:
    """Whether ``path`` holds a finished repository (``HEAD`` is written last on creation;
    whatever it is, it is never opened here)."""
    return os.path.lexists(os.path.join(path, 'HEAD'))


def head_is_sound(path: Path) -> bool:
    """Whether ``HEAD`` needs no repair: it points at ``main``, or is missing (an unfinished
    creation, left to ``create``)."""
    try:
        data = repofiles.read(RepoFile(path, 'HEAD'), 4096)
    except CheckpointError:
        return False  # a link, a FIFO, too large, unreadable: rewritten
    return data is None or data == b'ref: ' + BRANCH + b'\n'


def repair_head(path: Path) -> None:
    """Rewrites a damaged ``HEAD`` (our repositories always point it at ``main``).

    Called under the repository's lock; a missing ``HEAD`` means an unfinished creation and is
    left to ``create``.
    """
    if head_is_sound(path):
        return
    repo_config.load(path, missing_ok=True)  # a repository we refuse is not repaired either
    repofiles.replace(RepoFile(path, 'HEAD'), b'ref: ' + BRANCH + b'\n')
