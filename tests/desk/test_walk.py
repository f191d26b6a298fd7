"""The scan's walk (``desk/walk.py``), which lists each folder in bulk: every file in the stat
cache's order with its own stat, the names git cannot store and what is not a file left out, a
scan through it finding every change (a racy same-size rewrite included), and a folder swapped
for another or for a symlink never walked into."""

from __future__ import annotations

import ctypes
import os
import resource
import subprocess
import sys
from array import array
from pathlib import Path

import pytest
from helpers import SCRIPTS
from helpers.builders import write
from helpers.processes import start_deleting

from trading_checkpoints.core.paths import TRACKED_PATHS, Allowlist
from trading_checkpoints.desk import statcache, walk
from trading_checkpoints.desk.folders import DeskFolders
from trading_checkpoints.desk.scan import Scan, scan
from trading_checkpoints.errors import FileAccessError

ALLOWLIST = Allowlist(TRACKED_PATHS)


def walked(desk: Path) -> tuple[list[str], list[int], list[tuple[str, str]]]:
    skipped: list[tuple[str, str]] = []
    with DeskFolders(desk) as folders:
        names, numbers = walk.walk(folders, ALLOWLIST, skipped)
    return names, numbers, skipped


def listing_order(desk: Path) -> list[str]:
    """The files of ``memory/`` as an independent reference walks them: a folder's files in
    listing order, then its subfolders in listing order, depth first."""
    out: list[str] = []

    def visit(relative: str) -> None:
        subfolders = []
        with os.scandir(desk / relative) as listing:
            for child in listing:
                if child.name == '.git' or '\\' in child.name:
                    continue
                if child.is_dir(follow_symlinks=False):
                    subfolders.append(f'{relative}/{child.name}')
                elif child.is_file(follow_symlinks=False) or child.is_symlink():
                    out.append(f'{relative}/{child.name}')
        for folder in subfolders:
            visit(folder)

    visit('memory')
    return out


def many_folders(desk: Path, folders: int, files: int) -> None:
    """``folders`` folders (nested two deep in places) of ``files`` files each under memory/."""
    for f in range(folders):
        folder = f'memory/g{f % 7}/f{f:03d}' if f % 3 else f'memory/f{f:03d}'
        for i in range(files):
            write(desk, f'{folder}/n{i:02d}.md', f'{f} {i}\n')


def test_the_walk_lists_every_file_in_listing_order_with_its_stat(
    desk: Path, tmp_path: Path
) -> None:
    many_folders(desk, 60, 5)
    write(desk, 'Memory.md', 'top')
    write(desk, 'memory/f000/.git/config', 'a nested repository')
    write(desk, 'memory/f003/back\\slash.md', 'a name git cannot store')
    write(desk, 'memory/f003/.hidden.md', 'a dot file')
    outside = tmp_path / 'outside'
    write(outside, 'secret.md', 'never walked')
    os.symlink(outside, desk / 'memory' / 'f006' / 'link-to-folder')
    os.symlink('n00.md', desk / 'memory' / 'f006' / 'link-to-file')
    os.mkfifo(desk / 'memory' / 'f009' / 'fifo')

    names, numbers, skipped = walked(desk)
    assert names[0] == 'Memory.md' and names[1:] == listing_order(desk)
    assert len(numbers) == len(names) * statcache.FIELDS
    assert 'memory/f006/link-to-folder' in names and 'memory/f006/link-to-file' in names
    assert 'memory/f003/.hidden.md' in names
    assert not [name for name in names if 'secret' in name or '/.git/' in name]
    assert ('memory/f009/fifo', walk.NOT_A_FILE) in skipped
    assert [path for path, _ in skipped if 'slash' in path] == ['memory/f003/back\\slash.md']
    for i, name in enumerate(names):
        st = os.lstat(desk / name)
        assert numbers[i * 5 : i * 5 + 5] == list(statcache.stat_key(st))


