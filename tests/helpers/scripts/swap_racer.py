"""A second process that keeps swapping a desk folder with a symlink to a folder outside the desk.

Usage: swap_racer.py FOLDER SPARE SECONDS [APPEND_TO]

``FOLDER`` (a real folder inside the desk) and ``SPARE`` (a symlink inside the desk pointing
outside it) are exchanged atomically with ``renameat2(RENAME_EXCHANGE)`` as fast as possible,
so at any instant ``FOLDER`` is either the real folder or the symlink. With ``APPEND_TO`` (a
file name), every hundredth swap also appends to that file inside whichever of the two is the
real folder, so restores find a planned file changed under them and take the recovery path,
and then leaves the real folder in place for a few milliseconds, so that restores get into
their writes before the swapping goes on.
The racer itself never writes outside the desk. It prints the number of swaps when done.
"""

from __future__ import annotations

import ctypes
import os
import sys
import time

AT_FDCWD = -100
RENAME_EXCHANGE = 2


def main() -> None:
    folder, spare, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    append_to = sys.argv[4] if len(sys.argv) > 4 else None
    libc = ctypes.CDLL(None, use_errno=True)
    exchange = libc.renameat2
    a, b = os.fsencode(folder), os.fsencode(spare)
    deadline = time.monotonic() + seconds
    swaps = 0
    while time.monotonic() < deadline:
        if exchange(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) == 0:
            swaps += 1
        if append_to and swaps % 100 == 0:
            real = folder if not os.path.islink(folder) else spare
            try:
                fd = os.open(
                    os.path.join(real, append_to), os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW
                )
            except OSError:
                continue  # deleted or replaced by a restore just now
            try:
                os.write(fd, b'+')
            finally:
                os.close(fd)
            # Then a pause with the real folder in place, long enough for a restore to get past
            # its checks into its writes, so that the next swaps land in the middle of them.
            if os.path.islink(folder):
                exchange(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE)
            time.sleep(0.004)
    if os.path.islink(folder):  # leave the real folder in place
        exchange(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE)
    print(swaps)


if __name__ == '__main__':
    main()
