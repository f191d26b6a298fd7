"""A settings file's text: JSON, or JSON with ``//`` and ``/* */`` comments (what Gemini CLI
reads: it strips the comments, then parses JSON), edited in place.

:func:`parse` reads the text into its object, refusing what JSON cannot say (``NaN``,
``Infinity``, a number too large to be finite such as ``1e999``) and a string that is no text
(a lone surrogate escape such as ``"\\ud800"``), since either would be written back as
something that is not JSON. :func:`set_member` replaces, adds or removes one member of an object
in the text and leaves every other byte where it was: the formatting, the key order and the
comments outside the member's value. A comment inside a value that would be rewritten is never
dropped: the edit is refused (:class:`CommentInTheWay`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ['CommentInTheWay', 'NotJSON', 'blanked', 'has_comments', 'parse', 'set_member']

_DECODER = json.JSONDecoder()
_SPACE = re.compile(r'[ \t\n\r]*')


class NotJSON(ValueError):
    """The text is not JSON (with comments), or holds a value JSON cannot carry."""


class CommentInTheWay(ValueError):
    """A comment lies inside a value an edit would rewrite; the edit is refused."""


def blanked(text: str) -> str:
    """The text with every comment replaced by spaces (line breaks kept): the same length,
    every value at the same offset, and plain JSON when the rest is.

    Raises:
        NotJSON: A ``/*`` comment is never closed.
    """
    out: list[str] = []
    at, size = 0, len(text)
    while at < size:
        char = text[at]
        if char == '"':
            end = _string_end(text, at)
            out.append(text[at:end])
            at = end
        elif text.startswith('//', at):
            end = text.find('\n', at)
            end = size if end < 0 else end
            out.append(' ' * (end - at))
            at = end
        elif text.startswith('/*', at):
            end = text.find('*/', at + 2)
            if end < 0:
                raise NotJSON(f'a /* comment at offset {at} is never closed')
            out.append(re.sub(r'[^\n]', ' ', text[at : end + 2]))
            at = end + 2
        else:
            out.append(char)
            at += 1
    return ''.join(out)


def _string_end(text: str, start: int) -> int:
    """The offset just past the string that opens at ``start`` (or the end of an unclosed
    one, which the JSON parser then reports)."""
    at = start + 1
    while at < len(text):
        if text[at] == '\\':
            at += 2
        elif text[at] == '"':
            return at + 1
        else:
            at += 1
    return len(text)


def has_comments(text: str) -> bool:
    return blanked(text) != text


def _no_constant(name: str) -> Any:
    raise NotJSON(f'{name} is not a JSON value')


