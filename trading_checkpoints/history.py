"""Looking back over a desk's checkpoints: diff, show and per-file log, with typed results.

Everything here only reads: trees and blobs of the shadow repository, and the desk through the
same scan (and stat cache) a snapshot uses. Nothing is written, no lock is needed.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import CheckpointError
from .paths import Allowlist, path_problem
from .repo import SYMLINK_MODE, TREE_MODE, ShadowRepo
from .statcache import StatCache
from .worktree import FileEntry, Scan, build_trees, dirty_folders

if TYPE_CHECKING:
    from .checkpoints import Checkpoint

ADDED = 'added'
MODIFIED = 'modified'
DELETED = 'deleted'
TYPE_CHANGED = 'type-changed'
MODE_CHANGED = 'mode-changed'
KINDS = (ADDED, MODIFIED, DELETED, TYPE_CHANGED, MODE_CHANGED)

# Past this size a file gets no line diff (difflib is quadratic in the worst case).
TEXT_DIFF_LIMIT = 1 << 20

Reader = Callable[[str, bytes], bytes]  # (path, blob id) -> bytes


@dataclass(frozen=True)
class FileChange:
    """How one file differs between two states.

    Attributes:
        path: Desk-relative path.
        kind: ``added``, ``modified``, ``deleted``, ``type-changed`` (file <-> symlink) or
            ``mode-changed`` (only the executable bit changed).
        old_mode, new_mode: git modes (``0o100644``, ``0o100755``, ``0o120000``), None when absent.
        old_id, new_id: git blob ids, None when absent.
        binary: Either side is not UTF-8 text (or holds a NUL byte); no line diff is given.
        patch: A unified diff for text (None for binary, mode-only changes, files over 1 MiB,
            or when patches were not asked for).
        added_lines, removed_lines: Lines added and removed by ``patch``.
    """

    path: str
    kind: str
    old_mode: int | None = None
    new_mode: int | None = None
    old_id: str | None = None
    new_id: str | None = None
    binary: bool = False
    patch: str | None = None
    added_lines: int = 0
    removed_lines: int = 0

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for key in ('old_mode', 'new_mode'):
            if out[key] is not None:
                out[key] = f'{out[key]:06o}'
        return out


@dataclass(frozen=True)
class Diff:
    """The changes from one state to another, sorted by path.

    Attributes:
        from_id: The older checkpoint.
        to_id: The newer checkpoint, or None for the desk as it is now.
        changes: One entry per changed file.
    """

    from_id: str
    to_id: str | None
    changes: tuple[FileChange, ...]

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(change.path for change in self.changes)

    def to_dict(self) -> dict[str, Any]:
        return {
            'from': self.from_id,
            'to': self.to_id,
            'changes': [change.to_dict() for change in self.changes],
        }


@dataclass(frozen=True)
class LogEntry:
    """One checkpoint in a log and the files that differ from the checkpoint before it.

    Attributes:
        checkpoint: The checkpoint (id, time, reason and metadata).
        changed: Paths whose content differs from the previous checkpoint (for the first
            checkpoint: every file it holds), sorted.
        action: What made it when the library made it: ``restore``, ``undo``, ``redo`` or
            ``before-restore``/``before-undo``/``before-redo`` (None for ordinary snapshots).
    """

    checkpoint: Checkpoint
    changed: tuple[str, ...]
    action: str | None = None

    def to_dict(self) -> dict[str, Any]:
        c = self.checkpoint
        return {
            'id': c.checkpoint_id,
            'created_at': c.created_at,
            'reason': c.reason,
            'tool': c.tool,
            'paths': list(c.paths),
            'turn': c.turn,
            'action': self.action,
            'changed': list(self.changed),
        }


# -- paths ---------------------------------------------------------------------------------


class BadPathError(CheckpointError):
    """A path given by a caller is unsafe or lies outside the tracked paths."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.path = path


def normalize_path(raw: str, allowlist: Allowlist) -> str:
    """A desk-relative path as given by a caller, checked to lie inside the tracked paths."""
    if not isinstance(raw, str):
        raise BadPathError(f'a path must be a string, not {type(raw).__name__}', str(raw))
    path = raw.replace('\\', '/').strip()
    while path.startswith('./'):
        path = path[2:]
    path = path.rstrip('/')
    problem = path_problem(path)
    if problem:
        raise BadPathError(f'{raw!r} is not a usable desk path: it has {problem}', raw)
    if not (allowlist.covers(path) or allowlist.is_ancestor(path)):
        raise BadPathError(
            f'{path!r} is not tracked (tracked paths: {", ".join(allowlist.entries)})', raw
        )
    return path


def under(path: str, selection: Iterable[str]) -> bool:
    """Whether ``path`` is one of ``selection`` or lies in a folder of it."""
    return any(path == item or path.startswith(item + '/') for item in selection)


# -- reading states ------------------------------------------------------------------------


def desk_tree_id(scan: Scan, cache: StatCache) -> bytes:
    """The root tree id the desk would have as a snapshot (computed, nothing written)."""
    removed = set(cache.files) - set(scan.files)
    trees, _ = build_trees(scan.files, dirty_folders(scan.changed, removed), cache.trees)
    return trees['']


def desk_reader(desk: Path, scan: Scan, repo: ShadowRepo | None) -> Reader:
    """Reads a desk file's bytes: from the scan's fresh blobs, the repository, or the disk."""

    def read(path: str, sha: bytes) -> bytes:
        blob = scan.new_blobs.get(sha)
        if blob is not None:
            return blob.as_raw_string()
        if repo is not None and repo.contains(sha):
            return repo.read_blob(sha)
        full = os.path.join(os.fspath(desk), path)
        try:
            if os.path.islink(full):
                return os.fsencode(os.readlink(full))
            with open(full, 'rb') as handle:
                return handle.read()
        except OSError as error:
            raise CheckpointError(f'cannot read {full}: {error.strerror}') from error

    return read


