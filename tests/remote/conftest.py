"""Fixtures of the remote tests: a smart-HTTP git server on 127.0.0.1 behind basic auth."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.httpremote import Gate, served


@pytest.fixture
def gate() -> Gate:
    """Holds the server's receive-pack requests while closed (open unless a test closes it)."""
    return Gate()


@pytest.fixture
def http_remote(tmp_path: Path, gate: Gate) -> Iterator[tuple[str, Path]]:
    """A bare repository served over smart HTTP; yields (base URL without credentials, path)."""
    bare = tmp_path / 'served.git'
    with served(bare, gate=gate) as address:
        yield f'http://{address}', bare
