"""The error kinds other than the remotes' (see the package's docstring)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar


class CheckpointError(RuntimeError):
    """git could not take, list or restore a checkpoint.

    Every failure the library reports is a ``CheckpointError`` (or a subclass) with a message
    that names the problem: the bad id, the missing desk, the corrupt repository. Raised as
    this class itself only where no caller would act on the case (an internal check).
    """

    FIELDS: ClassVar[tuple[str, ...]] = ()

    def details(self) -> dict[str, Any]:
        """The kind's fields by name, in the order of ``FIELDS``."""
        return {name: getattr(self, name) for name in self.FIELDS}

    def __reduce__(self) -> tuple[Any, ...]:
        # A kind's __init__ takes its fields as keywords: rebuild from the state instead.
        return _rebuilt, (type(self), self.args, self.__dict__)


def _rebuilt(kind: type[CheckpointError], args: tuple[Any, ...], state: dict[str, Any]) -> Any:
    error = kind.__new__(kind, *args)
    error.args = args
    error.__dict__.update(state)
    return error


# -- the caller's request -----------------------------------------------------------------


class InvalidArgumentError(CheckpointError):
    """A value the caller gave (an argument, an option, an environment variable) is not usable:
    the wrong type, out of range, malformed, or a combination that cannot be honoured.

    Attributes:
        name: The argument, option or variable, as the caller named it (``keep``,
            ``--older-than``, ``$CHECKPOINTS_DESK``).
        value: The value given.
    """

    FIELDS: ClassVar[tuple[str, ...]] = ('name', 'value')

    def __init__(self, message: str, *, name: str, value: object) -> None:
        super().__init__(message)
        self.name = name
        self.value = value


class BadPathError(CheckpointError):
    """A path given by a caller is unsafe or lies outside the tracked paths.

    Attributes:
        path: The path as given.
    """

    FIELDS: ClassVar[tuple[str, ...]] = ('path',)

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.path = path


class UnknownCheckpointError(CheckpointError):
    """The id names no checkpoint of this repository, or is not a valid id, or is ambiguous.

    Attributes:
        checkpoint: The id as given (None when the raise did not record it).
    """

    FIELDS: ClassVar[tuple[str, ...]] = ('checkpoint',)

    def __init__(self, message: str, *, checkpoint: object = None) -> None:
        super().__init__(message)
        self.checkpoint = checkpoint


class PrunedCheckpointError(UnknownCheckpointError):
    """The id names a checkpoint that a prune dropped.

    Attributes:
        checkpoint: The id as given.
        commit: The full id of the checkpoint that was pruned.
        taken_at: When it was taken (ISO 8601).
        pruned_at: When it was pruned (seconds since the epoch).
    """

    FIELDS: ClassVar[tuple[str, ...]] = ('checkpoint', 'commit', 'taken_at', 'pruned_at')

    def __init__(
        self, message: str, *, checkpoint: str, commit: str, taken_at: str, pruned_at: float
    ) -> None:
        super().__init__(message, checkpoint=checkpoint)
        self.commit = commit
        self.taken_at = taken_at
        self.pruned_at = pruned_at


class UnknownTurnError(UnknownCheckpointError):
    """No checkpoint of the repository belongs to the turn.

    Attributes:
        turn: The turn id as given.
    """

    FIELDS: ClassVar[tuple[str, ...]] = ('turn',)

    def __init__(self, message: str, *, turn: str) -> None:
        super().__init__(message)
        self.turn = turn


class BeforeFirstCheckpointError(CheckpointError):
    """No checkpoint was taken at or before the moment asked for (``at=``, ``--at``).

    Attributes:
        at: The moment asked for (ISO 8601 with its offset).
        first: The oldest checkpoint kept (short id).
        first_at: When it was taken (ISO 8601).
    """

    FIELDS: ClassVar[tuple[str, ...]] = ('at', 'first', 'first_at')

    def __init__(self, message: str, *, at: str, first: str, first_at: str) -> None:
        super().__init__(message)
        self.at = at
        self.first = first
        self.first_at = first_at


