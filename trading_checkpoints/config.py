"""The shadow repository's config file: its one reader and its one writer.

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
  would block, a huge file would fill the memory).

Configs in the plain form we write ourselves (``[section]`` headers and ``key = value`` lines)
take a fast reader; anything else takes a full parser that follows git's syntax (quotes,
escapes, continuation lines, comments, subsections). Parsed configs are remembered by content.

Writers edit the file line by line (comments and everything else stay as they were), check
that the result reads back as intended, and replace the file atomically.

dulwich's own repository object parses the config again (and would follow includes): it is
opened here, by :func:`open_dulwich`, with a config we built from the vetted one, and with the
repository's folder given as its control and common directory, so no ``.git`` file or
``commondir`` file inside it can redirect it elsewhere.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .durability import write_atomically
from .errors import CheckpointError, CorruptRepositoryError
from .paths import path_problem

if TYPE_CHECKING:
    from dulwich.repo import Repo

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

_O_FLAGS = (
    os.O_RDONLY
    | getattr(os, 'O_CLOEXEC', 0)
    | getattr(os, 'O_NONBLOCK', 0)
    | getattr(os, 'O_NOCTTY', 0)
)


@dataclass(frozen=True)
class Setting:
    """One ``key = value`` line of a config (names lower case, subsection as written).

    ``value`` is None for a key written without ``=`` (git reads it as true). ``start`` and
    ``end`` are the byte offsets of the setting (from its name to the end of its last line,
    newline excluded); the fast reader leaves them at -1.
    """

    section: bytes
    subsection: bytes | None
    name: bytes
    value: bytes | None
    line: int
    start: int = -1
    end: int = -1


@dataclass(frozen=True)
class _Header:
    section: bytes
    subsection: bytes | None
    line: int
    start: int
    end: int


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
    """The bytes of ``<repository>/config``; b'' when missing and ``missing_ok``."""
    path = os.path.join(repository, NAME)
    try:
        fd = os.open(path, _O_FLAGS)
    except (FileNotFoundError, NotADirectoryError):
        if missing_ok:
            return b''  # no repository there (yet): whoever opens it says what is wrong
        raise CorruptRepositoryError(f'cannot read {path}: it is missing') from None
    except OSError as error:
        raise CorruptRepositoryError(f'cannot read {path}: {error.strerror}') from error
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise CorruptRepositoryError(f'cannot read {path}: it is not a regular file')
        if info.st_size > MAX_BYTES:
            raise CorruptRepositoryError(_too_large(path))
        chunks = []
        size = 0
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            size += len(chunk)
            if size > MAX_BYTES:  # grew while being read
                raise CorruptRepositoryError(_too_large(path))
            chunks.append(chunk)
        return b''.join(chunks)
    except OSError as error:
        raise CorruptRepositoryError(f'cannot read {path}: {error.strerror}') from error
    finally:
        os.close(fd)


def _too_large(path: str) -> str:
    return f'cannot read {path}: it is larger than {MAX_BYTES // 1024} KiB, which no config needs'


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
    settings = _simple_entries(data)
    if settings is None:
        settings, _ = _full_parse(data, path)
    config = RepoConfig(path, data, settings)
    check_format(config)
    return config


def check_format(config: RepoConfig) -> None:
    """Refuses includes, unsupported format versions and unsupported extensions."""
    for setting in config.settings:
        if setting.section in (b'include', b'includeif'):
            raise CorruptRepositoryError(
                f'{config.where(setting)} includes another file ([{_ascii(setting.section)}]); '
                'a checkpoint repository must not include config from elsewhere: remove it'
            )
    version = config.get(b'core', b'repositoryformatversion')
    if version is not None:
        text = (version.value or b'').strip()
        if not re.fullmatch(rb'[0-9]{1,6}', text) or int(text) not in SUPPORTED_FORMAT_VERSIONS:
            raise CorruptRepositoryError(
                f'{config.where(version)}: core.repositoryformatversion is not 0 or 1; this '
                'repository format is not supported, nothing was changed'
            )
    for setting in config.settings:
        if setting.section != b'extensions':
            continue
        key = f'extensions.{_ascii(setting.name)}'
        if setting.name not in SUPPORTED_EXTENSIONS:
            raise CorruptRepositoryError(
                f'{config.where(setting)}: {key} is set, and that repository extension is not '
                'supported; nothing was changed'
            )
        accepted = SUPPORTED_EXTENSIONS[setting.name]
        if accepted is not None and (setting.value or b'').strip().lower() not in accepted:
            raise CorruptRepositoryError(
                f'{config.where(setting)}: {key} names a value that is not supported (only '
                f'{", ".join(sorted(v.decode() for v in accepted))}); nothing was changed'
            )


def _ascii(name: bytes) -> str:
    # Names are letters, digits, "-" and "." by construction; still never print anything else.
    return name.decode('ascii', 'replace')


def _vetted_tracked(config: RepoConfig) -> tuple[str, ...] | None:
    settings = config.all(CHECKPOINTS, TRACKED)
    out = []
    for setting in settings:
        where = f'checkpoints.tracked in {config.path} (line {setting.line})'
        if setting.value is None:
            raise CorruptRepositoryError(f'{where} has no value')
        text = setting.value.decode('utf-8', 'surrogateescape')
        problem = path_problem(text.replace('\\', '/').rstrip('/'))
        if problem:
            raise CorruptRepositoryError(f'{where} is not a usable tracked path: it has {problem}')
        out.append(text)
    return tuple(out) or None


# -- the fast reader: the plain form we write ---------------------------------------------------

_SIMPLE_SECTION = re.compile(rb'\[([A-Za-z0-9-]+)\]')
_SIMPLE_ENTRY = re.compile(
    rb'[ \t]*([A-Za-z][A-Za-z0-9-]*)[ \t]*=[ \t]*([ !$-:<-\[\]-~\x80-\xff]+)'
)


def _simple_entries(data: bytes) -> list[Setting] | None:
    """The settings of a config in the plain form we write, or None for anything else.

    Only ``[section]`` headers, ``key = value`` lines whose value has no quote, backslash,
    comment sign, control character, leading/trailing or doubled space, and blank lines; any
    other config goes to the full parser. Names are case-insensitive, as in git.
    """
    settings: list[Setting] = []
    section = None
    for number, line in enumerate(data.split(b'\n'), 1):
        if not line.strip(b' \t'):
            continue
        match = _SIMPLE_SECTION.fullmatch(line)
        if match:
            section = match.group(1).lower()
            continue
        match = _SIMPLE_ENTRY.fullmatch(line)
        if match is None or section is None:
            return None
        value = match.group(2)
        if value.startswith(b' ') or value.endswith(b' ') or b'  ' in value:
            return None
        settings.append(Setting(section, None, match.group(1).lower(), value, number))
    return settings


def _simple_config(data: bytes) -> dict[tuple[bytes, bytes], list[bytes]] | None:
    """The values of a plain-form config by (section, name), or None (see _simple_entries)."""
    settings = _simple_entries(data)
    if settings is None:
        return None
    values: dict[tuple[bytes, bytes], list[bytes]] = {}
    for setting in settings:
        values.setdefault((setting.section, setting.name), []).append(setting.value or b'')
    return values


def _parse_tracked(data: bytes, path: Path) -> tuple[str, ...] | None:
    """The ``checkpoints.tracked`` values as written (not vetted), or None."""
    settings = _simple_entries(data)
    if settings is None:
        settings, _ = _full_parse(data, path)
    found = [
        s.value or b'true'
        for s in settings
        if (s.section, s.subsection, s.name) == (CHECKPOINTS, None, TRACKED)
    ]
    return tuple(value.decode('utf-8', 'surrogateescape') for value in found) or None


def _parse_value(data: bytes, section: bytes, name: bytes, path: Path) -> str | None:
    """One value (the last) of a config's bytes, or None."""
    settings = _simple_entries(data)
    if settings is None:
        settings, _ = _full_parse(data, path)
    return RepoConfig(path, data, settings).string(section, name)


