"""What a roll-up folds into the largest pack, against what, and what it reports.

- The largest pack is the target: a later version in a small pack becomes a delta of the
  version the target holds, also when the parent commit lies in a kept pack (its tree is then
  read from the repository).
- Packs that only repeat the target's objects go, with nothing written; loose objects the pack
  now holds go, whether just placed or already there; a loose object that cannot be read stays.
- A target whose index is damaged is left alone and the rest folded into a pack of their own;
  a largest pack the system refuses to open as the target is folded in with the rest.
- Packs up to ``ROLL_INPUT_MAX`` bytes, that size included, are re-encoded; with nothing
  readable to fold, nothing is written or deleted.
- When to roll up: a policy on the pack sizes (``needs_roll_up``), and on every eighth commit of
  a repository in a process a look at the loose objects (``maybe_pack``).

Each test pins a check found by ``benchmarks/mutation.py``, and runs in this process, where
mutation testing sees the calls.
"""

from __future__ import annotations

import errno
import os
import random
from pathlib import Path

import pytest
from helpers import rawobjects
from helpers.builders import session_turns, write
from helpers.faults import armed
from helpers.gitcli import fsck
from helpers.reading import history, version_of

from trading_checkpoints import Checkpoints
from trading_checkpoints.ops import engine
from trading_checkpoints.store import storage
from trading_checkpoints.store.pack import folder as packfolder
from trading_checkpoints.store.pack import rollup
from trading_checkpoints.store.pack.packfile import Cache, PackView


def _packs(repo_dir: Path) -> list[Path]:
    return sorted((repo_dir / 'objects' / 'pack').glob('pack-*.pack'))


def _roll_up(cps: Checkpoints) -> storage.StorageStats:
    with engine.locked(cps.desk_config) as session:  # as the hook after a commit runs it
        stats = storage.roll_up(session.repo)
    packfolder.wait_for_removals()
    return stats


def _long_note(seed: int) -> list[str]:
    rng = random.Random(seed)
    return [rng.randbytes(30).hex() + '\n' for _ in range(1000)]  # ~60 KB, not compressible


def _largest_pack_first(cps: Checkpoints, desk: Path, lines: list[str]) -> Path:
    """A first checkpoint too large to be a tail (so every later one is a pack of its own)."""
    write(desk, 'notes/large.bin', random.Random(9).randbytes(400_000))
    write(desk, 'notes/long.md', ''.join(lines))
    assert cps.snapshot('the large first checkpoint') is not None
    (largest,) = _packs(cps.repository_directory)
    return largest


@pytest.mark.parametrize('parent', ['in the target', 'in a kept pack'])
def test_a_later_version_becomes_a_delta_of_the_targets(
    cps: Checkpoints, desk: Path, repo_dir: Path, parent: str
) -> None:
    lines = _long_note(1)
    largest = _largest_pack_first(cps, desk, lines)
    kept = None
    if parent == 'in a kept pack':
        write(desk, 'notes/small.md', 'changed, then restored away\n')
        assert cps.snapshot('a small change') is not None
        first = history(repo_dir)[-1]
        cps.restore(first)  # its commit names the first tree; it lands in a pack of its own
        kept = max(_packs(repo_dir), key=lambda p: p.stat().st_mtime_ns)
        kept.with_suffix('.keep').write_text('kept\n')
    lines[500] = 'one line changed\n'
    write(desk, 'notes/long.md', ''.join(lines))
    newest = cps.snapshot('one line of the long note')  # whole, in a pack of its own
    assert newest is not None
    before = largest.stat().st_size
    stats = _roll_up(cps)
    assert stats.packs_after == (2 if kept else 1)
    (rolled,) = [p for p in _packs(repo_dir) if p != kept]
    assert rolled.stat().st_size - before < 4000, 'the new version was copied whole'
    assert version_of(repo_dir, newest)['notes/long.md'] == ('-', ''.join(lines).encode())
    fsck(repo_dir)