def test_files_vanishing_during_a_listing_are_left_out_the_rest_kept(desk: Path) -> None:
    """A real second process deletes half of a folder's files while it is listed: every file
    it never touches is always listed, with its own stat."""
    folder = desk / 'memory' / 'a'
    for _ in range(3):
        victims = [f'v{i:04}' for i in range(1500)]
        for i in range(1500):
            write(folder, victims[i], '')
            write(folder, f'k{i:04}', 'kept')
        keepers = {f'memory/a/k{i:04}' for i in range(1500)}
        process = start_deleting(folder, victims)
        with DeskFolders(desk) as folders:
            fd = folders.folder('memory/a')
            assert fd is not None
            held = os.fstat(fd)
            while process.poll() is None:
                listing = walk.list_folder(fd, 'memory/a', (held.st_dev, held.st_ino))
                listed = dict(zip(listing.names, listing.numbers[::5], strict=True))
                assert keepers <= set(listed), f'{len(keepers - set(listed))} files left out'
                assert {listed[name] for name in keepers} == {4}
        assert process.wait() == 0


def cache_of(result: Scan, written_at_ns: int) -> statcache.StatCache:
    cache = statcache.StatCache(written_at_ns=written_at_ns)
    cache.set_columns(list(result.names), array('q', result.numbers), result.shas)
    cache.racy = statcache.racy_indices(cache.numbers, written_at_ns)
    return cache


def scanned(desk: Path, cache: statcache.StatCache) -> Scan:
    with DeskFolders(desk) as folders:
        return scan(folders, ALLOWLIST, cache)


def test_a_scan_through_the_walk_finds_every_change(desk: Path) -> None:
    many_folders(desk, 60, 10)
    first = scanned(desk, statcache.StatCache())

    # A same-size rewrite in the same timestamp tick as the cache was written: the cache holds
    # the file's exact stat with the old blob id, and only its racy mark says to read it again.
    rewritten = 'memory/f000/n00.md'
    position = first.names.index(rewritten)
    stale = bytearray(first.shas)
    stale[position * 20 : position * 20 + 20] = bytes(20)
    first.shas = bytes(stale)
    mtime = first.numbers[position * statcache.FIELDS + 1]
    # Changed, added and removed files, and a folder replaced by a file.
    write(desk, 'memory/f003/n00.md', 'grown to another size\n')
    write(desk, 'memory/f006/new.md', 'added\n')
    os.unlink(desk / 'memory' / 'f009' / 'n01.md')
    for path in (desk / 'memory' / 'f012').iterdir():
        path.unlink()
    (desk / 'memory' / 'f012').rmdir()
    write(desk, 'memory/f012', 'a file where a folder was')

    found = scanned(desk, cache_of(first, mtime))
    assert found.files == scanned(desk, statcache.StatCache()).files  # everything read again
    assert found.changed == {rewritten, 'memory/f003/n00.md', 'memory/f006/new.md', 'memory/f012'}
    assert found.removed == {'memory/f009/n01.md'} | {f'memory/f012/n{i:02d}.md' for i in range(10)}
    assert found.files[rewritten][1] != b'0' * 40

    # Once the cache is older than the racy window, the same stale entry is trusted: the racy
    # mark, not the walk, is what caught it above.
    settled = cache_of(first, mtime + 10 * statcache.COARSE_RACY_WINDOW_NS)
    assert rewritten not in scanned(desk, settled).changed


@pytest.mark.skipif(
    not sys.platform.startswith('linux') or not hasattr(ctypes.CDLL(None), 'renameat2'),
    reason='renameat2(RENAME_EXCHANGE) is needed to race a symlink swap',
)
def test_a_walk_racing_a_folder_swap_never_lists_outside(desk: Path, tmp_path: Path) -> None:
    many_folders(desk, 30, 3)
    swapped = desk / 'memory' / 'f000'
    secret = tmp_path / 'secret'
    for i in range(20):
        write(swapped, f'inside{i}.md', 'inside')
        write(secret, f'SECRET{i}.md', 'outside')
        spare = desk / 'memory' / '.swap'
    os.symlink(secret, spare)
    racer = subprocess.Popen(
        [sys.executable, str(SCRIPTS / 'swap_racer.py'), str(swapped), str(spare), '3'],
        stdout=subprocess.PIPE,
        text=True,
    )
    walks = 0
    try:
        while racer.poll() is None:
            names, _, _ = walked(desk)
            assert not [name for name in names if 'SECRET' in name]
            walks += 1
    finally:
        racer.communicate(timeout=60)
    assert racer.returncode == 0 and walks >= 2


