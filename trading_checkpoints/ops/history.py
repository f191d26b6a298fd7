"""Looking back over a desk's checkpoints: diff, show, per-file log and status, with typed results.

Everything here only reads: trees and blobs of the shadow repository, and the desk through the
same scan (and stat cache) a snapshot uses. Nothing is written, no lock is needed.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any

from ..core.ids import short_id
from ..core.paths import Allowlist, path_problem
from ..core.trees import SYMLINK_MODE, TREE_MODE, FileEntry
from ..desk import safety, statcache
from ..desk.narrow import Since
from ..desk.scan import LazyFiles, Scan
from ..desk.state import DeskState
from ..errors import BadPathError, NotInCheckpointError
from ..store import metadata
from ..store.repo import ShadowRepo
from . import asof, prompts
from .asof import Moment
from .deskconfig import DeskConfig, effective_allowlist
from .results import Diff, FileChange, LogEntry, Status, checkpoint_from
from .session import ReadSession

ADDED = 'added'
MODIFIED = 'modified'
DELETED = 'deleted'
TYPE_CHANGED = 'type-changed'
MODE_CHANGED = 'mode-changed'
KINDS = (ADDED, MODIFIED, DELETED, TYPE_CHANGED, MODE_CHANGED)

# Past this size a file gets no line diff (difflib is quadratic in the worst case).
TEXT_DIFF_LIMIT = 1 << 20

Reader = Callable[[str, bytes], bytes]  # (path, blob id) -> bytes


# -- paths ---------------------------------------------------------------------------------


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
    """Files that differ between two trees (see :func:`changed_files`)."""
    return [path for path, _, _ in changed_files(repo, old, new, prefix)]


def changed_files(
    repo: ShadowRepo, old: bytes | None, new: bytes | None, prefix: str = ''
) -> list[tuple[str, FileEntry | None, FileEntry | None]]:
    """``(path, entry before, entry after)`` of the files that differ between two trees,
    walking only subtrees whose ids differ.

    Iterative (an explicit stack, not recursion), so a tree nested thousands of folders deep,
    as a hostile or cloned repository may hold, is walked like any other. The order is that of
    a depth-first walk in name order (a folder's changes before a file of the same name).
    """
    out: list[tuple[str, FileEntry | None, FileEntry | None]] = []
    # Work items: (path, before, after, True) emits a file; (prefix, old, new, False) compares
    # two trees.
    pending: list[tuple[str, Any, Any, bool]] = [(prefix, old, new, False)]
    while pending:
        base, before_item, after_item, is_file = pending.pop()
        if is_file:
            out.append((base, before_item, after_item))
            continue
        if before_item == after_item:
            continue
        old_items = _items(repo, before_item)
        new_items = _items(repo, after_item)
        for name in sorted(set(old_items) | set(new_items), reverse=True):
            before, after = old_items.get(name), new_items.get(name)
            if before == after:
                continue
            path = base + name
            old_file = before if before and before[0] != TREE_MODE else None
            new_file = after if after and after[0] != TREE_MODE else None
            if old_file or new_file:
                pending.append((path, old_file, new_file, True))  # after the folder's changes
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
        raise NotInCheckpointError(
            f'{path!r} is a folder in checkpoint {label}, not a file', path=path, checkpoint=label
        )
    raise NotInCheckpointError(
        f'checkpoint {label} holds no file {path!r}', path=path, checkpoint=label
    )


# -- the read verbs ------------------------------------------------------------------------


def diff(
    session: ReadSession,
    from_id: str,
    to_id: str | None,
    *,
    patches: bool = True,
    paths: Sequence[str] | None = None,
) -> Diff:
    """The changes from one checkpoint to another, or to the desk (see ``Checkpoints.diff``)."""
    repo = session.repo
    allowlist = session.allowlist
    if isinstance(paths, str):
        paths = (paths,)
    only = tuple(normalize_path(path, allowlist) for path in paths) if paths else None
    old_sha = repo.resolve(from_id)
    old, _ = session.flatten(repo.commit_info(old_sha).tree)
    read_old = repo_reader(repo)
    if to_id is None:
        result, _ = session.scan()
        new, read_new = result.files, _desk_reader(session, result)
        new_label = None
    else:
        new_sha = repo.resolve(to_id)
        new, _ = session.flatten(repo.commit_info(new_sha).tree)
        read_new, new_label = read_old, short_id(new_sha)
    changes = compare(old, new, read_old if patches else None, read_new if patches else None, only)
    return Diff(short_id(old_sha), new_label, changes)


def _desk_reader(session: ReadSession, result: Scan) -> Reader:
    """A desk file's bytes: fresh from the scan, else from the repository, else the desk."""
    from_desk = session.desk.reader(result)
    repo = session.repo

    def read(path: str, sha: bytes) -> bytes:
        if sha not in result.new_blobs and repo.contains(sha):
            return repo.read_blob(sha)
        return from_desk(path, sha)

    return read


def show(session: ReadSession, checkpoint_id: str, path: str) -> bytes:
    """A file's bytes at a checkpoint (a symlink's target for a symlink)."""
    repo = session.repo
    sha = repo.resolve(checkpoint_id)
    wanted = normalize_path(path, session.allowlist)
    files, _ = session.flatten(repo.commit_info(sha).tree)
    _, blob = show_file(files, wanted, checkpoint_id.strip())
    return repo.read_blob(blob)


def introduced(session: ReadSession, checkpoint_id: str, *, patches: bool = True) -> Diff:
    """What a checkpoint changed: from the checkpoint before it (nothing, for the oldest kept)
    to it."""
    repo = session.repo
    sha = repo.resolve(checkpoint_id)
    info = repo.commit_info(sha)
    parent = info.parents[0] if info.parents and repo.contains(info.parents[0]) else None
    old = session.flatten(repo.commit_info(parent).tree)[0] if parent is not None else {}
    new, _ = session.flatten(info.tree)
    read = repo_reader(repo) if patches else None
    return Diff(short_id(parent), short_id(sha), compare(old, new, read, read))


def log(
    session: ReadSession, path: str | None, limit: int | None, at: Moment | None = None
) -> list[LogEntry]:
    """Checkpoints newest first with the files each changed (see ``Checkpoints.log``); with
    ``at``, from the checkpoint the desk held then."""
    repo = session.repo
    wanted = normalize_path(path, session.allowlist) if path else None
    start = asof.find(repo.history(), at, repo.path).sha.encode() if at is not None else None
    entries: list[LogEntry] = []
    for info in repo.history():
        if limit is not None and len(entries) >= limit:
            break
        if start is not None:
            if info.sha.encode() != start:
                continue
            start = None
        parent = info.parents[0] if info.parents else None
        parent_tree = (
            repo.commit_info(parent).tree if parent is not None and repo.contains(parent) else None
        )
        changed = changed_files(repo, parent_tree, info.tree)
        if wanted is not None:
            changed = [item for item in changed if under(item[0], (wanted,))]
            if not changed:
                continue
        entries.append(
            LogEntry(
                checkpoint_from(info),
                tuple(path for path, _, _ in changed),
                metadata.action_of(info.message),
                tuple(_change(path, before, after, None, None) for path, before, after in changed),
            )
        )
    said = prompts.labels(repo.path, {e.checkpoint.turn for e in entries if e.checkpoint.turn})
    return [replace(e, turn_label=said.get(e.checkpoint.turn or '')) for e in entries]


def status(session: ReadSession) -> Status:
    """The desk compared with its newest checkpoint, and which changes were external."""
    from . import external, storageuse, vouched

    repo = session.repo
    first = repo.head()

    def walk(since: Since | None) -> vouched.Walked[Status]:
        result, cache = session.scan(since=since)
        head = repo.head()
        skipped = tuple(result.skipped)
        if head is None:
            return vouched.Walked(
                Status(None, compare({}, result.files), (), external.NONE, skipped), None
            )
        newest_tree = repo.commit_info(head).tree
        known = session.known_tree(result, cache)
        if known is not None and known == newest_tree and not result.skipped:
            changes: tuple[FileChange, ...] = ()  # the desk is the newest checkpoint: no tree read
        else:
            newest, _ = session.flatten(newest_tree)
            changes = compare(newest, result.files)
        attribution = external.attribute(session, LazyFiles(result), known)
        found = Status(
            short_id(head),
            changes,
            attribution.external,
            attribution.basis,
            skipped,
            storageuse.measure(session),
        )
        # The desk is the newest checkpoint: what a no-op snapshot would find too.
        clean = head == first and not changes
        answer = vouched.Answer(attribution.external, attribution.basis, skipped)
        return vouched.Walked(found, answer if clean else None)

    if first is None:
        return walk(None).found
    # A running watcher may know the desk is the newest checkpoint (with no file left out,
    # which a status lists), or where it changed since: only that is walked.
    looked = vouched.look(session, first, walk, accept=lambda known: not known.skipped)
    if looked.known is not None:
        ours, basis = looked.known.external, looked.known.basis
        return Status(short_id(first), (), ours, basis, (), storageuse.measure(session))
    assert looked.walked is not None
    return looked.walked.found


def unrecorded_status(config: DeskConfig) -> Status:
    """The status of a desk whose repository does not exist yet: every tracked file is new."""
    if not config.desk.is_dir():
        return Status(None, (), (), 'none')
    limit = config.max_file_size
    desk = DeskState(
        config.desk,
        effective_allowlist(config),
        statcache.file_in(config.repository),
        max_file_size=safety.DEFAULT_MAX_FILE_SIZE if limit is None else limit,
    )
    try:
        result = desk.scan(desk.load_cache())
    finally:
        desk.close()
    return Status(None, compare({}, result.files), (), 'none', tuple(result.skipped))
