"""The stat cache: racy entries, corrupt caches, mode-only changes, persistence across objects.

Everything runs on real files and real repositories. Where a test needs a cache in a precise
state (an entry whose stat matches the file exactly but whose blob id is stale, as after a
rewrite within one timestamp tick), it builds a real ``StatCache`` from the file's real stat.
"""

from __future__ import annotations

import os
import random
import stat
import time
from array import array
from pathlib import Path

import pytest
from dulwich.objects import Blob
from helpers.builders import write

from trading_checkpoints import Checkpoints
from trading_checkpoints.core.paths import TRACKED_PATHS, Allowlist
from trading_checkpoints.core.trees import EXECUTABLE_MODE, FILE_MODE
from trading_checkpoints.desk import statcache
from trading_checkpoints.desk.folders import DeskFolders
from trading_checkpoints.desk.scan import scan as scan_desk
from trading_checkpoints.store.repo import PRIVATE_DIR, ShadowRepo

ALLOWLIST = Allowlist(TRACKED_PATHS)
SECOND = 1_000_000_000


def blob_id(data: bytes) -> bytes:
    return Blob.from_string(data).id


def scan_at(desk: Path, cache: statcache.StatCache):
    with DeskFolders(desk) as folders:
        return scan_desk(folders, ALLOWLIST, cache)


def cache_for(path: str, full: Path, stale: bytes, written_at_ns: int) -> statcache.StatCache:
    """A cache holding ``path`` with its exact current stat but the blob id of ``stale``."""
    st = os.lstat(full)
    return statcache.StatCache(
        names=[path],
        numbers=array('q', statcache.stat_key(st)),
        shas=bytes.fromhex(blob_id(stale).decode()),
        written_at_ns=written_at_ns,
        racy=statcache.racy_indices(array('q', statcache.stat_key(st)), written_at_ns),
    )


def head_files(repo_dir: Path) -> dict[str, tuple[int, bytes]]:
    repo = ShadowRepo.open(repo_dir)
    assert repo is not None
    try:
        head = repo.head()
        assert head is not None
        files, _ = repo.flatten_tree(repo.commit_info(head).tree, ALLOWLIST)
        return {path: (mode, repo.read_blob(sha)) for path, (mode, sha) in files.items()}
    finally:
        repo.close()


def desk_files(desk: Path) -> dict[str, tuple[int, bytes]]:
    out = {}
    for entry in TRACKED_PATHS:
        top = desk / entry
        candidates = [top] if top.is_file() else sorted(top.rglob('*')) if top.is_dir() else []
        for full in candidates:
            if full.is_file() and not full.is_symlink():
                mode = EXECUTABLE_MODE if os.stat(full).st_mode & stat.S_IXUSR else FILE_MODE
                out[full.relative_to(desk).as_posix()] = (mode, full.read_bytes())
    return out


def cache_path(repo_dir: Path) -> Path:
    return repo_dir / PRIVATE_DIR / 'statcache'


# -- the racy guard --------------------------------------------------------------------------


def test_racy_entry_is_rehashed_even_though_its_stat_matches(desk: Path) -> None:
    """The state after a same-size rewrite within one timestamp tick: the cached stat equals
    the file's stat in every field (size, mtime, ctime, inode, mode) yet the content differs.
    Only the racy guard can catch it, and this test fails without it: the control case
    below shows that the very same cache, once it is older than the racy window, is trusted.
    ctime plays no part here: it is in the cached key and equal to the file's."""
    full = write(desk, 'memory/a.md', 'new!')
    st = os.lstat(full)
    # Cached in the same tick as the file was written: racy.
    racy_cache = cache_for('memory/a.md', full, b'old!', written_at_ns=st.st_mtime_ns)
    assert list(racy_cache.racy) == [0]
    scan = scan_at(desk, racy_cache)
    assert scan.files['memory/a.md'][1] == blob_id(b'new!')
    assert scan.changed == {'memory/a.md'}
    # Control: the same entry cached well after the file's last change is trusted without
    # reading the file, which is exactly why the guard above is needed.
    settled = cache_for('memory/a.md', full, b'old!', written_at_ns=st.st_mtime_ns + 10 * SECOND)
    assert list(settled.racy) == []
    scan = scan_at(desk, settled)
    assert scan.files['memory/a.md'][1] == blob_id(b'old!')
    assert scan.unchanged and not scan.changed


