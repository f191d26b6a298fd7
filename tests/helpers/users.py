"""Work done as a user the kernel checks permissions for: root may signal every process and
read every folder, so as root the work runs in a forked child that became user nobody."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

NOBODY = 65534


def run_unprivileged(action: Callable[[Path], object]) -> str:
    """The repr of what ``action(folder)`` returned, or of what it raised, in a forked child:
    user nobody when this process is root, else this user. ``folder`` is a new folder of that
    user's under /tmp (short, for socket paths), removed afterwards. The action imports
    nothing new: nobody may not read the modules of root's interpreter."""
    base = Path(tempfile.mkdtemp(prefix='unprivileged-', dir='/tmp'))
    try:
        if os.geteuid() == 0:
            os.chown(base, NOBODY, NOBODY)
        reading, writing = os.pipe()
        child = os.fork()
        if child == 0:  # never returns into pytest
            answer = 'no answer'
            try:
                os.close(reading)
                if os.geteuid() == 0:
                    os.setgroups([])
                    os.setgid(NOBODY)
                    os.setuid(NOBODY)
                answer = repr(action(base))
            except BaseException as error:  # told to the test's process, which checks it
                answer = repr(error)
            finally:
                os.write(writing, answer.encode())
                os._exit(0)
        os.close(writing)
        with os.fdopen(reading, 'rb') as pipe:
            answer = pipe.read().decode()
        os.waitpid(child, 0)
        return answer
    finally:
        for folder, subfolders, _ in os.walk(base):  # the action may have closed some
            for name in subfolders:
                path = os.path.join(folder, name)
                if not os.path.islink(path):
                    os.chmod(path, 0o700)  # before the walk enters it
        shutil.rmtree(base, ignore_errors=True)
