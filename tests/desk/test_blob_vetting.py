"""What a restore vets before it writes: names and link targets up to the file system's limits
are restored and past them refused saying why; each blob is read once, and what is kept of
them for the writes stays within a memory budget.

Each test pins a safety check: it fails when ``benchmarks/mutation.py`` breaks that check,
and it runs in this process, where mutation testing sees the calls.
"""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path

import pytest
from dulwich.objects import Blob
from helpers.builders import put
from helpers.reading import files_of

from trading_checkpoints import TRACKED_PATHS, Checkpoints
from trading_checkpoints.core.trees import FILE_MODE, SYMLINK_MODE
from trading_checkpoints.desk.safety import vet_blobs
from trading_checkpoints.errors import CorruptRepositoryError
from trading_checkpoints.store.repo import ShadowRepo


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


def test_a_restore_refused_by_its_vetting_saves_nothing_first(tmp_path: Path) -> None:
    """The vetting comes before the pre-snapshot: a restore refused for a blob it cannot
    read leaves the history as it was, the unsaved edit still only in the desk."""
    from helpers.rawobjects import commit, in_notes

    desk = tmp_path / 'desk'
    put(desk, 'notes/mine.md', '-', b'mine')
    repo_dir = tmp_path / 'repo.git'
    cps = Checkpoints(repo_dir, desk)
    cps.snapshot('mine')
    missing = 'ab' * 20  # no such object in the repository
    hostile = commit(repo_dir, in_notes(repo_dir, (b'100644', b'gone.md', missing)))
    put(desk, 'notes/mine.md', '-', b'an unsaved edit')
    history = [c.checkpoint_id for c in cps.list(None)]
    before = files_of(desk)
    with pytest.raises(CorruptRepositoryError):
        cps.restore(hostile)
    assert [c.checkpoint_id for c in cps.list(None)] == history
    assert files_of(desk) == before