# -- the full parser (git's syntax) ---------------------------------------------------------------

_NEWLINE, _CR, _SPACE, _TAB = 0x0A, 0x0D, 0x20, 0x09
_QUOTE, _BACKSLASH = 0x22, 0x5C
_KEY_CHARS = frozenset(b'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-')
_SECTION_CHARS = _KEY_CHARS | {ord('.')}
_ESCAPES = {ord('n'): _NEWLINE, ord('t'): _TAB, ord('b'): 0x08, _BACKSLASH: _BACKSLASH}
_ESCAPES[_QUOTE] = _QUOTE


class _Syntax(Exception):
    def __init__(self, line: int, why: str) -> None:
        super().__init__(why)
        self.line = line
        self.why = why


def _full_parse(data: bytes, path: Path) -> tuple[list[Setting], list[_Header]]:
    """Every setting and section header of a config, as git reads it (includes not followed)."""
    try:
        return _Parser(data).run()
    except _Syntax as error:
        raise CorruptRepositoryError(
            f'cannot read {path}: line {error.line} is not valid git config ({error.why})'
        ) from None


class _Parser:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.i = 3 if data.startswith(b'\xef\xbb\xbf') else 0
        self.line = 1

    def _newline_at(self, i: int) -> int:
        """The length of the line end at ``i`` (1 for LF, 2 for CRLF), else 0."""
        data = self.data
        if i < len(data):
            if data[i] == _NEWLINE:
                return 1
            if data[i] == _CR and data[i + 1 : i + 2] == b'\n':
                return 2
        return 0

    def run(self) -> tuple[list[Setting], list[_Header]]:
        data, n = self.data, len(self.data)
        if b'\0' in data:
            raise _Syntax(data.count(b'\n', 0, data.index(b'\0')) + 1, 'a NUL byte')
        settings: list[Setting] = []
        headers: list[_Header] = []
        section: tuple[bytes, bytes | None] | None = None
        while self.i < n:
            c = data[self.i]
            if c == _NEWLINE:
                self.line += 1
                self.i += 1
            elif c in (_SPACE, _TAB, _CR):
                self.i += 1
            elif c in b'#;':
                end = data.find(b'\n', self.i)
                self.i = n if end < 0 else end
            elif c == ord('['):
                start = self.i
                section = self._header()
                headers.append(_Header(*section, self.line, start, self.i))
            elif c < 0x80 and chr(c).isalpha():
                if section is None:
                    raise _Syntax(self.line, 'a setting before any [section]')
                settings.append(self._setting(section))
            else:
                raise _Syntax(self.line, 'neither a setting, a [section] nor a comment')
        return settings, headers

    def _header(self) -> tuple[bytes, bytes | None]:
        data, n = self.data, len(self.data)
        self.i += 1  # '['
        name = bytearray()
        extended: bytes | None = None
        while True:
            if self.i >= n or self._newline_at(self.i):
                raise _Syntax(self.line, 'a section header without "]"')
            c = data[self.i]
            self.i += 1
            if c == ord(']'):
                break
            if c in (_SPACE, _TAB):
                extended = self._extended_subsection()
                break
            if c not in _SECTION_CHARS:
                raise _Syntax(self.line, 'a character a section name cannot hold')
            name.append(c | 0x20 if 0x41 <= c <= 0x5A else c)
        section, dot, rest = bytes(name).partition(b'.')
        if not section:
            raise _Syntax(self.line, 'an empty section name')
        subsection: bytes | None = rest if dot else None
        if extended is not None:
            subsection = extended if subsection is None else subsection + b'.' + extended
        return section, subsection

    def _extended_subsection(self) -> bytes:
        data, n = self.data, len(self.data)
        while self.i < n and data[self.i] in (_SPACE, _TAB):
            self.i += 1
        if self.i >= n or data[self.i] != _QUOTE:
            raise _Syntax(self.line, 'a subsection name without quotes')
        self.i += 1
        out = bytearray()
        while True:
            if self.i >= n or self._newline_at(self.i):
                raise _Syntax(self.line, 'a subsection name without its closing quote')
            c = data[self.i]
            self.i += 1
            if c == _QUOTE:
                break
            if c == _BACKSLASH:
                if self.i >= n or self._newline_at(self.i):
                    raise _Syntax(self.line, 'a subsection name without its closing quote')
                c = data[self.i]
                self.i += 1
            out.append(c)
        if self.i >= n or data[self.i] != ord(']'):
            raise _Syntax(self.line, 'a section header without "]" after its subsection')
        self.i += 1
        return bytes(out)

    def _setting(self, section: tuple[bytes, bytes | None]) -> Setting:
        data, n = self.data, len(self.data)
        start, first_line = self.i, self.line
        while self.i < n and data[self.i] in _KEY_CHARS:
            self.i += 1
        name = data[start : self.i].lower()
        while self.i < n and data[self.i] in (_SPACE, _TAB):
            self.i += 1
        value: bytes | None = None
        if self.i < n and not self._newline_at(self.i):
            if data[self.i] != ord('='):
                raise _Syntax(self.line, 'a setting name followed by something other than "="')
            self.i += 1
            value = self._value()
        return Setting(section[0], section[1], name, value, first_line, start, self.i)

    def _value(self) -> bytes:
        """git's parse_value: quotes, escapes, comments, continuation lines, trimmed ends.

        Stops at the line end (not consumed) or at the end of the data.
        """
        data, n = self.data, len(self.data)
        out = bytearray()
        quote = comment = False
        trim = -1  # where trailing whitespace outside quotes began, -1 if none pending
        while True:
            end = self._newline_at(self.i) if self.i < n else -1
            if end != 0:  # a line end, or the end of the data
                if quote:
                    raise _Syntax(self.line, 'a quote left open at the end of the line')
                return bytes(out[:trim] if trim >= 0 else out)
            c = data[self.i]
            self.i += 1
            if comment:
                continue
            if c in (_SPACE, _TAB, _CR) and not quote:
                if out:
                    if trim < 0:
                        trim = len(out)
                    out.append(c)
                continue
            if not quote and c in b'#;':
                comment = True
                continue
            trim = -1
            if c == _BACKSLASH:
                escape = self._newline_at(self.i) if self.i < n else -1
                if escape:
                    if escape > 0:  # a continuation line
                        self.i += escape
                        self.line += 1
                    continue
                c = data[self.i]
                self.i += 1
                if c not in _ESCAPES:
                    raise _Syntax(self.line, 'an unknown escape sequence')
                out.append(_ESCAPES[c])
                continue
            if c == _QUOTE:
                quote = not quote
                continue
            out.append(c)


