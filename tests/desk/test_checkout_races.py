"""Another writer in the desk while a restore writes (timed by an audit hook in this process):
the restore guard refuses only what changed after the scan; a folder filling up, a symlink or
file planted, a folder moved out, entries deleted or turned into folders are each met safely.

Each test pins a safety check: it fails when ``benchmarks/mutation.py`` breaks that check,
and it runs in this process, where mutation testing sees the calls.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers.builders import mkdirs, put
from helpers.faults import armed, lands_a_desk_file
from helpers.reading import ALLOW

from trading_checkpoints import CheckpointError, Checkpoints
from trading_checkpoints.desk.folders import DeskFolders, NotAFolderError
from trading_checkpoints.desk.safety import unchanged_since
from trading_checkpoints.desk.scan import scan as scan_desk
from trading_checkpoints.desk.statcache import StatCache
from trading_checkpoints.errors import DeskChangedError
from trading_checkpoints.ops import journal as journal_module


def test_the_restore_guard_refuses_only_entries_written_after_the_scan(tmp_path: Path) -> None:
    desk = tmp_path / 'desk'
    put(desk, 'notes/a.md', '-', b'as scanned')
    put(desk, 'notes/b.md', '-', b'as scanned')
    with DeskFolders(desk) as folders:
        found = scan_desk(folders, ALLOW, StatCache())
    guard = unchanged_since(found)
    guard('notes/a.md', os.lstat(desk / 'notes' / 'a.md'))  # as the scan saw it
    guard('notes/new.md', None)  # nothing there to lose
    (desk / 'notes' / 'folder').mkdir()
    guard('notes/folder', os.lstat(desk / 'notes' / 'folder'))  # vetted by the plan check
    put(desk, 'notes/b.md', '-', b'written by someone else meanwhile')
    put(desk, 'notes/appeared.md', '-', b'a file where the scan saw nothing')
    for path in ('notes/b.md', 'notes/appeared.md'):
        with pytest.raises(DeskChangedError) as caught:
            guard(path, os.lstat(desk / path))
        assert caught.value.path == path
        assert str(caught.value) == f'{path} changed while it was being restored'


@pytest.mark.parametrize('moment', ['open', 'os.rmdir'])
def test_a_folder_becoming_a_file_that_fills_up_meanwhile_is_not_removed(
    tmp_path: Path, moment: str
) -> None:
    """Another writer puts a file in the folder after the plan was checked, or just as the
    restore removes the folder to put a file there (timed by an audit hook at the temporary
    file's ``open`` or at the ``rmdir``): the folder and what was put there stay, and the error
    says why."""
    desk = tmp_path / 'desk'
    put(desk, 'notes/x', '-', b'x as a file')
    cps = Checkpoints(tmp_path / 'repo.git', desk)
    as_file = cps.snapshot('x is a file')
    assert as_file is not None
    (desk / 'notes' / 'x').unlink()
    (desk / 'notes' / 'x' / 'empty').mkdir(parents=True)
    late = desk / 'notes' / 'x' / 'empty' / 'new.md'

    def intruder(event: str, args: tuple) -> None:
        if event != moment or late.exists():
            return
        name = os.fsdecode(args[0]) if isinstance(args[0], (str, bytes)) else ''
        if name.startswith('.x.checkpoint-') or (moment == 'os.rmdir' and name == 'empty'):
            late.write_bytes(b'written meanwhile')

    with armed(intruder), pytest.raises(CheckpointError) as caught:
        cps.restore(as_file)
    assert str(caught.value) == f'cannot write {desk / "notes/x"}: Directory not empty'
    assert late.read_bytes() == b'written meanwhile'
    assert not [name for name in os.listdir(desk / 'notes') if '.checkpoint-' in name]


@pytest.mark.parametrize('atomic', [True, False])
def test_a_failed_restore_removes_the_temporary_files_it_wrote(
    tmp_path: Path, atomic: bool
) -> None:
    """The restore stops when a folder it is about to create turns out to be a symlink (planted
    after the plan was checked): the temporary files already written are removed at once; a
    file already rewritten in place is left to the restore's record, and nothing is written
    outside."""
    desk = tmp_path / 'desk'
    put(desk, 'notes/a.md', '-', b'old a')
    put(desk, 'notes/sub/b.md', '-', b'old b')
    cps = Checkpoints(tmp_path / 'repo.git', desk, atomic_writes=atomic)
    old = cps.snapshot('old')
    assert old is not None
    (desk / 'notes' / 'sub' / 'b.md').unlink()
    (desk / 'notes' / 'sub').rmdir()
    put(desk, 'notes/a.md', '-', b'new a')
    cps.snapshot('new')
    outside = mkdirs(tmp_path / 'outside')

    def planter(event: str, args: tuple) -> None:
        temporary = event == 'open' and str(args[0]).startswith('.a.md.checkpoint-')
        if temporary or lands_a_desk_file(event, args):
            if not (desk / 'notes' / 'sub').is_symlink():
                os.symlink(outside, desk / 'notes' / 'sub')

    with armed(planter), pytest.raises(NotAFolderError):
        cps.restore(old)
    assert sorted(os.listdir(desk / 'notes')) == ['a.md', 'sub']
    assert os.listdir(outside) == []
    assert (desk / 'notes' / 'a.md').read_bytes() == (b'new a' if atomic else b'old a')
    assert journal_module.pending(tmp_path / 'repo.git')


def test_an_entry_planted_where_a_symlink_is_being_made_is_replaced(tmp_path: Path) -> None:
    """A file appears at a symlink's temporary name just before the restore makes the link
    there (timed by an audit hook): it is removed and the link made; nothing is followed."""
    desk = tmp_path / 'desk'
    put(desk, 'notes/a.md', '-', b'a')
    put(desk, 'notes/link', 'link', b'a.md')
    cps = Checkpoints(tmp_path / 'repo.git', desk)
    old = cps.snapshot('old')
    (desk / 'notes/link').unlink()
    put(desk, 'notes/link', 'link', b'elsewhere.md')
    cps.snapshot('new')
    assert old is not None
    planted = desk / 'notes' / f'.link.checkpoint-{os.getpid()}.tmp'
    made: list[str] = []

    def planter(event: str, args: tuple) -> None:
        if event == 'os.symlink' and os.fsdecode(args[1]) == planted.name and not made:
            made.append(planted.name)
            planted.write_bytes(b'planted')

    with armed(planter):
        cps.restore(old)
    assert made, 'the restore made no symlink'
    assert os.readlink(desk / 'notes/link') == 'a.md'
    assert not planted.exists() and not planted.is_symlink()


@pytest.mark.parametrize('step', ['write', 'rewrite', 'delete'])
def test_a_folder_moved_out_of_the_desk_mid_restore_stops_it(tmp_path: Path, step: str) -> None:
    """A folder the restore writes into (through a temporary file, or in place) or deletes
    from is moved out of the desk meanwhile (timed by an audit hook): after its writes the
    restore checks every folder it touched is still where it opened it, and stops with an
    error naming the folder."""
    desk = tmp_path / 'desk'
    put(desk, 'notes/sub/deep/a.md', '-', b'one')
    cps = Checkpoints(tmp_path / 'repo.git', desk, atomic_writes=step == 'write')
    first = cps.snapshot('one')
    if step == 'delete':
        put(desk, 'notes/sub/deep/b.md', '-', b'to be deleted')
    else:
        put(desk, 'notes/sub/deep/a.md', '-', b'two')
    cps.snapshot('two')
    assert first is not None
    away = tmp_path / 'away'

    def mover(name: str, args: tuple) -> None:
        if away.exists():
            return
        if step == 'write':
            hit = name == 'os.rename' and os.fsdecode(args[1]) == 'a.md'
        elif step == 'rewrite':
            hit = lands_a_desk_file(name, args)
        else:
            hit = name == 'os.remove' and os.fsdecode(args[0]) == 'b.md'
        if hit:
            os.rename(desk / 'notes' / 'sub' / 'deep', away)

    with armed(mover), pytest.raises(CheckpointError) as caught:
        cps.restore(first)
    assert away.exists(), 'the folder was never moved'
    assert str(caught.value) == (
        f'the folder {desk / "notes/sub/deep"} was moved away while it was being restored'
    )


def test_deletes_go_on_past_entries_gone_or_turned_into_folders(tmp_path: Path) -> None:
    """While the restore writes its record (timed by an audit hook), one file it deletes is
    removed and another becomes a folder: the others are still deleted, the folder is kept."""
    desk = tmp_path / 'desk'
    put(desk, 'notes/keep.md', '-', b'keep')
    cps = Checkpoints(tmp_path / 'repo.git', desk)
    first = cps.snapshot('first')
    for name in ('a', 'b', 'c', 'd'):
        put(desk, f'notes/{name}.md', '-', name.encode())
    cps.snapshot('more')
    assert first is not None
    fired = []

    def meddler(event: str, args: tuple) -> None:
        if event == 'open' and 'restore-journal' in str(args[0]) and not fired:
            fired.append(True)
            (desk / 'notes' / 'd.md').unlink()  # deleted first (reverse order): gone already
            (desk / 'notes' / 'c.md').unlink()
            (desk / 'notes' / 'c.md').mkdir()  # a folder now: newer work, left alone

    with armed(meddler):
        cps.restore(first)
    assert sorted(os.listdir(desk / 'notes')) == ['c.md', 'keep.md']
