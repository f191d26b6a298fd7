"""How a writer's wait for the lock is shown to a person: one line on stderr.

A writer waiting more than a second for the desk's lock issues one :class:`LockWaitWarning`
(``core/lock.py``). Python would print it with a file name and line number; a command shows it
as ``note: waiting for the checkpoint lock ..., held by another process (pid 4242 on host
(restore), ...)``. Every other warning is shown as Python shows it.
"""

from __future__ import annotations

import sys
import warnings
from typing import TextIO

from .kinds import LockWaitWarning

_shown = False


def show_lock_waits() -> None:
    """Makes this process print a :class:`LockWaitWarning` as one ``note:`` line (each one
    issued, not only the first from each place); calling it again changes nothing."""
    global _shown
    if _shown:
        return
    _shown = True
    shown_otherwise = warnings.showwarning

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        if issubclass(category, LockWaitWarning):
            print(f'note: {message}', file=sys.stderr, flush=True)
        else:
            shown_otherwise(message, category, filename, lineno, file, line)

    warnings.showwarning = show
    warnings.simplefilter('always', LockWaitWarning)
