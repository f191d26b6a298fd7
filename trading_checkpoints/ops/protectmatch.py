"""Which of a write's targets a desk's protected paths cover.

A target is a path as a tool names it: absolute, or relative to the desk. It is protected when
any of these spellings of it is covered by a protected entry (``Policy.covering``: the tracked
paths' rule, a folder covering what lies below it at a component boundary):

- the path as written, made desk-relative with ``..`` and ``.`` folded away as text;
- the path the system would write: every symlink on the way followed and each ``..`` applied
  after the link before it, made relative to the desk's real folder (``notes/link.md`` leading
  to ``rules/limits.md`` is ``rules/limits.md``; ``notes/deep/../x.md`` through a link
  ``notes/deep`` is wherever that link's parent is);
- the same file or folder: a target (or a folder above it) that is the very file or folder of
  a protected entry (the same device and inode) is protected whatever its spelling. On a
  case-insensitive file system ``Notes/Limits.md`` is ``notes/limits.md``; a hard link of a
  protected file is that file.

A protected path that does not exist yet has no identity: it is matched by its spelling only
(on a case-insensitive file system, a write to ``RULES.md`` creating what ``rules.md`` names is
not refused; once the file exists, every spelling is).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..errors import ProtectedPathError
from .policy import Policy, read

Identity = tuple[int, int]


@dataclass(frozen=True)
class Hit:
    """A target a protected entry covers: the target as given, the desk-relative path it was
    matched as, and the entry."""

    target: str
    path: str
    entry: str


def hits(desk: Path, policy: Policy, targets: Iterable[str]) -> list[Hit]:
    """The targets the policy protects (none when it protects nothing)."""
    if not policy.protected:
        return []
    identities = _identities(desk, policy.protected)
    found = []
    for target in targets:
        hit = _hit(desk, policy, identities, target)
        if hit is not None:
            found.append(hit)
    return found


def refuse_writes(desk: Path, repository: Path, targets: Iterable[str], action: str) -> None:
    """Raises :class:`ProtectedPathError` when the desk's policy protects any of ``targets``
    (what ``action`` is about to write)."""
    found = hits(desk, read(repository), targets)
    if found:
        raise ProtectedPathError(
            f'refusing {action}: {denial(found)}',
            paths=sorted({hit.path for hit in found}),
            protected=sorted({hit.entry for hit in found}),
        )


def denial(found: Iterable[Hit], desk: str | None = None) -> str:
    """Why a write is refused, as the agent is told: ``notes/limits.md is protected on this
    desk: ...`` (on desk ``desk``, when named)."""
    parts = []
    for hit in found:
        if hit.path == hit.entry:
            how = ''
        elif hit.path.startswith(hit.entry + '/'):
            how = f' (in the protected folder {hit.entry})'
        else:
            how = f' (the same file or folder as {hit.entry})'
        parts.append(f'{hit.path}{how}')
    where = 'this desk' if desk is None else f'desk {desk!r}'
    return (
        f'{", ".join(dict.fromkeys(parts))} is protected on {where}: you may read it but not '
        'change it (a person may; `checkpoints protect` lists the protected paths).'
    )


def _hit(desk: Path, policy: Policy, identities: dict[Identity, str], target: str) -> Hit | None:
    found = spellings(desk, target)
    for path in found:
        entry = policy.covering(path)
        if entry is not None:
            return Hit(target, path, entry)
    for path in found:
        entry = _same_as(desk, path, identities)
        if entry is not None:
            return Hit(target, path, entry)
    return None


def spellings(desk: Path, target: str) -> list[str]:
    """The desk-relative paths ``target`` may write: as written (``..`` folded as text, against
    the desk's path as given and as resolved), and as the system resolves it (see the module
    notes); none when it lies outside the desk. Any name counts: one a checkpoint could not
    hold (a backslash, a newline) is still below the folder that holds it."""
    full = os.path.join(desk, target)  # an absolute target stays as it is
    written, real = os.path.abspath(full), os.path.realpath(full)
    found: list[str] = []
    for path, base in (
        (written, os.path.abspath(desk)),
        (written, os.path.realpath(desk)),
        (real, os.path.realpath(desk)),
    ):
        if path.startswith(base + os.sep):
            relative = os.path.relpath(path, base).replace(os.sep, '/')
            if relative not in found:
                found.append(relative)
    return found


def _identities(desk: Path, entries: Iterable[str]) -> dict[Identity, str]:
    """The device and inode of each protected entry that exists (links followed: writing the
    file or folder a link leads to changes what the link reads)."""
    found: dict[Identity, str] = {}
    for entry in entries:
        try:
            st = os.stat(os.path.join(desk, entry))
        except OSError:
            continue
        found.setdefault((st.st_dev, st.st_ino), entry)
    return found


def _same_as(desk: Path, path: str, identities: dict[Identity, str]) -> str | None:
    """The protected entry that ``path``, a folder above it or the desk itself is (by
    identity: a protected link to the desk's own folder protects all of it), or None."""
    if not identities:
        return None
    here = os.fspath(desk)
    for part in [None, *path.split('/')]:
        if part is not None:
            here = os.path.join(here, part)
        try:
            st = os.stat(here)
        except OSError:
            return None  # nothing there, nor below
        entry = identities.get((st.st_dev, st.st_ino))
        if entry is not None:
            return entry
    return None
