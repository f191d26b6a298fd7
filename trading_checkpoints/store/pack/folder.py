"""The pack folder: the packs readers see, and removing the packs another now holds.

Removal renames a pack out of the ``pack-*.pack`` / ``.idx`` names at once and leaves the
deletion to a background thread; what a process left behind is swept away by the next writer.
"""

from __future__ import annotations

import os

# Packs renamed out of the way, waiting for the background thread to delete them.
REMOVED_PREFIX = 'tmp_old_'


def packs(pack_dir: str) -> list[tuple[int, str]]:
    """The packs git and dulwich see (a ``.pack`` with its ``.idx``), as ``(size, basename)``,
    smallest first; packs with a ``.keep`` file are left out (never rewritten)."""
    try:
        names = set(os.listdir(pack_dir))
    except OSError:
        return []
    found = []
    for name in names:
        if name.startswith('pack-') and name.endswith('.pack'):
            stem = name[: -len('.pack')]
            if stem + '.idx' in names and stem + '.keep' not in names:
                try:
                    size = os.stat(os.path.join(pack_dir, name)).st_size
                except OSError:
                    continue
                found.append((size, os.path.join(pack_dir, stem)))
    found.sort()
    return found


def remove(basename: str) -> None:
    """Removes a pack that another pack now holds entirely.

    Its index goes first, so no reader finds an index without its pack, and with it the pack
    stops being one (git and dulwich need both). Freeing a file's blocks can take milliseconds
    (on a file system mounted with ``discard`` it was the slowest step of a snapshot), so the
    two files are renamed to temporary names and deleted by a background thread, which the
    interpreter waits for at exit; if the process ends first, the next writer sweeps them away
    (:func:`sweep_removals`).
    """
    for suffix in ('.rev', '.bitmap', '.mtimes'):  # another tool's, beside the index
        try:
            os.remove(basename + suffix)
        except OSError:
            pass
    folder = os.path.dirname(basename)
    doomed = os.path.join(folder, f'{REMOVED_PREFIX}{os.getpid()}_{os.urandom(6).hex()}')
    for suffix in ('.idx', '.pack'):
        # Renamed out of the ``*.pack`` / ``*.idx`` names: no reader (nor the pack signature of
        # the commit memo) counts them any more.
        try:
            os.rename(basename + suffix, f'{doomed}-{suffix[1:]}.old')
        except FileNotFoundError:
            continue
        except OSError:
            try:
                os.remove(basename + suffix)
            except OSError:
                pass
            continue
        _unlink_later(f'{doomed}-{suffix[1:]}.old')


_REMOVER = None
_REMOVER_PID = 0


def _unlink_later(path: str) -> None:
    global _REMOVER, _REMOVER_PID
    if _REMOVER is None or _REMOVER_PID != os.getpid():
        # A forked child inherits the executor object but not its thread: it makes its own.
        from concurrent.futures import ThreadPoolExecutor

        _REMOVER = ThreadPoolExecutor(1, thread_name_prefix='checkpoints-remove')
        _REMOVER_PID = os.getpid()
    try:
        _REMOVER.submit(_unlink, path)
    except RuntimeError:  # the interpreter is shutting down: no new threads
        _unlink(path)


def _unlink(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


def sweep_removals(pack_dir: str) -> None:
    """Hands to the background thread the packs a process left renamed for removal when it
    ended before its thread deleted them (call under the repository's lock)."""
    try:
        names = os.listdir(pack_dir)
    except OSError:
        return
    mine = f'{REMOVED_PREFIX}{os.getpid()}_'
    for name in names:
        if name.startswith(REMOVED_PREFIX) and not name.startswith(mine):
            _unlink_later(os.path.join(pack_dir, name))


def wait_for_removals() -> None:
    """Waits until the packs handed to the background thread are deleted (for tests)."""
    if _REMOVER is not None and _REMOVER_PID == os.getpid():
        _REMOVER.submit(lambda: None).result()
