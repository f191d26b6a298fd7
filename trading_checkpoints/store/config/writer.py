"""Edits of the shadow repository's config file, and the config of a new repository.

Writers edit the file line by line (comments and everything else stay as they were), refuse a
config the reader refuses (see :mod:`.reader`), check that the result reads back as
intended, and replace the file atomically.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from ...core import repofiles
from ...core.repofiles import RepoFile
from ...errors import CheckpointError, InvalidArgumentError
from .reader import CHECKPOINTS, NAME, TRACKED, RepoConfig, parse, read_bytes
from .syntax import full_parse


def format_value(value: bytes) -> bytes:
    """A value as git reads it back exactly: plain when it can be, else quoted and escaped."""
    if any(c in value for c in (b'\n', b'\r', b'\0')):
        raise InvalidArgumentError(
            'a config value cannot hold a line break or a NUL character', name='value', value=value
        )
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
        raise InvalidArgumentError(
            'a config subsection name cannot hold a line break or NUL',
            name='subsection',
            value=subsection,
        )
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
        repofiles.replace(RepoFile(Path(repository), NAME), new)
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
    settings, headers = full_parse(data, path)
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
    repofiles.replace(RepoFile(Path(repository), NAME), new)
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
    settings, headers = full_parse(data, path)
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
