"""One operation of the kill-point sweep and of the power-loss check
(``tests/product/test_kill_points.py``, ``tests/product/test_power_loss.py``), run under strace.

Run as ``python kill_sweep_driver.py OPERATION WARM_ROOT ROOT``. Each root holds a world the
sweep built (``ws/desks/main``, ``ws/.checkpoints/main.git``, ``remote.git``, ``target``).
The operation runs first on WARM_ROOT, so that everything it imports and sets up is done;
then one call opens :data:`MARKER` (a path that never exists): the sweep counts the
file-system calls from there. Then the operation runs on ROOT: its calls are the kill points.
Once it has returned, a line ``REPORTED`` on stdout says so (the power-loss check holds every
checkpoint made before that line to the promise that a power cut no longer loses it).

Every run of a world makes the same calls in each thread, so that a kill point (a call's N-th
time in its thread) names the same call in the traced run and the killed one: the flushes run
on one thread, and commits are stamped with one time, a minute after the world was built (a
commit's id then never changes from run to run; one whose id starts with 0 or 8 also counts
the loose objects, a call more).
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

MARKER = '/nonexistent-checkpoints-kill-sweep-marker'
# What another process writes while the watch runs (a tracked file, new to the desk).
WATCHED = ('notes', 'seen-by-the-watch.md')


def run(operation: str, root: Path) -> None:
    from trading_checkpoints import Checkpoints

    repository = root / 'ws' / '.checkpoints' / 'main.git'
    desk = root / 'ws' / 'desks' / 'main'
    cps = Checkpoints(repository, desk)
    if operation == 'snapshot':
        cps.snapshot('swept')
    elif operation == 'restore':
        cps.restore((root / 'target').read_text().strip())
    elif operation == 'undo':
        cps.undo()
    elif operation == 'prune':
        cps.prune(keep=3)
    elif operation == 'compaction':
        cps.prune()
    elif operation == 'clone':
        Checkpoints.clone(
            str(root / 'remote.git'),
            root / 'ws' / '.checkpoints' / 'copy.git',
            root / 'ws' / 'desks' / 'copy',
        )
    elif operation == 'watch':
        _watch_one_change(cps, desk)
    elif operation == 'reseal':
        cps.snapshot('swept')
        cps.seal()  # the seal ref names the newest checkpoint
        cps.snapshot('before Write', tool='Write', paths=['notes/n0.md'])  # announced on it
        cps.seal()  # the tool wrote nothing: the seal ref names the same checkpoint again
    elif operation == 'announce':
        cps.snapshot('swept')  # the unsaved work, checkpointed before the tool
        # Nothing changed since: the write the tool is about to make is announced.
        cps.snapshot('before Write', tool='Write', paths=['notes/n0.md'])
    else:
        raise SystemExit(f'unknown operation {operation!r}')


def _watch_one_change(cps, desk: Path) -> None:
    """``checkpoints watch`` until it has recorded a file written while it watched."""
    from trading_checkpoints.agent.watch import watch

    stop, seen = threading.Event(), []

    def ready() -> None:
        folder = os.open(desk / WATCHED[0], os.O_RDONLY | os.O_DIRECTORY)
        try:
            fd = os.open(WATCHED[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644, dir_fd=folder)
        finally:
            os.close(folder)
        os.write(fd, b'written while the watch ran\n')
        os.close(fd)

    def echo(line: str) -> None:
        seen.append(line)
        if '/'.join(WATCHED) in line:
            stop.set()

    options = {'quiet': 0.1, 'echo': echo, 'ready': ready, 'stop': stop}
    watcher = threading.Thread(target=watch, args=(cps,), kwargs=options)
    watcher.start()
    if not stop.wait(120):
        stop.set()
        watcher.join()
        raise SystemExit(f'the watch recorded no change: {seen}')
    watcher.join()


class _WorldClock:
    """The time commits and reflog entries are stamped with (``store.repo``'s ``time``)."""

    def __init__(self, root: Path) -> None:
        self.at = os.stat(root / 'target').st_mtime + 60  # copies keep the world's times

    def time(self) -> float:
        return self.at


def main() -> None:
    operation, warm, root = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    # One flushing thread: strace counts a call's N-th time per thread, and a pool of several
    # shares the flushes out differently from run to run.
    from trading_checkpoints.core import durability
    from trading_checkpoints.store import repo as store_repo

    durability._POOL_SIZE = 1
    store_repo.time = _WorldClock(root)  # type: ignore[assignment]
    run(operation, warm)
    try:
        os.close(os.open(MARKER, os.O_RDONLY))
    except FileNotFoundError:
        pass
    run(operation, root)
    os.write(1, b'REPORTED\n')


if __name__ == '__main__':
    main()