def _finite(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        raise NotJSON(f'the number {literal[:40]} is too large to be finite')
    return value


def parse(text: str) -> Any:
    """The value the text holds, its comments ignored.

    Raises:
        NotJSON: Not JSON, a non-finite number, or a string with a lone surrogate.
    """
    try:
        value = json.loads(blanked(text), parse_constant=_no_constant, parse_float=_finite)
    except NotJSON:
        raise
    except (ValueError, RecursionError) as error:
        raise NotJSON(str(error)) from None
    try:
        json.dumps(value, ensure_ascii=False).encode('utf-8')
    except UnicodeEncodeError as error:
        bad = error.object[error.start : error.end]
        escape = ''.join(f'\\u{ord(char):04x}' for char in bad)
        raise NotJSON(f'a string holds the lone surrogate {escape}, which is no text') from None
    return value


# -- finding a member --------------------------------------------------------------------


@dataclass(frozen=True)
class _Member:
    key: str
    start: int  # the key's opening quote
    value_start: int
    value_end: int


@dataclass(frozen=True)
class _Object:
    start: int  # its '{'
    end: int  # just past its '}'
    members: list[_Member]


def _skip(text: str, at: int) -> int:
    match = _SPACE.match(text, at)
    assert match is not None
    return match.end()


def _object_at(plain: str, start: int) -> _Object:
    """The object whose ``{`` is at ``start`` in comment-free text (already known to parse)."""
    assert plain[start] == '{'
    members = []
    at = _skip(plain, start + 1)
    while plain[at] != '}':
        key, after_key = json.decoder.scanstring(plain, at + 1)  # type: ignore[attr-defined]
        colon = _skip(plain, after_key)
        value_start = _skip(plain, colon + 1)
        _, value_end = _DECODER.raw_decode(plain, value_start)
        members.append(_Member(key, at, value_start, value_end))
        at = _skip(plain, value_end)
        if plain[at] == ',':
            at = _skip(plain, at + 1)
    return _Object(start, at + 1, members)


def _find(plain: str, path: Sequence[str]) -> _Object:
    """The object at ``path`` (keys from the top; the last member of a repeated key, as a
    JSON parser keeps)."""
    found = _object_at(plain, _skip(plain, 0))
    for key in path:
        member = [m for m in found.members if m.key == key][-1]
        found = _object_at(plain, member.value_start)
    return found


# -- editing -----------------------------------------------------------------------------


def _line_indent(text: str, at: int) -> str | None:
    """The blanks before ``at`` on its line, when only blanks are there."""
    start = text.rfind('\n', 0, at) + 1
    before = text[start:at]
    return before if before.strip(' \t') == '' else None


def _indent_unit(text: str) -> str:
    """One level of the file's indentation (its first indented line's), else two spaces."""
    found = re.search(r'\n([ \t]+)\S', text)
    return found.group(1) if found else '  '


def _dumped(value: Any, indent: str, unit: str) -> str:
    text = json.dumps(value, indent=unit, ensure_ascii=False, allow_nan=False)
    return text.replace('\n', '\n' + indent)


def _refuse_comments(text: str, plain: str, start: int, end: int, where: str) -> None:
    if plain[start:end] != text[start:end]:
        raise CommentInTheWay(f'a comment inside {where} would be lost')


def set_member(text: str, path: Sequence[str], key: str, value: Any, remove: bool = False) -> str:
    """The text with member ``key`` of the object at ``path`` set to ``value`` (added at the
    end when missing) or, with ``remove``, taken out; everything else as it was.

    Raises:
        CommentInTheWay: A comment lies in the value replaced or removed.
    """
    plain = blanked(text)
    target = _find(plain, path)
    where = '"' + '.'.join([*path, key]) + '"'
    unit = _indent_unit(plain)
    current = [m for m in target.members if m.key == key]
    if current:
        member = current[-1]
        if remove:
            return _removed(text, plain, target, member, where)
        _refuse_comments(text, plain, member.value_start, member.value_end, where)
        indent = _line_indent(plain, member.start)
        new = _dumped(value, indent if indent is not None else '', unit)
        return text[: member.value_start] + new + text[member.value_end :]
    if remove:
        return text
    return _added(text, plain, target, key, value, unit)


def _removed(text: str, plain: str, target: _Object, member: _Member, where: str) -> str:
    index = target.members.index(member)
    if index + 1 < len(target.members):  # up to the next member (comments before it kept)
        comma = plain.index(',', member.value_end)
        end = min(_skip(text, comma + 1), target.members[index + 1].start)
        start = member.start
    elif index > 0:  # the last one: from the comma after the previous member
        start = plain.rindex(',', target.members[index - 1].value_end, member.start)
        end = member.value_end
    else:  # the only one: the object left empty
        start, end = target.start + 1, target.end - 1
    _refuse_comments(text, plain, start, end, where)
    return text[:start] + text[end:]


def _added(text: str, plain: str, target: _Object, key: str, value: Any, unit: str) -> str:
    if target.members:
        last = target.members[-1]
        indent = _line_indent(plain, last.start)
        separator = '\n' + indent if indent is not None else ' '
        member = f'{json.dumps(key, ensure_ascii=False)}: '
        member += _dumped(value, indent or '', unit)
        # The comma right after the last value; the new member after a comment that ends
        # that value's line, so the comment stays with the value it was written beside.
        line_end = plain.find('\n', last.value_end, target.end)
        tail = plain[last.value_end : line_end] if line_end >= 0 else ''
        at = line_end if line_end >= 0 and tail.strip() == '' else last.value_end
        before = text[: last.value_end] + ',' + text[last.value_end : at]
        return before + separator + member + text[at:]
    outer = _line_indent(plain, target.start) or ''
    indent = outer + unit
    member = f'{json.dumps(key, ensure_ascii=False)}: {_dumped(value, indent, unit)}'
    inside = text[target.start + 1 : target.end - 1]
    return (
        text[: target.start + 1]
        + inside.rstrip(' \t\n\r')
        + f'\n{indent}{member}\n{outer}'
        + text[target.end - 1 :]
    )
