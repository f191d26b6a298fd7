"""The tests that mutation testing found missing: each one fails when a safety check is broken.

``benchmarks/mutation.py`` breaks the safety checks on purpose (one small change at a time,
with mutmut) and runs the tests that exercise them; a change no test notices is a missing
test, and the tests below are those, grouped by the module whose check they pin. Real files,
real repositories, real processes; no mocks.
"""

from __future__ import annotations

import json
import logging
import os
import resource
import shutil
import stat
import subprocess
import sys
import tracemalloc
from datetime import datetime
from pathlib import Path

import pytest
from dulwich.objects import Blob
from helpers.builders import mkdirs, put
from helpers.faults import armed, lands_a_desk_file, run_child
from helpers.reading import ALLOW, files_of, head_of, version_of

from trading_checkpoints import TRACKED_PATHS, CheckpointError, Checkpoints
from trading_checkpoints.core.paths import (
    Allowlist,
    check_tree_path,
    component_problem,
    path_problem,
)
from trading_checkpoints.core.trees import FILE_MODE, SYMLINK_MODE
from trading_checkpoints.desk.checkout import Plan
from trading_checkpoints.desk.folders import DeskFolders, NotAFolderError, same_file
from trading_checkpoints.desk.safety import describe_size, parse_size, unchanged_since, vet_blobs
from trading_checkpoints.desk.scan import scan as scan_desk
from trading_checkpoints.desk.statcache import StatCache
from trading_checkpoints.errors import CorruptRepositoryError, DeskChangedError
from trading_checkpoints.ops import journal as journal_module
from trading_checkpoints.ops import retention
from trading_checkpoints.remote import credentials
from trading_checkpoints.store import storage
from trading_checkpoints.store.commitinfo import CommitInfo
from trading_checkpoints.store.pack import folder as packfolder
from trading_checkpoints.store.repo import ShadowRepo

# -- paths.py: the allowlist and path vetting ------------------------------------------------


@pytest.mark.parametrize(
    ('path', 'reason'),
    [
        ('', 'an empty path'),
        ('/etc/passwd', 'an absolute path'),
        ('C:/Windows/evil', 'an absolute path'),
        ('C:', 'an absolute path'),
        ('d:evil', 'an absolute path'),
        ('notes//a.md', 'an empty component'),
        ('notes/', 'an empty component'),
        ('notes/./a.md', "a '.' component"),
        ('notes/../../outside', "a '..' component"),
        ('notes/.git/config', 'a .git component'),
        ('notes/.GIT./config', 'a .git component'),
        ('notes/.Git . ./hooks', 'a .git component'),
        ('notes/a\0b.md', 'a NUL or newline character'),
        ('notes/a\nb.md', 'a NUL or newline character'),
        ('notes/a\rb.md', 'a NUL or newline character'),
        ('notes/..\\..\\evil', 'a backslash'),
    ],
)
def test_each_unsafe_path_is_refused_with_its_reason(path: str, reason: str) -> None:
    assert path_problem(path) == reason


@pytest.mark.parametrize(
    'path',
    ['a', 'Memory.md', 'notes/.gitignore', 'notes/.github/x', 'notes/x.git', 'notes/.gitX', 'xy:'],
)
def test_names_that_only_look_like_unsafe_ones_are_accepted(path: str) -> None:
    assert path_problem(path) is None
    assert component_problem(path.rpartition('/')[2]) is None


def test_a_name_is_vetted_on_its_own() -> None:
    assert component_problem('') == 'an empty component'
    assert component_problem('..') == "a '..' component"
    assert component_problem('.git ') == 'a .git component'
    assert component_problem('a\\b') == 'a backslash'


def test_allowlist_entries_are_normalized_and_deduplicated() -> None:
    allow = Allowlist(['notes\\daily', 'INBOX/', 'notes/daily/', 'memory', 'memory/deep', 'a'])
    assert allow.entries == ('notes/daily', 'INBOX', 'memory', 'a')
    assert allow.covers('notes/daily/x.md') and not allow.covers('notes/x.md')
    assert allow.covers('a/b') and not allow.covers('ab')
    assert allow.covers('INBOX/x') and not allow.covers('INBO/x')


def test_allowlists_compare_and_hash_by_their_entries() -> None:
    first, second = Allowlist(['notes', 'memory']), Allowlist(['memory', 'notes/', 'notes'])
    assert first == second and hash(first) == hash(second)
    assert first != Allowlist(['notes']) and first != ('memory', 'notes')
    assert repr(Allowlist(['memory'])) == "Allowlist(['memory'])"


@pytest.mark.parametrize(
    ('entries', 'message'),
    [
        ([3], 'tracked path 3 is not a string'),
        ([b'notes'], "tracked path b'notes' is not a string"),
        ([], 'the list of tracked paths is empty'),
        (['C:/Users'], "tracked path 'C:/Users' is not usable: it has an absolute path"),
        (
            ['notes/a\0b'],
            "tracked path 'notes/a\\x00b' is not usable: it has a NUL or newline character",
        ),
    ],
)
def test_unusable_allowlists_are_refused_saying_why(entries: list, message: str) -> None:
    with pytest.raises(CheckpointError) as caught:
        Allowlist(entries)
    assert str(caught.value) == message


def test_a_tree_path_is_refused_for_what_it_is() -> None:
    with pytest.raises(CorruptRepositoryError) as unsafe:
        check_tree_path('memory/../../outside.txt', ALLOW)  # covered by 'memory', yet unsafe
    assert str(unsafe.value) == (
        "the checkpoint holds an unsafe path 'memory/../../outside.txt': a '..' component"
    )
    with pytest.raises(CorruptRepositoryError) as outside:
        check_tree_path('scratch.txt', ALLOW)
    assert str(outside.value) == (
        "the checkpoint holds 'scratch.txt', which is outside the tracked paths "
        'Memory.md, memory, notes, skills/agent'
    )
    check_tree_path('memory/deep/a.md', ALLOW)


def test_a_record_naming_a_tracked_folder_then_dotdot_is_never_followed(tmp_path: Path) -> None:
    """``memory/../../outside.txt`` starts inside the allowlist: only the path check stops it."""
    desk = tmp_path / 'desk'
    repo_dir = tmp_path / 'repo.git'
    put(desk, 'memory/a.md', '-', b'v1')
    cps = Checkpoints(repo_dir, desk)
    assert cps.snapshot('v1') is not None
    head = head_of(repo_dir)
    blob = '0' * 40
    record = {
        'format': 2,
        'label': 'x',
        'target': head,
        'before': head,
        'pids': [1],
        'started_at': 0,
        'changes': [['memory/../../outside.txt', None, [33188, blob]]],
        'message': 'restored x\n',
    }
    journal_module.record_path(repo_dir).write_text(json.dumps(record))
    before = files_of(tmp_path)
    result = cps.snapshot_with_result('next')
    assert result.recovered and "unsafe path 'memory/../../outside.txt'" in result.recovered
    assert not (tmp_path / 'outside.txt').exists()
    assert {k: v for k, v in files_of(tmp_path).items() if not k.startswith('repo.git/')} == {
        k: v for k, v in before.items() if not k.startswith('repo.git/')
    }
    assert not journal_module.pending(repo_dir)


# -- deskio.py: fd-relative desk I/O -----------------------------------------------------------


def _open_fds() -> int:
    return len(os.listdir('/proc/self/fd'))


needs_proc = pytest.mark.skipif(not os.path.isdir('/proc/self/fd'), reason='needs /proc/self/fd')


@pytest.fixture
def swapped(tmp_path: Path) -> tuple[Path, Path]:
    """A desk whose notes/ folder is a symlink to a folder outside it, holding files."""
    desk = tmp_path / 'desk'
    outside = tmp_path / 'outside'
    (outside / 'sub').mkdir(parents=True)
    (outside / 'a.md').write_bytes(b'outside')
    os.symlink('elsewhere', outside / 'link')
    desk.mkdir()
    os.symlink(outside, desk / 'notes')
    return desk, outside


def test_nothing_is_read_or_deleted_through_a_symlinked_folder(swapped) -> None:
    desk, outside = swapped
    before = files_of(outside)
    with DeskFolders(desk) as folders:
        assert folders.folder('notes') is None
        assert folders.lstat('notes/a.md') is None
        assert folders.open_file('notes/a.md') is None
        assert folders.read_link('notes/link') is None
        assert folders.read_bytes('notes/a.md') is None
        assert folders.listing('notes') is None
        assert folders.unlink('notes/a.md') is False
        assert folders.rmdir('notes/sub') is False
        with pytest.raises(NotAFolderError) as caught:
            folders.folder('notes/new', create=True)
        assert caught.value.folder == str(desk / 'notes')
        assert str(caught.value) == (
            f'{desk / "notes"} is not a real folder (a symlink or a file is in the way; '
            'nothing is ever written or read through one)'
        )
    assert files_of(outside) == before and (outside / 'sub').is_dir()
    assert not (outside / 'new').exists()