# -- writing -------------------------------------------------------------------------------------


def format_value(value: bytes) -> bytes:
    """A value as git reads it back exactly: plain when it can be, else quoted and escaped."""
    if any(c in value for c in (b'\n', b'\r', b'\0')):
        raise CheckpointError('a config value cannot hold a line break or a NUL character')
    plain = (
        value
        and value.strip(b' \t') == value
        and not any(c in value for c in (b'"', b'\\', b'#', b';', b'\t', b'\b'))
    )
    if plain:
        return value
    escaped = (
        value.replace(b'\\', b'\\\\')
        .replace(b'"', b'\\"')
        .replace(b'\t', b'\\t')
        .replace(b'\b', b'\\b')
    )
    return b'"' + escaped + b'"'


def _format_header(section: bytes, subsection: bytes | None) -> bytes:
    if subsection is None:
        return b'[' + section + b']'
    if b'\n' in subsection or b'\0' in subsection:
        raise CheckpointError('a config subsection name cannot hold a line break or NUL')
    escaped = subsection.replace(b'\\', b'\\\\').replace(b'"', b'\\"')
    return b'[' + section + b' "' + escaped + b'"]'


def initial(tracked: Iterable[str]) -> bytes:
    """The config of a new repository."""
    lines = [
        b'[core]',
        b'\trepositoryformatversion = 0',
        b'\tfilemode = true',
        b'\tbare = true',
        b'\tlogallrefupdates = true',
        # A git CLI run inside the shadow repo must not repack or prune on its own.
        b'[gc]',
        b'\tauto = 0',
    ]
    values = [entry.encode('utf-8', 'surrogateescape') for entry in tracked]
    if values:
        lines.append(b'[checkpoints]')
        lines += [b'\ttracked = ' + format_value(value) for value in values]
    data = b'\n'.join(lines) + b'\n'
    parse(data, Path(NAME))  # what we write must read back
    return data


