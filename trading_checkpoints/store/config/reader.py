"""The shadow repository's config file, read and vetted: :func:`load` and :class:`RepoConfig`.

``<repo>/config`` may be written by anyone (``git config``, another tool, someone hostile), so
it is read here and only here, with these rules:

- ``[include]`` and ``[includeIf ...]`` are never followed: a config that has them is refused
  (git would follow them, so the file would not mean to git what it means to us).
- ``core.repositoryformatversion`` must be 0 or 1, and only the ``extensions.*`` we support
  (``objectFormat = sha1``, ``refStorage = files``, ``worktreeConfig``) may be set: anything
  else is refused before a single byte is written (a sha256 repository written with sha1
  objects would be unreadable).
- Errors name the file, the line and the key, never the contents (a config line may hold a
  token).
- The file is read only when it is a regular file of at most :data:`MAX_BYTES` bytes (a FIFO
  would block, a huge file would fill the memory), never through a link (``core.repofiles``).

The text is parsed by :mod:`.syntax`. Parsed configs are remembered by content.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from ...core import repofiles
from ...core.paths import path_problem
from ...core.repofiles import RepoFile
from ...errors import CorruptRepositoryError, FileAccessError
from .syntax import Setting, full_parse, simple_entries

NAME = 'config'
MAX_BYTES = 256 * 1024

CHECKPOINTS = b'checkpoints'
TRACKED = b'tracked'

SUPPORTED_FORMAT_VERSIONS = (0, 1)
# extensions.<name> (lower case) -> the values we accept (lower case), None for any value
SUPPORTED_EXTENSIONS: dict[bytes, frozenset[bytes] | None] = {
    b'objectformat': frozenset({b'sha1'}),
    b'refstorage': frozenset({b'files'}),
    b'worktreeconfig': None,
}


class RepoConfig:
    """A parsed, vetted config (immutable; see :func:`load`)."""

    def __init__(self, path: Path, data: bytes, settings: Sequence[Setting]) -> None:
        self.path = path
        self.data = data
        self.settings: tuple[Setting, ...] = tuple(settings)
        self._tracked: tuple[str, ...] | None = None
        self._tracked_vetted = False

    def __repr__(self) -> str:
        return f'RepoConfig({str(self.path)!r}, {len(self.settings)} settings)'

    def all(self, section: bytes, name: bytes, subsection: bytes | None = None) -> list[Setting]:
        """Every setting of one key, in file order."""
        section, name = section.lower(), name.lower()
        return [
            s
            for s in self.settings
            if s.name == name and s.section == section and s.subsection == subsection
        ]

    def get(self, section: bytes, name: bytes, subsection: bytes | None = None) -> Setting | None:
        """The last setting of one key (the one git uses), or None."""
        found = self.all(section, name, subsection)
        return found[-1] if found else None

    def value(self, section: bytes, name: bytes, subsection: bytes | None = None) -> bytes | None:
        """The value of one key (``true`` for a bare key, as git reads it), or None."""
        setting = self.get(section, name, subsection)
        if setting is None:
            return None
        return b'true' if setting.value is None else setting.value

    def string(self, section: bytes, name: bytes, subsection: bytes | None = None) -> str | None:
        value = self.value(section, name, subsection)
        return None if value is None else value.decode('utf-8', 'replace')

    def subsections(self, section: bytes) -> list[bytes]:
        """The subsections of ``section`` (``[remote "NAME"]``) that hold settings, in order."""
        section = section.lower()
        out: list[bytes] = []
        for s in self.settings:
            if s.section == section and s.subsection is not None and s.subsection not in out:
                out.append(s.subsection)
        return out

    def where(self, setting: Setting) -> str:
        return f'{self.path} (line {setting.line})'

    def tracked_paths(self) -> tuple[str, ...] | None:
        """The remembered tracked paths, vetted like paths given in code, or None."""
        if not self._tracked_vetted:
            self._tracked = _vetted_tracked(self)
            self._tracked_vetted = True
        return self._tracked


# -- reading ---------------------------------------------------------------------------------


_LOADED: dict[tuple[str, bytes], RepoConfig] = {}


def read_bytes(repository: str | os.PathLike[str], *, missing_ok: bool = False) -> bytes:
    """The bytes of ``<repository>/config``; b'' when missing and ``missing_ok``.

    Read through ``core.repofiles``: a link, anything but a regular file, or more than
    :data:`MAX_BYTES` is refused (``RepositoryFileError``), naming the file, never its lines.
    """
    path = os.path.join(repository, NAME)
    try:
        data = repofiles.read(RepoFile(Path(repository), NAME), MAX_BYTES)
    except FileAccessError as error:
        raise CorruptRepositoryError(str(error), path=path) from error
    if data is None:
        if missing_ok:
            return b''  # no repository there (yet): whoever opens it says what is wrong
        raise CorruptRepositoryError(f'cannot read {path}: it is missing', path=path)
    return data


def load(repository: str | os.PathLike[str], *, missing_ok: bool = False) -> RepoConfig:
    """The vetted config of a repository (see the module notes); raises CorruptRepositoryError."""
    data = read_bytes(repository, missing_ok=missing_ok)
    path = os.path.join(repository, NAME)
    key = (path, data)
    known = _LOADED.get(key)
    if known is None:
        known = parse(data, Path(path))
        if len(data) <= 16 * 1024:  # remembered while small: the memo stays small too
            if len(_LOADED) >= 64:
                _LOADED.clear()
            _LOADED[key] = known
    return known


def forget() -> None:
    """Drops the parsed configs this process remembers (for benchmarks)."""
    _LOADED.clear()


def parse(data: bytes, path: Path) -> RepoConfig:
    """Parses and vets config bytes; ``path`` only names the file in errors."""
    settings = simple_entries(data)
    if settings is None:
        settings, _ = full_parse(data, path)
    config = RepoConfig(path, data, settings)
    check_format(config)
    return config


def check_format(config: RepoConfig) -> None:
    """Refuses includes, unsupported format versions and unsupported extensions."""
    for setting in config.settings:
        if setting.section in (b'include', b'includeif'):
            raise CorruptRepositoryError(
                f'{config.where(setting)} includes another file ([{_ascii(setting.section)}]); '
                'a checkpoint repository must not include config from elsewhere: remove it',
                path=config.path,
            )
    version = config.get(b'core', b'repositoryformatversion')
    if version is not None:
        text = (version.value or b'').strip()
        if not re.fullmatch(rb'[0-9]{1,6}', text) or int(text) not in SUPPORTED_FORMAT_VERSIONS:
            raise CorruptRepositoryError(
                f'{config.where(version)}: core.repositoryformatversion is not 0 or 1; this '
                'repository format is not supported, nothing was changed',
                path=config.path,
            )
    for setting in config.settings:
        if setting.section != b'extensions':
            continue
        key = f'extensions.{_ascii(setting.name)}'
        if setting.name not in SUPPORTED_EXTENSIONS:
            raise CorruptRepositoryError(
                f'{config.where(setting)}: {key} is set, and that repository extension is not '
                'supported; nothing was changed',
                path=config.path,
            )
        accepted = SUPPORTED_EXTENSIONS[setting.name]
        if accepted is not None and (setting.value or b'').strip().lower() not in accepted:
            raise CorruptRepositoryError(
                f'{config.where(setting)}: {key} names a value that is not supported (only '
                f'{", ".join(sorted(v.decode() for v in accepted))}); nothing was changed',
                path=config.path,
            )


def _ascii(name: bytes) -> str:
    # Names are letters, digits, "-" and "." by construction; still never print anything else.
    return name.decode('ascii', 'replace')


def _vetted_tracked(config: RepoConfig) -> tuple[str, ...] | None:
    settings = config.all(CHECKPOINTS, TRACKED)
    out = []
    for setting in settings:
        problem = None
        if setting.value is not None:
            text = setting.value.decode('utf-8', 'surrogateescape')
            problem = path_problem(text.replace('\\', '/').rstrip('/'))
            if not problem:
                out.append(text)
                continue
        where = f'checkpoints.tracked in {config.path} (line {setting.line})'
        if problem is None:
            raise CorruptRepositoryError(f'{where} has no value', path=config.path)
        raise CorruptRepositoryError(
            f'{where} is not a usable tracked path: it has {problem}', path=config.path
        )
    return tuple(out) or None


def _parse_tracked(data: bytes, path: Path) -> tuple[str, ...] | None:
    """The ``checkpoints.tracked`` values as written (not vetted), or None."""
    settings = simple_entries(data)
    if settings is None:
        settings, _ = full_parse(data, path)
    found = [
        s.value or b'true'
        for s in settings
        if (s.section, s.subsection, s.name) == (CHECKPOINTS, None, TRACKED)
    ]
    return tuple(value.decode('utf-8', 'surrogateescape') for value in found) or None


def _parse_value(data: bytes, section: bytes, name: bytes, path: Path) -> str | None:
    """One value (the last) of a config's bytes, or None."""
    settings = simple_entries(data)
    if settings is None:
        settings, _ = full_parse(data, path)
    return RepoConfig(path, data, settings).string(section, name)
