"""The remotes' error kinds (push, pull, clone and the remotes in the config). No remote kind
carries a URL: a URL may hold a password."""

from __future__ import annotations

from typing import ClassVar

from .kinds import CheckpointError


class RemoteError(CheckpointError):
    """A push, pull or clone, or a remote's configuration, failed. Raised as this class for
    the rarer cases (a remote name taken twice, a path remote that cannot be opened, a push
    the remote refused).

    Attributes:
        remote: The remote's name (None when none was chosen yet). Never its URL.
    """

    FIELDS: ClassVar[tuple[str, ...]] = ('remote',)

    def __init__(self, message: str, *, remote: str | None) -> None:
        super().__init__(message)
        self.remote = remote


class MissingRemoteFolderError(RemoteError):
    """A path remote's folder is missing (a drive not mounted?); nothing was pushed.

    Attributes:
        folder: The missing folder that would hold the remote's repository.
    """

    FIELDS: ClassVar[tuple[str, ...]] = ('remote', 'folder')

    def __init__(self, message: str, *, remote: str, folder: object) -> None:
        super().__init__(message, remote=remote)
        self.folder = str(folder)


class RemoteNotFoundError(RemoteError):
    """No remote could be chosen: none is configured, none has the name given, or several are
    and none was named."""


class RemoteURLError(RemoteError):
    """A remote URL, or the user name or password in it, is not one we can use."""


class CredentialFileError(RemoteError):
    """The credential file cannot be read or written, or is not safe to use.

    Attributes:
        path: The credential file.
    """

    FIELDS: ClassVar[tuple[str, ...]] = ('remote', 'path')

    def __init__(self, message: str, *, path: object) -> None:
        super().__init__(message, remote=None)
        self.path = str(path)


class RemoteTransportError(RemoteError):
    """Talking to the remote failed: it is not a git repository, the server hung up, ...

    Attributes:
        action: What was being done, as the message words it: ``push to`` or ``fetch from``.
    """

    FIELDS: ClassVar[tuple[str, ...]] = ('remote', 'action')

    def __init__(self, message: str, *, remote: str, action: str) -> None:
        super().__init__(message, remote=remote)
        self.action = action


class RemoteAuthError(RemoteTransportError):
    """The server refused the credentials."""


class EmptyRemoteError(RemoteError):
    """The remote holds no checkpoints (no branch main) to pull or clone."""


class HistoriesDivergedError(RemoteError):
    """The remote and the desk each have checkpoints the other lacks; nothing was changed.

    Attributes:
        remote_head: The remote's newest checkpoint (short id).
        head: The desk's newest checkpoint (short id; None when the message does not say).
    """

    FIELDS: ClassVar[tuple[str, ...]] = ('remote', 'remote_head', 'head')

    def __init__(
        self, message: str, *, remote: str, remote_head: str | None, head: str | None = None
    ) -> None:
        super().__init__(message, remote=remote)
        self.remote_head = remote_head
        self.head = head


class RemoteMovedError(RemoteError):
    """Another push moved the remote's branch while this one ran; nothing was changed.

    Attributes:
        remote_head: Where the remote's branch is now (short id), None when unknown.
    """

    FIELDS: ClassVar[tuple[str, ...]] = ('remote', 'remote_head')

    def __init__(self, message: str, *, remote: str, remote_head: str | None = None) -> None:
        super().__init__(message, remote=remote)
        self.remote_head = remote_head


class PrunedHistoryError(RemoteError):
    """A push would leave the remote with checkpoints whose parents it lacks, because this
    desk's history was pruned; nothing was pushed.

    Attributes:
        remote_head: The remote's newest checkpoint (short id), None when the remote is empty.
    """

    FIELDS: ClassVar[tuple[str, ...]] = ('remote', 'remote_head')

    def __init__(self, message: str, *, remote: str, remote_head: str | None = None) -> None:
        super().__init__(message, remote=remote)
        self.remote_head = remote_head
