"""A harness's settings file, read and replaced the way the repository's own files are.

- Where: the path as named; when it is a symbolic link (settings kept with a person's dotfiles),
  the file it leads to, resolved once at the start. From there nothing is followed: the file
  is opened with ``O_NOFOLLOW``, and written by :func:`~...core.durability.write_atomically`
  (its folder opened with ``O_NOFOLLOW``, the temporary file made anew beside it, the file's
  mode kept).
- What: a regular file of at most 16 MiB (a FIFO or a device is refused at once, never
  waited on), UTF-8 text holding a JSON object (``//`` and ``/* */`` comments allowed, as
  Gemini CLI reads them), every number finite, every string text (see ``jsonc``).
- How: an existing file is copied aside first (``<name>.<time>.bak``, mode kept); the new text
  is the old one with only the ``hooks`` entries that change rewritten, so formatting and
  comments elsewhere are kept, and is checked to parse to exactly the settings intended.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ...core import repofiles
from ...core.durability import write_atomically
from ...errors import FileAccessError, InvalidSettingError, RepositoryFileError
from . import jsonc

MAX_BYTES = 16 << 20
HOOKS = 'hooks'


@dataclass(frozen=True)
class SettingsFile:
    """A settings file as read.

    Attributes:
        path: The file as named.
        real: Where its bytes are (``path``, or the file its link leads to).
        text: Its text (None: it does not exist).
        data: Its object ({} when absent or blank).
        mode: Its permission bits (None: it does not exist).
    """

    path: Path
    real: Path
    text: str | None
    data: dict[str, Any]
    mode: int | None


def invalid(path: Path, problem: str) -> InvalidSettingError:
    return InvalidSettingError(
        f'{path} {problem}; nothing was changed', setting='settings', source=path
    )


def read(path: Path) -> SettingsFile:
    """The settings file at ``path``.

    Raises:
        FileAccessError: Not a regular file, too large, or the system refused.
        InvalidSettingError: Not UTF-8, not JSON (with comments), or not an object.
    """
    real = Path(os.path.realpath(path)) if os.path.islink(path) else path
    file = repofiles.RepoFile.of(real)
    try:
        raw = repofiles.read(file, MAX_BYTES)
        mode = os.stat(real, follow_symlinks=False).st_mode & 0o7777 if raw is not None else None
    except RepositoryFileError as error:
        raise FileAccessError(
            f'cannot read {path}: {_PROBLEMS.get(error.problem, error.problem)}',
            path=path,
            action='read',
        ) from None
    except OSError as error:
        raise FileAccessError(
            f'cannot read {path}: {error.strerror or error}', path=path, action='read'
        ) from None
    if raw is None:
        return SettingsFile(path, real, None, {}, None)
    try:
        text = raw.decode('utf-8')
    except UnicodeDecodeError as error:
        raise invalid(
            path, f'is not UTF-8 text (byte 0x{raw[error.start]:02x} at offset {error.start})'
        ) from None
    if not text.strip():
        return SettingsFile(path, real, text, {}, mode)
    try:
        data = jsonc.parse(text)
    except jsonc.NotJSON as error:
        raise invalid(path, f'is not valid JSON ({error})') from None
    if not isinstance(data, dict):
        raise invalid(path, 'does not hold a JSON object')
    return SettingsFile(path, real, text, data, mode)


_PROBLEMS = {
    'link': 'it is a symbolic link (swapped in while it was read)',
    'not-regular': 'it is not a regular file (a FIFO, a device or a folder)',
    'too-large': f'it is larger than {MAX_BYTES >> 20} MiB',
}


def new_text(file: SettingsFile, data: dict[str, Any]) -> str:
    """The file's text holding ``data``, which differs from the file's only under ``hooks``.

    Raises:
        jsonc.CommentInTheWay: A comment lies in an entry that would be rewritten.
    """
    if file.text is None or not file.text.strip():
        return json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + '\n'
    text = file.text
    old, new = file.data.get(HOOKS), data.get(HOOKS)
    if new is None:
        text = jsonc.set_member(text, [], HOOKS, None, remove=True)
    elif not isinstance(old, dict) or not isinstance(new, dict):
        text = jsonc.set_member(text, [], HOOKS, new)
    else:
        for event in [*old, *(event for event in new if event not in old)]:
            if (event in old) != (event in new) or old.get(event) != new.get(event):
                text = jsonc.set_member(
                    text, [HOOKS], event, new.get(event), remove=event not in new
                )
    if jsonc.parse(text) != data:  # never written: an edit that says other than it meant
        raise jsonc.CommentInTheWay('its text could not be edited in place')
    return text


def write(file: SettingsFile, text: str) -> Path | None:
    """Replaces the file's text, the old one copied aside first; returns the copy's path.

    Raises:
        FileAccessError: The system refused, or something other than a regular file is there.
    """
    backup = None
    target = file.real
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise FileAccessError(
            f'cannot create {target.parent}: {error.strerror or error}',
            path=target.parent,
            action='create',
        ) from None
    if file.text is not None:
        backup = _backup_name(target)
        write_atomically(backup, file.text.encode('utf-8'), mode=file.mode)
    write_atomically(target, text.encode('utf-8'), mode=file.mode)
    return backup


def _backup_name(path: Path) -> Path:
    """``<name>.<time>.bak``, with a number added when that one exists (never overwritten)."""
    stamp = datetime.now().strftime('%Y%m%d-%H%M%S')
    backup = path.with_name(f'{path.name}.{stamp}.bak')
    number = 1
    while os.path.lexists(backup):
        number += 1
        backup = path.with_name(f'{path.name}.{stamp}-{number}.bak')
    return backup
