"""The fast filesystem helpers agree with the stdlib."""

from __future__ import annotations

import os
from pathlib import Path

from trading_checkpoints.core.fs import read_file, realpath


def test_realpath_agrees_with_os_path_realpath(tmp_path: Path) -> None:
    (tmp_path / 'a' / 'b').mkdir(parents=True)
    (tmp_path / 'link').symlink_to(tmp_path / 'a')
    (tmp_path / 'dangling').symlink_to(tmp_path / 'nowhere')
    (tmp_path / 'a' / 'file').write_text('x')
    for path in [
        tmp_path / 'a' / 'b',
        tmp_path / 'link' / 'b',
        tmp_path / 'link' / '..' / 'a',
        tmp_path / 'link' / 'file',
        tmp_path / 'dangling',
        tmp_path / 'missing' / 'deeper',
        tmp_path / 'a' / 'b' / '.',
    ]:
        assert realpath(path) == os.path.realpath(path), path


def test_read_file_reads_everything_or_a_prefix(tmp_path: Path) -> None:
    data = os.urandom(3 * (1 << 20) + 17)
    (tmp_path / 'f').write_bytes(data)
    assert read_file(tmp_path / 'f') == data
    assert read_file(tmp_path / 'f', 100) == data[:100]
    (tmp_path / 'empty').write_bytes(b'')
    assert read_file(tmp_path / 'empty') == b''
