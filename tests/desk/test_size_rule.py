"""The size rule's figures: ``max file size`` values read as git writes them, sizes that are no
size refused, sizes described exactly.

Each test pins a safety check: it fails when ``benchmarks/mutation.py`` breaks that check,
and it runs in this process, where mutation testing sees the calls.
"""

from __future__ import annotations

import pytest

from trading_checkpoints import CheckpointError
from trading_checkpoints.desk.safety import describe_size, parse_size


@pytest.mark.parametrize(
    ('text', 'size'),
    [
        ('0', 0),
        ('7', 7),
        (' 12 ', 12),
        ('512k', 512 * 1024),
        ('3KiB', 3 * 1024),
        ('100m', 100 * 1024**2),
        ('5M', 5 * 1024**2),
        ('2g', 2 * 1024**3),
        ('3 GB', 3 * 1024**3),
    ],
)
def test_max_file_size_values_are_read_as_git_writes_them(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize('text', ['', 'lots', '1t', '-1', '1.5m', 'm'])
def test_a_max_file_size_that_is_no_size_is_refused(text: str) -> None:
    with pytest.raises(CheckpointError) as caught:
        parse_size(text)
    assert str(caught.value) == f'{text!r} is not a size (expected a number with k, m or g)'


@pytest.mark.parametrize(
    ('size', 'shown'),
    [
        (0, '0 bytes'),
        (1023, '1023 bytes'),
        (1024, '1 KiB'),
        (1536, '1536 bytes'),
        (3 * 1024**2, '3 MiB'),
        (1024**3 + 1024, '1048577 KiB'),
        (2 * 1024**3, '2 GiB'),
    ],
)
def test_sizes_are_described_exactly(size: int, shown: str) -> None:
    assert describe_size(size) == shown
