"""Snapshots append to a small pack (packappend.py): the mechanics, damage, crashes, and the size.

Each snapshot's new objects are appended, as deltas, to the smallest pack (a new pack made of
the old one's records and the new ones); roll-ups fold the small packs into the largest the
same way. Checked here: what a pack holds after appends and roll-ups (real git reads it), that
chains stay short, that damaged or kept packs are never rewritten, that hostile record sizes are
refused, that a kill at any step of an append or a roll-up loses nothing, and that storage as
the snapshots leave it stays close to what ``git gc --aggressive`` makes of the same history.
"""

from __future__ import annotations

import os
import random
import shutil
import zlib
from pathlib import Path

import pytest
from helpers import rawobjects
from helpers.builders import put, write
from helpers.faults import run_child
from helpers.gitcli import GIT, fsck, git, needs_git
from helpers.reading import files_of, history, tracked, version_of

from trading_checkpoints import Checkpoints
from trading_checkpoints.ops import engine
from trading_checkpoints.store import storage
from trading_checkpoints.store.pack import append as packappend
from trading_checkpoints.store.pack import folder as packfolder
from trading_checkpoints.store.pack import packfile
from trading_checkpoints.store.pack import plan as packplan
from trading_checkpoints.store.pack import rollup as packrollup
from trading_checkpoints.store.pack import write as packwrite
from trading_checkpoints.store.repo import ShadowRepo


def _packs(repo_dir: Path) -> list[Path]:
    return sorted((repo_dir / 'objects' / 'pack').glob('pack-*.pack'))


def _view(pack: Path) -> packfile.PackView:
    return packfile.PackView(str(pack)[: -len('.pack')])


def _grow(cps: Checkpoints, desk: Path, turns: int, start: int = 0) -> list[str]:
    ids = []
    for turn in range(start, start + turns):
        with open(desk / 'Memory.md', 'a') as handle:
            handle.write(f'- turn {turn:04d}: checked the book, noted {turn * 7919 % 1000}\n')
        body = ''.join(f'a line that stays the same, number {i}\n' for i in range(30))
        write(desk, f'notes/n{turn % 5}.md', f'note {turn % 5}, turn {turn}\n' + body)
        checkpoint_id = cps.snapshot(f'turn {turn}')
        assert checkpoint_id is not None
        ids.append(checkpoint_id)
    return ids


def _leftovers(repo_dir: Path) -> list[str]:
    pack_dir = repo_dir / 'objects' / 'pack'
    names = {p.name for p in pack_dir.iterdir()}
    return sorted(
        name
        for name in names
        if name.startswith('tmp')
        or name.endswith('.lock')
        or (name.endswith('.pack') and name[: -len('.pack')] + '.idx' not in names)
        or (name.endswith('.idx') and name[: -len('.idx')] + '.pack' not in names)
    )


def test_each_snapshot_extends_the_tail(cps: Checkpoints, desk: Path, repo_dir: Path) -> None:
    _grow(cps, desk, 2)
    (first,) = _packs(repo_dir)
    with _view(first) as view:
        count = view.count
    _grow(cps, desk, 1, start=2)
    (second,) = _packs(repo_dir)
    assert second != first and not first.exists()  # the old one is gone, its index first
    assert not first.with_suffix('.idx').exists()
    with _view(second) as view:
        assert view.count == count + 5  # Memory.md, the note, two trees and the commit
        count = view.count
    packfolder.wait_for_removals()  # the old pack is deleted in the background
    assert storage.loose_count(repo_dir) == 0 and _leftovers(repo_dir) == []
    if GIT:
        git(repo_dir, 'verify-pack', str(second.with_suffix('.idx')))
        git(repo_dir, 'fsck', '--strict', '--no-dangling')


