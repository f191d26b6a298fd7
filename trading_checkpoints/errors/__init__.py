"""The one error family the library raises at its surface.

Every failure is a :class:`CheckpointError`. Its kind (the subclass) says which case it is and
carries that case's fields as attributes, so that callers (the command line, the MCP server,
an application) tell cases apart by ``isinstance`` and the fields, never by the message. The
message is for people: each raise writes it out in full. ``FIELDS`` names a kind's fields;
:meth:`CheckpointError.details` returns them by name.

The kinds, by what went wrong:

- the caller's request: :class:`InvalidArgumentError`, :class:`BadPathError`,
  :class:`UnknownCheckpointError` (:class:`PrunedCheckpointError`, :class:`UnknownTurnError`),
  :class:`BeforeFirstCheckpointError`, :class:`NotInCheckpointError`,
  :class:`NothingToUndoError`, :class:`ProtectedPathError`;
- what is there: :class:`NoWorkspaceError`, :class:`MissingDeskError`,
  :class:`NoCheckpointsError` (:class:`UnfinishedCloneError`), :class:`RepositoryExistsError`,
  :class:`InvalidSettingError`, :class:`CorruptRepositoryError`
  (:class:`UnsafeCheckpointError`, :class:`RepositoryFileError`);
- the file system: :class:`FileAccessError`, :class:`NotAFolderError`,
  :class:`UntrackedInTheWayError`, :class:`MountPointError`, :class:`OverSizeLimitError`;
- other writers: :class:`ExternalChangesError`, :class:`ConcurrentChangeError`
  (:class:`DeskChangedError`), :class:`TurnStillOpenError`, :class:`UnfinishedRestoreError`,
  :class:`LockTimeoutError` (and the warning :class:`LockWaitWarning` while waiting);
- remotes: :class:`RemoteError` and its kinds. No remote kind carries a URL: a URL may hold
  a password.
"""

from .kinds import (
    BadPathError,
    BeforeFirstCheckpointError,
    CheckpointError,
    CheckpointWarning,
    ConcurrentChangeError,
    CorruptRepositoryError,
    DeskChangedError,
    ExternalChangesError,
    FileAccessError,
    InvalidArgumentError,
    InvalidSettingError,
    LockTimeoutError,
    LockWaitWarning,
    MissingDeskError,
    MountPointError,
    NoCheckpointsError,
    NotAFolderError,
    NothingToUndoError,
    NotInCheckpointError,
    NoWorkspaceError,
    OverSizeLimitError,
    ProtectedPathError,
    PrunedCheckpointError,
    RepositoryExistsError,
    RepositoryFileError,
    TurnConflictError,
    TurnStillOpenError,
    UnfinishedCloneError,
    UnfinishedRestoreError,
    UnknownCheckpointError,
    UnknownTurnError,
    UnsafeCheckpointError,
    UntrackedInTheWayError,
)
from .remote import (
    CredentialFileError,
    EmptyRemoteError,
    HistoriesDivergedError,
    MissingRemoteFolderError,
    PrunedHistoryError,
    RemoteAuthError,
    RemoteError,
    RemoteMovedError,
    RemoteNotFoundError,
    RemoteTransportError,
    RemoteURLError,
)

__all__ = [
    'BadPathError',
    'BeforeFirstCheckpointError',
    'CheckpointError',
    'CheckpointWarning',
    'ConcurrentChangeError',
    'CorruptRepositoryError',
    'CredentialFileError',
    'DeskChangedError',
    'EmptyRemoteError',
    'ExternalChangesError',
    'FileAccessError',
    'HistoriesDivergedError',
    'InvalidArgumentError',
    'InvalidSettingError',
    'LockTimeoutError',
    'LockWaitWarning',
    'MissingDeskError',
    'MissingRemoteFolderError',
    'MountPointError',
    'NoCheckpointsError',
    'NoWorkspaceError',
    'NotAFolderError',
    'NotInCheckpointError',
    'NothingToUndoError',
    'OverSizeLimitError',
    'ProtectedPathError',
    'PrunedCheckpointError',
    'PrunedHistoryError',
    'RemoteAuthError',
    'RemoteError',
    'RemoteMovedError',
    'RemoteNotFoundError',
    'RemoteTransportError',
    'RemoteURLError',
    'RepositoryExistsError',
    'RepositoryFileError',
    'TurnConflictError',
    'TurnStillOpenError',
    'UnfinishedCloneError',
    'UnfinishedRestoreError',
    'UnknownCheckpointError',
    'UnknownTurnError',
    'UnsafeCheckpointError',
    'UntrackedInTheWayError',
]
