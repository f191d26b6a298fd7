"""A remote's URL: shown without its user info, secrets masked, and the client that reaches it.

Credentials never enter the repository and are never printed. A URL given with user info
(``https://user:secret@host/...``, ``https://TOKEN@host/...``) is stored without it (see
:mod:`.config`), and the user name and password go to a credential file outside the
repository (see :mod:`.credentials`); ``$CHECKPOINTS_REMOTE_USERNAME`` /
``$CHECKPOINTS_REMOTE_PASSWORD`` take precedence over that file. Every URL shown (results,
errors, the reflog) has its user info removed, and error messages have any secret masked.
Percent-encoded user names and passwords are decoded (RFC 3986) before they are sent.
Transfers go through dulwich's clients (see ``store.transport``), so local paths, ``file://``,
``http(s)://`` (smart HTTP) and ``ssh://`` all work without a git binary.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

from ..errors import CheckpointError, RemoteURLError
from ..store.transport import Connection, connect
from . import credentials

USERNAME_ENV = 'CHECKPOINTS_REMOTE_USERNAME'
PASSWORD_ENV = 'CHECKPOINTS_REMOTE_PASSWORD'
SSH_COMMAND_ENV = 'CHECKPOINTS_SSH_COMMAND'  # else $GIT_SSH_COMMAND, else ssh
HTTP_SCHEMES = ('http', 'https')


def redact(url: str) -> str:
    """The URL without its user info (user name and password: either may be a token).

    Control characters (and undecodable bytes) are shown as ``?``, so a URL never moves the
    cursor, adds a line or fails to print.
    """
    span = userinfo_span(url)
    shown = url if span is None else url[: span[0]] + url[span[1] + 1 :]
    return ''.join('?' if _unprintable(c) else c for c in shown)


def userinfo_span(url: str) -> tuple[int, int] | None:
    """Where the user info of a URL lies (its start, the index of its ``@``), or None.

    Taken conservatively, up to the last ``@``: a secret holding an unencoded ``/``, ``?`` or
    ``#`` must not show up in part because a parser ends the host part early.
    """
    scheme_end = url.find('://')
    if scheme_end < 0 or '@' not in url[scheme_end + 3 :]:
        return None
    return scheme_end + 3, url.rindex('@')


def _unprintable(character: str) -> bool:
    code = ord(character)
    return code < 0x20 or 0x7F <= code <= 0x9F or 0xD800 <= code <= 0xDFFF


def _secrets(url: str) -> list[str]:
    """Every secret that could show up in a message about ``url``, longest first."""
    found: list[str] = []
    raw: list[str | None] = []
    span = userinfo_span(url)
    if span is not None:
        userinfo = url[span[0] : span[1]]
        raw = [userinfo, *userinfo.split(':', 1)]
    try:
        address, given = credentials.split(url)
        stored = credentials.lookup(address) if given.empty else credentials.NONE
    except CheckpointError:
        given = stored = credentials.NONE
    candidates = [
        *raw,
        given.username,
        given.password,
        stored.username,
        stored.password,
        os.environ.get(USERNAME_ENV),
        os.environ.get(PASSWORD_ENV),
    ]
    for secret in candidates:
        if secret and len(secret) >= 3 and secret not in found:
            found.append(secret)
    return sorted(found, key=len, reverse=True)


def scrub(text: str, url: str) -> str:
    for secret in _secrets(url):
        text = text.replace(secret, '***')
    return text


def is_local(url: str) -> bool:
    return '://' not in url or url.startswith('file://')


def local_path(url: str) -> Path:
    if url.startswith('file://'):
        return Path(urlsplit(url).path)
    return Path(url)


def client_for(url: str) -> Connection | None:
    """The connection to a remote reached through a client, or None for a path remote."""
    if is_local(url):
        return None
    address, given = credentials.split(url)
    scheme = urlsplit(address).scheme.lower()
    chosen = given
    if chosen.empty and scheme in HTTP_SCHEMES:
        from_env = credentials.Credentials(
            os.environ.get(USERNAME_ENV) or None, os.environ.get(PASSWORD_ENV) or None
        )
        chosen = from_env if not from_env.empty else credentials.lookup(address)
    elif chosen.empty:
        chosen = credentials.Credentials(os.environ.get(USERNAME_ENV) or None, None)
    ssh_command = os.environ.get(SSH_COMMAND_ENV) or os.environ.get('GIT_SSH_COMMAND') or None
    try:
        return connect(
            address,
            username=chosen.username,
            password=chosen.password if scheme in HTTP_SCHEMES else None,
            ssh_command=ssh_command,
        )
    except (ValueError, KeyError) as error:
        raise RemoteURLError(
            f'unsupported remote URL {redact(url)}: {scrub(str(error), url)}', remote=None
        ) from error