def set_values(
    repository: str | os.PathLike[str],
    section: bytes,
    name: bytes,
    values: Sequence[bytes],
    subsection: bytes | None = None,
) -> RepoConfig:
    """Replaces every value of one key by ``values`` (none: removes the key); returns the result.

    The rest of the file is kept byte for byte. A config we refuse to read is not written.
    """
    data = read_bytes(repository)
    path = Path(repository) / NAME
    parse(data, path)  # refuses an include, a foreign format, a syntax error
    section, name = section.lower(), name.lower()
    new = _replace(data, path, section, subsection, name, list(values))
    result = parse(new, path)
    if [s.value for s in result.all(section, name, subsection)] != list(values):
        raise CheckpointError(f'could not update {path} as intended; nothing was changed')
    if new != data:
        write_atomically(path, new)
    return result


def set_tracked(repository: str | os.PathLike[str], tracked: Iterable[str]) -> RepoConfig:
    values = [entry.encode('utf-8', 'surrogateescape') for entry in tracked]
    return set_values(repository, CHECKPOINTS, TRACKED, values)


def remove_section(
    repository: str | os.PathLike[str], section: bytes, subsection: bytes | None
) -> bool:
    """Removes every ``[section "subsection"]`` with its settings; whether there was one."""
    data = read_bytes(repository)
    path = Path(repository) / NAME
    parse(data, path)
    section = section.lower()
    settings, headers = _full_parse(data, path)
    edits: list[tuple[int, int, bytes]] = []
    for index, header in enumerate(headers):
        if (header.section, header.subsection) != (section, subsection):
            continue
        following = headers[index + 1].start if index + 1 < len(headers) else len(data)
        following = _line_start_if_alone(data, following)
        edits.append((_line_start_if_alone(data, header.start), following, b''))
    if not edits:
        return False
    new = _apply(data, edits)
    result = parse(new, path)
    if any(s.section == section and s.subsection == subsection for s in result.settings):
        raise CheckpointError(f'could not update {path} as intended; nothing was changed')
    write_atomically(path, new)
    return True