def test_desk_entries_are_read_and_removed_as_what_they_are(tmp_path: Path) -> None:
    desk = tmp_path / 'desk'
    put(desk, 'notes/a.md', '-', b'bytes of a')
    big = bytes(range(256)) * (3 * 4096 + 7)
    put(desk, 'notes/big.bin', '-', big)
    put(desk, 'notes/link', 'link', b'../../somewhere')
    (desk / 'notes' / 'empty').mkdir()
    (desk / 'notes' / 'full').mkdir()
    put(desk, 'notes/full/x.md', '-', b'x')
    with DeskFolders(desk) as folders:
        assert folders.read_bytes('notes/a.md') == b'bytes of a'
        assert folders.read_bytes('notes/big.bin') == big  # read in several chunks
        assert folders.read_bytes('notes/link') == b'../../somewhere'
        assert folders.read_bytes('notes/missing.md') is None
        assert folders.read_bytes('gone/missing.md') is None
        assert folders.open_file('notes/link') is None  # a symlink is never opened
        assert folders.read_link('notes/a.md') is None  # not a symlink
        assert folders.read_link('notes/missing') is None
        listing = dict(folders.listing('notes') or [])
        assert sorted(listing) == ['a.md', 'big.bin', 'empty', 'full', 'link']
        assert stat.S_ISLNK(listing['link'].st_mode)  # never followed
        assert folders.rmdir('notes/full') is False  # not empty
        assert folders.rmdir('gone/folder') is False
        assert folders.rmdir('notes/empty') is True
        assert folders.unlink('notes/missing.md') is False
        assert folders.unlink('gone/missing.md') is False
        assert folders.unlink('notes/a.md') is True
        assert folders.unlink('notes/link') is True
        with pytest.raises(CheckpointError) as caught:
            folders.unlink('notes/full')  # a folder is not unlinked
        assert str(caught.value).startswith(f'cannot delete {desk / "notes/full"}: ')
    assert sorted(os.listdir(desk / 'notes')) == ['big.bin', 'full']


def test_names_the_file_system_refuses_are_errors_naming_the_path(tmp_path: Path) -> None:
    desk = tmp_path / 'desk'
    (desk / 'notes').mkdir(parents=True)
    long = 'n' * 300
    with DeskFolders(desk) as folders:
        assert folders.full('') == str(desk)
        assert folders.full('notes/a.md') == str(desk / 'notes' / 'a.md')
        for read in (folders.open_file, folders.read_link, folders.lstat):
            with pytest.raises(CheckpointError) as caught:
                read(f'notes/{long}')
            assert str(caught.value) == f'cannot read {desk}/notes/{long}: File name too long'
        with pytest.raises(CheckpointError) as caught:
            folders.folder(f'notes/{long}/x')
        assert str(caught.value) == f'cannot list {desk}/notes/{long}: File name too long'


def test_a_desk_that_is_not_a_folder_is_refused_saying_so(tmp_path: Path) -> None:
    plain = tmp_path / 'plain-file'
    plain.write_text('not a desk')
    os.symlink(plain, tmp_path / 'link-to-file')
    for desk in (plain, tmp_path / 'link-to-file'):
        with pytest.raises(CheckpointError) as caught:
            DeskFolders(desk)
        assert str(caught.value) == f'the desk {desk} is not a folder'
    with pytest.raises(CheckpointError) as missing:
        DeskFolders(tmp_path / 'missing')
    assert str(missing.value) == f'the desk folder {tmp_path / "missing"} does not exist'
    too_long = tmp_path / ('d' * 300)
    with pytest.raises(CheckpointError) as refused:
        DeskFolders(too_long)
    assert str(refused.value) == f'cannot open the desk {too_long}: File name too long'


def test_a_folder_moved_away_and_replaced_by_a_symlink_is_not_in_place(tmp_path: Path) -> None:
    desk = tmp_path / 'desk'
    (desk / 'notes' / 'deep').mkdir(parents=True)
    with DeskFolders(desk) as folders:
        assert folders.folder('notes/deep') is not None
        assert folders.still_in_place('notes/deep') and folders.still_in_place('')
        os.rename(desk / 'notes', tmp_path / 'moved')
        os.symlink(tmp_path / 'moved', desk / 'notes')  # the same folder, reached by a symlink
        assert not folders.still_in_place('notes/deep')


def test_created_folders_get_the_ordinary_mode(tmp_path: Path) -> None:
    desk = tmp_path / 'desk'
    desk.mkdir()
    umask = os.umask(0o022)
    try:
        with DeskFolders(desk) as folders:
            assert folders.folder('notes/a/b', create=True) is not None
            assert folders.created == ['notes', 'notes/a', 'notes/a/b']
    finally:
        os.umask(umask)
    assert stat.S_IMODE((desk / 'notes' / 'a' / 'b').stat().st_mode) == 0o755


def test_a_folder_removed_while_held_open_is_an_error_naming_it(tmp_path: Path) -> None:
    desk = tmp_path / 'desk'
    (desk / 'notes').mkdir(parents=True)
    with DeskFolders(desk) as folders:
        assert folders.folder('notes') is not None
        os.rmdir(desk / 'notes')
        with pytest.raises(CheckpointError) as caught:
            folders.folder('notes/new', create=True)
        assert str(caught.value) == (
            f'cannot create {desk / "notes" / "new"}: No such file or directory'
        )
    assert not (desk / 'notes').exists()


def test_a_symlink_planted_as_a_folder_is_being_made_is_never_followed(tmp_path: Path) -> None:
    """Another writer puts a symlink where the restore is creating a folder (a real symlink,
    timed by an audit hook at the ``mkdir``): it is refused, nothing is written through it."""
    desk = mkdirs(tmp_path / 'desk')
    outside = mkdirs(tmp_path / 'outside')

    def planter(event: str, args: tuple) -> None:
        if event == 'os.mkdir' and args[0] == 'notes' and not os.path.lexists(desk / 'notes'):
            os.symlink(outside, desk / 'notes')

    with DeskFolders(desk) as folders, armed(planter):
        with pytest.raises(NotAFolderError) as caught:
            folders.folder('notes/new', create=True)
        assert caught.value.folder == str(desk / 'notes')
        assert folders.created == []
    assert os.listdir(outside) == []


def test_a_folder_made_but_not_opened_is_an_error_naming_it(tmp_path: Path) -> None:
    """The folder is made, then opening it fails (no descriptor left: RLIMIT_NOFILE lowered
    at the ``mkdir`` by an audit hook, and restored after): a clear error naming the folder."""
    desk = mkdirs(tmp_path / 'desk')
    limits = resource.getrlimit(resource.RLIMIT_NOFILE)

    def exhaust(event: str, args: tuple) -> None:
        if event == 'os.mkdir' and args[0] == 'notes':
            lowest = os.dup(0)
            os.close(lowest)
            resource.setrlimit(resource.RLIMIT_NOFILE, (lowest, limits[1]))

    with DeskFolders(desk) as folders:
        try:
            with armed(exhaust), pytest.raises(CheckpointError) as caught:
                folders.folder('notes', create=True)
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, limits)
        assert str(caught.value) == f'cannot list {desk / "notes"}: Too many open files'
        assert folders.created == ['notes']
    assert (desk / 'notes').is_dir()


@needs_proc
def test_descriptors_are_reused_closed_and_bounded(tmp_path: Path) -> None:
    desk = tmp_path / 'desk'
    (desk / 'a' / 'b' / 'c' / 'd').mkdir(parents=True)
    (desk / 'x' / 'y' / 'z').mkdir(parents=True)
    for i in range(300):
        (desk / 'many' / f'f{i:03}').mkdir(parents=True)
    baseline = _open_fds()
    with DeskFolders(desk) as folders:
        for path in ('a', 'a/b', 'a/b/c', 'a/b/c/d', 'a/b/c'):
            assert folders.folder(path) == folders.folder(path)
        assert _open_fds() == baseline + 5  # the desk and a, a/b, a/b/c, a/b/c/d: once each
        held = folders.folder('x/y/z')  # three levels in one call: each cached as itself
        assert held is not None and _open_fds() == baseline + 8
        for path in ('x', 'x/y', 'x/y/z', 'a/b'):
            assert os.fstat(folders.folder(path)).st_ino == (desk / path).stat().st_ino
        peak = 0
        for i in range(300):
            assert folders.folder(f'many/f{i:03}') is not None
            peak = max(peak, _open_fds())
        assert peak <= baseline + 130
    assert _open_fds() == baseline  # the desk's own descriptor is closed too


@needs_proc
def test_a_removed_folder_is_forgotten_with_everything_below_it(tmp_path: Path) -> None:
    desk = tmp_path / 'desk'
    (desk / 'a' / 'b' / 'c').mkdir(parents=True)
    baseline = _open_fds()
    with DeskFolders(desk) as folders:
        assert folders.folder('a/b/c') is not None
        os.rmdir(desk / 'a' / 'b' / 'c')  # removed by someone else
        os.rmdir(desk / 'a' / 'b')
        assert folders.rmdir('a') is True
        (desk / 'a' / 'b' / 'c').mkdir(parents=True)
        assert _open_fds() == baseline + 1  # only the desk's own descriptor is held
        held = folders.folder('a/b/c')
        assert held is not None
        found = (desk / 'a' / 'b' / 'c').stat()
        assert os.fstat(held).st_ino == found.st_ino  # the new folder, not the removed one


def test_same_file_tells_a_replaced_file_apart(tmp_path: Path) -> None:
    first, second = tmp_path / 'first', tmp_path / 'second'
    first.write_bytes(b'1')
    second.write_bytes(b'2')
    os.symlink('first', tmp_path / 'link')
    seen = os.lstat(first)
    key = (seen.st_size, seen.st_mtime_ns, seen.st_ctime_ns, seen.st_ino, seen.st_mode)
    assert same_file(os.lstat(first), key)
    assert not same_file(os.lstat(second), key)  # another regular file
    link = os.lstat(tmp_path / 'link')
    link_key = (link.st_size, link.st_mtime_ns, link.st_ctime_ns, seen.st_ino, link.st_mode)
    assert not same_file(seen, link_key)  # the same inode number seen as another type