class NotInCheckpointError(CheckpointError):
    """A path names no file in the checkpoint (nothing there, or a folder where a file was
    asked for); for a restore of some paths, neither in the checkpoint nor in the desk.

    Attributes:
        path: The desk-relative path.
        checkpoint: The checkpoint's id, as given.
    """

    FIELDS: ClassVar[tuple[str, ...]] = ('path', 'checkpoint')

    def __init__(self, message: str, *, path: str, checkpoint: str) -> None:
        super().__init__(message)
        self.path = path
        self.checkpoint = checkpoint


class NothingToUndoError(CheckpointError):
    """There is no earlier checkpoint to go back to, or no undo to reverse."""


class ProtectedPathError(CheckpointError):
    """A write or restore on the agent's behalf would change a path the desk's policy
    protects (``checkpoints protect``); nothing was changed. A person's own restore is not
    bound by the policy.

    Attributes:
        paths: The desk-relative paths it would have changed.
        protected: The protected entries (files or folders) that cover them.
    """

    FIELDS: ClassVar[tuple[str, ...]] = ('paths', 'protected')

    def __init__(self, message: str, *, paths: Iterable[str], protected: Iterable[str]) -> None:
        super().__init__(message)
        self.paths = tuple(paths)
        self.protected = tuple(protected)


# -- what is there ------------------------------------------------------------------------


class NoWorkspaceError(CheckpointError):
    """The workspace folder (holding ``desks/`` and ``.checkpoints/``) is not there.

    Attributes:
        workspace: The folder looked for (the default one when none was found or given).
    """

    FIELDS: ClassVar[tuple[str, ...]] = ('workspace',)

    def __init__(self, message: str, *, workspace: object) -> None:
        super().__init__(message)
        self.workspace = str(workspace)


class MissingDeskError(CheckpointError):
    """The desk folder does not exist or is not a folder (and, where that is asked for, the
    desk has no checkpoints either).

    Attributes:
        desk: The desk folder's path.
        name: The desk's name in its workspace, None when the desk was given as a folder.
    """

    FIELDS: ClassVar[tuple[str, ...]] = ('desk', 'name')

    def __init__(self, message: str, *, desk: object, name: str | None = None) -> None:
        super().__init__(message)
        self.desk = str(desk)
        self.name = name


class NoCheckpointsError(CheckpointError):
    """The desk has no checkpoints yet: its repository is missing or its branch is empty.

    Attributes:
        repository: The checkpoint repository's path (None when the raise knows only the
            desk's name).
        desk: The desk's name, when known.
    """

    FIELDS: ClassVar[tuple[str, ...]] = ('repository', 'desk')

    def __init__(self, message: str, *, repository: object = None, desk: str | None = None) -> None:
        super().__init__(message)
        self.repository = None if repository is None else str(repository)
        self.desk = desk


class RepositoryExistsError(CheckpointError):
    """A repository is already there where a clone would create one.

    Attributes:
        repository: Its path.
    """

    FIELDS: ClassVar[tuple[str, ...]] = ('repository',)

    def __init__(self, message: str, *, repository: object) -> None:
        super().__init__(message)
        self.repository = str(repository)


class UnfinishedCloneError(NoCheckpointsError):
    """The repository is a clone that was interrupted: it holds none or part of the remote's
    checkpoints, and only running the same clone again may finish it."""


class InvalidSettingError(CheckpointError):
    """A ``checkpoints.*`` setting in the repository's config holds a value that is not usable.

    Attributes:
        setting: Its name, such as ``checkpoints.maxFileSize``.
        source: Where it was read (the config file, or the line within it).
    """

    FIELDS: ClassVar[tuple[str, ...]] = ('setting', 'source')

    def __init__(self, message: str, *, setting: str, source: object) -> None:
        super().__init__(message)
        self.setting = setting
        self.source = str(source)


class CorruptRepositoryError(CheckpointError):
    """The shadow repository cannot be read, or holds something we refuse to write.

    Attributes:
        path: The repository, or the file or object in it found damaged (None when the raise
            cannot tell).
    """

    FIELDS: ClassVar[tuple[str, ...]] = ('path',)

    def __init__(self, message: str, *, path: object = None) -> None:
        super().__init__(message)
        self.path = None if path is None else str(path)


