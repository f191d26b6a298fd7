"""Consolidation keeps everything a ref reaches, not only the branch: the seal's commit, its
tree and the blobs the agent wrote after the newest checkpoint live only behind
``refs/checkpoints/sealed``, and a prune that rewrote the storage must keep them.

Each test pins a safety check: it fails when ``benchmarks/mutation.py`` breaks that check,
and it runs in this process, where mutation testing sees the calls.
"""

from __future__ import annotations

import errno
import os
import random
from itertools import combinations
from pathlib import Path

import pytest
from helpers import rawobjects
from helpers.builders import session_turns, write
from helpers.faults import armed
from helpers.gitcli import fsck, git, needs_git

from trading_checkpoints import Checkpoints
from trading_checkpoints.errors import FileAccessError
from trading_checkpoints.ops import engine
from trading_checkpoints.store import storage
from trading_checkpoints.store.pack.folder import wait_for_removals
from trading_checkpoints.store.pack.packfile import PackView


def _sealed_after_a_write(cps: Checkpoints, desk: Path) -> str:
    """Three checkpoints, then an agent write no checkpoint holds, sealed; returns the seal."""
    session_turns(cps, desk, 3)
    write(desk, 'notes/agent.md', 'written by the agent after the newest checkpoint\n')
    return cps.seal()


