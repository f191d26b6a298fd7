"""Bind mounts made for one test (``mount --bind`` needs root; the test is skipped without)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

NEEDS_ROOT = pytest.mark.skipif(
    not hasattr(os, 'geteuid') or os.geteuid() != 0, reason='mount --bind needs root'
)


@contextmanager
def bind_mounted(source: Path, target: Path) -> Iterator[None]:
    """``source`` bind-mounted at ``target`` until the block ends (skips the test where
    mounting is not allowed)."""
    done = subprocess.run(
        ['mount', '--bind', str(source), str(target)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        pytest.skip(f'mount --bind is not allowed here: {done.stderr.strip()}')
    try:
        yield
    finally:
        subprocess.run(['umount', str(target)], check=True)