def test_chains_run_with_heads_and_stay_short(cps: Checkpoints, desk: Path, repo_dir: Path) -> None:
    _grow(cps, desk, 130)
    repo = ShadowRepo.open(repo_dir)
    assert repo is not None
    try:
        newest = repo.flatten_tree(repo.commit_info(repo.head() or b'').tree, _everything())[0]
    finally:
        repo.close()
    (pack,) = _packs(repo_dir)
    with _view(pack) as view:
        depths = []
        wholes = 0
        for offset, _ in view.entries():
            links = view.chain(offset)
            depths.append(len(links) - 1)
            wholes += len(links) == 1
        links = view.chain(view.offset_of(bytes.fromhex(newest['Memory.md'][1].decode())) or 0)
        kinds = [kind for _, kind in links]
    assert max(depths) <= packplan.MAX_DEPTH
    # The newest Memory.md: a run of at most RUN offset deltas, then heads (named deltas), then
    # the one whole version its chain starts from.
    assert kinds[-1] == 0 and packfile.REF_DELTA in kinds
    run = next(i for i, kind in enumerate(kinds) if kind != packfile.OFS_DELTA)
    assert run <= packplan.RUN and all(kind == packfile.REF_DELTA for kind in kinds[run:-1])
    # Whole: the commits and the root trees (too small for a delta to pay), the first version
    # of each file and folder, little else.
    assert wholes <= 2 * 130 + 20, wholes
    for checkpoint_id in (cps.list(200)[-1].checkpoint_id, cps.list(200)[64].checkpoint_id):
        assert version_of(repo_dir, checkpoint_id)  # reads back through the chains
    if GIT:
        git(repo_dir, 'fsck', '--strict', '--no-dangling')


def _everything():
    from trading_checkpoints.core.paths import Allowlist

    return Allowlist(('Memory.md', 'notes'))


def test_a_damaged_tail_is_never_extended(cps: Checkpoints, desk: Path, repo_dir: Path) -> None:
    _grow(cps, desk, 3)
    (pack,) = _packs(repo_dir)
    pack.chmod(0o644)
    data = bytearray(pack.read_bytes())
    middle = len(data) // 2
    data[middle] ^= 0xFF  # inside a record: the index and the trailer still agree
    pack.write_bytes(bytes(data))
    damaged = pack.read_bytes()
    write(desk, 'notes/fresh.md', 'written after the damage\n')
    new_id = cps.snapshot('after the damage')
    assert new_id is not None
    assert pack.read_bytes() == damaged, 'a damaged pack is left exactly as it is'
    assert len(_packs(repo_dir)) == 2
    assert cps.show(new_id, 'notes/fresh.md') == b'written after the damage\n'
    packappend._DAMAGED.clear()  # as in a new process: the damage is found again, then passed by
    write(desk, 'notes/fresh.md', 'and once more\n')
    again = cps.snapshot('the next one')
    assert again is not None and pack.read_bytes() == damaged
    assert len(_packs(repo_dir)) == 2, 'appended to the new pack, not a third one'
    assert cps.show(again, 'notes/fresh.md') == b'and once more\n'


def test_a_kept_pack_is_never_rewritten(cps: Checkpoints, desk: Path, repo_dir: Path) -> None:
    _grow(cps, desk, 2)
    (pack,) = _packs(repo_dir)
    pack.with_suffix('.keep').write_text('kept by hand\n')
    before = pack.read_bytes()
    _grow(cps, desk, 6, start=2)
    assert pack.read_bytes() == before and len(_packs(repo_dir)) == 2
    repo = ShadowRepo.open(repo_dir)
    assert repo is not None
    try:
        storage.roll_up(repo)
    finally:
        repo.close()
    assert pack.read_bytes() == before


def test_hostile_record_sizes_are_refused(tmp_path: Path) -> None:
    whole = packwrite._object_header(3, 5) + zlib.compress(b'hello')
    huge = packwrite._object_header(3, 1 << 40) + zlib.compress(b'x' * 1000)
    # A delta on the first record claiming a result of 2^40 bytes.
    delta = bytes([5, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20]) + b'\x05hello'
    distance = 1 + len(whole) + len(huge)
    bomb = (
        packwrite._object_header(packfile.OFS_DELTA, len(delta))
        + packwrite._ofs_header(len(whole) + len(huge))
        + zlib.compress(delta)
    )
    assert distance > 0
    names = [bytes([i]) * 20 for i in (1, 2, 3)]
    basename = rawobjects.pack(tmp_path, [bytes(whole), bytes(huge), bomb], names)
    with packfile.PackView(basename) as view:
        assert view.read(12, packfile.Cache())[1] == b'hello'
        for name in names[1:]:
            with pytest.raises(packfile.PackDamaged):
                view.read(view.offset_of(name) or 0, packfile.Cache())