def _line_start_if_alone(data: bytes, offset: int) -> int:
    """The start of ``offset``'s line when only blanks precede it there, else ``offset``."""
    line_start = data.rfind(b'\n', 0, offset) + 1
    return line_start if not data[line_start:offset].strip(b' \t\r') else offset


def _line_end(data: bytes, offset: int) -> int:
    """The offset just past the line end at or after ``offset`` (or the end of the data)."""
    newline = data.find(b'\n', offset)
    return len(data) if newline < 0 else newline + 1


def _replace(
    data: bytes,
    path: Path,
    section: bytes,
    subsection: bytes | None,
    name: bytes,
    values: list[bytes],
) -> bytes:
    settings, headers = _full_parse(data, path)
    key = (section, subsection)
    edits: list[tuple[int, int, bytes]] = []
    for setting in settings:
        if (setting.section, setting.subsection, setting.name) != (section, subsection, name):
            continue
        start = _line_start_if_alone(data, setting.start)
        end = _line_end(data, setting.end) if start != setting.start else setting.end
        edits.append((start, end, b''))
    if values:
        lines = b''.join(b'\t' + name + b' = ' + format_value(value) + b'\n' for value in values)
        members = [h.end for h in headers if (h.section, h.subsection) == key]
        members += [s.end for s in settings if (s.section, s.subsection) == key]
        at = None
        if members:
            last = max(members)
            at = _line_end(data, last)
            if any(last <= h.start < at for h in headers):
                at = None  # another section starts on the same line: append a new one instead
        if at is not None:
            prefix = b'\n' if at == len(data) and data and not data.endswith(b'\n') else b''
            edits.append((at, at, prefix + lines))
        else:
            prefix = b'\n' if data and not data.endswith(b'\n') else b''
            edits.append((len(data), len(data), prefix + _format_header(*key) + b'\n' + lines))
    return _apply(data, edits)


def _apply(data: bytes, edits: list[tuple[int, int, bytes]]) -> bytes:
    out = data
    for start, end, text in sorted(edits, key=lambda edit: (edit[0], edit[1]), reverse=True):
        out = out[:start] + text + out[end:]
    return out


# -- dulwich's repository object, opened without its config parsing -------------------------------


_DULWICH_REPO: type | None = None


def open_dulwich(path: str | os.PathLike[str], config: RepoConfig | None = None) -> Repo:
    """dulwich's ``Repo`` for a bare repository, never reading its config file itself.

    It gets a config built from the vetted one (format version only: nothing in it can change
    how objects are written), and the repository's folder as its control and common folder,
    so neither a ``.git`` file nor a ``commondir`` file inside it is followed.
    """
    from dulwich.config import ConfigFile
    from dulwich.errors import NotGitRepository

    global _DULWICH_REPO
    if config is None:
        config = load(path, missing_ok=True)
    if _DULWICH_REPO is None:
        from dulwich.repo import Repo

        class _VettedRepo(Repo):
            _vetted_config: ConfigFile

            def __init__(self, root: str, vetted: ConfigFile) -> None:
                self._vetted_config = vetted
                try:
                    super().__init__(controldir=root, commondir=root, bare=True)
                except TypeError:  # pragma: no cover - dulwich before controldir=
                    super().__init__(root, bare=True)

            def get_config(self) -> ConfigFile:
                return self._vetted_config

        _DULWICH_REPO = _VettedRepo
    vetted = ConfigFile()
    version = config.value(b'core', b'repositoryformatversion')
    vetted.set(b'core', b'repositoryformatversion', (version or b'0').strip())
    vetted.set(b'core', b'bare', True)
    # No path: should anything in dulwich try to write this config back, it fails loudly
    # instead of replacing the repository's config with this minimal one.
    root = os.path.abspath(os.fspath(path))  # dulwich joins a relative commondir twice
    if not (
        os.path.isdir(os.path.join(root, 'objects')) and os.path.isdir(os.path.join(root, 'refs'))
    ):
        raise CorruptRepositoryError(f'{root} is not a git repository (no objects or refs folder)')
    try:
        return _DULWICH_REPO(root, vetted)
    except (NotGitRepository, OSError, ValueError, KeyError) as error:
        raise CorruptRepositoryError(f'cannot open the repository {root}: {error}') from error
