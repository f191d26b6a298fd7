"""The repository folder before it is opened: whether a repository was finished, and ``HEAD``."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from ..core.durability import write_atomically
from ..core.fs import read_file
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
    """Whether ``path`` holds a finished repository (``HEAD`` is written last on creation)."""
    return stat.S_ISREG(file_mode(os.path.join(path, 'HEAD')) or 0)


def head_is_sound(path: Path) -> bool:
    """Whether ``HEAD`` needs no repair: it points at ``main``, or is missing (an unfinished
    creation, left to ``create``)."""
    try:
        return read_file(os.path.join(path, 'HEAD'), 1 << 16) == b'ref: ' + BRANCH + b'\n'
    except FileNotFoundError:
        return True
    except OSError:
        return False


def repair_head(path: Path) -> None:
    """Rewrites a damaged ``HEAD`` (our repositories always point it at ``main``).

    Called under the repository's lock; a missing ``HEAD`` means an unfinished creation and is
    left to ``create``.
    """
    if head_is_sound(path):
        return
    repo_config.load(path, missing_ok=True)  # a repository we refuse is not repaired either
    write_atomically(path / 'HEAD', b'ref: ' + BRANCH + b'\n')
