"""Many new objects go into one pack, few go loose."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import write

from trading_checkpoints import Checkpoints
from trading_checkpoints.repo import PACK_THRESHOLD


def _loose(repo_dir: Path) -> list[str]:
    objects = repo_dir / 'objects'
    return sorted(
        folder.name + name.name
        for folder in objects.iterdir()
        if len(folder.name) == 2
        for name in folder.iterdir()
    )


def _packs(repo_dir: Path) -> list[str]:
    return sorted(p.name for p in (repo_dir / 'objects' / 'pack').glob('*.pack'))


def test_first_snapshot_packs_and_later_ones_stay_loose(desk: Path, repo_dir: Path) -> None:
    for i in range(PACK_THRESHOLD + 10):
        write(desk, f'memory/d{i % 4}/f{i}.md', f'file {i}')
    first = Checkpoints(repo_dir, desk).snapshot('first')
    assert first is not None
    assert len(_packs(repo_dir)) == 1
    assert _loose(repo_dir) == []
    write(desk, 'memory/d0/f0.md', 'changed')
    second = Checkpoints(repo_dir, desk).snapshot('second')
    assert second is not None
    assert len(_packs(repo_dir)) == 1
    # One blob, the changed trees (d0, memory, root) and the commit.
    assert len(_loose(repo_dir)) == 1 + 3 + 1
    assert os.path.getsize(repo_dir / 'objects' / 'pack' / _packs(repo_dir)[0]) > 0