def test_a_folder_that_is_not_the_one_its_parent_listed_is_not_listed(desk: Path) -> None:
    write(desk, 'memory/a/inside.md', 'inside')
    listed = os.lstat(desk / 'memory' / 'a')
    os.rename(desk / 'memory' / 'a', desk / 'memory' / 'b')
    write(desk, 'memory/a/moved-in.md', 'another folder moved into its place')
    with DeskFolders(desk) as folders:
        fd = folders.folder('memory/a')
        assert fd is not None
        listing = walk.list_folder(fd, 'memory/a', (listed.st_dev, listed.st_ino))
    assert listing.replaced and listing.names == []


@pytest.mark.parametrize('odd', ['a\nb.md', 'a\rb.md', 'a\\b.md'])
def test_a_name_git_cannot_store_is_left_out_however_plain_its_neighbours(
    desk: Path, odd: str
) -> None:
    """One name with one character git cannot store (a newline, a carriage return, a
    backslash) among plain ones: the one test of all the folder's names at once still sends it
    to the name check, which leaves it out and says why."""
    write(desk, 'notes/plain.md', 'plain\n')
    (desk / 'notes' / odd).write_text('odd\n')
    names, _, skipped = walked(desk)
    assert names == ['notes/plain.md']
    assert [path for path, _ in skipped] == [f'notes/{odd}']


def test_a_nested_repository_alone_in_its_folder_is_left_out(desk: Path) -> None:
    """A folder holding only a nested repository's ``.git`` (so the folder's listing starts
    with a dot and has no other name): nothing of it is walked, and it is left out silently."""
    write(desk, 'notes/a.md', 'a\n')
    write(desk, 'notes/sub/.git/config', '[core]\n')
    names, _, skipped = walked(desk)
    assert names == ['notes/a.md']
    assert skipped == []


def test_each_name_is_looked_at_in_its_own_folder_whatever_the_working_folder_holds(
    desk: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The walk looks at every name through its folder's descriptor: a working folder holding
    a folder of the same name as a desk file (or a file named like a desk folder) changes
    nothing."""
    write(desk, 'notes/a.md', 'a file\n')
    elsewhere = tmp_path / 'elsewhere'
    (elsewhere / 'a.md').mkdir(parents=True)
    (elsewhere / 'notes').write_text('not the folder\n')
    expected = walked(desk)
    monkeypatch.chdir(elsewhere)
    names, numbers, skipped = walked(desk)
    assert (names, numbers, skipped) == expected
    assert names == ['notes/a.md']


@pytest.mark.skipif(sys.platform == 'darwin', reason='macOS refuses names that are not UTF-8')
def test_a_name_that_is_not_utf8_alone_in_its_folder_is_left_out(desk: Path) -> None:
    """A folder whose only name is not UTF-8 (no other name to make its listing look odd):
    it is still checked, left out and reported."""
    folder = desk / 'notes' / 'odd'
    folder.mkdir(parents=True)
    odd = os.fsdecode(b'\xff.md')
    with open(os.path.join(os.fsencode(folder), b'\xff.md'), 'wb') as handle:
        handle.write(b'bytes\n')
    write(desk, 'notes/a.md', 'a\n')
    names, _, skipped = walked(desk)
    assert names == ['notes/a.md']
    assert skipped == [(f'notes/odd/{odd}', walk.BAD_NAME)]


def test_a_listing_refused_for_lack_of_descriptors_names_the_folder(tmp_path: Path) -> None:
    """Listing a folder opens a descriptor of its own: when none is left (the limit set so
    that entering ``memory/`` takes the last one), the walk's error is the typed refusal
    naming the folder, as entering one is, not the system's bare error."""
    write(tmp_path, 'memory/deep/a.md', 'a\n')
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    with DeskFolders(tmp_path) as folders:
        lowest = os.dup(0)
        os.close(lowest)
        resource.setrlimit(resource.RLIMIT_NOFILE, (lowest + 1, hard))
        try:
            with pytest.raises(FileAccessError) as refused:
                walk.walk(folders, ALLOWLIST, [])
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    full = str(tmp_path / 'memory')
    assert (refused.value.path, refused.value.action) == (full, 'list')
    assert str(refused.value) == f'cannot list {full}: Too many open files'
