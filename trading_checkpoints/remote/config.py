"""The remotes in a repository's config (``[remote "NAME"] url = ...``): add, list, get, remove.

A URL is stored without its user info; credentials go to the credential file instead.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from ..errors import InvalidArgumentError, RemoteError, RemoteNotFoundError, RemoteURLError
from ..store import config as repo_config
from . import credentials
from .urls import HTTP_SCHEMES, client_for, is_local, redact, userinfo_span

_NAME = re.compile(r'[A-Za-z0-9][A-Za-z0-9._-]{0,63}')


@dataclass(frozen=True)
class Remote:
    name: str
    url: str = field(repr=False)  # as stored; may hold user info in a config written before

    def __repr__(self) -> str:
        return f'Remote(name={self.name!r}, url={self.display_url!r})'

    @property
    def display_url(self) -> str:
        return redact(self.url)


def check_name(name: str) -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise InvalidArgumentError(
            f'{name!r} is not a remote name (letters, digits, ".", "_" and "-", like "backup")',
            name='name',
            value=name,
        )
    return name


def list_remotes(repository: Path) -> list[Remote]:
    config = repo_config.load(repository)
    remotes = []
    for subsection in config.subsections(b'remote'):
        url = config.value(b'remote', b'url', subsection)
        name = subsection.decode('utf-8', 'replace')
        if url is None or not _NAME.fullmatch(name):
            continue  # not a remote our verbs could name
        remotes.append(Remote(name, url.decode('utf-8', 'surrogateescape')))
    return sorted(remotes, key=lambda remote: remote.name)


def get_remote(repository: Path, name: str | None) -> Remote:
    remotes = list_remotes(repository)
    if name is None:
        if len(remotes) == 1:
            return remotes[0]
        for remote in remotes:
            if remote.name == 'origin':
                return remote
        if not remotes:
            raise RemoteNotFoundError(
                f'no remote configured in {repository}; add one with '
                '`checkpoints remote add NAME URL`',
                remote=None,
            )
        raise RemoteNotFoundError(
            'several remotes are configured ('
            + ', '.join(r.name for r in remotes)
            + '); name the one to use',
            remote=None,
        )
    for remote in remotes:
        if remote.name == name:
            return remote
    raise RemoteNotFoundError(f'no remote named {name!r} in {repository}', remote=name)


def add_remote(repository: Path, name: str, url: str) -> Remote:
    """Remembers a remote; credentials in the URL go to the credential file, not the config."""
    check_name(name)
    if not isinstance(url, str) or not url.strip() or not _storable_text(url.strip()):
        raise RemoteURLError(f'{redact(str(url))!r} is not a remote URL or path', remote=name)
    url = url.strip()
    if is_local(url) and not url.startswith('file://'):
        url = os.path.abspath(url)  # relative to where the command ran, not to the repository
    client_for(url)  # fails early on an unsupported URL
    if any(remote.name == name for remote in list_remotes(repository)):
        raise RemoteError(f'a remote named {name!r} already exists; remove it first', remote=name)
    stored, given = _storable(url)
    if not given.empty:
        credentials.save(stored, given, Path(repository))
    repo_config.set_values(
        repository,
        b'remote',
        b'url',
        [stored.encode('utf-8', 'surrogateescape')],
        subsection=name.encode(),
    )
    return Remote(name, stored)


def _storable_text(url: str) -> bool:
    """No control character, and bytes for every character (undecodable bytes included)."""
    try:
        url.encode('utf-8', 'surrogateescape')
    except UnicodeEncodeError:
        return False
    return not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in url)


def _storable(url: str) -> tuple[str, credentials.Credentials]:
    """The URL to keep in the config, and the credentials to keep in the credential file."""
    if is_local(url):
        return url, credentials.NONE
    address, given = credentials.split(url)
    if userinfo_span(address) is not None:
        raise RemoteURLError(
            f'{redact(url)}: the URL has an "@" after its host part; percent-encode "/", "?", '
            '"#" and "@" in a user name or password (%2F, %3F, %23, %40)',
            remote=None,
        )
    if urlsplit(address).scheme.lower() in HTTP_SCHEMES:
        return address, given
    if given.password is not None:
        raise RemoteURLError(
            f'{redact(url)}: a password in an ssh URL is not supported; use an ssh key or agent',
            remote=None,
        )
    return url, credentials.NONE  # an ssh user name is part of the address, not a secret


def remove_remote(repository: Path, name: str) -> None:
    """Forgets a remote (its stored credentials stay: other desks may use the same URL)."""
    get_remote(repository, name)
    repo_config.remove_section(repository, b'remote', name.encode())
