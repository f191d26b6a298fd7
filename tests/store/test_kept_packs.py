"""Packs marked with a ``.keep`` file are never deleted: not by a prune, a compaction or the
roll-ups after snapshots (git never deletes one either; someone asked for it to stay)."""

from __future__ import annotations

from pathlib import Path

from helpers.builders import checkpoints_in, desk_in, new_workspace, repository_in, write
from helpers.gitcli import fsck

from trading_checkpoints.store.pack.folder import wait_for_removals


def _packs(repository: Path) -> dict[str, bytes]:
    folder = repository / 'objects' / 'pack'
    return {path.name: path.read_bytes() for path in sorted(folder.glob('pack-*'))}


def test_a_kept_pack_survives_prune_compaction_and_later_snapshots(tmp_path: Path) -> None:
    workspace = new_workspace(tmp_path / 'ws')
    desk, repository = desk_in(workspace), repository_in(workspace)
    cps = checkpoints_in(workspace)
    ids = []
    for turn in range(6):
        write(desk, 'Memory.md', f'memory {turn}\n' * 50)
        write(desk, f'notes/n{turn}.md', f'note {turn}\n')
        ids.append(cps.snapshot(f'turn {turn}'))
    marked = sorted((repository / 'objects' / 'pack').glob('pack-*.pack'))
    assert marked, 'the snapshots are packed'
    for pack in marked:
        pack.with_suffix('.keep').write_text('kept by someone\n')
    kept_files = _packs(repository)

    cps.prune(keep=2)  # cuts the history and compacts the storage
    cps.prune()  # compacts it again
    for turn in range(6, 30):  # enough small packs for the roll-ups to run
        write(desk, f'notes/n{turn}.md', f'note {turn}\n')
        cps.snapshot(f'turn {turn}')
    cps.prune(keep=3)
    wait_for_removals()

    after = _packs(repository)
    for name, data in kept_files.items():
        assert after.get(name) == data, f'{name} was deleted or changed'
    assert len(cps.list()) == 3 and ids[0] not in [c.checkpoint_id for c in cps.list()]
    fsck(repository)