def test_entries_vanishing_mid_listing_do_not_hide_the_others(tmp_path: Path) -> None:
    """A real second process deletes half of a folder's files while it is listed: every file
    it never touches is always listed (a vanished entry is skipped, the listing goes on)."""
    folder = tmp_path / 'desk' / 'notes'
    folder.mkdir(parents=True)
    deleter = (
        'import os, sys\n'
        'for name in sys.argv[2:]:\n'
        '    os.unlink(os.path.join(sys.argv[1], name))\n'
    )
    for _ in range(3):
        victims = [f'v{i:04}' for i in range(1500)]
        for i in range(1500):
            (folder / victims[i]).write_bytes(b'')
            (folder / f'k{i:04}').write_bytes(b'')
        keepers = {f'k{i:04}' for i in range(1500)}
        process = subprocess.Popen([sys.executable, '-c', deleter, str(folder), *victims])
        with DeskFolders(folder.parent) as folders:
            while process.poll() is None:
                listed = {name for name, _ in folders.listing('notes') or []}
                assert keepers <= listed, f'{len(keepers - listed)} files left out of a listing'
        assert process.wait() == 0


# -- safety.py: blob vetting, the size rule, the restore guard ---------------------------------


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


def _restore_round_trip(tmp_path: Path, make) -> tuple[Path, Checkpoints, str]:
    desk = tmp_path / 'desk'
    (desk / 'notes').mkdir(parents=True)
    make(desk)
    cps = Checkpoints(tmp_path / 'repo.git', desk)
    holding = cps.snapshot('holding')
    assert holding is not None
    for child in (desk / 'notes').iterdir():
        if child.is_symlink() or not child.is_dir():
            child.unlink()
        else:
            for inner in child.rglob('*'):
                if not inner.is_dir():
                    inner.unlink()
    cps.snapshot('emptied')
    return desk, cps, holding


def test_names_and_link_targets_at_the_file_system_limits_are_restored(tmp_path: Path) -> None:
    longest = 'n' * 255
    deep = f'notes/{"a" * 200}/{"b" * 200}.md'  # long in total, every name short enough
    target = 't' * 4095  # the longest symlink target Linux takes

    def make(desk: Path) -> None:
        put(desk, f'notes/{longest}', '-', b'longest name')
        put(desk, deep, '-', b'deep')
        os.symlink(target, desk / 'notes' / 'link')

    desk, cps, holding = _restore_round_trip(tmp_path, make)
    cps.restore(holding)
    assert (desk / 'notes' / longest).read_bytes() == b'longest name'
    assert (desk / deep).read_bytes() == b'deep'
    assert os.readlink(desk / 'notes' / 'link') == target


@pytest.mark.parametrize(
    ('entry', 'message'),
    [
        (
            (b'100644', b'n' * 256, b'x'),
            "the checkpoint holds 'notes/new/" + 'n' * 256 + "', whose name is longer than 255 "
            'bytes',
        ),
        (
            (b'120000', b'link', b't' * 4096),
            "the checkpoint holds a symlink 'notes/link' whose target is empty, too long "
            'or holds a NUL byte',
        ),
    ],
)
def test_entries_past_the_file_system_limits_are_refused_saying_why(
    tmp_path: Path, entry: tuple[bytes, bytes, bytes], message: str
) -> None:
    from helpers.rawobjects import TREE, blob, commit, in_notes, tree

    desk = tmp_path / 'desk'
    put(desk, 'notes/mine.md', '-', b'mine')
    repo_dir = tmp_path / 'repo.git'
    cps = Checkpoints(repo_dir, desk)
    cps.snapshot('mine')
    mode, name, data = entry
    if mode == b'100644':  # in a new folder: the plan check finds nothing there to look at
        entries = (TREE, b'new', tree(repo_dir, (mode, name, blob(repo_dir, data))))
    else:
        entries = (mode, name, blob(repo_dir, data))
    hostile = commit(repo_dir, in_notes(repo_dir, entries))
    before = files_of(desk)
    with pytest.raises(CorruptRepositoryError) as caught:
        cps.restore(hostile)
    assert str(caught.value) == message
    assert files_of(desk) == before


def _repository_with_blobs(repo_dir: Path, blobs: list[bytes]) -> ShadowRepo:
    repo = ShadowRepo.create(repo_dir, TRACKED_PATHS)
    for data in blobs:
        repo.write_objects([Blob.from_string(data)])
    return repo


def test_vetted_blobs_are_read_once_from_the_repository(tmp_path: Path) -> None:
    datas = [b'first', b'second', b'x' * 100_000]
    repo = _repository_with_blobs(tmp_path / 'repo.git', datas)
    try:
        shas = [Blob.from_string(data).id for data in datas]
        target = {
            'notes/a.md': (FILE_MODE, shas[0]),
            'notes/b.md': (FILE_MODE, shas[1]),
            'notes/same-as-a.md': (FILE_MODE, shas[0]),
            'notes/big.bin': (FILE_MODE, shas[2]),
        }
        reads: list[bytes] = []

        def read_blob(sha: bytes) -> bytes:
            reads.append(sha)
            return repo.read_blob(sha)

        reader = vet_blobs(sorted(target), target, read_blob, SYMLINK_MODE)
        for path in sorted(target):
            assert reader(target[path][1]) == datas[shas.index(target[path][1])]
        assert sorted(reads) == sorted(shas)  # each once: while vetting, none while writing
    finally:
        repo.close()


