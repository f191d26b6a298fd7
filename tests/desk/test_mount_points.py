"""Mount points inside a desk: what is mounted there lies outside it, so a restore never writes
or deletes through one.

A file bind-mounted at a tracked path would be rewritten in place (changing the outside file),
and the files of a bind-mounted folder would be deleted or rewritten. A restore that would
touch either is refused before its first write (``MountPointError``), through the library and
the command line alike. Needs root for ``mount --bind``; skipped otherwise.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from helpers.builders import write
from helpers.cli import checkpoints
from helpers.mounts import NEEDS_ROOT, bind_mounted
from helpers.reading import files_of

from trading_checkpoints import Checkpoints
from trading_checkpoints.desk.folders import DeskFolders
from trading_checkpoints.errors import MountPointError

pytestmark = NEEDS_ROOT


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / 'outside'
    write(folder, 'secret.txt', 'a file outside the desk\n')
    write(folder, 'shared/precious.md', 'outside, never to be deleted\n')
    return folder


def test_a_bind_mounted_file_is_never_rewritten(
    workspace: Path, desk: Path, cps: Checkpoints, outside: Path
) -> None:
    write(desk, 'notes/a.md', 'the old notes\n')
    write(desk, 'Memory.md', 'memory\n')
    first = cps.snapshot('first')
    assert first is not None
    before = files_of(outside)
    with bind_mounted(outside / 'secret.txt', desk / 'notes' / 'a.md'):
        with pytest.raises(MountPointError) as caught:
            cps.restore(first)
        assert (caught.value.path, caught.value.mount) == ('notes/a.md', str(desk / 'notes/a.md'))
        assert files_of(outside) == before
        done = checkpoints('restore', first, '--json', workspace=workspace)
        assert done.returncode == 1, done.stdout
        assert json.loads(done.stderr)['type'] == 'MountPointError'
        assert files_of(outside) == before
        # Through temporary files and renames as well: refused the same, before any write.
        with pytest.raises(MountPointError):
            Checkpoints(cps.repository_directory, desk, atomic_writes=True).restore(first)
        assert files_of(outside) == before
    assert (desk / 'notes/a.md').read_text() == 'the old notes\n'


def test_a_bind_mounted_folders_files_are_never_deleted(
    workspace: Path, desk: Path, cps: Checkpoints, outside: Path
) -> None:
    write(desk, 'notes/a.md', 'notes\n')
    first = cps.snapshot('before the shared folder')
    assert first is not None
    (desk / 'notes' / 'shared').mkdir()
    before = files_of(outside)
    with bind_mounted(outside / 'shared', desk / 'notes' / 'shared'):
        write(desk, 'notes/a.md', 'notes, changed\n')
        assert cps.snapshot('with the shared folder') is not None  # read: it is tracked
        for target in (first, None):  # deleting its files, or rewriting one of them
            if target is None:
                write(desk, 'notes/shared/precious.md', 'changed through the mount\n')
                before = files_of(outside)
            with pytest.raises(MountPointError) as caught:
                cps.restore(target)
            assert caught.value.mount == str(desk / 'notes' / 'shared')
            assert files_of(outside) == before
        done = checkpoints('restore', first, workspace=workspace)
        assert done.returncode == 1 and 'is a mount point' in done.stderr, done.stderr
        assert files_of(outside) == before
        # What lies beside the mount is restored as always.
        assert cps.restore_with_result(first, paths=['notes/a.md']).written == ('notes/a.md',)
        assert (desk / 'notes/a.md').read_text() == 'notes\n'


def test_the_mount_table_names_mount_points_inside_the_desk_only(desk: Path, outside: Path) -> None:
    spaced = desk / 'notes' / 'a folder\twith blanks'
    spaced.mkdir(parents=True)
    with bind_mounted(outside / 'shared', spaced), DeskFolders(desk) as folders:
        assert folders.mount_above('notes/a folder\twith blanks/precious.md') == (
            'notes/a folder\twith blanks'
        )
        assert folders.mount_above('notes/a folder\twith blanks') == 'notes/a folder\twith blanks'
        assert folders.mount_above('notes/a folder') is None
        assert folders.mount_above('Memory.md') is None


def test_a_file_mounted_from_another_device_is_never_written_in_place(
    tmp_path: Path, desk: Path
) -> None:
    """Should a mount appear after the plan was checked: the write in place looks at the
    device of the file it opened, and goes through a rename, which the kernel refuses."""
    from trading_checkpoints.core.paths import TRACKED_PATHS, Allowlist
    from trading_checkpoints.core.trees import FILE_MODE, blob_id
    from trading_checkpoints.desk import checkout
    from trading_checkpoints.errors import FileAccessError

    device = tmp_path / 'other-device'
    device.mkdir()
    mounted = subprocess.run(['mount', '-t', 'tmpfs', 'tmpfs', str(device)], check=False)
    if mounted.returncode != 0:
        pytest.skip('mounting a tmpfs is not allowed here')
    try:
        write(device, 'secret.txt', 'on another device\n')
        write(desk, 'notes/a.md', 'x\n')
        new = b'written by a restore\n'
        with bind_mounted(device / 'secret.txt', desk / 'notes' / 'a.md'):
            plan = checkout.Plan(write=['notes/a.md'], delete=[])
            with DeskFolders(desk) as folders, pytest.raises(FileAccessError, match='busy'):
                checkout.apply(
                    folders,
                    Allowlist(TRACKED_PATHS),
                    plan,
                    {'notes/a.md': (FILE_MODE, blob_id(new))},
                    lambda sha: new,
                )
            assert (device / 'secret.txt').read_text() == 'on another device\n'
    finally:
        subprocess.run(['umount', str(device)], check=True)
