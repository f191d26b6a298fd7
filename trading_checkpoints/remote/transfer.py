"""What push, pull and clone share: their result, transport errors, opening a path remote,
and progress reports (dulwich's side of each is ``store.transport``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ..core.ids import ShortId
from ..errors import (
    CorruptRepositoryError,
    MissingRemoteFolderError,
    RemoteAuthError,
    RemoteError,
    RemoteTransportError,
)
from ..store.transport import Failure, PathRepository, failure_kind
from . import credentials
from .config import Remote
from .urls import PASSWORD_ENV, USERNAME_ENV, local_path, scrub

Progress = Callable[[str], None]


@dataclass(frozen=True)
class TransferResult:
    """What a push, pull or clone did."""

    remote: str
    url: str  # without user info
    old: ShortId | None  # the branch before (remote's for push, local's for pull)
    new: ShortId | None  # the branch after
    up_to_date: bool
    marked_shallow: tuple[str, ...] = ()


def transport_error(error: BaseException, remote: Remote, action: str) -> RemoteTransportError:
    where = remote.display_url
    kind = failure_kind(error)
    if kind is Failure.UNAUTHORIZED:
        return RemoteAuthError(
            f'{action} {remote.name} ({where}) failed: the server refused the credentials '
            f'(check the user name and password: in the URL, in ${USERNAME_ENV}/${PASSWORD_ENV}, '
            f'or in the credential file {credentials.store_path()})',
            remote=remote.name,
            action=action,
        )
    if kind is Failure.NOT_A_REPOSITORY:
        return RemoteTransportError(
            f'{action} {remote.name} failed: {where} is not a git repository',
            remote=remote.name,
            action=action,
        )
    if kind is Failure.HUNG_UP:
        return RemoteTransportError(
            f'{action} {remote.name} ({where}) failed: the server hung up',
            remote=remote.name,
            action=action,
        )
    message = scrub(str(error) or type(error).__name__, remote.url)
    return RemoteTransportError(
        f'{action} {remote.name} ({where}) failed: {message}', remote=remote.name, action=action
    )


def open_local_remote(
    remote: Remote, create: bool, *, create_parents: bool = False
) -> PathRepository:
    """The repository of a path remote, opened like our own (its config vetted, no include).

    With ``create``, a missing (or empty) folder is made a new repository; the folder that
    holds it must exist unless ``create_parents``: a backup drive that is not mounted must
    not turn into folders of the same name on this disk.
    """
    path = local_path(remote.url)
    if not path.exists() or (path.is_dir() and not any(path.iterdir())):
        if not create:
            raise RemoteError(f'{remote.name}: no repository at {path}', remote=remote.name)
        parent = path.absolute().parent
        if not create_parents and not parent.is_dir():
            raise MissingRemoteFolderError(
                f'{remote.name}: the folder {parent} does not exist (is the drive '
                f'mounted?), so there is no place for the repository {path.name}; nothing '
                'was pushed. Create the folder, or push with --create-parents '
                '(create_parents=True) to make it',
                remote=remote.name,
                folder=parent,
            )
        try:
            path.mkdir(parents=create_parents, exist_ok=True)
            return PathRepository.create(path)
        except OSError as error:
            raise RemoteError(
                f'{remote.name}: cannot create {path}: {error}', remote=remote.name
            ) from error
    control = path / '.git' if (path / '.git').is_dir() else path
    try:
        return PathRepository.open(control)
    except CorruptRepositoryError as error:
        raise RemoteError(f'{remote.name}: {error}', remote=remote.name) from error


def progress_bytes(progress: Progress | None) -> Callable[[bytes], None] | None:
    if progress is None:
        return None

    def report(data: bytes) -> None:
        for piece in re.split(rb'[\r\n]+', data):
            text = piece.decode('utf-8', 'replace').strip()
            if text:
                progress(text)

    return report


def progress_text(progress: Progress | None) -> Callable[..., None] | None:
    if progress is None:
        return None

    def report(message: str | bytes) -> None:
        if isinstance(message, bytes):
            message = message.decode('utf-8', 'replace')
        text = message.strip()
        if text:
            progress(text)

    return report