def test_a_pack_repeating_the_targets_objects_goes_and_the_target_stays(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    session_turns(cps, desk, 3)
    (target,) = _packs(repo_dir)
    data = (desk / 'Memory.md').read_bytes()
    rawobjects.pack(
        repo_dir / 'objects' / 'pack',
        [rawobjects.whole_record(3, data)],
        [rawobjects.object_id(b'blob', data)],
    )
    duplicate = rawobjects.blob(repo_dir, data)  # and loose, as another tool may leave it
    target_bytes = target.read_bytes()
    stats = _roll_up(cps)
    assert _packs(repo_dir) == [target] and target.read_bytes() == target_bytes
    assert storage.loose_count(repo_dir) == 0, f'{duplicate} is still loose'
    assert (stats.objects, stats.packs_before, stats.packs_after) == (0, 2, 1)
    assert stats.loose_before == 1


def test_loose_objects_are_folded_and_an_unreadable_one_stays(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    session_turns(cps, desk, 2)
    readable = [rawobjects.blob(repo_dir, b'loose %d\n' % i) for i in range(3)]
    broken = repo_dir / 'objects' / 'ab' / ('c' * 38)
    broken.parent.mkdir(exist_ok=True)
    broken.write_bytes(b'not a zlib stream at all')
    stats = _roll_up(cps)
    (rolled,) = _packs(repo_dir)
    with PackView(str(rolled)[: -len('.pack')]) as view:
        assert all(sha.encode() in view for sha in readable)
    assert broken.read_bytes() == b'not a zlib stream at all'
    assert storage.loose_count(repo_dir) == 1
    assert (stats.objects, stats.loose_before, stats.packs_before) == (3, 4, 1)


def test_a_damaged_target_is_left_and_the_rest_folded_beside_it(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    ids = session_turns(cps, desk, 3)
    known = {sha: version_of(repo_dir, sha) for sha in history(repo_dir)}
    pack_dir = repo_dir / 'objects' / 'pack'
    damaged = rawobjects.pack(
        pack_dir, [rawobjects.whole_record(3, os.urandom(400_000))], [b'\x01' * 20]
    )
    Path(damaged + '.idx').write_bytes(b'\xfftOc\0\0\0\2' + os.urandom(2000))  # the largest
    loose = rawobjects.blob(repo_dir, b'a loose blob\n')
    stats = _roll_up(cps)
    assert Path(damaged + '.pack').exists() and Path(damaged + '.idx').exists()
    others = [p for p in _packs(repo_dir) if str(p) != damaged + '.pack']
    assert len(others) == 1 and stats.packs_after == 2
    with PackView(str(others[0])[: -len('.pack')]) as view:
        assert loose.encode() in view
    # With the damaged pack taken away (by a person), nothing is missing.
    os.remove(damaged + '.pack')
    os.remove(damaged + '.idx')
    for sha, content in known.items():
        assert version_of(repo_dir, sha) == content
    assert len(ids) == 3


def test_nothing_to_roll_up_is_reported_as_such(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    session_turns(cps, desk, 2)
    size = storage.objects_size(repo_dir)
    stats = _roll_up(cps)
    assert stats == storage.StorageStats(0, 0, 1, 1, 0, size, size)


def test_nothing_readable_to_fold_leaves_the_objects_as_they_are(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    """One pack and an unreadable loose object (under the name of an object that pack holds):
    nothing can be folded, so nothing is written, nothing deleted, and the report says so."""
    session_turns(cps, desk, 2)
    (pack,) = _packs(repo_dir)
    with PackView(str(pack)[: -len('.pack')]) as view:
        _, sha = view.entries()[0]
    broken = repo_dir / 'objects' / sha[:2].decode() / sha[2:].decode()
    broken.parent.mkdir(exist_ok=True)
    broken.write_bytes(b'not a zlib stream at all')
    pack_bytes = pack.read_bytes()
    size = storage.objects_size(repo_dir)
    stats = _roll_up(cps)
    assert stats == storage.StorageStats(0, 0, 1, 1, 1, size, size)
    assert broken.read_bytes() == b'not a zlib stream at all'
    assert _packs(repo_dir) == [pack] and pack.read_bytes() == pack_bytes


def test_a_pack_of_exactly_the_input_limit_is_folded(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    """A pack of exactly ``ROLL_INPUT_MAX`` bytes is re-encoded into the largest pack; only
    larger ones are left as they are."""
    ids = session_turns(cps, desk, 2)
    pack_dir = repo_dir / 'objects' / 'pack'
    at_limit, blob = rawobjects.pack_of_size(pack_dir, rollup.ROLL_INPUT_MAX, 1)
    largest, big_blob = rawobjects.pack_of_size(pack_dir, rollup.ROLL_INPUT_MAX + 4096, 2)
    assert Path(at_limit + '.pack').stat().st_size == rollup.ROLL_INPUT_MAX
    stats = _roll_up(cps)
    assert (stats.packs_before, stats.packs_after) == (3, 1)
    (rolled,) = _packs(repo_dir)
    assert not Path(at_limit + '.pack').exists() and not Path(largest + '.pack').exists()
    with PackView(str(rolled)[: -len('.pack')]) as view:
        assert blob in view and big_blob in view
    assert len(history(repo_dir)) == len(ids)
    fsck(repo_dir)


def test_a_largest_pack_that_cannot_be_opened_as_the_target_is_folded_too(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    """The system refuses to open the largest pack as the target (once: it opens again when
    its objects are read): with no target, every pack the roll-up can read, the largest
    included, goes into one new pack."""
    session_turns(cps, desk, 3)
    known = {sha: version_of(repo_dir, sha) for sha in history(repo_dir)}
    (small,) = _packs(repo_dir)
    largest, blob = rawobjects.pack_of_size(repo_dir / 'objects' / 'pack', 20_000, 3)
    assert small.stat().st_size < 20_000
    refused: list[str] = []

    def refuse_once(event: str, args: tuple) -> None:
        if event == 'open' and not refused and args[0] == largest + '.pack' and args[1] is None:
            refused.append(args[0])
            raise OSError(errno.EMFILE, 'Too many open files', args[0])

    with engine.locked(cps.desk_config) as session, armed(refuse_once):
        stats = storage.roll_up(session.repo)
    packfolder.wait_for_removals()
    assert refused, 'the largest pack was never opened'
    assert (stats.packs_before, stats.packs_after) == (2, 1)
    (rolled,) = _packs(repo_dir)
    assert not small.exists() and not Path(largest + '.pack').exists()
    with PackView(str(rolled)[: -len('.pack')]) as view:
        assert blob in view
    for sha, content in known.items():
        assert version_of(repo_dir, sha) == content
    fsck(repo_dir)


def _pack_sizes(folder: Path, sizes: list[int]) -> Path:
    """A pack folder whose packs have these sizes (only their sizes are looked at)."""
    pack_dir = folder / 'objects' / 'pack'
    pack_dir.mkdir(parents=True)
    for i, size in enumerate(sizes):
        name = pack_dir / f'pack-{i:040x}'
        with open(name.with_suffix('.pack'), 'wb') as handle:
            handle.truncate(size)
        name.with_suffix('.idx').write_bytes(b'')
    return folder


def test_when_the_pack_sizes_call_for_a_roll_up(tmp_path: Path) -> None:
    small = rollup.ROLL_INPUT_MAX  # the largest pack that is ever re-encoded
    largest = 8 * small
    limit = int(largest * rollup.ROLL_FRACTION)

    def needed(name: str, sizes: list[int]) -> bool:
        return rollup.needs_roll_up(_pack_sizes(tmp_path / name, sizes))

    assert not needed('one', [largest])
    assert not needed('only-big-ones', [small + 1, small + 2, largest])  # nothing to fold
    # The limit is a fraction of the largest pack, whatever the others are.
    assert not needed('below', [limit // 4, limit // 2, largest])
    assert needed('reached', [limit // 2, limit - limit // 2, largest])
    assert not needed('below-beside-big', [limit // 2, small + 1, largest * 2])
    # A pack of exactly ROLL_INPUT_MAX is still small: here it alone reaches the limit.
    assert needed('exactly-the-input-limit', [small, small + 1])
    # Or more than MAX_SMALL_PACKS small packs, however small.
    many = rollup.MAX_SMALL_PACKS
    assert not needed('as-many', [100] * many + [largest])
    assert needed('more', [100] * (many + 1) + [largest])


def test_loose_objects_are_looked_at_by_the_eighth_commit(tmp_path: Path) -> None:
    """The hook counts loose objects on every eighth commit of a process (and on commits whose
    id starts with 0 or 8): a run of eight commits none of whose ids starts so is found and
    must still have packed them."""
    for attempt in range(60):
        workspace = tmp_path / f'attempt-{attempt}'
        desk, repo_dir = workspace / 'desk', workspace / 'repo.git'
        desk.mkdir(parents=True)
        # Each attempt's own content: attempts made within the same second would otherwise
        # repeat the same commit ids, and the same prefixes.
        write(desk, 'notes/attempt.md', f'attempt {attempt}\n')
        cps = Checkpoints(repo_dir, desk)
        ids = session_turns(cps, desk, 1)
        for i in range(rollup.LOOSE_LIMIT):
            rawobjects.blob(repo_dir, b'left loose by another tool %d\n' % i)
        ids += session_turns(cps, desk, rollup.CHECK_EVERY - 1, start=1)
        full = [sha for sha in history(repo_dir)]
        if any(sha.encode().startswith(rollup.CHECK_PREFIXES) for sha in full):
            continue  # looked at by its id: try again
        assert len(ids) == rollup.CHECK_EVERY
        assert storage.loose_count(repo_dir) == 0
        return
    pytest.skip('no run of eight commit ids without the prefixes in 60 attempts')


def _loose_left(repo_dir: Path, count: int) -> None:
    """``count`` loose objects, as another tool may leave them, none of them in a pack."""
    start = storage.loose_count(repo_dir)
    for i in range(count):
        rawobjects.blob(
            repo_dir, b'%s left loose by another tool %d\n' % (os.urandom(8).hex().encode(), i)
        )
    assert storage.loose_count(repo_dir) == start + count


def test_the_hook_looks_at_loose_objects_on_every_eighth_commit_of_each_repository(
    tmp_path: Path,
) -> None:
    """``maybe_pack`` counts the commits of each repository on its own, from the first one the
    process makes: with ids that never start with 0 or 8, loose objects are packed by the
    eighth commit after the last look, not before; two repositories committing in turn do not
    add up to eight; and an id starting with 0 or 8 makes the hook look at once."""
    ordinary = b'1' * 40  # a commit id that does not by itself make the hook look
    repos = []
    for name in ('first', 'second'):
        workspace = tmp_path / name
        desk, repo_dir = workspace / 'desk', workspace / 'repo.git'
        desk.mkdir(parents=True)
        cps = Checkpoints(repo_dir, desk)
        cps.set_tracked_paths(['notes'])  # the repository, and no commit of this process yet
        _loose_left(repo_dir, rollup.LOOSE_LIMIT)
        repos.append((cps, repo_dir))

    def commit(index: int, sha: bytes = ordinary) -> storage.StorageStats | None:
        cps, _ = repos[index]
        with engine.locked(cps.desk_config) as session:  # as a snapshot runs the hook
            return rollup.maybe_pack(session.repo, sha)

    for _ in range(rollup.CHECK_EVERY - 1):  # seven commits each, in turn
        assert commit(0) is None and commit(1) is None
    assert [storage.loose_count(repo_dir) for _, repo_dir in repos] == [rollup.LOOSE_LIMIT] * 2
    for index, (_, repo_dir) in enumerate(repos):  # the eighth looks
        assert commit(index) is not None
        assert storage.loose_count(repo_dir) == 0
    # Counted again from the look: seven commits pass it by, the eighth packs.
    _, repo_dir = repos[0]
    _loose_left(repo_dir, rollup.LOOSE_LIMIT)
    for _ in range(rollup.CHECK_EVERY - 1):
        assert commit(0) is None
    assert storage.loose_count(repo_dir) == rollup.LOOSE_LIMIT
    assert commit(0) is not None
    assert storage.loose_count(repo_dir) == 0
    # An id starting with 0 or 8 looks whatever the count.
    _loose_left(repo_dir, rollup.LOOSE_LIMIT)
    assert commit(0) is None
    assert commit(0, b'8' + ordinary[1:]) is not None
    assert storage.loose_count(repo_dir) == 0


def test_a_repository_of_loose_objects_only_is_packed(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    """As a repository written before packs, or by other tools, may be: no pack at all."""
    session_turns(cps, desk, 3)
    known = {sha: version_of(repo_dir, sha) for sha in history(repo_dir)}
    kinds = {1: b'commit', 2: b'tree', 3: b'blob'}
    for pack in _packs(repo_dir):  # every object made loose, the packs removed
        with PackView(str(pack)[: -len('.pack')]) as view:
            cache = Cache()
            for offset, _ in view.entries():
                type_num, raw, _ = view.read(offset, cache)
                rawobjects.write_object(repo_dir, kinds[type_num], raw)
        pack.with_suffix('.idx').unlink()
        pack.unlink()
    assert _packs(repo_dir) == [] and storage.loose_count(repo_dir) > 0
    stats = _roll_up(cps)
    assert (stats.packs_before, stats.packs_after) == (0, 1)
    assert storage.loose_count(repo_dir) == 0
    for sha, content in known.items():
        assert version_of(repo_dir, sha) == content
    fsck(repo_dir)


def _failing_roll_up(count: int):
    """An audit action raising EIO when the ``count``-th temporary pack is created."""
    seen: list[str] = []

    def action(event: str, args: tuple) -> None:
        if event != 'open' or not isinstance(args[0], (str, bytes)):
            return
        if 'tmp_pack_' in os.fsdecode(args[0]):
            seen.append(os.fsdecode(args[0]))
            if len(seen) == count:
                raise OSError(errno.EIO, 'injected write error', os.fsdecode(args[0]))

    return action, seen


@pytest.mark.parametrize('debug', [False, True], ids=['quiet', 'debug'])
def test_a_failing_roll_up_never_fails_its_snapshot_unless_debugging(
    cps: Checkpoints, desk: Path, repo_dir: Path, monkeypatch: pytest.MonkeyPatch, debug: bool
) -> None:
    """The snapshot's own pack is written; the roll-up after it (the small pack now a large
    enough fraction of the largest) fails writing its pack: the snapshot stands, everything
    stays where it is, and the next check rolls up. With CHECKPOINTS_DEBUG the failure is
    raised instead, for whoever debugs it."""
    if debug:
        monkeypatch.setenv('CHECKPOINTS_DEBUG', '1')
    _largest_pack_first(cps, desk, _long_note(2))
    write(desk, 'notes/added.bin', random.Random(5).randbytes(150_000))
    action, seen = _failing_roll_up(2)
    with armed(action):
        if debug:
            with pytest.raises(OSError, match='injected write error'):
                cps.snapshot('a large new file')
        else:
            assert cps.snapshot('a large new file') is not None
    assert len(seen) == 2, 'no roll-up was attempted'
    packfolder.wait_for_removals()
    assert len(_packs(repo_dir)) == 2  # as they were before the roll-up
    newest = history(repo_dir)[0]
    assert (
        version_of(repo_dir, newest)['notes/added.bin'][1]
        == (desk / 'notes/added.bin').read_bytes()
    )
    write(desk, 'notes/small.md', 'the next snapshot\n')
    assert cps.snapshot('the next one') is not None
    packfolder.wait_for_removals()
    assert len(_packs(repo_dir)) == 1  # rolled up this time