@needs_git
def test_a_prune_keeps_the_seal_and_what_only_it_holds(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    seal = _sealed_after_a_write(cps, desk)
    result = cps.prune(keep=2)
    assert result.checkpoints_after == 2 and result.pruned
    assert storage.loose_count(repo_dir) == 0
    fsck(repo_dir)  # no ref names a missing object
    assert git(repo_dir, 'rev-parse', '--short=7', 'refs/checkpoints/sealed').strip() == seal
    assert git(repo_dir, 'show', 'refs/checkpoints/sealed:notes/agent.md') == (
        'written by the agent after the newest checkpoint\n'
    )
    # The seal still holds: the agent's write is its own, a person's later edit is external.
    status = cps.status()
    assert (status.basis, status.external) == ('sealed', ())
    write(desk, 'Memory.md', 'edited by a person after the seal\n')
    status = cps.status()
    assert status.basis == 'sealed' and status.external == ('Memory.md',)
    result = cps.snapshot_with_result('after the prune')
    assert result.external == ('Memory.md',)


def test_compacting_alone_keeps_the_seal(cps: Checkpoints, desk: Path, repo_dir: Path) -> None:
    _sealed_after_a_write(cps, desk)
    stats = cps.prune()  # no limit: the storage is rewritten into one pack
    assert stats.checkpoints_after == 3
    write(desk, 'Memory.md', 'edited by a person after the seal\n')
    assert cps.status().external == ('Memory.md',)
    fsck(repo_dir)


def test_compacting_a_repository_without_checkpoints(repo_dir: Path, desk: Path) -> None:
    cps = Checkpoints(repo_dir, desk)
    cps.set_tracked_paths(['notes'])  # the repository exists, with no checkpoint yet
    assert (repo_dir / 'HEAD').is_file()
    result = cps.prune()
    assert (result.checkpoints_before, result.checkpoints_after) == (0, 0)
    assert list((repo_dir / 'objects' / 'pack').glob('pack-*')) == []
    write(desk, 'notes/first.md', 'the first checkpoint comes after\n')
    assert cps.snapshot('first') is not None


def test_rewriting_the_same_pack_removes_every_other_and_its_stale_indexes(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    """A compacted repository compacted again writes a pack of the same name (the same
    objects): the packs beside it (here duplicates a crash between an append's rename and its
    removal leaves) all go, and so do another tool's reverse index, bitmap and cruft times of
    that name, which describe the old layout."""
    session_turns(cps, desk, 3)
    cps.prune()
    pack_dir = repo_dir / 'objects' / 'pack'
    (compacted,) = pack_dir.glob('pack-*.pack')
    files = [desk / 'Memory.md', *sorted((desk / 'notes').iterdir())]
    subsets = [*combinations(files, 1), *combinations(files, 2)]
    for round_number, subset in enumerate(subsets):  # each a pack of another name
        blobs = [path.read_bytes() for path in subset]
        rawobjects.pack(
            pack_dir,
            [rawobjects.whole_record(3, data) for data in blobs],
            [rawobjects.object_id(b'blob', data) for data in blobs],
        )
        for suffix in ('.bitmap', '.rev', '.mtimes'):
            compacted.with_suffix(suffix).write_bytes(b'the old layout\n')
        cps.prune()
        left = sorted(p.name for p in pack_dir.iterdir())
        assert left == sorted([compacted.name, compacted.with_suffix('.idx').name]), (
            f'round {round_number}: {left}'
        )
    fsck(repo_dir)


def test_the_packs_a_compaction_replaces_go_with_what_another_tool_left_beside_them(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    """Two packs, each with the bitmap, reverse index and cruft times a git ``repack`` may
    leave beside a pack: the compaction writes a pack of another name, and the two go with
    everything beside them (left behind, those files would describe packs that are gone)."""
    session_turns(cps, desk, 2)
    write(desk, 'notes/large.bin', random.Random(1).randbytes(300_000))  # past the tail limit
    assert cps.snapshot('a large file') is not None
    write(desk, 'notes/after.md', 'in a pack of its own\n')
    assert cps.snapshot('after the large file') is not None
    wait_for_removals()
    pack_dir = repo_dir / 'objects' / 'pack'
    old = sorted(pack_dir.glob('pack-*.pack'))
    assert len(old) == 2
    for pack in old:
        for suffix in ('.bitmap', '.rev', '.mtimes'):
            pack.with_suffix(suffix).write_bytes(b'written by another tool\n')
    cps.prune()
    wait_for_removals()
    (new,) = pack_dir.glob('pack-*.pack')
    assert new not in old
    assert sorted(p.name for p in pack_dir.iterdir()) == [new.with_suffix('.idx').name, new.name]
    fsck(repo_dir)


def test_what_a_compaction_reports(cps: Checkpoints, desk: Path, repo_dir: Path) -> None:
    session_turns(cps, desk, 4)
    loose = [rawobjects.blob(repo_dir, b'loose blob %d\n' % i) for i in range(3)]
    with engine.locked(cps.desk_config) as session:
        stats = storage.consolidate(session.repo)
    (pack,) = (repo_dir / 'objects' / 'pack').glob('pack-*.pack')
    with PackView(str(pack)[: -len('.pack')]) as view:
        assert stats.objects == view.count  # the unreachable loose blobs were dropped
        assert all(sha.encode() not in view for sha in loose)
    assert stats.loose_before == 3 and stats.packs_after == 1
    assert 0 < stats.deltas < stats.objects  # the notes rewritten every turn became deltas
    assert storage.loose_count(repo_dir) == 0


def _ids(pack: Path) -> set:
    with PackView(str(pack)[: -len('.pack')]) as view:
        return {sha for _, sha in view.entries()}


def test_a_kept_packs_objects_are_not_copied(cps: Checkpoints, desk: Path, repo_dir: Path) -> None:
    session_turns(cps, desk, 3)
    cps.prune()
    pack_dir = repo_dir / 'objects' / 'pack'
    (kept,) = pack_dir.glob('pack-*.pack')
    kept.with_suffix('.keep').write_text('kept by someone\n')
    write(desk, 'notes/later.md', 'written after the pack was kept\n')
    cps.snapshot('later')
    cps.prune()
    (rewritten,) = [pack for pack in pack_dir.glob('pack-*.pack') if pack != kept]
    assert kept.is_file() and _ids(kept) and _ids(rewritten)
    assert not _ids(kept) & _ids(rewritten), "the kept pack's objects were copied"
    fsck(repo_dir)


def test_a_compaction_whose_pack_write_is_refused_changes_nothing(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    session_turns(cps, desk, 3)
    wait_for_removals()  # the roll-ups' removals of replaced packs
    pack_dir = repo_dir / 'objects' / 'pack'
    before = sorted(p.name for p in pack_dir.iterdir())
    prefix = os.fspath(pack_dir) + os.sep

    def refuse(event: str, args: tuple) -> None:
        if event == 'open' and len(args) >= 3 and isinstance(args[0], (str, bytes)):
            path, flags = os.fsdecode(args[0]), args[2]
            if path.startswith(prefix) and isinstance(flags, int) and flags & os.O_CREAT:
                raise OSError(errno.EIO, 'injected write error', path)

    with armed(refuse), pytest.raises(FileAccessError) as caught:
        cps.prune()
    assert caught.value.action == 'write'
    assert str(caught.value).startswith(f'cannot write a pack into {repo_dir / "objects"}: ')
    assert sorted(p.name for p in pack_dir.iterdir()) == before
    assert len(cps.list()) == 3
    fsck(repo_dir)


def test_a_compaction_whose_read_is_refused_changes_nothing(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    """The system refuses one read in the middle of a compaction (the index of a pack it reads
    the kept objects from), and no damaged file explains it: the prune fails with a
    ``FileAccessError`` whose action is ``update`` (the storage was being rewritten), and
    nothing changed."""
    session_turns(cps, desk, 3)
    wait_for_removals()
    pack_dir = repo_dir / 'objects' / 'pack'
    before = sorted(p.name for p in pack_dir.iterdir())
    prefix = os.fspath(pack_dir) + os.sep
    refused: list[str] = []

    def refuse_once(event: str, args: tuple) -> None:
        if refused or event != 'open' or not isinstance(args[0], (str, bytes)):
            return
        path, mode = os.fsdecode(args[0]), args[1]
        if path.startswith(prefix) and path.endswith('.idx') and mode == 'r':
            refused.append(path)
            raise OSError(errno.EACCES, 'Permission denied', path)

    with armed(refuse_once), pytest.raises(FileAccessError) as caught:
        cps.prune()
    assert refused, 'no pack index was read'
    assert caught.value.action == 'update'
    assert Path(caught.value.path) == repo_dir
    assert str(caught.value) == f'cannot compact the storage in {repo_dir}: Permission denied'
    assert sorted(p.name for p in pack_dir.iterdir()) == before
    assert len(cps.list()) == 3
    fsck(repo_dir)