def test_blobs_kept_for_a_restore_stay_within_a_memory_budget(tmp_path: Path) -> None:
    """96 MiB of distinct blobs: what vetting keeps in memory for the writes stays bounded
    (64 MiB), and the rest is read again when written."""
    size, count = 2 * 1024 * 1024, 48

    def data(i: int) -> bytes:
        return i.to_bytes(4, 'big') * (size // 4)

    repo = _repository_with_blobs(tmp_path / 'repo.git', [])
    try:
        shas = []
        for i in range(count):
            made = Blob.from_string(data(i))
            repo.write_objects([made])
            shas.append(made.id)
            del made
        target = {f'notes/f{i:02}.bin': (FILE_MODE, shas[i]) for i in range(count)}
        tracemalloc.start()
        try:
            reader = vet_blobs(sorted(target), target, repo.read_blob, SYMLINK_MODE)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 80 * 1024 * 1024, f'{peak / 1024**2:.0f} MiB kept for 96 MiB of blobs'
        for i in (0, count - 1):
            assert reader(shas[i]) == data(i)
    finally:
        repo.close()


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


# -- recovery.py: completing an interrupted restore from its record ----------------------------


def _two_versions(tmp_path: Path, count: int = 10) -> tuple[Path, Path, Checkpoints, str, str]:
    desk = tmp_path / 'desk'
    repo_dir = tmp_path / 'repo.git'
    for i in range(count):
        put(desk, f'notes/f{i}.md', '-', b'old')
    cps = Checkpoints(repo_dir, desk)
    old = cps.snapshot('old')
    for i in range(count):
        put(desk, f'notes/f{i}.md', '-', b'new')
    new = cps.snapshot('new')
    assert old is not None and new is not None
    return desk, repo_dir, cps, old, new


def _kill_until_pending(repo_dir: Path, action) -> None:
    """Kills ``action`` in a child at its 1st, 2nd, ... mutation until a record is left."""
    for kill_at in range(1, 200):
        assert run_child(action, kill_at=kill_at).killed
        if journal_module.pending(repo_dir):
            return
    raise AssertionError('no kill left a restore record')


@pytest.mark.parametrize(('count', 'changed'), [(10, 'f9'), (200, 'f1')])  # 200: two batches
def test_a_write_landing_during_a_restore_in_process_is_saved_and_reported(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, count: int, changed: str
) -> None:
    desk, repo_dir, cps, old, new = _two_versions(tmp_path, count)
    rewritten = 1 if count == 10 else count - 1  # all after the changed one, in sorted order
    fired = []

    def writer(event: str, args: tuple) -> None:
        if not fired and lands_a_desk_file(event, args):
            fired.append(True)
            with open(desk / 'notes' / f'{changed}.md', 'wb') as handle:
                handle.write(b'written by another agent during the restore')

    with caplog.at_level(logging.WARNING, logger='trading_checkpoints'), armed(writer):
        result = cps.restore_with_result(old)
    assert fired
    recovery = cps.last_recovery  # before another verb resets it
    [restored, saved, *_] = cps.list()
    cause = f'a restore during which notes/{changed}.md was changed by another writer of {old[:7]}'
    assert saved.reason == f'desk as found after {cause}'
    expected = (
        f'completed {cause} ({rewritten} written, 0 deleted); undo with: checkpoints restore '
        f'{new[:7]}; '
        f'the desk as found was saved first as {saved.checkpoint_id[:7]}'
    )
    assert result.recovered == expected
    assert (result.before_id, result.target_id) == (new[:7], old[:7])
    assert result.restored_id == restored.checkpoint_id[:7] and restored.reason == f'restored {old}'
    assert (len(result.written), result.deleted, result.action) == (rewritten, (), 'restore')
    assert f'notes/{changed}.md' in result.written
    assert recovery is not None and str(recovery) == expected
    assert (recovery.label, recovery.target_id, recovery.before_id) == (old, old[:7], new[:7])
    assert recovery.saved_id == saved.checkpoint_id[:7]
    assert [r.getMessage() for r in caplog.records] == [expected]
    assert files_of(desk) == {f'notes/f{i}.md': ('-', b'old') for i in range(count)}
    assert not journal_module.pending(repo_dir)


def test_an_undo_whose_deleted_file_changes_meanwhile_is_completed_as_an_undo(
    tmp_path: Path,
) -> None:
    """Another writer edits a file the undo deletes, while the undo writes its record (in
    this process, timed by an audit hook): saved first, then deleted, and reported as such."""
    desk, repo_dir, cps, old, new = _two_versions(tmp_path)
    put(desk, 'notes/extra.md', '-', b'only in the newest')
    newest = cps.snapshot('newest')
    fired = []

    def writer(event: str, args: tuple) -> None:
        if event == 'open' and 'restore-journal' in str(args[0]) and not fired:
            fired.append(True)
            put(desk, 'notes/extra.md', '-', b'edited by another agent during the undo')

    with armed(writer):
        result = cps.undo()
    recovery = cps.last_recovery
    assert fired and recovery is not None
    assert (recovery.written, recovery.deleted) == ((), ('notes/extra.md',))
    assert (result.action, result.deleted) == ('undo', ('notes/extra.md',))
    [undone, saved, *_] = cps.list()
    assert saved.reason.startswith('desk as found after a restore during which notes/extra.md')
    assert undone.reason == f'undo: back to {new} (new)'
    assert version_of(repo_dir, saved.checkpoint_id)['notes/extra.md'] == (
        '-',
        b'edited by another agent during the undo',
    )
    assert not (desk / 'notes' / 'extra.md').exists() and newest is not None


def test_a_completion_racing_the_same_writer_again_keeps_its_record(tmp_path: Path) -> None:
    desk, repo_dir, cps, old, _ = _two_versions(tmp_path)
    edits = []

    def writer(event: str, args: tuple) -> None:
        if lands_a_desk_file(event, args):
            edits.append(True)
            put(desk, 'notes/f9.md', '-', b'edit %d' % len(edits))

    record = journal_module.record_path(repo_dir)
    with armed(writer), pytest.raises(CheckpointError) as caught:
        cps.restore(old)
    assert str(caught.value) == (
        f'a restore during which notes/f9.md was changed by another writer of {old} cannot be '
        f'completed: notes/f9.md keeps changing; its record is kept ({record}), run any '
        'command again'
    )
    assert journal_module.pending(repo_dir)
    assert cps.snapshot_with_result('next').recovered  # the writer is gone: completed
    assert files_of(desk) == {f'notes/f{i}.md': ('-', b'old') for i in range(10)}


def test_completing_an_undo_keeps_its_message_and_touches_only_its_paths(tmp_path: Path) -> None:
    desk, repo_dir, cps, old, new = _two_versions(tmp_path)
    _kill_until_pending(repo_dir, lambda: Checkpoints(repo_dir, desk).undo())
    put(desk, 'notes/added-after-the-crash.md', '-', b'not part of the undo')
    result = Checkpoints(repo_dir, desk).snapshot_with_result('next')
    assert result.recovered and result.recovered.startswith(
        f'completed an interrupted restore of {old[:7]} ('
    )
    assert [c.reason for c in cps.list()[:2]] == [f'undo: back to {old[:7]} (old)', 'new']
    assert files_of(desk) == {
        **{f'notes/f{i}.md': ('-', b'old') for i in range(10)},
        'notes/added-after-the-crash.md': ('-', b'not part of the undo'),
    }
    assert cps.redo() is not None  # the completed step is an undo, so it can be redone
    assert (desk / 'notes' / 'f0.md').read_bytes() == b'new'


def test_a_completion_that_cannot_finish_says_where_the_record_is(tmp_path: Path) -> None:
    desk, repo_dir, cps, old, _ = _two_versions(tmp_path)
    _kill_until_pending(repo_dir, lambda: Checkpoints(repo_dir, desk).restore(old))
    outside = tmp_path / 'outside'
    outside.mkdir()
    os.rename(desk / 'notes', tmp_path / 'moved-notes')
    os.symlink(outside, desk / 'notes')  # now in the way of every planned path
    record = journal_module.record_path(repo_dir)
    with pytest.raises(CheckpointError) as caught:
        Checkpoints(repo_dir, desk).snapshot('next')
    message = str(caught.value)
    assert message.startswith(f'an interrupted restore of {old} cannot be completed: ')
    assert message.endswith(f'(its record is {record}; fix the cause and run any command again)')
    assert os.listdir(outside) == [] and journal_module.pending(repo_dir)


def test_a_record_naming_a_missing_checkpoint_is_refused_saying_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    desk = tmp_path / 'desk'
    repo_dir = tmp_path / 'repo.git'
    put(desk, 'notes/a.md', '-', b'v1')
    cps = Checkpoints(repo_dir, desk)
    assert cps.snapshot('v1') is not None
    head = head_of(repo_dir)
    put(desk, 'notes/a.md', '-', b'half restored')
    missing = 'ab' * 20
    record = {
        'format': 2,
        'label': 'x',
        'target': missing,
        'before': head,
        'pids': [1],
        'started_at': 0,
        'changes': [['notes/a.md', None, [33188, missing]]],
        'message': 'restored x\n',
    }
    journal_module.record_path(repo_dir).write_text(json.dumps(record))
    with caplog.at_level(logging.WARNING, logger='trading_checkpoints'):
        result = cps.snapshot_with_result('next')
    recovery = cps.last_recovery
    [saved, *_] = cps.list()
    assert saved.reason == 'desk as found after an interrupted restore'
    expected = (
        f'the restore record names a target checkpoint {missing[:7]} that this repository '
        'does not hold; nothing was restored, the desk was left as found and recorded as '
        f'{saved.checkpoint_id[:7]}'
    )
    assert result.recovered == expected
    assert [r.getMessage() for r in caplog.records] == [expected]
    assert recovery is not None
    assert (recovery.before_id, recovery.saved_id) == (saved.checkpoint_id[:7],) * 2
    assert (recovery.label, recovery.target_id, recovery.restored_id) == ('', '', None)
    assert (recovery.written, recovery.deleted) == ((), ())
    assert (desk / 'notes' / 'a.md').read_bytes() == b'half restored'


def test_a_bad_record_in_a_repository_with_no_checkpoints_and_no_desk(tmp_path: Path) -> None:
    repo_dir = tmp_path / 'repo.git'
    desk = tmp_path / 'desk'  # never made
    ShadowRepo.create(repo_dir, TRACKED_PATHS).close()  # a repository with no checkpoint
    cps = Checkpoints(repo_dir, desk)
    journal_module.record_path(repo_dir).parent.mkdir(exist_ok=True)
    journal_module.record_path(repo_dir).write_text('{"format": 2')
    assert cps.list() == []
    recovery = cps.last_recovery
    assert recovery is not None and (recovery.before_id, recovery.saved_id) == ('', None)
    assert recovery.message.endswith(
        'nothing was restored, the desk was left as found and recorded as '
    )
    assert not journal_module.pending(repo_dir)


# -- checkout.py: the plan checks and the writes -----------------------------------------------


def test_a_folder_becoming_a_file_is_checked_for_untracked_entries(tmp_path: Path) -> None:
    desk = tmp_path / 'desk'
    put(desk, 'notes/x', '-', b'x as a file')
    cps = Checkpoints(tmp_path / 'repo.git', desk)
    as_file = cps.snapshot('x is a file')
    (desk / 'notes' / 'x').unlink()
    put(desk, 'notes/x/a.md', '-', b'tracked, deleted by the restore')
    (desk / 'notes' / 'x' / 'empty' / 'deeper').mkdir(parents=True)  # empty folders: removed
    cps.snapshot('x is a folder')
    assert as_file is not None
    cps.restore(as_file)
    assert files_of(desk) == {'notes/x': ('-', b'x as a file')}
    # Something untracked in the folder (a named pipe is never snapshotted): refused.
    (desk / 'notes' / 'x').unlink()
    put(desk, 'notes/x/a.md', '-', b'tracked')
    os.mkfifo(mkdirs(desk / 'notes' / 'x' / 'sub') / 'pipe')
    before = files_of(desk)
    with pytest.raises(CheckpointError) as caught:
        cps.restore(as_file)
    assert str(caught.value) == (
        f'cannot restore notes/x: the folder {desk / "notes/x"} holds notes/x/sub/pipe, which '
        'is not tracked and would be lost'
    )
    assert files_of(desk) == before and (desk / 'notes/x/sub/pipe').exists()


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


# -- retention.py: what prune keeps ------------------------------------------------------------


def test_numeric_limits_are_taken_as_given() -> None:
    assert retention.parse_duration(0) == 0.0 and retention.parse_duration(0.5) == 0.5
    assert retention.parse_duration(7) == 7.0
    assert retention.parse_size(0) == 0 and retention.parse_size(4096) == 4096
    for parse, what in ((retention.parse_duration, 'period'), (retention.parse_size, 'size')):
        with pytest.raises(CheckpointError) as caught:
            parse(True)  # a bool is no number of seconds or bytes
        assert f'is not a {what}' in str(caught.value)
    with pytest.raises(CheckpointError) as negative:
        retention.parse_duration(-1)
    assert str(negative.value) == 'a retention period cannot be negative: -1'
    with pytest.raises(CheckpointError) as negative:
        retention.parse_size(-1)
    assert str(negative.value) == 'a size cannot be negative: -1'


def _big_turns(tmp_path: Path, turns: int) -> tuple[Path, Path]:
    desk = tmp_path / 'desk'
    (desk / 'notes').mkdir(parents=True)
    repo_dir = tmp_path / 'repo.git'
    cps = Checkpoints(repo_dir, desk)
    for turn in range(turns):
        (desk / 'notes' / 'big.bin').write_bytes(os.urandom(20_000))  # no deltas
        cps.snapshot(f'big {turn}')
    return desk, repo_dir


@pytest.mark.parametrize('packed', [True, False])
def test_the_dry_run_estimate_is_the_size_a_prune_leaves(tmp_path: Path, packed: bool) -> None:
    desk, repo_dir = _big_turns(tmp_path, 8)
    if packed:
        Checkpoints(repo_dir, desk).prune()  # one pack; else every object is loose
    for keep in (1, 3, 6):
        copy = tmp_path / f'copy-{keep}.git'
        packfolder.wait_for_removals()  # a replaced pack vanishing mid-copy fails the copy
        shutil.copytree(repo_dir, copy)
        cps = Checkpoints(copy, desk)
        estimate = cps.prune(keep=keep, dry_run=True)
        assert estimate.dry_run and estimate.checkpoints_after == keep
        done = cps.prune(keep=keep)
        assert estimate.bytes_after == done.bytes_after == storage.objects_size(copy)


def test_a_size_budget_keeps_exactly_as_many_as_fit(tmp_path: Path) -> None:
    desk, repo_dir = _big_turns(tmp_path, 10)
    Checkpoints(repo_dir, desk).prune()
    sizes = {}
    for keep in range(1, 11):
        sizes[keep] = Checkpoints(repo_dir, desk).prune(keep=keep, dry_run=True).bytes_after
    for keep in (2, 4, 7, 10):
        for budget, kept in ((sizes[keep], keep), (sizes[keep] - 1, keep - 1)):
            estimate = Checkpoints(repo_dir, desk).prune(max_bytes=budget, dry_run=True)
            assert estimate.checkpoints_after == max(kept, 1), (keep, budget)


def test_stored_limits_are_read_and_bad_ones_named(tmp_path: Path) -> None:
    desk = tmp_path / 'desk'
    put(desk, 'notes/a.md', '-', b'a')
    repo_dir = tmp_path / 'repo.git'
    Checkpoints(repo_dir, desk).snapshot('a')
    config = (repo_dir / 'config').read_bytes()
    (repo_dir / 'config').write_bytes(
        config + b'[checkpoints]\n\tkeep = 5\n\tretention = 2w\n\tmaxsize = 500M\n'
    )
    assert retention.read_limits(repo_dir) == retention.Limits(5, '2w', '500M')
    (repo_dir / 'config').write_bytes(config + b'[checkpoints]\n\tkeep = \xff\xfe5\n')
    with pytest.raises(CheckpointError) as caught:
        retention.read_limits(repo_dir)
    line = config.count(b'\n') + 2
    assert str(caught.value) == (
        f'checkpoints.keep in {repo_dir / "config"} (line {line}) is not a whole number of '
        'at least 1'
    )


# -- journal.py: the restore intent record -----------------------------------------------------

SHA_A, SHA_B, BLOB_SHA = 'a' * 40, 'b' * 40, 'c' * 40


def _record(**changes: object) -> dict:
    record = {
        'format': 2,
        'label': 'abc1234',
        'target': SHA_A,
        'before': SHA_B,
        'pids': [11, 12],
        'started_at': 1700000000.5,
        'changes': [
            ['notes/a.md', [0o100644, BLOB_SHA], [0o100755, BLOB_SHA]],
            ['notes/gone.md', [0o120000, BLOB_SHA], None],
            ['Memory.md', None, [0o100644, BLOB_SHA]],
        ],
        'message': 'restored abc1234\n\nAction: restore\n',
    }
    record.update(changes)
    return record


def _read_record(tmp_path: Path, data: object) -> journal_module.Record | None:
    repo_dir = tmp_path / 'repo.git'
    path = journal_module.record_path(repo_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return journal_module.read(repo_dir, ALLOW)


def test_a_record_reads_back_exactly(tmp_path: Path) -> None:
    record = _read_record(tmp_path, _record())
    assert record == journal_module.Record(
        label='abc1234',
        target=SHA_A,
        before=SHA_B,
        pids=(11, 12),
        started_at=1700000000.5,
        changes=(
            journal_module.Change(
                'notes/a.md', (0o100644, BLOB_SHA.encode()), (0o100755, BLOB_SHA.encode())
            ),
            journal_module.Change('notes/gone.md', (0o120000, BLOB_SHA.encode()), None),
            journal_module.Change('Memory.md', None, (0o100644, BLOB_SHA.encode())),
        ),
        message='restored abc1234\n\nAction: restore\n',
    )
    old = _record(format=1)
    del old['message']
    assert _read_record(tmp_path, old).message == 'restored abc1234\n'  # type: ignore[union-attr]
    assert journal_module.read(tmp_path / 'no-repo.git', ALLOW) is None


def test_what_a_record_holds_is_cut_to_size(tmp_path: Path) -> None:
    record = _read_record(
        tmp_path,
        _record(label='  many\n words\t' + 'x' * 200, pids=list(range(100)), message='m' * 70000),
    )
    assert record is not None
    assert record.label == ('many words ' + 'x' * 200)[:100]
    assert record.pids == tuple(range(64))
    assert record.message == 'm' * 65536


def test_begin_writes_what_read_gives_back(tmp_path: Path) -> None:
    repo_dir = tmp_path / 'repo.git'
    journal_module.record_path(repo_dir).parent.mkdir(parents=True)
    blob = BLOB_SHA.encode()
    plan = Plan(write=['notes/a.md', 'notes/new.md'], delete=['notes/gone.md'])
    current = {'notes/a.md': (FILE_MODE, blob), 'notes/gone.md': (FILE_MODE, blob)}
    target = {'notes/a.md': (SYMLINK_MODE, blob), 'notes/new.md': (FILE_MODE, blob)}
    empty = journal_module.begin(repo_dir, 'l', b'a' * 40, b'b' * 40, Plan([], []), {}, {}, 'm')
    assert empty is None and not journal_module.pending(repo_dir)
    written = journal_module.begin(
        repo_dir, 'label', SHA_A.encode(), SHA_B.encode(), plan, current, target, 'msg\n', (7,)
    )
    assert written is not None and written.pids == (7, os.getpid())
    assert journal_module.read(repo_dir, ALLOW) == written
    assert [c.path for c in written.changes] == ['notes/a.md', 'notes/gone.md', 'notes/new.md']
    journal_module.finish(repo_dir)
    journal_module.finish(repo_dir)  # already gone: fine
    assert not journal_module.pending(repo_dir)


@pytest.mark.parametrize(
    ('record', 'why'),
    [
        ('{"format": 2, "label": ', 'Expecting value: line 1 column 24 (char 23)'),
        ('[1, 2]', 'unknown format'),
        ('{"format": "2"}', 'unknown format'),
        (_record(format=3), 'unknown format'),
        (_record(changes=[[7, None, None]]), 'a path is not a string'),
        (
            _record(changes=[['scratch.txt', None, None]]),
            "the checkpoint holds 'scratch.txt', which is outside the tracked paths "
            'Memory.md, memory, notes, skills/agent',
        ),
        (_record(changes=[['notes/a.md', None, [0o100664, BLOB_SHA]]]), 'bad mode 33204'),
        (_record(changes=[['notes/a.md', None, ['33188', BLOB_SHA]]]), "bad mode '33188'"),
        (
            _record(changes=[['notes/a.md', None, [0o100644, 'C' * 40]]]),
            f'bad object id {"C" * 40!r}',
        ),
        (_record(changes=[['notes/a.md', None, [True, BLOB_SHA]]]), 'bad mode True'),
        (_record(changes=[['notes/a.md', [0o100644, 7], None]]), 'bad object id 7'),
        (_record(label=7), 'a label or message is not a string'),
        (_record(message=None), 'a label or message is not a string'),
        (_record(target='A' * 40), 'bad checkpoint id'),
        (_record(before=SHA_B[:39]), 'bad checkpoint id'),
        (_record(pids=['x']), "invalid literal for int() with base 10: 'x'"),
        (_record(label='x', message=7), 'a label or message is not a string'),
    ],
)
def test_a_record_that_cannot_be_understood_is_refused_saying_why(
    tmp_path: Path, record: object, why: str
) -> None:
    with pytest.raises(CorruptRepositoryError) as caught:
        _read_record(tmp_path, record)
    message = str(caught.value)
    path = journal_module.record_path(tmp_path / 'repo.git')
    assert message == (
        f'the restore record {path} is unreadable or unsafe ({why}); the restore it describes '
        'cannot be completed'
    )


def test_a_record_that_cannot_be_read_is_refused_saying_why(tmp_path: Path) -> None:
    path = journal_module.record_path(tmp_path / 'repo.git')
    path.mkdir(parents=True)  # a folder where the record should be
    with pytest.raises(CorruptRepositoryError) as caught:
        journal_module.read(tmp_path / 'repo.git', ALLOW)
    assert str(caught.value) == (
        f"cannot read the restore record {path}: [Errno 21] Is a directory: '{path}'"
    )


def test_a_hostile_record_is_reported_in_one_short_line(tmp_path: Path) -> None:
    hostile = _record(changes=[['notes/' + 'x\n' * 400 + 'end', None, None]])
    with pytest.raises(CorruptRepositoryError) as caught:
        _read_record(tmp_path, hostile)
    reason = str(caught.value).partition(' (')[2].rpartition('); ')[0]
    assert '\n' not in reason and len(reason) == 160 and reason.endswith('...')
    for length, shown in ((62, 160), (63, 160)):  # reasons of 160 and 161 characters
        with pytest.raises(CorruptRepositoryError) as caught:
            _read_record(tmp_path, _record(changes=[['z' * length, None, None]]))
        reason = str(caught.value).partition(' (')[2].rpartition('); ')[0]
        assert len(reason) == shown and reason.endswith('...') == (length == 63)


def _info(number: int, created_at: str, message: str = 'turn\n') -> CommitInfo:
    return CommitInfo(f'{number:040x}', b'', (), created_at, message)


def test_count_and_age_limits_choose_the_newest() -> None:
    history = [_info(i, f'2024-01-0{9 - i}T00:00:00+00:00') for i in range(5)]  # newest first
    day = 86400.0
    now = datetime.fromisoformat('2024-01-09T00:00:00+00:00').timestamp()
    assert retention.choose_kept(history, 1, None, now) == 1
    assert retention.choose_kept(history, 0, None, now) == 1  # at least one is kept
    assert retention.choose_kept(history, 3, None, now) == 3
    assert retention.choose_kept(history, 9, None, now) == 5
    assert retention.choose_kept(history, None, 2 * day, now) == 3  # exactly 2 days old: kept
    assert retention.choose_kept(history, None, 2 * day - 1, now) == 2
    assert retention.choose_kept(history, None, 0.5, now) == 1
    assert retention.choose_kept(history, None, 0.5, now + 10 * day) == 1  # all old: the newest
    assert retention.choose_kept(history, 2, 3 * day, now) == 2
    assert retention.choose_kept([], 3, None, now) == 0
    assert retention.choose_kept([], None, None, now) == 0


@pytest.mark.parametrize('keep', [True, '3', 0, 1.5])
def test_a_keep_that_is_no_whole_number_is_refused(tmp_path: Path, keep: object) -> None:
    repo = ShadowRepo.create(tmp_path / 'repo.git', TRACKED_PATHS)
    try:
        with pytest.raises(CheckpointError) as caught:
            retention.prune(repo, keep=keep)  # type: ignore[arg-type]
        assert str(caught.value) == f'keep must be a whole number of at least 1, not {keep!r}'
    finally:
        repo.close()


def test_pruning_an_empty_repository_changes_nothing(tmp_path: Path) -> None:
    repo = ShadowRepo.create(tmp_path / 'repo.git', TRACKED_PATHS)
    try:
        for dry_run in (True, False):
            result = retention.prune(repo, keep=1, dry_run=dry_run)
            assert (result.checkpoints_before, result.checkpoints_after) == (0, 0)
            assert (result.pruned, result.oldest_kept, result.dry_run) == ((), None, dry_run)
    finally:
        repo.close()


def test_prune_results_and_what_a_prune_leaves_behind(tmp_path: Path) -> None:
    desk, repo_dir = _big_turns(tmp_path, 6)
    cps = Checkpoints(repo_dir, desk)
    ids = [c.checkpoint_id for c in cps.list()]  # newest first
    before = storage.objects_size(repo_dir)
    private = repo_dir / 'checkpoints'
    assert list(private.glob('statcache*'))
    estimate = cps.prune(keep=4, dry_run=True)
    assert (estimate.checkpoints_before, estimate.checkpoints_after) == (6, 4)
    assert (estimate.bytes_before, estimate.dry_run) == (before, True)
    assert estimate.bytes_after < before
    assert (estimate.pruned, estimate.oldest_kept) == (tuple(ids[4:]), ids[3])
    nothing = cps.prune(keep=6, dry_run=True)
    assert (nothing.bytes_after, nothing.pruned, nothing.oldest_kept) == (before, (), ids[5])
    assert storage.objects_size(repo_dir) == before  # a dry run changes nothing
    done = cps.prune(keep=4)
    assert (done.checkpoints_before, done.checkpoints_after, done.dry_run) == (6, 4, False)
    assert (done.bytes_before, done.pruned, done.oldest_kept) == (before, tuple(ids[4:]), ids[3])
    assert done.bytes_after == storage.objects_size(repo_dir) == estimate.bytes_after
    assert not list(private.glob('statcache*'))  # it may name trees that are gone
    full = [c.checkpoint_id for c in cps.list()]
    assert full == ids[:4]
    # The shallow file holds the one boundary, the reflog only what moved to a kept commit.
    head = head_of(repo_dir)
    reflog = (repo_dir / 'logs' / 'refs' / 'heads' / 'main').read_bytes().splitlines()
    assert len(reflog) == 4 and reflog[0].startswith(b'0' * 40 + b' ')
    assert reflog[-1].split(b' ')[1] == head.encode()
    boundary = (repo_dir / 'shallow').read_bytes()
    cps.prune(keep=2)
    assert (repo_dir / 'shallow').read_bytes() != boundary
    assert len((repo_dir / 'shallow').read_bytes().split()) == 1
    assert len((repo_dir / 'logs' / 'refs' / 'heads' / 'main').read_bytes().splitlines()) == 2


def test_malformed_reflog_lines_are_dropped_and_the_rest_kept(tmp_path: Path) -> None:
    desk, repo_dir = _big_turns(tmp_path, 4)
    reflog = repo_dir / 'logs' / 'refs' / 'heads' / 'main'
    lines = reflog.read_bytes().splitlines(keepends=True)
    head = lines[-1].split(b' ')[1]  # kept: a malformed line moving to it is dropped all the same
    reflog.write_bytes(
        b'short '
        + head
        + b' x <x@x> 1 +0000\tforged\n'
        + b'short '
        + b'1' * 40
        + b' x <x@x> 1 +0000\tbroken\n'
        + b'2' * 40
        + b' short x <x@x> 1 +0000\tbroken\n'
        + b'no spaces at all\n'
        + b''.join(lines)
    )
    Checkpoints(repo_dir, desk).prune(keep=3)
    kept = reflog.read_bytes().splitlines(keepends=True)
    assert kept == [b'0' * 40 + lines[1][40:], *lines[2:]]


def test_a_size_budget_never_keeps_two_that_do_not_fit(tmp_path: Path) -> None:
    desk, repo_dir = _big_turns(tmp_path, 3)
    result = Checkpoints(repo_dir, desk).prune(keep=2, max_bytes=1)
    assert result.checkpoints_after == 1


def test_prune_refuses_while_a_restore_record_exists_saying_why(tmp_path: Path) -> None:
    desk, repo_dir = _big_turns(tmp_path, 2)
    record = repo_dir / 'checkpoints' / 'restore-journal.part'
    record.write_text('{}')
    repo = ShadowRepo.open(repo_dir)
    assert repo is not None
    try:
        with pytest.raises(CheckpointError) as caught:
            retention.prune(repo, keep=1)
    finally:
        repo.close()
    assert str(caught.value) == (
        f'a restore is in progress or was interrupted ({record}); finish it (run the '
        'restore again) before pruning, so the checkpoints it needs stay'
    )


@pytest.mark.parametrize(('value', 'good'), [('1', True), ('12', True), ('0', False), ('x', False)])
def test_a_stored_keep_must_be_a_whole_number_of_at_least_one(
    tmp_path: Path, value: str, good: bool
) -> None:
    repo_dir = tmp_path / 'repo.git'
    ShadowRepo.create(repo_dir, TRACKED_PATHS).close()
    retention.write_limits(repo_dir, retention.Limits(None, None, '2G'))
    (repo_dir / 'config').write_bytes(
        (repo_dir / 'config')
        .read_bytes()
        .replace(b'[checkpoints]', f'[checkpoints]\n\tkeep = {value}'.encode())
    )
    if good:
        assert retention.read_limits(repo_dir) == retention.Limits(int(value), None, '2G')
    else:
        with pytest.raises(CheckpointError, match='is not a whole number of at least 1'):
            retention.read_limits(repo_dir)


def test_limits_written_are_read_back(tmp_path: Path) -> None:
    repo_dir = tmp_path / 'repo.git'
    ShadowRepo.create(repo_dir, TRACKED_PATHS).close()
    retention.write_limits(repo_dir, retention.Limits(None, '30d', '1G'))
    assert retention.read_limits(repo_dir) == retention.Limits(None, '30d', '1G')
    retention.write_limits(repo_dir, retention.Limits(7, None, None))
    assert retention.read_limits(repo_dir) == retention.Limits(7, '30d', '1G')


# -- credentials.py: secrets kept out of the repository ----------------------------------------


def test_user_info_is_percent_encoded_whole() -> None:
    url = 'https://host.example/team/repo.git'
    tricky = credentials.Credentials('us@r:/x', 'p@ss:/w?#')
    joined = credentials.join(url, tricky)
    assert joined == 'https://us%40r%3A%2Fx:p%40ss%3A%2Fw%3F%23@host.example/team/repo.git'
    assert credentials.split(joined) == (url, tricky)
    token = credentials.join(url, credentials.Credentials(None, 'tok/en'))
    assert token == 'https://:tok%2Fen@host.example/team/repo.git'
    user = credentials.join(url, credentials.Credentials('me', None))
    assert user == 'https://me@host.example/team/repo.git'
    assert repr(tricky) == 'Credentials(username=***, password=***)'
    assert repr(credentials.Credentials(None, 'x')) == 'Credentials(username=None, password=***)'


def test_the_credential_file_is_never_put_inside_the_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ('repo.git', 'repo.git '):  # a trailing space is part of the name
        repo_dir = mkdirs(tmp_path / name)
        for store in (repo_dir / 'credentials', repo_dir / 'deep' / 'er' / 'credentials'):
            monkeypatch.setenv(credentials.STORE_ENV, str(store))
            with pytest.raises(CheckpointError) as caught:
                credentials.save('https://h/x', credentials.Credentials('u', 'p'), repo_dir)
            assert str(caught.value) == (
                f'the credential file {store} would lie inside the repository {repo_dir}; '
                f'point ${credentials.STORE_ENV} elsewhere'
            )
            assert not store.exists()
    beside = tmp_path / 'repo.git-credentials' / 'credentials'  # a sibling, not inside
    monkeypatch.setenv(credentials.STORE_ENV, str(beside))
    credentials.save('https://h/x', credentials.Credentials('u', 'p'), tmp_path / 'repo.git')
    assert beside.read_text() == 'https://u:p@h/x\n'


def test_saving_replaces_the_url_s_line_and_keeps_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / 'new' / 'folders' / 'credentials'
    monkeypatch.setenv(credentials.STORE_ENV, str(store))
    assert credentials.save('https://a.example/x', credentials.Credentials('u1', 'p1')) == store
    assert stat.S_IMODE(store.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(store.stat().st_mode) == 0o600
    credentials.save('https://b.example/y', credentials.Credentials('u2', 'p2'))
    with open(store, 'a') as handle:
        handle.write('\n# a comment\nhttps://%ff@c.example/z\n')
    credentials.save('https://A.example/x/', credentials.Credentials('u3', 'p3'))
    assert store.read_text().splitlines() == [
        'https://u2:p2@b.example/y',
        '# a comment',
        'https://%ff@c.example/z',
        'https://u3:p3@A.example/x/',
    ]
    assert credentials.lookup('https://a.example/x') == credentials.Credentials('u3', 'p3')
    # Bytes of a path that are not UTF-8 are kept as they were.
    credentials.save('file:///srv/re\udcffpo', credentials.Credentials('u4', None))
    assert store.read_bytes().endswith(b'file://u4@/srv/re\xffpo\n')


def test_a_record_that_cannot_be_written_or_removed_is_an_error_naming_it(tmp_path: Path) -> None:
    repo_dir = tmp_path / 'repo.git'
    repo_dir.mkdir()
    (repo_dir / 'checkpoints').write_text('a file where the private folder should be')
    blob = BLOB_SHA.encode()
    plan = Plan(write=['notes/a.md'], delete=[])
    with pytest.raises(CheckpointError) as caught:
        journal_module.begin(
            repo_dir,
            'l',
            SHA_A.encode(),
            SHA_B.encode(),
            plan,
            {},
            {'notes/a.md': (FILE_MODE, blob)},
            'm',
        )
    assert str(caught.value).startswith('cannot write the restore record: ')
    (repo_dir / 'checkpoints').unlink()
    record = journal_module.record_path(repo_dir)
    (record / 'in-the-way').mkdir(parents=True)  # a folder, not empty, where the record is
    with pytest.raises(CheckpointError) as removing:
        journal_module.finish(repo_dir)
    assert str(removing.value) == f'cannot remove the restore record {record}: Is a directory'


# -- treevetting.py: vetting the trees read from a repository ---------------------------------


def _hostile_restore(tmp_path: Path, build) -> str:
    """The message of the restore of a commit whose root tree ``build(repo_dir)`` makes."""
    from helpers.rawobjects import commit

    desk = tmp_path / 'desk'
    put(desk, 'notes/mine.md', '-', b'mine')
    repo_dir = tmp_path / 'repo.git'
    cps = Checkpoints(repo_dir, desk)
    cps.snapshot('mine')
    hostile = commit(repo_dir, build(repo_dir))
    before = files_of(desk)
    with pytest.raises(CorruptRepositoryError) as caught:
        cps.restore(hostile)
    assert files_of(desk) == before
    return str(caught.value)


def _entries(*names: tuple[bytes, bytes]):
    from helpers.rawobjects import BLOB, TREE, blob, in_notes, tree

    def build(repo_dir: Path) -> str:
        ok = blob(repo_dir, b'payload')
        sub = tree(repo_dir, (BLOB, b'x.md', ok))
        return in_notes(
            repo_dir, *((mode, name, sub if mode == TREE else ok) for mode, name in names)
        )

    return build


@pytest.mark.parametrize(
    ('names', 'message'),
    [
        (
            ((b'100644', b'a.md'), (b'100644', b'a.md')),
            "the checkpoint has two entries named notes/b'a.md'",
        ),
        (
            ((b'100644', b'a/../../b'),),
            "the checkpoint holds a name with a slash: 'notes/a/../../b'",
        ),
        (
            ((b'40000', b'.git'),),
            "the checkpoint holds an unsafe path 'notes/.git': a .git component",
        ),
        (
            ((b'160000', b'sub'),),
            "the checkpoint holds 'notes/sub' with mode 160000, which we do not write",
        ),
    ],
)
def test_each_hostile_tree_entry_is_refused_saying_why(
    tmp_path: Path, names: tuple, message: str
) -> None:
    assert _hostile_restore(tmp_path, _entries(*names)) == message


def test_hostile_names_at_the_root_are_refused_for_what_they_are(tmp_path: Path) -> None:
    from helpers.rawobjects import BLOB, TREE, blob, tree

    def drive(repo_dir: Path) -> str:
        return tree(repo_dir, (BLOB, b'C:evil', blob(repo_dir, b'x')))

    def outside(repo_dir: Path) -> str:
        deep = tree(repo_dir, (BLOB, b'x.md', blob(repo_dir, b'x')))
        return tree(repo_dir, (TREE, b'memory_extra', tree(repo_dir, (TREE, b'deep', deep))))

    assert _hostile_restore(tmp_path / 'a', drive) == (
        "the checkpoint holds an unsafe path 'C:evil': an absolute path"
    )
    assert _hostile_restore(tmp_path / 'b', outside) == (
        "the checkpoint holds 'memory_extra', which is outside the tracked paths "
        'Memory.md, memory, notes, skills/agent'
    )


def test_a_tree_is_flattened_with_the_id_of_every_folder(tmp_path: Path) -> None:
    desk = tmp_path / 'desk'
    for path in ('notes/BOX/a.md', 'notes/BOX/deep/b.md', 'skills/agent/s.md', 'Memory.md'):
        put(desk, path, '-', path.encode())
    repo_dir = tmp_path / 'repo.git'
    Checkpoints(repo_dir, desk).snapshot('all')
    repo = ShadowRepo.open(repo_dir)
    assert repo is not None
    try:
        root = repo.commit_info(repo.head()).tree  # type: ignore[arg-type]
        files, folders = repo.flatten_tree(root, ALLOW)
        assert sorted(files) == [
            'Memory.md',
            'notes/BOX/a.md',
            'notes/BOX/deep/b.md',
            'skills/agent/s.md',
        ]
        assert sorted(folders) == [
            '',
            'notes',
            'notes/BOX',
            'notes/BOX/deep',
            'skills',
            'skills/agent',
        ]
        assert folders[''] == root
        assert folders['notes/BOX'] == repo.read_tree(folders['notes'])[b'BOX'][1]
    finally:
        repo.close()


def test_restored_files_get_their_modes_from_the_umask(tmp_path: Path) -> None:
    desk = tmp_path / 'desk'
    put(desk, 'notes/plain.md', '-', b'plain')
    put(desk, 'notes/tool.sh', 'x', b'#!/bin/sh\n')
    cps = Checkpoints(tmp_path / 'repo.git', desk)
    first = cps.snapshot('modes')
    assert first is not None
    umask = os.umask(0o022)
    try:
        for path in ('notes/plain.md', 'notes/tool.sh'):
            (desk / path).unlink()
        cps.restore(first)
        assert stat.S_IMODE((desk / 'notes/plain.md').stat().st_mode) == 0o644
        assert stat.S_IMODE((desk / 'notes/tool.sh').stat().st_mode) == 0o755
        os.umask(0)
        (desk / 'notes/plain.md').unlink()
        cps.restore(first)
        assert stat.S_IMODE((desk / 'notes/plain.md').stat().st_mode) == 0o666
    finally:
        os.umask(umask)


def test_a_folder_where_the_temporary_file_goes_is_an_error_naming_the_file(
    tmp_path: Path,
) -> None:
    desk = tmp_path / 'desk'
    put(desk, 'notes/a.md', '-', b'old')
    cps = Checkpoints(tmp_path / 'repo.git', desk, atomic_writes=True)
    old = cps.snapshot('old')
    put(desk, 'notes/a.md', '-', b'new')
    cps.snapshot('new')
    assert old is not None
    planted = desk / 'notes' / f'.a.md.checkpoint-{os.getpid()}.tmp'
    (planted / 'inside').mkdir(parents=True)
    with pytest.raises(CheckpointError) as caught:
        cps.restore(old)
    assert str(caught.value) == f'cannot write {desk / "notes/a.md"}: Is a directory'
    assert (desk / 'notes/a.md').read_bytes() == b'new' and (planted / 'inside').is_dir()


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


@pytest.mark.skipif(not os.path.isdir('/proc/self/fd'), reason='needs /proc')
def test_a_restore_leaves_no_descriptor_open(tmp_path: Path) -> None:
    """A restore of many files in few folders holds one descriptor per folder and closes all
    of them: a descriptor per file would leak hundreds per restore."""
    desk = tmp_path / 'desk'
    for i in range(150):
        put(desk, f'notes/n{i:03d}.md', '-', b'one %d' % i)
    cps = Checkpoints(tmp_path / 'repo.git', desk)
    first = cps.snapshot('one')
    for i in range(150):
        put(desk, f'notes/n{i:03d}.md', '-', b'two %d' % i)
    cps.snapshot('two')
    assert first is not None
    cps.restore(first)  # warm up: memos, the background remover's thread
    before = len(os.listdir('/proc/self/fd'))
    cps.undo()  # 150 files written back into one folder
    assert (desk / 'notes/n149.md').read_bytes() == b'two 149'
    assert len(os.listdir('/proc/self/fd')) <= before


@pytest.mark.parametrize('where', ['notes', 'notes/a'])
def test_an_untracked_entry_above_a_planned_path_is_refused_before_any_write(
    tmp_path: Path, where: str
) -> None:
    """Every folder above a planned path is checked, from the tracked root (``notes``) down,
    also below a real folder met first: a named pipe there stops the restore before anything is
    written, ``Memory.md`` included."""
    desk = tmp_path / 'desk'
    put(desk, 'Memory.md', '-', b'target')
    put(desk, 'notes/a/b/c.md', '-', b'target')
    cps = Checkpoints(tmp_path / 'repo.git', desk)
    target = cps.snapshot('target')
    assert target is not None
    shutil.rmtree(desk / where)
    put(desk, 'Memory.md', '-', b'other')
    cps.snapshot('other')
    os.mkfifo(desk / where)
    before = files_of(desk)
    with pytest.raises(CheckpointError) as caught:
        cps.restore(target)
    assert str(caught.value) == (
        f'cannot restore notes/a/b/c.md: {desk / where} is in the way and is not tracked (it '
        'is a file or a symlink, and restoring never writes through one)'
    )
    assert files_of(desk) == before


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


@pytest.mark.parametrize('fifo', ['notes/z.md', 'notes/sub/c.md'])
def test_untracked_entries_in_the_way_are_refused_before_any_write(
    tmp_path: Path, fifo: str
) -> None:
    """A named pipe (never snapshotted) where the target has a file, or above one: refused,
    even after a planned path in a folder the restore creates."""
    desk = tmp_path / 'desk'
    for path in ('notes/a-new/x.md', 'notes/sub/c.md', 'notes/z.md'):
        put(desk, path, '-', b'target')
    cps = Checkpoints(tmp_path / 'repo.git', desk)
    target = cps.snapshot('target')
    assert target is not None
    shutil.rmtree(desk / 'notes')
    put(desk, 'notes/other.md', '-', b'other')
    cps.snapshot('other')
    pipe = desk / fifo.rpartition('/')[0] if fifo.count('/') == 2 else desk / fifo
    os.mkfifo(pipe)
    before = files_of(desk)
    with pytest.raises(CheckpointError) as caught:
        cps.restore(target)
    if pipe.name == 'sub':
        assert str(caught.value) == (
            f'cannot restore notes/sub/c.md: {pipe} is in the way and is not tracked (it is a '
            'file or a symlink, and restoring never writes through one)'
        )
    else:
        assert str(caught.value) == (
            f'cannot restore notes/z.md: {pipe} exists but is not tracked (not a regular file '
            'or symlink, or left out of snapshots), and would be lost'
        )
    assert files_of(desk) == before and stat.S_ISFIFO(os.lstat(pipe).st_mode)


def test_a_tracked_symlink_replaced_by_a_file_needs_no_recovery(tmp_path: Path) -> None:
    desk = tmp_path / 'desk'
    put(desk, 'notes/entry', '-', b'a file')
    put(desk, 'notes/target.md', '-', b'what the link points at')
    cps = Checkpoints(tmp_path / 'repo.git', desk)
    as_file = cps.snapshot('a file')
    (desk / 'notes' / 'entry').unlink()
    os.symlink('target.md', desk / 'notes' / 'entry')
    cps.snapshot('a link')
    assert as_file is not None
    result = cps.restore_with_result(as_file)
    assert result.recovered is None and result.written == ('notes/entry',)
    assert (desk / 'notes' / 'entry').read_bytes() == b'a file'


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


def test_the_credential_file_is_found_where_documented(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(credentials.STORE_ENV, raising=False)
    monkeypatch.setenv('XDG_CONFIG_HOME', str(tmp_path / 'xdg'))
    assert credentials.store_path() == tmp_path / 'xdg' / 'trading-checkpoints' / 'credentials'
    monkeypatch.delenv('XDG_CONFIG_HOME')
    monkeypatch.setenv('HOME', str(tmp_path / 'home'))
    assert credentials.store_path() == (
        tmp_path / 'home' / '.config' / 'trading-checkpoints' / 'credentials'
    )
    monkeypatch.setenv(credentials.STORE_ENV, str(tmp_path / 'explicit'))
    assert credentials.store_path() == tmp_path / 'explicit'


def test_a_planted_temporary_credential_file_is_never_written_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / 'store' / 'credentials'
    monkeypatch.setenv(credentials.STORE_ENV, str(store))
    store.parent.mkdir(mode=0o700)
    temporary = store.parent / f'.credentials.{os.getpid()}.tmp'
    elsewhere = tmp_path / 'elsewhere.txt'
    elsewhere.write_text('not for secrets')
    os.symlink(elsewhere, temporary)
    with pytest.raises(CheckpointError) as caught:
        credentials.save('https://h/x', credentials.Credentials('user', 'secret'))
    assert str(caught.value) == (
        f'cannot write the credential file {store}: Too many levels of symbolic links; give the '
        'credentials through $CHECKPOINTS_REMOTE_USERNAME and $CHECKPOINTS_REMOTE_PASSWORD '
        'instead'
    )
    assert elsewhere.read_text() == 'not for secrets' and not store.exists()
    temporary.unlink()
    temporary.write_text('a much longer leftover of a killed save\n' * 3)
    credentials.save('https://h/x', credentials.Credentials('user', 'secret'))
    assert store.read_text() == 'https://user:secret@h/x\n'


def test_a_file_becoming_a_folder_does_not_end_the_plan_check(tmp_path: Path) -> None:
    desk = tmp_path / 'desk'
    put(desk, 'notes/a/inner.md', '-', b'a is a folder in the target')
    put(desk, 'notes/z.md', '-', b'z')
    cps = Checkpoints(tmp_path / 'repo.git', desk)
    target = cps.snapshot('target')
    assert target is not None
    shutil.rmtree(desk / 'notes')
    put(desk, 'notes/a', '-', b'a is a file now (tracked, replaced by the restore)')
    cps.snapshot('a is a file')
    os.mkfifo(desk / 'notes' / 'z.md')  # untracked, where the target has a file
    with pytest.raises(CheckpointError, match='notes/z.md exists but is not tracked'):
        cps.restore(target)
    assert (desk / 'notes' / 'a').is_file() and stat.S_ISFIFO(os.lstat(desk / 'notes/z.md').st_mode)


def test_user_info_is_split_at_the_last_at_sign_and_decoded_strictly() -> None:
    split = credentials.split
    assert split('https://us@er:p@ss@host/x') == (
        'https://host/x',
        credentials.Credentials('us@er', 'p@ss'),
    )
    assert split('https://:tok@host/x') == ('https://host/x', credentials.Credentials(None, 'tok'))
    for bad in ('https://%ff:x@host/', 'https://user:%ff@host/'):
        with pytest.raises(CheckpointError) as caught:
            split(bad)
        assert str(caught.value) == (
            'the user name or password in the remote URL is not valid percent-encoded UTF-8'
        )


def test_stored_credentials_match_scheme_host_port_and_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / 'credentials'
    monkeypatch.setenv(credentials.STORE_ENV, str(store))
    credentials.save('https://host.example/repo', credentials.Credentials('u', 'p'))
    found = credentials.Credentials('u', 'p')
    assert credentials.lookup('HTTPS://HOST.example/repo/') == found
    for other in (
        'https://host.example:8443/repo',
        'https://other.example/repo',
        'https://host.example/repoX',
        'http://host.example/repo',
    ):
        assert credentials.lookup(other) == credentials.NONE, other


def test_a_credential_file_that_is_no_small_private_file_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / 'credentials'
    monkeypatch.setenv(credentials.STORE_ENV, str(store))

    def refused() -> str:
        with pytest.raises(CheckpointError) as caught:
            credentials.lookup('https://h/x')
        return str(caught.value)

    store.mkdir()
    assert refused() == f'the credential file {store} is not a small regular file'
    store.rmdir()
    os.mkfifo(store)  # opened without blocking, then refused
    assert refused() == f'the credential file {store} is not a small regular file'
    store.unlink()
    line = b'https://u:p@h/x'  # no newline: the file's very last byte is part of the entry
    store.write_bytes(b'#' * (credentials.MAX_BYTES - len(line) - 1) + b'\n' + line)
    store.chmod(0o644)
    assert refused() == f'the credential file {store} can be read by other users; chmod 600 it'
    store.chmod(0o600)
    assert store.stat().st_size == credentials.MAX_BYTES  # exactly the limit: read whole
    assert credentials.lookup('https://h/x') == credentials.Credentials('u', 'p')
    with open(store, 'ab') as handle:
        handle.write(b'\xff\n')  # one byte more, and not UTF-8
    assert refused() == f'the credential file {store} is not a small regular file'
    store.write_bytes(b'\xff\xfe not UTF-8\n' + line + b'\n')
    assert credentials.lookup('https://h/x') == credentials.Credentials('u', 'p')
    monkeypatch.setenv(credentials.STORE_ENV, str(store / 'below-a-file'))
    assert refused() == (
        f'cannot read the credential file {store / "below-a-file"}: Not a directory'
    )
