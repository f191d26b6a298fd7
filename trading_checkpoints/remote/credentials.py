"""Remote credentials: kept out of the repository, in a file only its owner can read.

A URL given with user info (``https://user:secret@host/...``, ``https://TOKEN@host/...``) is
stored in the repository's config without it; the user name and password go to a credential
file instead, outside every repository:

    $CHECKPOINTS_CREDENTIALS, else $XDG_CONFIG_HOME/trading-checkpoints/credentials,
    else ~/.config/trading-checkpoints/credentials

one URL per line, with its user info percent-encoded, like git's ``credential-store`` file. The
file is created with mode 600 in a folder of mode 700, and refused when others can read it.
Lookups match the scheme, host, port and path of the remote's URL.

User names and passwords in URLs are percent-encoded (RFC 3986): ``p%40ss`` means ``p@ss``.
They are decoded before use; ``$CHECKPOINTS_REMOTE_USERNAME``/``PASSWORD`` are taken as given.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from ..core.durability import write_atomically
from ..errors import CheckpointError, CredentialFileError, FileAccessError, RemoteURLError

STORE_ENV = 'CHECKPOINTS_CREDENTIALS'
MAX_BYTES = 1 << 20


@dataclass(frozen=True)
class Credentials:
    username: str | None
    password: str | None

    def __repr__(self) -> str:  # never shows the secret
        return f'Credentials(username={"***" if self.username else None}, password=***)'

    @property
    def empty(self) -> bool:
        return self.username is None and self.password is None


NONE = Credentials(None, None)


def split(url: str) -> tuple[str, Credentials]:
    """The URL without user info, and the (decoded) user name and password it held."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url, NONE
    if '://' not in url or '@' not in parts.netloc:
        return url, NONE
    userinfo, host = parts.netloc.rsplit('@', 1)
    user, colon, password = userinfo.partition(':')
    try:
        username = unquote(user, errors='strict') if user else None
        secret = unquote(password, errors='strict') if colon else None
    except UnicodeDecodeError:
        raise RemoteURLError(
            'the user name or password in the remote URL is not valid percent-encoded UTF-8',
            remote=None,
        ) from None
    return urlunsplit(parts._replace(netloc=host)), Credentials(username, secret)


def join(url: str, credentials: Credentials) -> str:
    """The URL with the credentials as (percent-encoded) user info."""
    parts = urlsplit(url)
    userinfo = quote(credentials.username or '', safe='')
    if credentials.password is not None:
        userinfo += ':' + quote(credentials.password, safe='')
    return urlunsplit(parts._replace(netloc=f'{userinfo}@{parts.netloc}'))


def store_path() -> Path:
    explicit = os.environ.get(STORE_ENV)
    if explicit:
        return Path(explicit)
    base = os.environ.get('XDG_CONFIG_HOME') or os.path.join(os.path.expanduser('~'), '.config')
    return Path(base) / 'trading-checkpoints' / 'credentials'


def _key(url: str) -> tuple[str, str, int | None, str] | None:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    host = (parts.hostname or '').lower()
    return parts.scheme.lower(), host, port, parts.path.rstrip('/')


def _read(path: Path) -> list[str]:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, 'O_NONBLOCK', 0) | getattr(os, 'O_CLOEXEC', 0))
    except FileNotFoundError:
        return []
    except OSError as error:
        raise CredentialFileError(
            f'cannot read the credential file {path}: {error.strerror}', path=path
        ) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_BYTES:
            raise CredentialFileError(
                f'the credential file {path} is not a small regular file', path=path
            )
        if info.st_mode & 0o077:
            raise CredentialFileError(
                f'the credential file {path} can be read by other users; chmod 600 it', path=path
            )
        data = os.read(fd, MAX_BYTES + 1)
    finally:
        os.close(fd)
    return data.decode('utf-8', 'replace').splitlines()


def lookup(url: str) -> Credentials:
    """The stored credentials for a URL (given without user info), or empty ones."""
    wanted = _key(url)
    if wanted is None:
        return NONE
    found = NONE
    for line in _read(store_path()):
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        try:
            address, credentials = split(line)
        except CheckpointError:
            continue
        if _key(address) == wanted:
            found = credentials  # the last one written wins
    return found


def save(url: str, credentials: Credentials, repository: Path | None = None) -> Path:
    """Stores the credentials for a URL (given without user info); returns the file's path."""
    path = store_path()
    if repository is not None:
        inside = os.path.realpath(path.parent)
        repo = os.path.realpath(repository)
        if inside == repo or inside.startswith(repo.rstrip(os.sep) + os.sep):
            raise CredentialFileError(
                f'the credential file {path} would lie inside the repository {repository}; '
                f'point ${STORE_ENV} elsewhere',
                path=path,
            )
    wanted = _key(url)
    kept = []
    for line in _read(path):
        try:
            address, _ = split(line.strip())
        except CheckpointError:
            address = ''
        if line.strip() and _key(address) != wanted:
            kept.append(line.strip())
    kept.append(join(url, credentials))
    data = ('\n'.join(kept) + '\n').encode('utf-8', 'surrogateescape')
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_atomically(path, data, mode=0o600)
    except (OSError, FileAccessError) as error:
        cause = error if isinstance(error, OSError) else error.__cause__
        reason = cause.strerror if isinstance(cause, OSError) and cause.strerror else str(error)
        if isinstance(cause, OSError) and cause.errno in (errno.ELOOP, errno.ENOTDIR):
            reason = f'its folder {path.parent} is a symbolic link or not a folder'
        raise CredentialFileError(
            f'cannot write the credential file {path}: {reason}; give the credentials '
            'through $CHECKPOINTS_REMOTE_USERNAME and $CHECKPOINTS_REMOTE_PASSWORD instead',
            path=path,
        ) from None
    return path
