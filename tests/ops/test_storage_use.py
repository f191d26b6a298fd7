"""Storage in sight: ``status`` says what the repository takes on disk and what retention would
drop, through the library, the JSON form and the command line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers.builders import session_turns, write
from helpers.cli import checkpoints

from trading_checkpoints import Checkpoints
from trading_checkpoints.ops.results import StorageUse
from trading_checkpoints.ops.retention import Limits, write_limits
from trading_checkpoints.ops.storageuse import describe, folder_size, size_text
from trading_checkpoints.store.pack.folder import wait_for_removals


def test_status_measures_the_repository_without_limits(cps: Checkpoints, desk: Path) -> None:
    session_turns(cps, desk, 3)
    wait_for_removals()  # the packs replaced meanwhile are gone: both measures see the same
    storage = cps.status().storage
    assert storage is not None
    assert storage.repository_bytes > storage.objects_bytes > 0
    assert storage.repository_bytes == folder_size(cps.repository_directory)
    assert (storage.keep, storage.older_than, storage.max_size) == (None, None, None)
    assert storage.would_drop == 0 and storage.bytes_after is None


def test_the_size_is_what_du_counts(cps: Checkpoints, desk: Path) -> None:
    if shutil.which('du') is None:
        pytest.skip('no du here')
    session_turns(cps, desk, 2)
    wait_for_removals()  # the packs replaced meanwhile are gone: both measures see the same
    done = subprocess.run(
        ['du', '-s', '-B1', str(cps.repository_directory)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f'this du takes no -B1: {done.stderr}')
    assert folder_size(cps.repository_directory) == int(done.stdout.split()[0])


def test_a_symlink_in_the_repository_is_counted_as_itself(tmp_path: Path) -> None:
    big = tmp_path / 'big'
    big.mkdir()
    (big / 'data').write_bytes(os.urandom(1 << 20))
    folder = tmp_path / 'repo'
    folder.mkdir()
    (folder / 'link').symlink_to(big, target_is_directory=True)
    assert folder_size(folder) < 1 << 20


def test_with_limits_it_says_what_a_prune_would_drop_now(cps: Checkpoints, desk: Path) -> None:
    session_turns(cps, desk, 5)
    write_limits(cps.repository_directory, Limits(keep=2))
    wait_for_removals()  # the packs replaced meanwhile are gone: both measures see the same
    storage = cps.status().storage
    plan = cps.prune(keep=2, dry_run=True)
    assert storage is not None
    assert (storage.keep, storage.would_drop) == (2, 3) == (2, plan.pruned_count)
    assert storage.bytes_after == plan.bytes_after
    assert len(cps.list(None)) == 5, 'nothing was dropped'
    opened = Checkpoints.open(cps.repository_directory, desk, keep=10)
    assert opened.status().storage == StorageUse(
        storage.repository_bytes, storage.objects_bytes, keep=10, would_drop=0
    )


def test_a_desk_without_a_repository_has_no_storage_yet(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'not recorded yet\n')
    assert cps.status().storage is None


def test_the_status_verb_prints_it_and_its_json_carries_it(
    workspace: Path, cps: Checkpoints, desk: Path
) -> None:
    session_turns(cps, desk, 4)
    write_limits(cps.repository_directory, Limits(keep=1, older_than='30d'))
    done = checkpoints('status', workspace=workspace)
    assert done.returncode == 0, done.stderr
    storage = cps.status().storage
    assert storage is not None
    line = (
        f'Storage: {size_text(storage.repository_bytes)} on disk; retention (keep 1, older '
        f'than 30d) would drop 3 checkpoints now, objects to about '
        f'{size_text(storage.bytes_after or 0)}.'
    )
    assert done.stdout.splitlines()[-1] == line
    data = json.loads(checkpoints('status', '--json', workspace=workspace).stdout)
    assert data['storage'] == storage.to_dict()


@pytest.mark.parametrize(
    ('use', 'text'),
    [
        (StorageUse(512, 0), '512 B on disk; no retention limits (prune --save sets them)'),
        (StorageUse(81920, 8192, keep=5), '80.0 KiB on disk; retention (keep 5) drops nothing now'),
        (
            StorageUse(3 << 20, 1 << 20, max_size='2M', would_drop=None),
            '3.0 MiB on disk; retention (max size 2M) cannot be applied now',
        ),
        (
            StorageUse(5 << 30, 1 << 30, older_than='7d', would_drop=1, bytes_after=1 << 29),
            '5.0 GiB on disk; retention (older than 7d) would drop 1 checkpoint now, objects to '
            'about 512.0 MiB',
        ),
    ],
)
def test_the_line_people_read(use: StorageUse, text: str) -> None:
    assert describe(use) == text
