"""A path remote's folder: a push makes the repository, never the folders above it unasked.

``remote add backup /mnt/usb/desk.git`` with the drive not mounted must not put the backup on
the same disk under a folder of the same name: the push fails naming the missing folder, and
``push --create-parents`` (``create_parents=True``) is how a person says the folders may be made.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.builders import session_turns
from helpers.cli import checkpoints

from trading_checkpoints import Checkpoints
from trading_checkpoints.errors import MissingRemoteFolderError


def test_a_push_into_a_folder_that_does_not_exist_creates_nothing(
    cps: Checkpoints, desk: Path, workspace: Path, tmp_path: Path
) -> None:
    ids = session_turns(cps, desk, 2)
    mount = tmp_path / 'mnt' / 'usb'  # the drive's mount point, not there: not mounted
    url = str(mount / 'desk-main.git')
    added = checkpoints('remote', 'add', 'backup', url, workspace=workspace)
    assert added.returncode == 0, added.stderr
    refused = checkpoints('push', '--json', workspace=workspace)
    assert refused.returncode == 1, refused.stdout
    error = json.loads(refused.stderr)
    assert error['type'] == 'MissingRemoteFolderError'
    assert error['fields'] == {'remote': 'backup', 'folder': str(mount)}
    assert 'is the drive mounted?' in error['error'] and '--create-parents' in error['error']
    assert not (tmp_path / 'mnt').exists(), 'no folder may be made on this disk instead'
    with pytest.raises(MissingRemoteFolderError):
        cps.push('backup')
    assert not (tmp_path / 'mnt').exists()
    pushed = checkpoints('push', 'backup', '--create-parents', workspace=workspace)
    assert pushed.returncode == 0, pushed.stderr
    assert ids[-1] in pushed.stdout
    assert Checkpoints(Path(url), tmp_path / 'copy').list()[0].checkpoint_id == ids[-1]


def test_the_repository_folder_itself_is_made_when_its_folder_exists(
    cps: Checkpoints, desk: Path, tmp_path: Path
) -> None:
    ids = session_turns(cps, desk, 1)
    (tmp_path / 'usb').mkdir()
    cps.add_remote('backup', str(tmp_path / 'usb' / 'desk-main.git'))
    assert cps.push('backup').new == ids[-1]
    cps.add_remote('deep', f'file://{tmp_path}/a/b/desk-main.git')
    with pytest.raises(MissingRemoteFolderError) as caught:
        cps.push('deep')
    assert caught.value.folder == str(tmp_path / 'a' / 'b')
    assert not (tmp_path / 'a').exists()
    assert cps.push('deep', create_parents=True).new == ids[-1]
