"""What each of the repository's own files costs when it is a link or too large, row by row as
docs/safety.md's table of the repository's own files says: the files whose row says "refused,
naming the file" make the next snapshot a ``CheckpointError`` naming that file; the caches and
records of our own (and ``HEAD``, the reflog) are not used or are replaced, and the snapshot
goes ahead; a bad restore record is refused and the desk snapshotted as found; a large lock
file is read no further than its cap. A link's target never changes."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from helpers.builders import checkpoints_in, desk_in, new_workspace, repository_in, write

from trading_checkpoints import CheckpointError

REFUSED = [
    'config',
    'refs/heads/main',
    'refs/checkpoints/sealed',
    'packed-refs',
    'shallow',
    'info/grafts',
    'objects/info/alternates',
]
GOES_AHEAD = [
    'checkpoints/statcache',
    'checkpoints/commits',
    'checkpoints/pruned',
    'checkpoints/remote-heads',
    'HEAD',
    'logs/refs/heads/main',
]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    workspace = new_workspace(tmp_path / 'ws')
    desk = desk_in(workspace)
    cps = checkpoints_in(workspace)
    for version in ('v1', 'v2', 'v3'):
        write(desk, 'Memory.md', f'{version}\n')
        cps.snapshot(version)
    cps.seal()
    cps.prune(keep=2)  # a shallow file and a pruned record
    return workspace


def plant(repository: Path, name: str, kind: str, outside: Path) -> None:
    target = repository / name
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    elif os.path.lexists(target):
        target.unlink()
    target.parent.mkdir(parents=True, exist_ok=True)
    if kind == 'link':
        os.symlink(outside, target)
    else:
        with open(target, 'wb') as handle:
            handle.truncate(1 << 40)  # sparse: a terabyte that takes no space


@pytest.mark.parametrize('kind', ['link', 'huge'])
@pytest.mark.parametrize('name', REFUSED + GOES_AHEAD)
def test_each_repository_file_costs_what_its_row_says(
    workspace: Path, tmp_path: Path, name: str, kind: str
) -> None:
    outside = tmp_path / 'outside.txt'
    outside.write_bytes(b"not the repository's\n")
    plant(repository_in(workspace), name, kind, outside)
    write(desk_in(workspace), 'Memory.md', 'edited after the plant\n')
    cps = checkpoints_in(workspace)
    if name in REFUSED:
        with pytest.raises(CheckpointError) as refused:
            cps.snapshot('after the plant')
        assert name in str(refused.value), str(refused.value)
    else:
        assert cps.snapshot('after the plant') is not None
        assert cps.show(cps.list(1)[0].checkpoint_id, 'Memory.md') == b'edited after the plant\n'
    assert outside.read_bytes() == b"not the repository's\n"


@pytest.mark.parametrize('kind', ['link', 'huge'])
def test_a_bad_lock_file_refuses_the_verb_or_is_read_only_to_its_cap(
    workspace: Path, tmp_path: Path, kind: str
) -> None:
    outside = tmp_path / 'outside.txt'
    outside.write_bytes(b"not the repository's\n")
    plant(repository_in(workspace), 'checkpoints/lock', kind, outside)
    write(desk_in(workspace), 'Memory.md', 'edited after the plant\n')
    cps = checkpoints_in(workspace)
    if kind == 'link':
        with pytest.raises(CheckpointError, match='checkpoints/lock'):
            cps.snapshot('after the plant')
    else:
        assert cps.snapshot('after the plant') is not None
    assert outside.read_bytes() == b"not the repository's\n"


@pytest.mark.parametrize('kind', ['link', 'huge'])
def test_a_bad_restore_record_is_refused_and_the_desk_snapshotted_as_found(
    workspace: Path, tmp_path: Path, kind: str
) -> None:
    outside = tmp_path / 'outside.txt'
    outside.write_bytes(b"not the repository's\n")
    plant(repository_in(workspace), 'checkpoints/restore-journal', kind, outside)
    write(desk_in(workspace), 'Memory.md', 'edited after the plant\n')
    cps = checkpoints_in(workspace)
    result = cps.snapshot_with_result('after the plant')
    assert result.recovered and 'restore-journal' in result.recovered, result.recovered
    assert cps.show(cps.list(1)[0].checkpoint_id, 'Memory.md') == b'edited after the plant\n'
    assert outside.read_bytes() == b"not the repository's\n"
