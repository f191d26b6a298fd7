"""One operation of the kill-point sweep (``tests/product/test_kill_points.py``), run under strace.

Run as ``python kill_sweep_driver.py OPERATION WARM_ROOT ROOT``. Each root holds a world the
sweep built (``ws/desks/main``, ``ws/.checkpoints/main.git``, ``remote.git``, ``target``).
The operation runs first on WARM_ROOT, so that everything it imports and sets up is done;
then one call opens :data:`MARKER` (a path that never exists): the sweep counts the
file-system calls from there. Then the operation runs on ROOT: its calls are the kill points.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

MARKER = '/nonexistent-checkpoints-kill-sweep-marker'


def run(operation: str, root: Path) -> None:
    from trading_checkpoints import Checkpoints

    repository = root / 'ws' / '.checkpoints' / 'main.git'
    desk = root / 'ws' / 'desks' / 'main'
    cps = Checkpoints(repository, desk)
    if operation == 'snapshot':
        cps.snapshot('swept')
    elif operation == 'restore':
        cps.restore((root / 'target').read_text().strip())
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
    else:
        raise SystemExit(f'unknown operation {operation!r}')


def main() -> None:
    operation, warm, root = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    # One flushing thread: strace counts a call's N-th time per thread, and a pool of several
    # shares the flushes out differently from run to run, so a kill point would name another
    # call (or none) in the killed run than in the traced one.
    from trading_checkpoints.core import durability

    durability._POOL_SIZE = 1
    run(operation, warm)
    try:
        os.close(os.open(MARKER, os.O_RDONLY))
    except FileNotFoundError:
        pass
    run(operation, root)


if __name__ == '__main__':
    main()