def test_a_garbage_index_is_refused(tmp_path: Path) -> None:
    basename = rawobjects.pack(
        tmp_path, [bytes(packwrite._object_header(3, 2) + zlib.compress(b'hi'))], [b'\1' * 20]
    )
    Path(basename + '.idx').write_bytes(b'\xfftOc\0\0\0\2' + os.urandom(2000))
    with pytest.raises(packfile.PackDamaged):
        packfile.PackView(basename)


@needs_git
def test_a_roll_up_folds_the_small_packs_into_the_largest(
    cps: Checkpoints, desk: Path, repo_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(60):
        write(desk, f'notes/base-{i}.md', f'a note of the first snapshot, number {i}\n' * 20)
    ids = _grow(cps, desk, 1)
    monkeypatch.setattr(packappend, 'TAIL_MAX', 3000)  # small packs fill up quickly
    monkeypatch.setattr(packrollup, 'needs_roll_up', lambda path: False)
    ids += _grow(cps, desk, 30, start=1)
    packs = _packs(repo_dir)
    assert len(packs) >= 4
    expected = {checkpoint_id: version_of(repo_dir, checkpoint_id) for checkpoint_id in ids}
    total = 0
    for pack in packs:
        with _view(pack) as view:
            total += view.count
    largest = max(packs, key=lambda p: p.stat().st_size)
    repo = ShadowRepo.open(repo_dir)
    assert repo is not None
    try:
        stats = storage.roll_up(repo)
    finally:
        repo.close()
    (merged,) = _packs(repo_dir)
    assert merged != largest and not largest.exists()
    with _view(merged) as view:
        assert view.count == total  # every object, once
    assert stats.packs_after == 1 and stats.bytes_after < stats.bytes_before
    assert stats.deltas >= 30  # the small packs' whole first versions became deltas
    for checkpoint_id, content in expected.items():
        assert version_of(repo_dir, checkpoint_id) == content
    git(repo_dir, 'fsck', '--strict', '--no-dangling')


# -- crashes -------------------------------------------------------------------------------


def _sweep(tmp_path: Path, prepare, action, step: int = 1) -> int:
    """Kills ``action`` before its 1st, 2nd, ... file-system mutation until it runs through.

    After each kill: git reads the repository, every earlier checkpoint reads back as it was,
    the next snapshot works and leaves no temporary file, index-less pack or lock behind.
    """
    kills = 0
    for kill_at in range(1, 400, step):
        base = tmp_path / f'k{kill_at}'
        desk, repo_dir = base / 'desk', base / 'repo.git'
        prepare(desk, repo_dir)
        known = {sha: version_of(repo_dir, sha) for sha in history(repo_dir)}
        outcome = run_child(lambda d=desk, r=repo_dir: action(d, r), kill_at=kill_at)
        assert outcome.error is None, outcome.error
        fsck(repo_dir, strict_clean=False)
        for sha, content in known.items():
            assert version_of(repo_dir, sha) == content, f'killed at {kill_at}: {sha[:7]}'
        put(desk, 'notes/after.md', '-', b'after the kill %d' % kill_at)
        after = Checkpoints(repo_dir, desk).snapshot('next')
        assert after is not None
        assert tracked(files_of(desk)) == version_of(repo_dir, after)
        packfolder.wait_for_removals()  # what the next writer swept is deleted in the background
        assert _leftovers(repo_dir) == [], f'killed at {kill_at}'
        assert storage.loose_count(repo_dir) == 0
        fsck(repo_dir)
        shutil.rmtree(base)
        if not outcome.killed:
            return kills
        kills += 1
    raise AssertionError('the action never ran through')


def _prepared(desk: Path, repo_dir: Path) -> Checkpoints:
    rng = random.Random(5)
    cps = Checkpoints(repo_dir, desk)
    put(desk, 'Memory.md', '-', b'# memory\n')
    for turn in range(4):
        for i in range(6):
            put(desk, f'notes/f{i}.md', '-', rng.randbytes(200) + b'\n' + b'same line\n' * 40)
        put(desk, 'Memory.md', '-', (desk / 'Memory.md').read_bytes() + b'turn %d\n' % turn)
        cps.snapshot(f'setup {turn}')
    return cps


def test_every_crash_point_of_an_append(tmp_path: Path) -> None:
    def action(desk: Path, repo_dir: Path) -> None:
        put(desk, 'Memory.md', '-', (desk / 'Memory.md').read_bytes() + b'one more line\n')
        put(desk, 'notes/f2.md', '-', b'changed\n' + b'same line\n' * 40)
        Checkpoints(repo_dir, desk).snapshot('the append')

    kills = _sweep(tmp_path, _prepared, action)
    assert kills >= 6  # temporary pack, index lock, renames, removal of the old pack, ...


def test_every_crash_point_of_a_roll_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def prepare(desk: Path, repo_dir: Path) -> None:
        _prepared(desk, repo_dir)
        with monkeypatch.context() as patch:
            patch.setattr(packappend, 'TAIL_MAX', 1)  # three more packs of their own
            patch.setattr(packrollup, 'needs_roll_up', lambda path: False)
            cps = Checkpoints(repo_dir, desk)
            for turn in range(3):
                put(desk, 'notes/f1.md', '-', b'turn %d\n' % turn + b'same line\n' * 40)
                cps.snapshot(f'own pack {turn}')
        assert len(_packs(repo_dir)) == 4

    def action(desk: Path, repo_dir: Path) -> None:
        config = Checkpoints(repo_dir, desk).desk_config
        with engine.locked(config) as session:  # as maybe_pack runs it
            storage.roll_up(session.repo)

    kills = _sweep(tmp_path, prepare, action)
    assert kills >= 6


# -- size ----------------------------------------------------------------------------------


@needs_git
def test_storage_as_left_stays_close_to_git_gc_aggressive(
    cps: Checkpoints, desk: Path, repo_dir: Path, tmp_path: Path
) -> None:
    """The ratio to ``git gc --aggressive`` of the same history, sampled along the run (the
    benchmark does 1,000 snapshots of a 1,000-note desk; this is a small version of it)."""
    rng = random.Random(11)
    notes = []
    for i in range(150):
        lines = [f'- observation {j}: {rng.uniform(10, 500):.2f}\n' for j in range(20)]
        notes.append(write(desk, f'notes/n{i:03d}.md', f'# note {i}\n' + ''.join(lines)))
    ratios = []
    for turn in range(120):
        with open(desk / 'Memory.md', 'a') as handle:
            handle.write(f'- turn {turn}: {rng.choice(["hold", "trim", "add"])} {rng.random()}\n')
        if rng.random() < 0.5:
            note = rng.choice(notes)
            lines = note.read_text().splitlines(keepends=True)
            lines[rng.randrange(1, len(lines))] = f'- revised at turn {turn}: {rng.random()}\n'
            note.write_text(''.join(lines))
        cps.snapshot(f'turn {turn}')
        if turn % 30 == 29:
            copy = tmp_path / f'gc-{turn}.git'
            packfolder.wait_for_removals()  # a replaced pack vanishing mid-copy fails the copy
            shutil.copytree(repo_dir, copy)
            git(copy, 'gc', '--aggressive', '--prune=now', '-q')
            ratios.append(storage.objects_size(repo_dir) / storage.objects_size(copy))
            shutil.rmtree(copy)
    assert storage.loose_count(repo_dir) == 0
    assert max(ratios) <= 1.3, ratios
