"""git config text: the settings and section headers in a config file's bytes.

Configs in the plain form we write ourselves (``[section]`` headers and ``key = value`` lines)
take a fast reader (:func:`simple_entries`); anything else takes a full parser
(:func:`full_parse`) that follows git's syntax (quotes, escapes, continuation lines, comments,
subsections) and never follows includes. Nothing here vets what the settings say (see
:mod:`.reader`); syntax errors name the file and the line, never the contents.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ...errors import CorruptRepositoryError


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
class Header:
    """One ``[section]`` or ``[section "subsection"]`` header; offsets as in :class:`Setting`."""

    section: bytes
    subsection: bytes | None
    line: int
    start: int
    end: int


# -- the fast reader: the plain form we write ---------------------------------------------------

# A header, a ``key = value`` line or a blank line, in one pattern (group 1: the section,
# groups 2 and 3: the key and the value).
_SIMPLE_LINE = re.compile(
    rb'\[([A-Za-z0-9-]+)\]'
    rb'|[ \t]*([A-Za-z][A-Za-z0-9-]*)[ \t]*=[ \t]*([ !$-:<-\[\]-~\x80-\xff]+)'
    rb'|[ \t]*'
)
_SPACE = 0x20


def simple_entries(data: bytes) -> list[Setting] | None:
    """The settings of a config in the plain form we write, or None for anything else.

    Only ``[section]`` headers, ``key = value`` lines whose value has no quote, backslash,
    comment sign, control character, leading/trailing or doubled space, and blank lines; any
    other config goes to the full parser. Names are case-insensitive, as in git.
    """
    settings: list[Setting] = []
    section = None
    number = 0
    for line in data.split(b'\n'):
        number += 1
        match = _SIMPLE_LINE.fullmatch(line)
        if match is None:
            return None
        name = match.group(2)
        if name is None:
            header = match.group(1)
            if header is not None:
                section = header.lower()
            continue  # a header, or a blank line
        value = match.group(3)
        if section is None or value[0] == _SPACE or value[-1] == _SPACE or b'  ' in value:
            return None
        settings.append(Setting(section, None, name.lower(), value, number))
    return settings


def _simple_config(data: bytes) -> dict[tuple[bytes, bytes], list[bytes]] | None:
    """The values of a plain-form config by (section, name), or None (see simple_entries)."""
    settings = simple_entries(data)
    if settings is None:
        return None
    values: dict[tuple[bytes, bytes], list[bytes]] = {}
    for setting in settings:
        values.setdefault((setting.section, setting.name), []).append(setting.value or b'')
    return values


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


def full_parse(data: bytes, path: Path) -> tuple[list[Setting], list[Header]]:
    """Every setting and section header of a config, as git reads it (includes not followed)."""
    try:
        return _Parser(data).run()
    except _Syntax as error:
        raise CorruptRepositoryError(
            f'cannot read {path}: line {error.line} is not valid git config ({error.why})',
            path=path,
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

    def run(self) -> tuple[list[Setting], list[Header]]:
        data, n = self.data, len(self.data)
        if b'\0' in data:
            raise _Syntax(data.count(b'\n', 0, data.index(b'\0')) + 1, 'a NUL byte')
        settings: list[Setting] = []
        headers: list[Header] = []
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
                headers.append(Header(*section, self.line, start, self.i))
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