def test_coarse_timestamps_get_a_wider_racy_window(desk: Path) -> None:
    """On filesystems with whole-second mtimes a rewrite up to a second later keeps the mtime."""
    full = write(desk, 'notes/n.md', 'new!')
    whole = (time.time_ns() // SECOND - 5) * SECOND
    os.utime(full, ns=(whole, whole))
    st = os.lstat(full)
    assert st.st_mtime_ns == whole
    # Cached 1.5 s after a whole-second mtime: outside the fine window, inside the coarse one.
    hashed_at = max(st.st_mtime_ns, st.st_ctime_ns) + 1_500_000_000
    # The same stat with a fine-grained mtime would be trusted: only the coarse window flags it.
    assert statcache.is_racy((0, whole + 1, st.st_ctime_ns, 0, 0), hashed_at) is False
    cache = cache_for('notes/n.md', full, b'old!', written_at_ns=hashed_at)
    assert list(cache.racy) == [0]
    assert scan_at(desk, cache).files['notes/n.md'][1] == blob_id(b'new!')


def test_same_size_rewrite_with_restored_mtime_is_snapshotted(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    """End to end: rewrite right after a snapshot, same size, mtime forced back with utime."""
    full = write(desk, 'Memory.md', 'aaaa')
    first = cps.snapshot('one')
    assert first is not None
    before = os.lstat(full)
    with open(full, 'r+b') as handle:  # in place: same inode, same size
        handle.write(b'bbbb')
    os.utime(full, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.lstat(full)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
        before.st_size,
        before.st_mtime_ns,
        before.st_ino,
    )
    second = Checkpoints(repo_dir, desk).snapshot('two')
    assert second is not None
    assert head_files(repo_dir)['Memory.md'] == (FILE_MODE, b'bbbb')


def test_racy_entries_are_trusted_once_checked_after_the_window(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    full = write(desk, 'memory/a.md', 'a')
    # An mtime slightly ahead makes the entry racy at the first snapshot however slow the
    # machine is, and settled once that moment is a window behind us.
    ahead = time.time_ns() + 300_000_000
    os.utime(full, ns=(ahead, ahead))
    cps.snapshot('one')
    assert len(statcache.load(cache_path(repo_dir), b'').racy) == 1
    time.sleep(0.3 + statcache.RACY_WINDOW_NS / 1e9 * 2)
    assert cps.snapshot('two') is None  # re-read, unchanged, and now cached as settled
    saved = cache_path(repo_dir).read_bytes()
    assert len(statcache.load(cache_path(repo_dir), b'').racy) == 0
    assert cps.snapshot('three') is None
    assert cache_path(repo_dir).read_bytes() == saved  # nothing to write: not rewritten


# -- corrupt, truncated and foreign caches -------------------------------------------------


def _damage_truncate(data: bytes, other: bytes) -> bytes:
    return data[: len(data) // 2]


def _damage_flip(data: bytes, other: bytes) -> bytes:
    middle = len(data) // 2
    return data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1 :]


def _damage_garbage(data: bytes, other: bytes) -> bytes:
    return os.urandom(len(data))


def _damage_empty(data: bytes, other: bytes) -> bytes:
    return b''


def _damage_old_format(data: bytes, other: bytes) -> bytes:
    return b'TCSTAT1\n' + data[8:]


def _damage_torn(data: bytes, other: bytes) -> bytes:
    """A crash in the middle of writing another cache over this one, in place."""
    half = len(other) // 2
    return other[:half] + data[half:]


def _damage_old_tail(data: bytes, other: bytes) -> bytes:
    """A crash after a shorter cache was written over a longer one, before the truncation."""
    return data + b'\0' * 40


def _damage_foreign(data: bytes, other: bytes) -> bytes:
    return other  # a valid cache of another desk with the same paths


@pytest.mark.parametrize(
    'damage',
    [
        _damage_truncate,
        _damage_flip,
        _damage_garbage,
        _damage_empty,
        _damage_old_format,
        _damage_torn,
        _damage_old_tail,
        _damage_foreign,
    ],
)
def test_damaged_cache_is_rebuilt_silently(
    desk: Path, repo_dir: Path, tmp_path: Path, damage
) -> None:
    for i in range(5):
        write(desk, f'memory/f{i}.md', f'content {i}')
    write(desk, 'Memory.md', 'memory')
    other_desk = tmp_path / 'other'
    for i in range(5):
        write(other_desk, f'memory/f{i}.md', f'other {i}')
    other_repo = tmp_path / 'other.git'
    Checkpoints(other_repo, other_desk).snapshot('other')
    assert Checkpoints(repo_dir, desk).snapshot('one') is not None
    path = cache_path(repo_dir)
    path.write_bytes(damage(path.read_bytes(), cache_path(other_repo).read_bytes()))
    write(desk, 'memory/f2.md', 'changed')  # same size would not matter: stats differ anyway
    (desk / 'memory' / 'f3.md').unlink()
    assert Checkpoints(repo_dir, desk).snapshot('two') is not None
    assert head_files(repo_dir) == desk_files(desk)
    # The cache was rebuilt: it loads again and the next snapshot is a no-op.
    assert len(statcache.load(path, b'')) == len(desk_files(desk))
    assert Checkpoints(repo_dir, desk).snapshot('three') is None


def test_unwritable_cache_never_fails_a_snapshot(desk: Path, repo_dir: Path) -> None:
    write(desk, 'Memory.md', 'a')
    Checkpoints(repo_dir, desk).snapshot('one')
    path = cache_path(repo_dir)
    path.unlink()
    path.mkdir()  # the cache cannot be read or replaced
    write(desk, 'Memory.md', 'b')
    assert Checkpoints(repo_dir, desk).snapshot('two') is not None
    assert head_files(repo_dir) == desk_files(desk)
    assert Checkpoints(repo_dir, desk).snapshot('three') is None


def test_cache_round_trip_keeps_every_column(tmp_path: Path) -> None:
    cache = statcache.StatCache(context=b'desk\0memory', commit=b'c' * 40, written_at_ns=123)
    cache.files = {
        'memory/a.md': ((1, 2, 3, 4, 0o100644), b'a' * 40),
        'memory/b \u00e9.md': ((5, 6, 7, 8, 0o100755), b'b' * 40),
    }
    cache.trees = {'': b'd' * 40, 'memory': b'e' * 40}
    path = tmp_path / 'cache'
    statcache.save(path, cache)
    loaded = statcache.load(path, b'desk\0memory')
    assert loaded.files == cache.files
    assert loaded.trees == cache.trees
    assert (loaded.commit, loaded.written_at_ns) == (b'c' * 40, 123)
    foreign = statcache.load(path, b'other desk')
    assert foreign.files == cache.files and foreign.trees == {} and foreign.commit == b''


# -- mode-only changes -------------------------------------------------------------------------


def test_mode_only_change_is_a_change(desk: Path, repo_dir: Path) -> None:
    full = write(desk, 'skills/agent/run.sh', '#!/bin/sh\n')
    assert Checkpoints(repo_dir, desk).snapshot('plain') is not None
    time.sleep(statcache.RACY_WINDOW_NS / 1e9 * 2)
    assert Checkpoints(repo_dir, desk).snapshot('settled') is None
    os.chmod(full, 0o755)
    assert Checkpoints(repo_dir, desk).snapshot('chmod +x') is not None
    assert head_files(repo_dir)['skills/agent/run.sh'][0] == EXECUTABLE_MODE
    time.sleep(statcache.RACY_WINDOW_NS / 1e9 * 2)
    assert Checkpoints(repo_dir, desk).snapshot('settled') is None
    os.chmod(full, 0o644)
    assert Checkpoints(repo_dir, desk).snapshot('chmod -x') is not None
    assert head_files(repo_dir)['skills/agent/run.sh'][0] == FILE_MODE


# -- persistence: a fresh object trusts the cache on disk --------------------------------------


def _bytes_read() -> int:
    """Bytes this process has read through read(2) and friends, from /proc/self/io."""
    for line in Path('/proc/self/io').read_text().splitlines():
        if line.startswith('rchar:'):
            return int(line.split()[1])
    raise AssertionError('no rchar in /proc/self/io')


@pytest.mark.skipif(not Path('/proc/self/io').exists(), reason='needs /proc/self/io (Linux)')
def test_fresh_object_trusts_the_cache_on_disk(desk: Path, repo_dir: Path) -> None:
    """A no-op snapshot by a new ``Checkpoints`` reads no tracked file: the process's read
    counter grows by far less than one file. The first snapshot, and the one after a change,
    show that the counter does see files being read."""
    size = 256 * 1024
    for i in range(8):
        write(desk, f'memory/big{i}.bin', os.urandom(size))
    time.sleep(statcache.RACY_WINDOW_NS / 1e9 * 2)  # written well before the snapshot

    start = _bytes_read()
    assert Checkpoints(repo_dir, desk).snapshot('first') is not None
    assert _bytes_read() - start >= 8 * size  # every file was read

    start = _bytes_read()
    assert Checkpoints(repo_dir, desk).snapshot('no-op') is None
    assert _bytes_read() - start < size // 4  # the cache, the config, the branch: no file

    write(desk, 'memory/big3.bin', os.urandom(size))
    time.sleep(statcache.RACY_WINDOW_NS / 1e9 * 2)
    start = _bytes_read()
    assert Checkpoints(repo_dir, desk).snapshot('one change') is not None
    assert size <= _bytes_read() - start < 2 * size  # only the changed file


# -- the fast and the slow comparison agree with the desk ------------------------------------


def test_random_edits_always_snapshot_exactly_the_desk(desk: Path, repo_dir: Path) -> None:
    """Random writes, same-size rewrites, deletions, new folders and chmods, snapshotted by
    kept and fresh objects, often within the racy window: the checkpoint always equals the
    desk, and an immediate second snapshot is always a no-op."""
    rng = random.Random(1234)
    kept = Checkpoints(repo_dir, desk)
    paths = [f'memory/d{i % 3}/f{i}.md' for i in range(12)] + ['Memory.md', 'notes/n.md']
    for path in paths[:6]:
        write(desk, path, f'start {path}')
    for step in range(40):
        for _ in range(rng.randint(1, 3)):
            path = rng.choice(paths)
            full = desk / path
            action = rng.random()
            if action < 0.45 or not full.exists():
                write(desk, path, f'{step} {rng.random():.6f}')
            elif action < 0.65:
                before = os.lstat(full)
                data = full.read_bytes()
                with open(full, 'r+b') as handle:  # same size, same inode, mtime put back
                    handle.write(bytes([data[0] ^ 1]) + data[1:])
                os.utime(full, ns=(before.st_atime_ns, before.st_mtime_ns))
            elif action < 0.8:
                full.unlink()
            else:
                os.chmod(full, os.stat(full).st_mode ^ 0o100)
        if rng.random() < 0.3:
            time.sleep(statcache.RACY_WINDOW_NS / 1e9 * 1.2)
        cps = kept if rng.random() < 0.5 else Checkpoints(repo_dir, desk)
        cps.snapshot(f'step {step}')
        assert head_files(repo_dir) == desk_files(desk), f'step {step}'
        assert Checkpoints(repo_dir, desk).snapshot('again') is None


def test_random_restores_leave_a_cache_that_matches_the_desk(desk: Path, repo_dir: Path) -> None:
    """After each restore the desk equals the target, and the cache the restore left behind
    (written from what it wrote, not from a rescan) makes the next snapshot exact."""
    rng = random.Random(99)
    kept = Checkpoints(repo_dir, desk)
    paths = [f'notes/d{i % 4}/f{i}.md' for i in range(16)] + ['Memory.md']
    ids = []
    for step in range(25):
        for _ in range(rng.randint(1, 4)):
            path = rng.choice(paths)
            if rng.random() < 0.75 or not (desk / path).exists():
                write(desk, path, f'{step} {rng.random():.6f}')
            else:
                (desk / path).unlink()
        cps = kept if rng.random() < 0.5 else Checkpoints(repo_dir, desk)
        new = cps.snapshot(f'step {step}')
        if new:
            ids.append((new, desk_files(desk)))
        if ids and rng.random() < 0.4:
            target, expected = rng.choice(ids)
            cps.restore(target)
            assert desk_files(desk) == expected, f'step {step}'
            assert head_files(repo_dir) == expected
            if rng.random() < 0.5:
                time.sleep(statcache.RACY_WINDOW_NS / 1e9 * 1.2)
            assert Checkpoints(repo_dir, desk).snapshot('after restore') is None


# -- a cache that lies (it lives in the repository, where anyone may write) --------------------


def _lying_cache(desk: Path, repo_dir: Path, lie) -> None:
    """Replaces the cache with one made from a real scan of the desk (every stat matches, none
    racy), then changed by ``lie(cache)``."""
    from trading_checkpoints.desk.state import DeskState

    state = DeskState(desk, ALLOWLIST, cache_path(repo_dir))
    try:
        result = state.scan(statcache.StatCache(context=state.context))
        cache = statcache.StatCache(
            names=list(result.names),
            numbers=array('q', result.numbers),
            shas=result.shas,
            context=state.context,
            written_at_ns=time.time_ns() + 3600 * SECOND,
        )
        lie(cache)
        statcache.save(cache_path(repo_dir), cache)
    finally:
        state.close()


def _point(cache: statcache.StatCache, path: str, sha: bytes) -> None:
    position = cache.names.index(path)
    shas = bytearray(cache.shas)
    shas[position * 20 : position * 20 + 20] = bytes.fromhex(sha.decode())
    cache.set_columns(cache.names, cache.numbers, bytes(shas))


@pytest.mark.parametrize('lie', ['unstored-blob', 'other-blob', 'trees-of-head'])
def test_a_lying_cache_never_makes_a_restore_lose_unsaved_work(
    desk: Path, repo_dir: Path, lie: str
) -> None:
    """Found by tests/product/test_fuzz_repository_files.py: a restore's pre-snapshot trusted the
    cache for files whose stat matched, so a cache that named a blob the store lacks (the file's own
    id, never stored), another file's blob, or the newest checkpoint's trees (so the desk looked
    unchanged) left the unsaved bytes out of every checkpoint, and the restore then overwrote or
    deleted them."""
    cps = Checkpoints(repo_dir, desk)
    write(desk, 'Memory.md', 'first')
    write(desk, 'notes/keep.md', 'kept')
    first = cps.snapshot('first')
    write(desk, 'Memory.md', 'second')
    second = cps.snapshot('second')
    assert first and second
    write(desk, 'Memory.md', 'unsaved work')
    write(desk, 'notes/new.md', 'an unsaved new file')
    head = (repo_dir / 'refs' / 'heads' / 'main').read_bytes().strip()
    if lie == 'unstored-blob':  # the true ids, which the store does not hold
        _lying_cache(desk, repo_dir, lambda cache: None)
    elif lie == 'other-blob':
        _lying_cache(desk, repo_dir, lambda c: _point(c, 'Memory.md', blob_id(b'second')))
    else:
        tree = ShadowRepo.open(repo_dir).commit_info(head).tree

        def trees_of_head(cache: statcache.StatCache) -> None:
            cache.trees = {'': tree}
            cache.commit = head

        _lying_cache(desk, repo_dir, trees_of_head)
    before = cps.restore(first)
    assert (desk / 'Memory.md').read_text() == 'first'
    assert not (desk / 'notes' / 'new.md').exists()
    assert cps.show(before, 'Memory.md') == b'unsaved work'
    assert cps.show(before, 'notes/new.md') == b'an unsaved new file'
    cps.restore(before)
    assert (desk / 'Memory.md').read_text() == 'unsaved work'
    assert (desk / 'notes' / 'new.md').read_text() == 'an unsaved new file'


@pytest.mark.parametrize('mode', [2**40, -1])
def test_a_cached_mode_out_of_range_is_only_a_stale_entry(
    desk: Path, repo_dir: Path, mode: int
) -> None:
    """Found by tests/product/test_fuzz_repository_files.py (slow run): a bit flipped in a cached
    st_mode, with the checksum fixed up, made a restore's snapshot raise OverflowError from the stat
    module (the change counts read the cached mode). It matches no file, so the file is read
    again."""
    cps = Checkpoints(repo_dir, desk)
    write(desk, 'Memory.md', 'first')
    first = cps.snapshot('first')
    write(desk, 'Memory.md', 'unsaved')

    def bad_mode(cache: statcache.StatCache) -> None:
        numbers = array('q', cache.numbers)
        numbers[4] = mode
        cache.set_columns(cache.names, numbers, cache.shas)
        cache.commit = (repo_dir / 'refs' / 'heads' / 'main').read_bytes().strip()

    _lying_cache(desk, repo_dir, bad_mode)
    assert cps.status().changes
    before = cps.restore(first)
    assert cps.show(before, 'Memory.md') == b'unsaved'
    assert (desk / 'Memory.md').read_text() == 'first'
