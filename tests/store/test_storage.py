"""Compact storage: snapshots append to a pack with deltas; roll-ups; packs consolidated."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from dulwich.objects import Blob
from helpers.builders import write
from helpers.gitcli import GIT, git, needs_git

from trading_checkpoints import Checkpoints
from trading_checkpoints.store import storage
from trading_checkpoints.store.pack import append as packappend
from trading_checkpoints.store.pack import plan as packplan
from trading_checkpoints.store.pack import rollup as packrollup
from trading_checkpoints.store.repo import ShadowRepo


def _grow_memory(cps: Checkpoints, desk: Path, turns: int, start: int = 0) -> list[str]:
    ids = []
    for turn in range(start, start + turns):
        with open(desk / 'Memory.md', 'a') as handle:
            handle.write(f'- turn {turn:04d}: the agent noted a fact worth keeping for later\n')
        checkpoint_id = cps.snapshot(f'turn {turn}')
        assert checkpoint_id is not None
        ids.append(checkpoint_id)
    return ids


def _open(repo_dir: Path) -> ShadowRepo:
    repo = ShadowRepo.open(repo_dir)
    assert repo is not None
    return repo


def _pack_stats(repo_dir: Path) -> tuple[int, int, int]:
    """(objects, deltas, longest chain) over all packs, as the real git reports them."""
    objects = deltas = longest = 0
    for idx in (repo_dir / 'objects' / 'pack').glob('*.idx'):
        for line in git(repo_dir, 'verify-pack', '-v', str(idx)).splitlines():
            fields = line.split()
            if (
                len(fields) >= 5
                and len(fields[0]) == 40
                and fields[1] in ('blob', 'tree', 'commit', 'tag')
            ):
                objects += 1
                if len(fields) >= 7:
                    deltas += 1
                    longest = max(longest, int(fields[5]))
    return objects, deltas, longest


@needs_git
def test_a_growing_memory_file_is_stored_as_deltas(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    _grow_memory(cps, desk, 120)
    final_size = (desk / 'Memory.md').stat().st_size
    # As the snapshots leave it: nothing loose, one pack, nearly every version a delta.
    assert storage.loose_count(repo_dir) == 0 and storage.pack_count(repo_dir) == 1
    objects, deltas, longest = _pack_stats(repo_dir)
    assert objects == 360 and deltas >= 110  # nearly every blob
    assert longest <= packplan.MAX_DEPTH
    # 120 full copies would be ~60x the final file; with deltas the pack is a few copies.
    pack = sum(p.stat().st_size for p in (repo_dir / 'objects' / 'pack').glob('*.pack'))
    assert pack < 6 * final_size, (pack, final_size)
    git(repo_dir, 'fsck', '--strict', '--no-dangling')
    repo = _open(repo_dir)
    try:
        storage.consolidate(repo)  # what prune does: still one pack, still deltas
    finally:
        repo.close()
    assert _pack_stats(repo_dir)[1] >= 110
    git(repo_dir, 'fsck', '--strict', '--no-dangling')


def test_every_checkpoint_reads_back_after_packing(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    ids = _grow_memory(cps, desk, 40)
    write(desk, 'notes/random.bin', os.urandom(30_000))
    ids.append(cps.snapshot('random binary') or '')
    write(desk, 'notes/random.bin', os.urandom(30_000))
    ids.append(cps.snapshot('random binary again') or '')
    expected = {}
    for checkpoint_id in ids[::7] + ids[-2:]:
        cps.restore(checkpoint_id)
        expected[checkpoint_id] = {
            p: (desk / p).read_bytes()
            for p in ('Memory.md', 'notes/random.bin')
            if (desk / p).exists()
        }
    repo = _open(repo_dir)
    try:
        storage.consolidate(repo)
    finally:
        repo.close()
    for checkpoint_id, files in expected.items():
        cps.restore(checkpoint_id)
        for path, data in files.items():
            assert (desk / path).read_bytes() == data


def test_snapshots_leave_no_loose_objects_and_few_packs(
    cps: Checkpoints, desk: Path, repo_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(packappend, 'TAIL_MAX', 4096)  # a new small pack every few snapshots
    monkeypatch.setattr(packrollup, 'ROLL_MIN', 8192)
    _grow_memory(cps, desk, 120)
    assert storage.loose_count(repo_dir) == 0
    # Rolled up as they go: the largest pack and a few small ones, never more.
    sizes = sorted(p.stat().st_size for p in (repo_dir / 'objects' / 'pack').glob('*.pack'))
    assert 1 <= len(sizes) <= 1 + packrollup.MAX_SMALL_PACKS
    assert sum(sizes[:-1]) < max(packrollup.ROLL_MIN, sizes[-1] * packrollup.ROLL_FRACTION) + 4096
    assert len(cps.list(200)) == 120
    cps.restore(cps.list(200)[-1].checkpoint_id)
    assert (desk / 'Memory.md').read_text().count('turn') == 1
    if GIT:
        git(repo_dir, 'fsck', '--strict', '--no-dangling')


def test_loose_objects_of_an_older_repository_are_rolled_in(repo_dir: Path, desk: Path) -> None:
    """Repositories written before (or by other tools) hold loose objects: the hook looks at
    them on some commits only, and then folds them into the pack."""
    cps = Checkpoints(repo_dir, desk)
    _grow_memory(cps, desk, 2)
    repo = _open(repo_dir)
    try:
        store = storage.object_store(repo)
        blobs = [Blob.from_string(b'loose %d\n' % i) for i in range(3)]
        for blob in blobs:
            store.add_object(blob)
        original = packrollup.LOOSE_LIMIT
        packrollup.LOOSE_LIMIT = 1
        try:
            assert storage.maybe_pack(repo, b'1' * 40) is None  # not looked at
            assert storage.loose_count(repo_dir) == 3
            stats = storage.maybe_pack(repo, b'0' * 40)
        finally:
            packrollup.LOOSE_LIMIT = original
        assert stats is not None and stats.objects == 3
        assert storage.loose_count(repo_dir) == 0 and storage.pack_count(repo_dir) == 1
        assert all(repo.read_blob(blob.id) == blob.data for blob in blobs)
    finally:
        repo.close()
    assert len(cps.list()) == 2


def test_a_failing_roll_up_never_fails_the_snapshot(
    cps: Checkpoints, desk: Path, repo_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise OSError(28, 'No space left on device')

    monkeypatch.setattr(packrollup, 'needs_roll_up', lambda path: True)
    monkeypatch.setattr(packrollup, 'roll_up', broken)
    ids = _grow_memory(cps, desk, 3)
    assert [c.checkpoint_id for c in cps.list()] == ids[::-1]


@needs_git
def test_consolidate_merges_packs_and_drops_unreachable_objects(
    cps: Checkpoints, desk: Path, repo_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(packappend, 'TAIL_MAX', 1)  # every write a pack of its own
    monkeypatch.setattr(packrollup, 'needs_roll_up', lambda path: False)
    _grow_memory(cps, desk, 10)
    repo = _open(repo_dir)
    try:
        orphan = repo.make_commit(repo.commit_info(repo.head() or b'').tree, None, 'orphan\n')
        repo.write_objects([orphan])
        assert storage.pack_count(repo_dir) == 11 and repo.contains(orphan.id)
        stats = storage.consolidate(repo)
    finally:
        repo.close()
    assert (stats.packs_before, stats.packs_after) == (11, 1)
    assert storage.loose_count(repo_dir) == 0
    repo = _open(repo_dir)
    try:
        assert not repo.contains(orphan.id)
    finally:
        repo.close()
    git(repo_dir, 'fsck', '--strict', '--no-dangling')
    assert len(git(repo_dir, 'log', '--format=%h').split()) == 10


def test_delta_guard_skips_unrelated_content() -> None:
    text = b''.join(b'line %d of a note\n' % i for i in range(400))
    assert packplan.alike(text, text + b'one more line\n')
    assert not packplan.alike(os.urandom(8000), os.urandom(8000))
    assert packplan.alike(b'short', b'tiny')
    # Small files too: a note rewritten whole is not worth a delta (create_delta is slow on
    # unrelated content even at a few hundred bytes), one edited in place is.
    note = b''.join(b'- item %d\n' % i for i in range(30))
    assert packplan.alike(note, note.replace(b'item 7', b'item seven'))
    assert not packplan.alike(os.urandom(512).hex().encode(), b'x1 10\n' * 40)
    assert not packplan.alike(b'b 10\n' * 40, os.urandom(120).hex().encode())


def test_sizes_leave_out_packs_waiting_to_be_deleted(repo_dir: Path, desk: Path) -> None:
    """A replaced pack is renamed away and deleted by a background thread; a prune's
    ``bytes_before`` (and every size reported) must not depend on how far that thread got."""
    write(desk, 'notes/a.md', 'one')
    Checkpoints(repo_dir, desk).snapshot('one')
    size = storage.objects_size(repo_dir)
    pending = repo_dir / 'objects' / 'pack' / f'tmp_old_{os.getpid()}_0a1b2c3d4e5f-pack.old'
    pending.write_bytes(os.urandom(64 * 1024))
    assert storage.objects_size(repo_dir) == size
    assert Checkpoints(repo_dir, desk).prune(keep=1, dry_run=True).bytes_before == size


def test_pack_indexes_answer_whether_an_object_is_there(repo_dir: Path, desk: Path) -> None:
    """The lookup that lets `status` and a no-op snapshot skip dulwich: every stored object is
    found, no other id is, and an index that cannot be read answers no (dulwich decides)."""
    import hashlib

    from trading_checkpoints.store.pack.packfile import listed_in_packs

    for i in range(120):
        write(desk, f'notes/n{i:03d}.md', f'note {i}')
    cps = Checkpoints(repo_dir, desk)
    cps.snapshot('many')
    write(desk, 'notes/n007.md', 'changed')
    cps.snapshot('one more pack')
    pack_dir = str(repo_dir / 'objects' / 'pack')
    repo = _open(repo_dir)
    try:
        stored = list(repo.dulwich_repo.object_store)
        assert len(stored) > 120
        assert all(listed_in_packs(pack_dir, bytes.fromhex(sha.decode())) for sha in stored)
        others = [hashlib.sha1(b'%d' % i).digest() for i in range(400)] + [b'\0' * 20, b'\xff' * 20]
        assert not any(listed_in_packs(pack_dir, other) for other in others if other not in stored)
        packs = sorted((repo_dir / 'objects' / 'pack').glob('*.pack'))
        for pack in packs:
            pack.rename(pack.with_suffix('.moved'))  # an index without its pack is no pack
        assert not listed_in_packs(pack_dir, bytes.fromhex(stored[0].decode()))
        for pack in packs:
            pack.with_suffix('.moved').rename(pack)
        for idx in (repo_dir / 'objects' / 'pack').glob('*.idx'):
            idx.chmod(0o644)
            idx.write_bytes(b'garbage')
        assert not listed_in_packs(pack_dir, bytes.fromhex(stored[0].decode()))
    finally:
        repo.close()
