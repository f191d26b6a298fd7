"""Compact storage: loose objects packed automatically, with deltas; packs consolidated."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import GIT, git, needs_git, write

from trading_checkpoints import Checkpoints, storage
from trading_checkpoints.repo import ShadowRepo


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
    repo = _open(repo_dir)
    try:
        stats = storage.consolidate(repo)
    finally:
        repo.close()
    assert stats.deltas >= 110 and storage.loose_count(repo_dir) == 0  # nearly every blob
    objects, deltas, longest = _pack_stats(repo_dir)
    assert objects == stats.objects and deltas == stats.deltas
    assert longest <= storage.MAX_DEPTH
    # 120 full copies would be ~60x the final file; with deltas the pack is a few copies.
    pack = sum(p.stat().st_size for p in (repo_dir / 'objects' / 'pack').glob('*.pack'))
    assert pack < 6 * final_size, (pack, final_size)
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


def test_snapshots_pack_loose_objects_automatically(
    cps: Checkpoints, desk: Path, repo_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        storage, 'CHECK_PREFIXES', tuple(b'0123456789abcdef'[i : i + 1] for i in range(16))
    )
    monkeypatch.setattr(storage, 'LOOSE_LIMIT', 20)
    _grow_memory(cps, desk, 120)
    assert storage.loose_count(repo_dir) < 20
    # Geometric roll-up: few packs, each at least twice the size of all younger ones together.
    sizes = sorted(p.stat().st_size for p in (repo_dir / 'objects' / 'pack').glob('*.pack'))
    assert 1 <= len(sizes) <= 5
    assert all(size >= sum(sizes[:i]) for i, size in enumerate(sizes))
    assert len(cps.list(200)) == 120
    cps.restore(cps.list(200)[-1].checkpoint_id)
    assert (desk / 'Memory.md').read_text().count('turn') == 1
    if GIT:
        git(repo_dir, 'fsck', '--strict', '--no-dangling')


def test_the_hook_looks_only_for_some_commits(repo_dir: Path, desk: Path) -> None:
    cps = Checkpoints(repo_dir, desk)
    _grow_memory(cps, desk, 2)
    repo = _open(repo_dir)
    try:
        original = storage.LOOSE_LIMIT
        storage.LOOSE_LIMIT = 1
        try:
            assert storage.maybe_pack(repo, b'1' * 40) is None  # not looked at
            assert storage.loose_count(repo_dir) > 0
            stats = storage.maybe_pack(repo, b'0' * 40)
        finally:
            storage.LOOSE_LIMIT = original
    finally:
        repo.close()
    assert stats is not None and stats.objects > 0
    assert storage.loose_count(repo_dir) == 0


def test_a_failing_pack_never_fails_the_snapshot(
    cps: Checkpoints, desk: Path, repo_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise OSError(28, 'No space left on device')

    monkeypatch.setattr(
        storage, 'CHECK_PREFIXES', tuple(b'0123456789abcdef'[i : i + 1] for i in range(16))
    )
    monkeypatch.setattr(storage, 'LOOSE_LIMIT', 1)
    monkeypatch.setattr(storage, 'pack_loose', broken)
    ids = _grow_memory(cps, desk, 3)
    assert [c.checkpoint_id for c in cps.list()] == ids[::-1]


@needs_git
def test_consolidate_merges_packs_and_drops_unreachable_objects(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    _grow_memory(cps, desk, 10)
    repo = _open(repo_dir)
    try:
        storage.pack_loose(repo)
        _grow_memory(cps, desk, 10, start=10)
        storage.pack_loose(repo)
        orphan = repo.make_commit(repo.commit_info(repo.head() or b'').tree, None, 'orphan\n')
        repo.write_objects([orphan])
        assert storage.pack_count(repo_dir) == 2 and repo.contains(orphan.id)
        stats = storage.consolidate(repo)
    finally:
        repo.close()
    assert (stats.packs_before, stats.packs_after) == (2, 1)
    assert storage.loose_count(repo_dir) == 0
    repo = _open(repo_dir)
    try:
        assert not repo.contains(orphan.id)
    finally:
        repo.close()
    git(repo_dir, 'fsck', '--strict', '--no-dangling')
    assert len(git(repo_dir, 'log', '--format=%h').split()) == 20


def test_delta_guard_skips_unrelated_content() -> None:
    text = b''.join(b'line %d of a note\n' % i for i in range(400))
    assert storage._alike(text, text + b'one more line\n')
    assert not storage._alike(os.urandom(8000), os.urandom(8000))
    assert storage._alike(b'short', b'tiny')


@needs_git
def test_a_roll_up_keeps_the_deltas_it_merges(
    cps: Checkpoints, desk: Path, repo_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(storage, 'LOOSE_LIMIT', 10**9)  # only the packing this test asks for
    ids = _grow_memory(cps, desk, 30)
    repo = _open(repo_dir)
    try:
        first = storage.pack_loose(repo, roll_up=False)
        assert first.deltas >= 25
        old_pack = next((repo_dir / 'objects' / 'pack').glob('*.pack')).name
        reused = storage._reusable_deltas(list(storage.object_store(repo).packs), set())
        assert reused == {}  # no base among the candidates: nothing reusable
        packs = list(storage.object_store(repo).packs)
        everything = {s.hex().encode() for s, _, _ in packs[0].index.iterentries()}
        assert len(storage._reusable_deltas(packs, everything)) == first.deltas
        ids += _grow_memory(cps, desk, 5, start=30)
        monkeypatch.setattr(storage, '_packs_to_roll_up', lambda path, store, loose: store.packs)
        merged = storage.pack_loose(repo)  # the first pack rolls up into the new one
    finally:
        repo.close()
    packs = [p.name for p in (repo_dir / 'objects' / 'pack').glob('*.pack')]
    assert len(packs) == 1 and packs != [old_pack]
    assert merged.deltas >= first.deltas + 4
    objects, deltas, longest = _pack_stats(repo_dir)
    assert objects == merged.objects and deltas == merged.deltas and longest <= storage.MAX_DEPTH
    git(repo_dir, 'fsck', '--strict', '--no-dangling')
    cps.restore(ids[0])
    assert (desk / 'Memory.md').read_text().count('turn') == 1


def test_reused_deltas_that_form_a_loop_are_broken() -> None:
    """Two packs may hold A as a delta of B and B as a delta of A: never copy both."""
    from dulwich.pack import REF_DELTA, UnpackedObject

    from trading_checkpoints.storage import _break_cycles, _in_dependency_order

    a, b, c, d = (bytes([n]) * 20 for n in (1, 2, 3, 4))

    def delta(sha: bytes, base: bytes) -> UnpackedObject:
        unpacked = UnpackedObject(REF_DELTA, delta_base=base, sha=sha)
        return unpacked

    hexed = {x: x.hex().encode() for x in (a, b, c, d)}
    reused = {
        hexed[a]: delta(a, b),
        hexed[b]: delta(b, a),  # the loop
        hexed[c]: delta(c, a),  # hangs off it
        hexed[d]: delta(d, d),  # a delta of itself
    }
    _break_cycles(reused)
    assert (hexed[a] in reused) != (hexed[b] in reused), 'exactly one of the loop is dropped'
    assert hexed[d] not in reused and hexed[c] in reused
    ordered = _in_dependency_order(reused)  # terminates, and bases come first
    assert len(ordered) == len(reused)
