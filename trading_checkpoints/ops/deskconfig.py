"""A desk's configuration: where it and its repository are, and what holds for them.

:class:`DeskConfig` is what the ``Checkpoints`` facade hands every operation. :func:`make`
builds one from the facade's arguments, checking each before anything touches the disk;
:func:`check_desk` refuses a desk folder that cannot be one. The rest says what is in effect
for a desk: the tracked paths, the size limit and atomic writes are the caller's when given,
else the repository's (its config), else the default; and the repository must lie outside
the tracked paths.
"""

from __future__ import annotations

import math
import os
import stat
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..core import lock
from ..core.fs import realpath
from ..core.paths import TRACKED_PATHS, Allowlist
from ..desk import safety
from ..errors import (
    CheckpointError,
    FileAccessError,
    InvalidArgumentError,
    InvalidSettingError,
    MissingDeskError,
)
from ..store.repo import ShadowRepo
from .retention import Limits


@dataclass(frozen=True)
class DeskConfig:
    """Where a desk and its repository are, and how the library was asked to treat them.

    Attributes:
        repository: The bare repository folder.
        desk: The desk folder.
        requested: The allowlist given by the caller (or the default).
        explicit: Whether the caller gave it (else the repository's remembered one wins).
        max_file_size: The size limit given by the caller, None for the repository's.
        durable: Flush writes in an order that survives a power cut.
        atomic_writes: Restore every file through a temporary file and a rename; None for
            the repository's ``checkpoints.atomicWrites``, else off.
        lock_timeout: Seconds to wait for another holder of the lock.
        limits: Retention limits enforced after every write (empty: the repository's own,
            as saved by ``checkpoints prune --save``).
        for_agent: The caller acts for the agent (the MCP server): a restore that would change
            a path the desk's policy protects is refused (``ops/policy.py``).
    """

    repository: Path
    desk: Path
    requested: Allowlist
    explicit: bool
    max_file_size: int | None = None
    durable: bool = True
    atomic_writes: bool | None = None
    lock_timeout: float = 60.0
    limits: Limits = field(default_factory=Limits)
    for_agent: bool = False


def make(
    repository_directory: Path,
    desk_directory: Path,
    tracked_paths: Sequence[str],
    *,
    max_file_size: int | None = None,
    durable: bool = True,
    atomic_writes: bool | None = None,
    lock_timeout: float = lock.DEFAULT_TIMEOUT,
) -> DeskConfig:
    """The configuration the ``Checkpoints`` facade was given (see ``Checkpoints.__init__``),
    each argument checked; nothing is read from the disk.

    Raises:
        CheckpointError: A folder is not a path, or an option is not usable.
    """
    repository = _folder(repository_directory, 'repository_directory')
    desk = _folder(desk_directory, 'desk_directory')
    requested = allowlist_of(as_given(tracked_paths))
    return DeskConfig(
        repository=repository,
        desk=desk,
        requested=requested,
        explicit=requested != allowlist_of(TRACKED_PATHS),
        max_file_size=(
            None if max_file_size is None else safety.check_max_file_size(max_file_size)
        ),
        durable=bool(durable),
        atomic_writes=None if atomic_writes is None else bool(atomic_writes),
        lock_timeout=_timeout(lock_timeout),
    )


def as_given(tracked_paths: Sequence[str]) -> tuple[str, ...]:
    """Tracked paths as a caller gave them: a sequence of paths, or one path."""
    return (tracked_paths,) if isinstance(tracked_paths, str) else tuple(tracked_paths)


def tracking(config: DeskConfig, tracked_paths: Sequence[str]) -> DeskConfig:
    """``config`` with new tracked paths, given explicitly (the repository will remember them)."""
    allowlist = Allowlist(as_given(tracked_paths))
    return replace(config, requested=allowlist, explicit=True)


def _folder(value: object, name: str) -> Path:
    if isinstance(value, Path):
        return value
    if isinstance(value, (str, os.PathLike)) and os.fspath(value):
        return Path(value)
    raise InvalidArgumentError(
        f'{name} must be a path to a folder, not {value!r}', name=name, value=value
    )


def _timeout(value: object) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
        if math.isfinite(seconds) and seconds >= 0:
            return seconds
    raise InvalidArgumentError(
        f'lock_timeout must be a number of seconds of at least 0, not {value!r}',
        name='lock_timeout',
        value=value,
    )


def check_desk(config: DeskConfig, must_exist: bool) -> None:
    """Refuses a desk that is the root or home folder or not a folder (or, with
    ``must_exist``, that does not exist)."""
    desk = config.desk
    try:
        st = os.stat(desk)
    except FileNotFoundError:
        st = None
    except OSError as error:
        raise FileAccessError(
            f'cannot read the desk {desk}: {error.strerror}', path=desk, action='read'
        ) from error
    # The root and home folders are told by identity (device and inode), the same answer
    # as comparing real paths, without resolving every component of the desk's path.
    if st is not None and (st.st_dev, st.st_ino) in _forbidden_desks():
        raise InvalidArgumentError(
            f'refusing to use {desk} as a desk: it is the root or home folder',
            name='desk_directory',
            value=desk,
        )
    if st is not None and not stat.S_ISDIR(st.st_mode):
        raise MissingDeskError(f'the desk {desk} is not a folder', desk=desk)
    if must_exist and st is None:
        raise MissingDeskError(f'the desk folder {desk} does not exist', desk=desk)


