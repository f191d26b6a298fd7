"""The retention and backup verbs of ``Checkpoints`` (see ``ops/retention.py`` and ``remote/``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

from .core.paths import TRACKED_PATHS
from .deskhandle import DeskHandle
from .errors import CheckpointError
from .store.repo import ShadowRepo, is_initialized

_Self = TypeVar('_Self', bound='StorageVerbs')


class StorageVerbs(DeskHandle):
    """Prune, compact, and back up through git remotes."""

    @classmethod
    def open(
        cls: type[_Self],
        repository_directory: Path,
        desk_directory: Path,
        *,
        keep: int | None = None,
        retention: str | float | None = None,
        max_bytes: int | str | None = None,
        tracked_paths: Sequence[str] = TRACKED_PATHS,
    ) -> _Self:
        """A ``Checkpoints`` held to retention limits: pruned now, and again after every write
        it makes, so ``keep=N`` means at most N checkpoints after each snapshot.

        Limits not given here are read from the repository's config (``checkpoints.keep``,
        ``checkpoints.retention``, ``checkpoints.maxsize``, as written by
        ``checkpoints prune --save``), so every entry point applies the same ones; writes of
        any ``Checkpoints`` apply the configured ones.

        Example::

            checkpoints = Checkpoints.open(repo, desk, keep=200, retention='30d')
        """
        from .ops import retention as _retention

        checkpoints = cls(repository_directory, desk_directory, tracked_paths)
        stored = _retention.read_limits(checkpoints.repository_directory)
        keep = stored.keep if keep is None else keep
        retention = stored.older_than if retention is None else retention
        max_bytes = stored.max_size if max_bytes is None else max_bytes
        if keep is not None and (isinstance(keep, bool) or not isinstance(keep, int) or keep < 1):
            raise CheckpointError(f'keep must be a whole number of at least 1, not {keep!r}')
        limits = _retention.Limits(keep, retention, max_bytes)  # type: ignore[arg-type]
        checkpoints.desk_config = replace(checkpoints.desk_config, limits=limits)
        if (
            is_initialized(checkpoints.repository_directory)
            and (keep is not None or retention is not None or max_bytes is not None)
            # An unfinished restore may need any checkpoint: prune later, never block start-up.
            and _retention.journal_present(checkpoints.repository_directory) is None
        ):
            checkpoints.prune(keep=keep, older_than=retention, max_bytes=max_bytes)
        return checkpoints

    def prune(
        self,
        keep: int | None = None,
        older_than: str | float | None = None,
        max_bytes: int | str | None = None,
        *,
        dry_run: bool = False,
    ):  # -> retention.PruneResult
        """Drops old checkpoints; the ids of the kept ones never change.

        Args:
            keep: Keep at most this many of the newest checkpoints (at least 1 is always kept).
            older_than: Drop checkpoints older than this: seconds, or text like ``'30d'``.
            max_bytes: Drop the oldest until the objects fit: bytes, or text like ``'500M'``.
            dry_run: Only say what would be dropped.

        With no limit at all it only compacts the storage (one pack, with deltas). Refuses
        while a restore journal says a restore is unfinished.
        """
        from .ops import retention as _retention

        if ShadowRepo.open(self.repository_directory) is None:
            return _retention.PruneResult(0, 0, 0, 0)
        with self._locked() as session:
            return _retention.prune_or_compact(
                session.repo,
                keep=keep,
                older_than=older_than,
                max_bytes=max_bytes,
                dry_run=dry_run,
            )

    def add_remote(self, name: str, url: str):  # -> remote.Remote
        """Remembers a git remote (path, file://, http(s):// or ssh:// URL) for backups."""
        from . import remote as _remote

        with self._locked() as session:
            return _remote.add_remote(session.repo.path, name, url)

    def remove_remote(self, name: str) -> None:
        from . import remote as _remote

        with self._locked() as session:
            _remote.remove_remote(session.repo.path, name)

    def remotes(self) -> list:  # -> list[remote.Remote]
        from . import remote as _remote

        if not is_initialized(self.repository_directory):
            return []
        return _remote.list_remotes(self.repository_directory)

    def push(self, remote: str | None = None, *, progress=None):  # -> remote.TransferResult
        """Pushes the checkpoints to a remote's branch main (fast-forward only)."""
        from . import remote as _remote

        self._require_repository()
        return _remote.push(self.desk_config, remote, progress)

    def pull(self, remote: str | None = None, *, progress=None):  # -> remote.TransferResult
        """Fast-forwards the checkpoints to a remote's; the desk's files are not touched."""
        from . import remote as _remote

        if ShadowRepo.open(self.repository_directory) is None:
            raise CheckpointError(
                f'no checkpoint repository at {self.repository_directory}; use clone instead'
            )
        with self._locked() as session:
            remote = _remote.get_remote(session.repo.path, remote)
            return _remote.pull(session.repo, remote, progress)

    @classmethod
    def clone(
        cls: type[_Self],
        url: str,
        repository_directory: Path,
        desk_directory: Path,
        *,
        restore: bool = True,
        progress=None,
        tracked_paths: Sequence[str] = TRACKED_PATHS,
    ):  # -> (Checkpoints, remote.TransferResult, tuple of restored paths or None)
        """Copies a remote's checkpoints into a new repository for a desk.

        With ``restore`` (the default) the newest checkpoint is written into the desk when it
        holds no tracked files yet; the remote is remembered as ``origin``. A clone that was
        interrupted is resumed by cloning again.
        """
        from . import remote as _remote

        checkpoints = cls(repository_directory, desk_directory, tracked_paths)
        result, written = _remote.clone(
            checkpoints.desk_config, url, restore=restore, progress=progress
        )
        return checkpoints, result, written
