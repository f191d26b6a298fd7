"""Vetting a stored tree before anything is written from it: every name, mode and path.

A tree may come from anywhere (another tool, an older version, a remote someone else pushed
to), so every entry is checked before a restore, diff or show uses it: duplicate names, names
with a slash, unsafe components (``..``, ``.git`` in any spelling, control characters), paths
outside the allowlist and modes we never write are refused; a name that is not valid UTF-8 is
left out and reported.
"""

from __future__ import annotations

from collections.abc import Callable

from ..core.paths import Allowlist, check_tree_path, component_problem, path_problem
from ..core.trees import BLOB_MODES, TREE_MODE
from ..errors import UnsafeCheckpointError


def flatten_tree(
    tree_entries: Callable[[bytes], list[tuple[bytes, int, bytes]]],
    tree_sha: bytes,
    allowlist: Allowlist,
    skipped: list[tuple[str, str]] | None = None,
) -> tuple[dict[str, tuple[int, bytes]], dict[str, bytes]]:
    """Every file of a tree as ``path -> (mode, blob sha)``, refusing unsafe entries.

    Also returns the tree id of every folder (``''`` for the root). An entry whose name is
    not valid UTF-8 (written by an older version or another tool) is left out and, when
    ``skipped`` is given, listed there with why: it can neither be matched against the desk
    nor written back under the name it has.
    """
    files: dict[str, tuple[int, bytes]] = {}
    folders: dict[str, bytes] = {}
    # (prefix, tree id, whether the allowlist covers the folder and so all below it)
    pending: list[tuple[str, bytes, bool]] = [('', tree_sha, False)]
    while pending:
        prefix, sha, covered = pending.pop()
        folders[prefix.rstrip('/')] = sha
        seen: set[bytes] = set()
        for name, mode, child in tree_entries(sha):
            if name in seen:
                raise UnsafeCheckpointError(
                    f'the checkpoint has two entries named {prefix}{name!r}',
                    entry=prefix + name.decode('utf-8', 'backslashreplace'),
                )
            seen.add(name)
            try:
                text = name.decode('utf-8')
            except UnicodeDecodeError:
                if skipped is not None:
                    shown = prefix + name.decode('utf-8', 'backslashreplace')
                    skipped.append((shown, 'its name is not valid UTF-8'))
                continue
            path = prefix + text
            if '/' in text:
                raise UnsafeCheckpointError(
                    f'the checkpoint holds a name with a slash: {path!r}', entry=path
                )
            # The prefix was vetted with its folder: below the root only the new name needs
            # a check (at the root the whole path is checked, as it could look absolute).
            problem = component_problem(text) if prefix else path_problem(path)
            if problem:
                raise UnsafeCheckpointError(
                    f'the checkpoint holds an unsafe path {path!r}: {problem}', entry=path
                )
            if mode == TREE_MODE:
                inside = covered or allowlist.covers(path)
                if not inside and not allowlist.is_ancestor(path):
                    check_tree_path(path, allowlist)
                pending.append((path + '/', child, inside))
            elif mode in BLOB_MODES:
                if not covered:
                    check_tree_path(path, allowlist)
                files[path] = (mode, child)
            else:
                raise UnsafeCheckpointError(
                    f'the checkpoint holds {path!r} with mode {mode:o}, which we do not write',
                    entry=path,
                )
    return files, folders