class UnsafeCheckpointError(CorruptRepositoryError):
    """A checkpoint holds an entry that is never written into a desk: an unsafe or overlong
    name, a path outside the tracked paths, two entries of one name, an odd mode or symlink.

    Attributes:
        entry: The entry's desk-relative path, as the checkpoint holds it.
    """

    FIELDS: ClassVar[tuple[str, ...]] = ('entry',)

    def __init__(self, message: str, *, entry: str) -> None:
        super().__init__(message)
        self.entry = entry


class RepositoryFileError(CorruptRepositoryError):
    """A file of the shadow repository the library refuses to open: a symbolic link (at its
    name, or a folder on its way), not a regular file (a FIFO, a device, a folder), or larger
    than that file ever is. The message names the file, never a byte of it (a planted link
    may point at a credentials file).

    Attributes:
        path: The file, or the folder on its way that is a link.
        problem: ``link``, ``not-regular`` or ``too-large``.
    """

    FIELDS: ClassVar[tuple[str, ...]] = ('path', 'problem')

    def __init__(self, message: str, *, path: object, problem: str) -> None:
        super().__init__(message, path=path)
        self.problem = problem


# -- the file system ----------------------------------------------------------------------


class FileAccessError(CheckpointError):
    """The system refused to read or write a file or folder of the desk, the repository, the
    workspace or the credential store (the system's reason ends the message).

    Attributes:
        path: The file or folder.
        action: What was tried: ``read``, ``write``, ``list``, ``create``, ``delete``, ``open``
            or ``update``.
    """

    FIELDS: ClassVar[tuple[str, ...]] = ('path', 'action')

    def __init__(self, message: str, *, path: object, action: str) -> None:
        super().__init__(message)
        self.path = str(path)
        self.action = action


class NotAFolderError(CheckpointError):
    """A component of a desk path is a symlink, a file or something else, not a real folder.

    Attributes:
        folder: The component's path ('' for the desk itself).
    """

    FIELDS: ClassVar[tuple[str, ...]] = ('folder',)

    def __init__(self, folder: str) -> None:
        super().__init__(
            f'{folder or "the desk"} is not a real folder (a symlink or a file is in the way; '
            'nothing is ever written or read through one)'
        )
        self.folder = folder


class UntrackedInTheWayError(CheckpointError):
    """A restore would have to replace something that is not tracked (so not in any
    checkpoint): a file or symlink where it needs a folder, or a folder holding untracked files.

    Attributes:
        path: The desk-relative path the restore writes.
        blocker: The full path of what is in the way.
    """

    FIELDS: ClassVar[tuple[str, ...]] = ('path', 'blocker')

    def __init__(self, message: str, *, path: str, blocker: object) -> None:
        super().__init__(message)
        self.path = path
        self.blocker = str(blocker)


class MountPointError(CheckpointError):
    """A restore would write or delete at or below a mount point; nothing was changed.

    Attributes:
        path: The desk-relative path the restore writes or deletes.
        mount: The full path of the mount point.
    """

    FIELDS: ClassVar[tuple[str, ...]] = ('path', 'mount')

    def __init__(self, message: str, *, path: str, mount: object) -> None:
        super().__init__(message)
        self.path, self.mount = path, str(mount)


class OverSizeLimitError(CheckpointError):
    """A restore would overwrite a file that is over the maximum file size, so was never saved.

    Attributes:
        path: The desk-relative path.
        limit: The maximum file size in bytes.
    """

    FIELDS: ClassVar[tuple[str, ...]] = ('path', 'limit')

    def __init__(self, message: str, *, path: str, limit: int) -> None:
        super().__init__(message)
        self.path = path
        self.limit = limit


# -- other writers ------------------------------------------------------------------------


