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
