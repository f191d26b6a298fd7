"""The warm server's tests: each has a private runtime folder of its own, and its servers are
stopped afterwards."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from trading_checkpoints.warm import address


@pytest.fixture
def runtime() -> Iterator[Path]:
    """A private runtime folder of the test's own (short: a socket's path has at most ~100
    bytes); its server is stopped afterwards."""
    folder = Path(tempfile.mkdtemp(prefix='tc-', dir='/tmp'))
    yield folder
    for lock in (folder / address.FOLDER_NAME).glob('*.lock'):
        text = lock.read_text().strip()
        if text:
            try:
                os.kill(int(text), signal.SIGTERM)
            except ProcessLookupError:
                pass
    shutil.rmtree(folder, ignore_errors=True)