def repo_reader(repo: ShadowRepo) -> Reader:
    return lambda path, sha: repo.read_blob(sha)


# -- comparing -----------------------------------------------------------------------------


def compare(
    old: dict[str, FileEntry],
    new: dict[str, FileEntry],
    read_old: Reader | None = None,
    read_new: Reader | None = None,
    only: Iterable[str] | None = None,
) -> tuple[FileChange, ...]:
    """The changes from ``old`` to ``new``; patches only when both readers are given."""
    selection = tuple(only) if only else None
    changes = []
    for path in sorted(set(old) | set(new)):
        if selection is not None and not under(path, selection):
            continue
        before, after = old.get(path), new.get(path)
        if before == after:
            continue
        changes.append(_change(path, before, after, read_old, read_new))
    return tuple(changes)


def _change(
    path: str,
    before: FileEntry | None,
    after: FileEntry | None,
    read_old: Reader | None,
    read_new: Reader | None,
) -> FileChange:
    if before is None:
        kind = ADDED
    elif after is None:
        kind = DELETED
    elif (before[0] == SYMLINK_MODE) != (after[0] == SYMLINK_MODE):
        kind = TYPE_CHANGED
    elif before[1] == after[1]:
        kind = MODE_CHANGED
    else:
        kind = MODIFIED
    fields: dict[str, Any] = {
        'old_mode': before[0] if before else None,
        'new_mode': after[0] if after else None,
        'old_id': before[1].decode() if before else None,
        'new_id': after[1].decode() if after else None,
    }
    if kind == MODE_CHANGED or read_old is None or read_new is None:
        return FileChange(path, kind, **fields)
    old_data = read_old(path, before[1]) if before else b''
    new_data = read_new(path, after[1]) if after else b''
    old_text, new_text = _text(old_data), _text(new_data)
    if old_text is None or new_text is None:
        return FileChange(path, kind, binary=True, **fields)
    if max(len(old_data), len(new_data)) > TEXT_DIFF_LIMIT:
        return FileChange(path, kind, **fields)
    patch, added, removed = unified(path, old_text if before else None, new_text if after else None)
    return FileChange(path, kind, patch=patch, added_lines=added, removed_lines=removed, **fields)


def _text(data: bytes) -> str | None:
    if b'\0' in data:
        return None
    try:
        return data.decode('utf-8')
    except UnicodeDecodeError:
        return None


def unified(path: str, old: str | None, new: str | None) -> tuple[str, int, int]:
    """A unified diff (``--- a/path`` / ``+++ b/path``) and its added and removed line counts."""
    old_lines = old.splitlines() if old else []
    new_lines = new.splitlines() if new else []
    lines = list(
        difflib.unified_diff(
            old_lines,
            new_lines,
            fromfile=f'a/{path}' if old is not None else '/dev/null',
            tofile=f'b/{path}' if new is not None else '/dev/null',
            lineterm='',
        )
    )
    if not lines and old != new:
        # Same lines, different line endings or final newline.
        note = '(only line endings or the final newline differ)'
        lines = [f'--- a/{path}', f'+++ b/{path}', note]
    added = sum(1 for line in lines[2:] if line.startswith('+'))
    removed = sum(1 for line in lines[2:] if line.startswith('-'))
    return ('\n'.join(lines) + '\n' if lines else ''), added, removed


# -- per-commit changes (for log) ----------------------------------------------------------


def changed_paths(
    repo: ShadowRepo, old: bytes | None, new: bytes | None, prefix: str = ''
) -> list[str]:
    """Files that differ between two trees, walking only subtrees whose ids differ.

    Iterative (an explicit stack, not recursion), so a tree nested thousands of folders deep,
    as a hostile or cloned repository may hold, is walked like any other. The order is that of
    a depth-first walk in name order (a folder's changes before a file of the same name).
    """
    out: list[str] = []
    # Work items: (path, None, None) emits a file; (prefix, old, new) compares two trees.
    pending: list[tuple[str, bytes | None, bytes | None, bool]] = [(prefix, old, new, False)]
    while pending:
        base, before_tree, after_tree, is_file = pending.pop()
        if is_file:
            out.append(base)
            continue
        if before_tree == after_tree:
            continue
        old_items = _items(repo, before_tree)
        new_items = _items(repo, after_tree)
        for name in sorted(set(old_items) | set(new_items), reverse=True):
            before, after = old_items.get(name), new_items.get(name)
            if before == after:
                continue
            path = base + name
            if (before and before[0] != TREE_MODE) or (after and after[0] != TREE_MODE):
                pending.append((path, None, None, True))  # emitted after the folder's changes
            below_before = before[1] if before and before[0] == TREE_MODE else None
            below_after = after[1] if after and after[0] == TREE_MODE else None
            if below_before or below_after:
                pending.append((path + '/', below_before, below_after, False))
    return out


def _items(repo: ShadowRepo, tree: bytes | None) -> dict[str, tuple[int, bytes]]:
    if tree is None:
        return {}
    return {
        item.path.decode('utf-8', 'surrogateescape'): (item.mode, item.sha)
        for item in repo.read_tree(tree).iteritems()
    }


def show_file(files: dict[str, FileEntry], path: str, label: str) -> FileEntry:
    """The entry of ``path`` in a flattened checkpoint, or a clear error."""
    entry = files.get(path)
    if entry is not None:
        return entry
    if any(name.startswith(path + '/') for name in files):
        raise CheckpointError(f'{path!r} is a folder in checkpoint {label}, not a file')
    raise CheckpointError(f'checkpoint {label} holds no file {path!r}')
