"""Paths as the user types them: relative to the current folder when it is inside the desk.

git takes a path relative to where you stand in the work tree, so from ``desks/main/memory``
``lessons.md`` is ``memory/lessons.md`` and ``../notes/plan.md`` is ``notes/plan.md``. The
same here, for every verb that takes paths (show, log, diff, restore, track, snapshot
--path). From anywhere else (the workspace, another folder, with --desk naming another desk)
a path is taken from the desk's root, as before.

A path that names nothing tracked gets a suggestion: the tracked path the user probably meant
(the same path taken from the desk's root, or from the current folder, or a tracked file of
the same name, else the tracked paths closest to it as difflib measures them: a typo), given
as ``did you mean memory/lessons.md?``.
"""

from __future__ import annotations

import difflib
import os
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager

from ..core.paths import Allowlist
from ..errors import BadPathError, NotInCheckpointError
from .options import Hinted
from .target import Target

# How many names the search for a file of the same name looks at, at most (an error path).
SEARCH_LIMIT = 20_000
# How close (difflib's ratio) a tracked path must be to a mistyped one to be suggested.
CLOSE_ENOUGH = 0.75


def _real(path: os.PathLike[str] | str) -> str:
    return os.path.realpath(os.fspath(path))


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def inside_desk(target: Target) -> bool:
    """Whether the command runs from the desk's folder or a folder below it."""
    return _within(_real(target.cwd), _real(target.desk_directory))


def _from_desk(full: str, target: Target) -> str | None:
    """``full`` (absolute, normalised) as a desk-relative path, or None outside the desk."""
    desk = _real(target.desk_directory)
    for candidate in (full, _real(full)):
        if _within(candidate, desk):
            relative = os.path.relpath(candidate, desk)
            return '.' if relative == os.curdir else relative.replace(os.sep, '/')
    return None


def desk_path(target: Target, typed: str) -> str:
    """The desk-relative path meant by ``typed``: taken from the current folder when that is
    inside the desk (``.`` is the desk itself), else from the desk's root. An absolute path
    must lie in the desk. The library checks the result (unsafe, untracked)."""
    if os.path.isabs(typed):
        found = _from_desk(os.path.normpath(typed), target)
        if found is None:
            raise BadPathError(
                f'{typed!r} is outside desk {target.desk!r} ({target.desk_directory})', typed
            )
        return found
    if not inside_desk(target):
        return typed
    found = _from_desk(os.path.normpath(os.path.join(_real(target.cwd), typed)), target)
    if found is None:
        raise BadPathError(
            f'{typed!r} leads out of desk {target.desk!r} (from {target.cwd}; paths are taken '
            'from the current folder inside a desk)',
            typed,
        )
    return found


def desk_paths(target: Target, typed: Iterable[str]) -> list[str]:
    return [desk_path(target, path) for path in typed]


def _tracked_files(target: Target, allowlist: Allowlist) -> Iterator[str]:
    """Tracked files of the desk (symlinks not followed), at most :data:`SEARCH_LIMIT` names."""
    desk = target.desk_directory
    seen = 0
    for entry in allowlist.entries:
        top = desk / entry
        try:
            kind = os.lstat(top).st_mode
        except OSError:
            continue
        if stat.S_ISREG(kind):
            yield entry
            continue
        if not stat.S_ISDIR(kind):
            continue  # a symlink is never followed
        for folder, subfolders, files in os.walk(top):  # names only; symlinks not followed
            subfolders[:] = [name for name in subfolders if name != '.git']
            base = os.path.relpath(folder, desk).replace(os.sep, '/')
            for name in files:
                seen += 1
                if seen > SEARCH_LIMIT:
                    return
                yield f'{base}/{name}'


def suggestion(target: Target, typed: str, used: str, tracked: Iterable[str]) -> str | None:
    """What the user probably meant when ``used`` (the desk path ``typed`` was taken as)
    names nothing tracked: ``did you mean X?``, or None when nothing fits."""
    allowlist = Allowlist(tracked)
    desk = target.desk_directory
    here = target.cwd
    candidates: list[str] = []
    if inside_desk(target):
        candidates.append(os.path.normpath(typed).replace(os.sep, '/'))  # from the desk root
    elif not os.path.isabs(typed):
        from_here = _from_desk(os.path.normpath(os.path.join(_real(here), typed)), target)
        if from_here is not None:
            candidates.append(from_here)
    name = os.path.basename(os.path.normpath(typed))
    found: list[str] = []
    if name and name not in (os.curdir, os.pardir):
        files = list(_tracked_files(target, allowlist))
        found = [path for path in files if path.endswith('/' + name)]
        candidates.extend(sorted(found, key=lambda path: (path.count('/'), path))[:3])
        if not found:  # a typo: the tracked paths closest to it
            known = sorted({*files, *allowlist.entries})
            found = difflib.get_close_matches(used, known, n=3, cutoff=CLOSE_ENOUGH)
            candidates.extend(found)
    wanted: list[str] = []
    for path in candidates:
        if path == used or path in wanted or path.startswith('../') or path == os.pardir:
            continue
        if not allowlist.covers(path) and not allowlist.is_ancestor(path):
            continue
        if not os.path.lexists(desk / path) and path not in found:
            continue
        wanted.append(path)
    if not wanted:
        return None
    return f'did you mean {" or ".join(wanted[:3])}?'


@contextmanager
def suggesting(
    target: Target,
    typed: Sequence[str],
    used: Sequence[str],
    tracked: Callable[[], Iterable[str]],
) -> Iterator[None]:
    """Adds ``did you mean ...?`` to a path error about one of the paths: ``typed`` as the user
    gave them, ``used`` as the desk paths they were taken as (:func:`desk_paths`)."""
    try:
        yield
    except (BadPathError, NotInCheckpointError) as error:
        failed = _normal(error.path)
        for given, taken in zip(typed, used, strict=False):
            if failed in (_normal(given), _normal(taken)):
                hint = suggestion(target, given, taken, tracked())
                if hint is not None:
                    raise Hinted(error, hint) from error
        raise


def _normal(path: str) -> str:
    return os.path.normpath(path.replace('\\', '/')) if path else path
