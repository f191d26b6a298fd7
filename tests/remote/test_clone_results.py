"""What a clone reports: its result, its progress, and the errors that refuse it.

Each test pins a check found by ``benchmarks/mutation.py`` (clone), and runs in this process,
where mutation testing sees the calls. The remotes are local repositories (paths).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.builders import session_turns, write
from helpers.reading import files_of, history

from trading_checkpoints import Checkpoints
from trading_checkpoints.errors import (
    CorruptRepositoryError,
    EmptyRemoteError,
    RepositoryExistsError,
)


def _source(tmp_path: Path, turns: int = 4) -> tuple[Path, Path, list[str]]:
    desk = tmp_path / 'source'
    desk.mkdir()
    repository = tmp_path / 'source.git'
    ids = session_turns(Checkpoints(repository, desk), desk, turns)
    return repository, desk, ids


def _target(tmp_path: Path) -> tuple[Path, Path]:
    return tmp_path / '.checkpoints' / 'main.git', tmp_path / 'desks' / 'main'


def test_a_clone_reports_what_it_did_and_its_progress(tmp_path: Path) -> None:
    source, source_desk, ids = _source(tmp_path)
    repository, desk = _target(tmp_path)
    messages: list[str] = []
    cps, result, written = Checkpoints.clone(
        str(source), repository, desk, progress=messages.append
    )
    assert (result.remote, result.url, result.old, result.new) == (
        'origin',
        str(source),
        None,
        ids[-1],
    )
    assert result.up_to_date is False and result.marked_shallow == ()
    assert written is not None and sorted(written) == sorted(files_of(source_desk))
    assert files_of(desk) == files_of(source_desk)
    assert messages, 'no progress was reported'
    assert [r.name for r in cps.remotes()] == ['origin']


def test_a_clone_of_a_pruned_remote_marks_its_oldest_checkpoint(tmp_path: Path) -> None:
    source, source_desk, ids = _source(tmp_path, turns=5)
    Checkpoints(source, source_desk).prune(keep=2)
    repository, desk = _target(tmp_path)
    cps, result, _ = Checkpoints.clone(str(source), repository, desk)
    assert result.marked_shallow == (ids[-2],)
    assert [c.checkpoint_id for c in cps.list()] == [ids[-1], ids[-2]]
    assert len(history(repository)) == 2


def test_a_clone_without_restore_writes_nothing(tmp_path: Path) -> None:
    source, _, ids = _source(tmp_path)
    repository, desk = _target(tmp_path)
    write(desk, 'scratch.txt', 'not tracked')
    cps, result, written = Checkpoints.clone(str(source), repository, desk, restore=False)
    assert written is None and result.new == ids[-1]
    assert files_of(desk) == {'scratch.txt': ('-', b'not tracked')}
    assert cps.list()[0].checkpoint_id == ids[-1]


def test_a_clone_onto_an_existing_repository_is_refused_naming_it(tmp_path: Path) -> None:
    source, _, _ = _source(tmp_path)
    repository, desk = _target(tmp_path)
    Checkpoints.clone(str(source), repository, desk)
    with pytest.raises(RepositoryExistsError) as caught:
        Checkpoints.clone(str(source), repository, desk)
    assert str(caught.value) == (
        f'the desk already has a checkpoint repository ({repository}); clone onto a new '
        'desk, or add the URL as a remote and pull'
    )
    assert str(caught.value.repository) == str(repository)


def test_a_clone_of_an_empty_remote_is_refused_and_leaves_nothing(tmp_path: Path) -> None:
    empty = tmp_path / 'empty.git'
    Checkpoints(empty, tmp_path / 'elsewhere').set_tracked_paths(['notes'])  # no checkpoint
    repository, desk = _target(tmp_path)
    with pytest.raises(EmptyRemoteError) as caught:
        Checkpoints.clone(str(empty), repository, desk)
    assert str(caught.value) == f'the remote {empty} has no checkpoints (no branch main)'
    assert caught.value.remote == 'origin'
    assert not repository.exists()


def test_a_clone_into_other_tracked_paths_says_how_to_clone(tmp_path: Path) -> None:
    source_desk = tmp_path / 'source'
    write(source_desk, 'docs/guide.md', 'tracked only by the source\n')
    source = tmp_path / 'source.git'
    Checkpoints(source, source_desk, tracked_paths=['docs']).snapshot('docs')
    repository, desk = _target(tmp_path)
    with pytest.raises(CorruptRepositoryError) as caught:
        Checkpoints.clone(str(source), repository, desk)
    message = str(caught.value)
    assert message.endswith(
        '; if the desk was created with other tracked paths, clone with them '
        '(`clone --track PATH ...` or tracked_paths=...)'
    )
    assert caught.value.path == str(repository)
    assert message.startswith(
        "the checkpoint holds 'docs', which is outside the tracked paths Memory.md, memory, "
        'notes, skills/agent; '
    )
    cps, _, written = Checkpoints.clone(str(source), repository, desk, tracked_paths=['docs'])
    assert files_of(desk) == files_of(source_desk) and written == ('docs/guide.md',)


def test_a_failed_clone_into_a_repository_without_checkpoints_leaves_it_usable(
    tmp_path: Path,
) -> None:
    empty = tmp_path / 'empty.git'
    Checkpoints(empty, tmp_path / 'elsewhere').set_tracked_paths(['notes'])  # no checkpoint
    repository, desk = _target(tmp_path)
    Checkpoints(repository, desk).set_tracked_paths(['notes'])  # exists, holds none
    with pytest.raises(EmptyRemoteError):
        Checkpoints.clone(str(empty), repository, desk)
    assert repository.is_dir()
    assert Checkpoints(repository, desk).list() == [], 'left marked as an unfinished clone'