class ExternalChangesError(CheckpointError):
    """A restore, undo or redo would overwrite changes it was asked to keep: made outside the
    agent, or made since the undo a redo would reverse (use force). A dry run raises it too,
    where the run would (its message then says what it would refuse).

    Attributes:
        paths: The desk-relative paths changed outside the agent that it would overwrite.
        overrides: What would let it go ahead: ``'overwrite'`` (forced: what it overwrites is
            kept in the pre-snapshot) and ``'keep'`` (those files left as they are), or only
            ``'overwrite'`` (a redo over the agent's changes since the undo).
    """

    FIELDS: ClassVar[tuple[str, ...]] = ('paths', 'overrides')

    def __init__(
        self,
        message: str,
        paths: Iterable[str],
        *,
        overrides: tuple[str, ...] = ('overwrite', 'keep'),
    ) -> None:
        super().__init__(message)
        self.paths = tuple(paths)
        self.overrides = overrides


class TurnConflictError(ExternalChangesError):
    """A rewind of an agent turn would overwrite files another session or writer changed after
    the turn did (use force to overwrite them, or keep them as they are).

    Attributes:
        turn: The turn that was to be rewound.
    """

    FIELDS: ClassVar[tuple[str, ...]] = ('paths', 'overrides', 'turn')

    def __init__(self, message: str, paths: Iterable[str], *, turn: str) -> None:
        super().__init__(message, paths)
        self.turn = turn


class ConcurrentChangeError(CheckpointError):
    """Another writer changed what this operation was using while it ran (a file that kept
    changing, the desk folder replaced or moved, the branch moved); nothing was recorded.

    Attributes:
        path: What changed: a desk-relative path, a folder, or the repository.
    """

    FIELDS: ClassVar[tuple[str, ...]] = ('path',)

    def __init__(self, message: str, *, path: object) -> None:
        super().__init__(message)
        self.path = str(path)


class DeskChangedError(ConcurrentChangeError):
    """A file a restore was about to replace or delete changed after the restore read it (the
    restore then completes through its record)."""

    def __init__(self, path: str) -> None:
        super().__init__(f'{path} changed while it was being restored', path=path)


class TurnStillOpenError(CheckpointError):
    """A turn was opened on a desk whose previous turn is still open (turns do not nest).

    Attributes:
        turn: The open turn's id.
        desk: The desk folder.
    """

    FIELDS: ClassVar[tuple[str, ...]] = ('turn', 'desk')

    def __init__(self, message: str, *, turn: str, desk: object) -> None:
        super().__init__(message)
        self.turn = turn
        self.desk = str(desk)


class UnfinishedRestoreError(CheckpointError):
    """A restore was interrupted and its record is still there: completing it failed (the
    message gives the cause), or a prune was refused until it is completed.

    Attributes:
        record: The restore record's path.
        path: The desk-relative path that kept changing, when that was the cause.
    """

    FIELDS: ClassVar[tuple[str, ...]] = ('record', 'path')

    def __init__(self, message: str, *, record: object, path: str | None = None) -> None:
        super().__init__(message)
        self.record = str(record)
        self.path = path


class LockTimeoutError(CheckpointError):
    """Another process held the desk's lock for longer than we were willing to wait.

    Attributes:
        lock: The lock file.
        timeout: How long we waited, in seconds.
        holder: Who held it, as far as the lock file tells (``pid 123 on host, ...``,
            ``holder unknown``, or ``another thread`` of this process).
    """

    FIELDS: ClassVar[tuple[str, ...]] = ('lock', 'timeout', 'holder')

    def __init__(
        self,
        message: str,
        *,
        lock: object = None,
        timeout: float | None = None,
        holder: str | None = None,
    ) -> None:
        super().__init__(message)
        self.lock = None if lock is None else str(lock)
        self.timeout = timeout
        self.holder = holder


class CheckpointWarning(RuntimeWarning):
    """A best-effort checkpoint (a guard's) failed; the write went ahead without one."""


class LockWaitWarning(UserWarning):
    """A writer has waited more than a second for the desk's lock (issued once per wait).

    Attributes:
        lock: The lock file.
        holder: Who holds it, as the lock file tells (``pid 4242 on host (restore), holding
            it for 3 s``).
    """

    def __init__(self, message: str, *, lock: object, holder: str) -> None:
        super().__init__(message)
        self.lock = str(lock)
        self.holder = holder
