"""Every snapshot goes into a pack: the first as a pack of its own, later ones appended to it."""

from __future__ import annotations

from pathlib import Path

from helpers.builders import write

from trading_checkpoints import Checkpoints
from trading_checkpoints.store.pack import packfile


def _loose(repo_dir: Path) -> list[str]:
    objects = repo_dir / 'objects'
    return sorted(
        folder.name + name.name
        for folder in objects.iterdir()
        if len(folder.name) == 2
        for name in folder.iterdir()
    )


def _packs(repo_dir: Path) -> list[Path]:
    return sorted((repo_dir / 'objects' / 'pack').glob('*.pack'))


def test_first_snapshot_packs_and_later_ones_are_appended(desk: Path, repo_dir: Path) -> None:
    for i in range(74):
        write(desk, f'memory/d{i % 4}/f{i}.md', f'file {i}')
    first = Checkpoints(repo_dir, desk).snapshot('first')
    assert first is not None
    (pack,) = _packs(repo_dir)
    assert _loose(repo_dir) == []
    with packfile.PackView(str(pack)[: -len('.pack')]) as view:
        count = view.count
    write(desk, 'memory/d0/f0.md', 'changed')
    second = Checkpoints(repo_dir, desk).snapshot('second')
    assert second is not None
    assert _loose(repo_dir) == []
    (appended,) = _packs(repo_dir)
    assert appended != pack
    # One blob, the changed trees (d0, memory, root) and the commit.
    with packfile.PackView(str(appended)[: -len('.pack')]) as view:
        assert view.count == count + 1 + 3 + 1