def _forbidden_desks() -> set[tuple[int, int]]:
    """The identities of the root folder and of the home folder (when it exists)."""
    found = set()
    for folder in (os.sep, os.path.expanduser('~')):
        try:
            st = os.stat(folder)
        except OSError:
            continue
        found.add((st.st_dev, st.st_ino))
    return found


# -- configuration in effect -----------------------------------------------------------------

# The allowlist a repository remembers, by config path, valid while the config file's stat holds.
_REMEMBERED: dict[str, tuple[tuple[int, int, int], Allowlist]] = {}
_REMEMBERED_LOCK = threading.Lock()
_ALLOWLISTS: dict[tuple[str, ...], Allowlist] = {}


def allowlist_of(entries: tuple[str, ...], source: str | None = None) -> Allowlist:
    """The allowlist of some tracked paths (remembered: building one is pure but not free)."""
    allowlist = _ALLOWLISTS.get(entries)
    if allowlist is None:
        try:
            allowlist = Allowlist(entries)
        except CheckpointError as error:
            if source is None:
                raise
            raise InvalidSettingError(
                f'checkpoints.tracked in {source}: {error}',
                setting='checkpoints.tracked',
                source=source,
            ) from error
        if len(_ALLOWLISTS) < 64:
            _ALLOWLISTS[entries] = allowlist
    return allowlist


def effective_allowlist(config: DeskConfig, repo: ShadowRepo | None = None) -> Allowlist:
    """The tracked paths in effect: the caller's if given, else the repository's, else default."""
    if config.explicit:
        return config.requested
    if repo is not None:
        remembered = repo.tracked_paths()
        if not remembered:
            return config.requested
        return allowlist_of(remembered, os.path.join(repo.path, 'config'))
    path = os.path.join(config.repository, 'config')
    try:
        info = os.stat(path)
        stamp = (info.st_mtime_ns, info.st_size, info.st_ino)
    except OSError:
        return config.requested
    with _REMEMBERED_LOCK:
        cached = _REMEMBERED.get(path)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    opened = ShadowRepo.open(config.repository)
    if opened is None:
        return config.requested
    try:
        allowlist = effective_allowlist(config, opened)
    finally:
        opened.close()
    with _REMEMBERED_LOCK:
        _REMEMBERED[path] = (stamp, allowlist)
    return allowlist


def size_limit(config: DeskConfig, repo: ShadowRepo) -> int:
    """The maximum file size in effect: the caller's, else the repository's, else 100 MiB."""
    if config.max_file_size is not None:
        return config.max_file_size
    configured = repo.config_string(*safety.MAX_FILE_SIZE_KEY)
    if configured is None:
        return safety.DEFAULT_MAX_FILE_SIZE
    try:
        return safety.parse_size(configured)
    except CheckpointError:
        # The value itself is not echoed: a config is untrusted and may hold anything.
        raise InvalidSettingError(
            f'checkpoints.maxFileSize in {repo.path / "config"} is not a size '
            '(expected a number with k, m or g, like 100m)',
            setting='checkpoints.maxFileSize',
            source=repo.path / 'config',
        ) from None


def atomic_writes(config: DeskConfig, repo: ShadowRepo) -> bool:
    """Whether restores write through temporary files: the caller's choice, else the
    repository's ``checkpoints.atomicWrites``, else not."""
    if config.atomic_writes is not None:
        return config.atomic_writes
    configured = repo.config_string(*safety.ATOMIC_WRITES_KEY)
    if configured is None:
        return False
    value = configured.strip().lower()
    if value in ('true', 'yes', 'on', '1'):
        return True
    if value in ('false', 'no', 'off', '0', ''):
        return False
    raise InvalidSettingError(
        f'checkpoints.atomicWrites in {repo.path / "config"} is not a boolean '
        '(expected true or false)',
        setting='checkpoints.atomicWrites',
        source=repo.path / 'config',
    )


def check_repository_outside(config: DeskConfig, allowlist: Allowlist) -> None:
    """Refuses a repository that lies inside the desk's tracked paths (whatever their source):
    a snapshot would record the repository's own files, and a restore could delete them."""
    real_repo = realpath(config.repository)
    real_desk = realpath(config.desk)
    if real_repo != real_desk and not real_repo.startswith(real_desk.rstrip(os.sep) + os.sep):
        return  # the common case, decided on strings
    relative = Path(real_repo).relative_to(real_desk).as_posix() if real_repo != real_desk else ''
    if not relative or allowlist.covers(relative) or allowlist.is_ancestor(relative):
        source = '' if config.explicit else ' (as remembered in its config)'
        raise InvalidArgumentError(
            f'the checkpoint repository {config.repository} lies inside the tracked files of '
            f'the desk {config.desk}: the tracked paths{source} are '
            f'{", ".join(allowlist.entries)}; keep the repository outside them',
            name='repository',
            value=str(config.repository),
        )
