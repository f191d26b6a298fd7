"""The one error family the library raises at its surface."""

from __future__ import annotations


class CheckpointError(RuntimeError):
    """git could not take, list or restore a checkpoint.

    Every failure the library reports is a ``CheckpointError`` (or a subclass) with a message
    that names the problem: the bad id, the missing desk, the corrupt repository.
    """


class UnknownCheckpointError(CheckpointError):
    """The id names no checkpoint of this repository, or is not a valid id."""


class CorruptRepositoryError(CheckpointError):
    """The shadow repository cannot be read, or holds something we refuse to write."""


class LockTimeoutError(CheckpointError):
    """Another process held the desk's lock for longer than we were willing to wait."""


class ExternalChangesError(CheckpointError):
    """A restore, undo or redo would overwrite changes made outside the agent (use force).

    Attributes:
        paths: The desk-relative paths changed outside the agent that it would overwrite.
    """

    def __init__(self, message: str, paths: tuple[str, ...]) -> None:
        super().__init__(message)
        self.paths = paths


class NothingToUndoError(CheckpointError):
    """There is no earlier checkpoint to go back to, or no undo to reverse."""


class BadPathError(CheckpointError):
    """A path given by a caller is unsafe or lies outside the tracked paths."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.path = path


class DeskChangedError(CheckpointError):
    """A file a restore was about to replace or delete changed after the restore read it."""

    def __init__(self, path: str) -> None:
        super().__init__(f'{path} changed while it was being restored')
        self.path = path


class CheckpointWarning(RuntimeWarning):
    """A best-effort checkpoint (a guard's) failed; the write went ahead without one."""
