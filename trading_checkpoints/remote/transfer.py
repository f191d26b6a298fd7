"""What push, pull and clone share: their result, transport errors, opening a path remote,
copying objects between repositories, and progress reports.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..core.ids import ShortId
from ..errors import CorruptRepositoryError, RemoteAuthError, RemoteError, RemoteTransportError
from ..store import config as repo_config
from . import credentials
from .config import Remote
from .urls import PASSWORD_ENV, USERNAME_ENV, local_path, scrub

ZERO = b'0' * 40
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
    from dulwich.client import HTTPProxyUnauthorized, HTTPUnauthorized
    from dulwich.errors import HangupException, NotGitRepository

    where = remote.display_url
    if isinstance(error, (HTTPUnauthorized, HTTPProxyUnauthorized)):
        return RemoteAuthError(
            f'{action} {remote.name} ({where}) failed: the server refused the credentials '
            f'(check the user name and password: in the URL, in ${USERNAME_ENV}/${PASSWORD_ENV}, '
            f'or in the credential file {credentials.store_path()})',
            remote=remote.name,
            action=action,
        )
    if isinstance(error, NotGitRepository):
        return RemoteTransportError(
            f'{action} {remote.name} failed: {where} is not a git repository',
            remote=remote.name,
            action=action,
        )
    if isinstance(error, HangupException):
        return RemoteTransportError(
            f'{action} {remote.name} ({where}) failed: the server hung up',
            remote=remote.name,
            action=action,
        )
    message = scrub(str(error) or type(error).__name__, remote.url)
    return RemoteTransportError(
        f'{action} {remote.name} ({where}) failed: {message}', remote=remote.name, action=action
    )


def open_local_remote(remote: Remote, create: bool):  # -> dulwich Repo
    """The repository of a path remote, opened like our own (its config vetted, no include)."""
    from dulwich.repo import Repo

    path = local_path(remote.url)
    if not path.exists() or (path.is_dir() and not any(path.iterdir())):
        if not create:
            raise RemoteError(f'{remote.name}: no repository at {path}', remote=remote.name)
        try:
            path.mkdir(parents=True, exist_ok=True)
            return Repo.init_bare(str(path))
        except OSError as error:
            raise RemoteError(
                f'{remote.name}: cannot create {path}: {error}', remote=remote.name
            ) from error
    control = path / '.git' if (path / '.git').is_dir() else path
    try:
        return repo_config.open_dulwich(control, repo_config.load(control, missing_ok=True))
    except CorruptRepositoryError as error:
        raise RemoteError(f'{remote.name}: {error}', remote=remote.name) from error


def copy_objects(
    source_repo, source_path: Path, target_repo, head: bytes, progress: Progress | None = None
) -> int:
    """Copies what ``target`` lacks of the history below ``head`` as one pack with deltas."""
    from ..store import storage

    source = source_repo.object_store
    target = target_repo.object_store
    missing = storage.reachable(
        source,
        [head],
        storage.read_shallow(source_path),
        enter_commit=lambda sha: sha not in target,
    )
    objects = [(source[sha], path) for sha, path in missing.items() if sha not in target]
    storage.write_pack(target, objects, progress=progress_text(progress))
    return len(objects)


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
