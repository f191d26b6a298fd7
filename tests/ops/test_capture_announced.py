"""A capture (what ``checkpoints watch`` records) taken while an agent's announced write is
under way keeps that write announced on the new checkpoint (its tool, paths, turn and
session), so the agent's seal afterwards still credits it to the agent; a capture with no write
in flight seals the state it recorded.

Every step runs in this process (where mutation testing sees the calls): the library's
snapshot with the tool's declaration as the hooks make it, and the watch's capture.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from dulwich.repo import Repo
from helpers.builders import write
from helpers.reading import seal_of, tree_reads

from trading_checkpoints import Checkpoints
from trading_checkpoints.store import metadata

pytest.importorskip('watchfiles')
from trading_checkpoints.agent.watch import capture  # noqa: E402

DECLARATION = {
    metadata.TOOL: ['Write'],
    metadata.PATH: ['notes/plan.md'],
    metadata.TURN: ['turn-1'],
    metadata.SESSION: ['session-1'],
}


def _seal(repo_dir: Path) -> tuple[dict[str, list[str]], bytes]:
    """The seal's trailers and its parent (an announcement is kept beside the seal ref)."""
    seal = seal_of(repo_dir)
    assert seal is not None
    return metadata.trailer_values(seal.message), seal.parents[0]


def _head(repo_dir: Path) -> bytes:
    with Repo(str(repo_dir)) as repo:
        return repo.refs[b'refs/heads/main']


def _declared(cps: Checkpoints) -> str | None:
    return cps.snapshot(
        'before Write', tool='Write', paths=['notes/plan.md'], turn='turn-1', session='session-1'
    )


def test_a_capture_during_an_announced_write_keeps_it_announced(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    write(desk, 'Memory.md', 'start\n')
    cps.snapshot('start')
    write(desk, 'Memory.md', 'changed before the write\n')
    assert _declared(cps) is not None  # the checkpoint before the tool's write
    write(desk, 'notes/plan.md', '# Plan\n')  # the tool runs; the watch sees it first
    done = capture(cps)
    assert done.checkpoint_id is not None and done.paths == ('notes/plan.md',)
    trailers, parent = _seal(repo_dir)
    assert parent == _head(repo_dir), 'the announcement is not on the captured checkpoint'
    assert trailers[metadata.ACTION] == ['announce']
    assert {key: trailers.get(key) for key in DECLARATION} == DECLARATION
    assert cps.status().external == ()

    cps.seal()  # the tool's write done
    write(desk, 'notes/mine.md', 'a person\n')
    assert capture(cps).paths == ('notes/mine.md',)
    with Repo(str(repo_dir)) as repo:
        assert repo.refs[b'refs/checkpoints/sealed'] == _head(repo_dir), 'not sealed'
    [turn] = cps.turns()
    result = cps.restore_turn(turn.turn_id)
    assert result.deleted == ('notes/plan.md',) and result.written == ()
    assert (desk / 'notes/mine.md').read_text() == 'a person\n'


def test_a_capture_with_no_write_in_flight_seals_what_it_recorded(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    write(desk, 'Memory.md', 'start\n')
    cps.snapshot('start')
    write(desk, 'notes/mine.md', 'a person\n')
    assert capture(cps).paths == ('notes/mine.md',)
    with Repo(str(repo_dir)) as repo:
        assert repo.refs[b'refs/checkpoints/sealed'] == _head(repo_dir)
    write(desk, 'Memory.md', 'edited after the capture\n')
    assert cps.status().external == ('Memory.md',)


@pytest.mark.parametrize('session', ['session-1', None], ids=['session', 'no-session'])
def test_a_seal_over_an_announcement_keeps_its_turn_and_session(
    cps: Checkpoints, desk: Path, repo_dir: Path, session: str | None
) -> None:
    write(desk, 'Memory.md', 'start\n')
    cps.snapshot('start')
    write(desk, 'Memory.md', 'changed before the write\n')
    cps.snapshot(
        'before Write', tool='Write', paths=['notes/plan.md'], turn='turn-1', session=session
    )
    head = _head(repo_dir)
    # Nothing changed since: the next declaration is an announcement, not a checkpoint.
    cps.snapshot(
        'before Edit', tool='Edit', paths=['notes/other.md'], turn='turn-1', session=session
    )
    assert _head(repo_dir) == head
    trailers, parent = _seal(repo_dir)
    assert trailers[metadata.ACTION] == ['announce'] and parent == head
    write(desk, 'notes/other.md', 'the tool wrote this\n')
    cps.seal()
    trailers, parent = _seal(repo_dir)
    assert parent == head and metadata.ACTION not in trailers
    assert trailers[metadata.TURN] == ['turn-1']
    assert trailers.get(metadata.SESSION, ['']) == [session or '']  # an empty value is left out
    assert cps.status().external == ()


def test_a_capture_over_an_announcement_announces_it_again(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    write(desk, 'Memory.md', 'start\n')
    cps.snapshot('start')
    write(desk, 'Memory.md', 'changed before the write\n')
    cps.snapshot('before Write', tool='Write', paths=['notes/plan.md'], turn='turn-1')
    # Nothing changed since: this declaration is an announcement on the newest checkpoint.
    cps.snapshot('before Edit', tool='Edit', paths=['notes/other.md'], turn='turn-1')
    write(desk, 'notes/other.md', 'the tool wrote this\n')
    assert capture(cps).paths == ('notes/other.md',)
    sealed = seal_of(repo_dir)
    assert sealed is not None and sealed.parents == (_head(repo_dir),)
    assert sealed.message.split('\n', 1)[0] == 'before Edit'
    assert sealed.message.count(f'{metadata.TOOL}:') == 1  # the subject alone
    trailers = metadata.trailer_values(sealed.message)
    assert trailers[metadata.ACTION] == ['announce']
    assert (trailers[metadata.TOOL], trailers[metadata.PATH]) == (['Edit'], ['notes/other.md'])
    assert cps.status().external == ()


def test_a_capture_that_finds_nothing_changed_leaves_an_announced_write_alone(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    """The watch wakes while the tool has not written yet: no checkpoint, and neither the
    branch nor the announcement is written again."""
    write(desk, 'Memory.md', 'start\n')
    cps.snapshot('start')
    write(desk, 'Memory.md', 'changed before the write\n')
    assert _declared(cps) is not None
    before = _ref_files(repo_dir)
    assert capture(cps).checkpoint_id is None
    assert _ref_files(repo_dir) == before


def test_a_capture_that_finds_nothing_changed_keeps_the_state_the_agent_left(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    """The agent wrote a file and sealed; a person put the desk back as the newest checkpoint
    holds it before the watch woke: no checkpoint, and the seal still holds what the agent
    left, so the person's change is still told apart."""
    write(desk, 'Memory.md', 'start\n')
    cps.snapshot('start')
    write(desk, 'notes/agent.md', 'written by the agent\n')
    cps.seal()
    (desk / 'notes' / 'agent.md').unlink()
    assert cps.status().external == ('notes/agent.md',)
    before = _ref_files(repo_dir)
    assert capture(cps).checkpoint_id is None
    assert _ref_files(repo_dir) == before
    assert cps.status().external == ('notes/agent.md',)


def _ref_files(repo_dir: Path) -> dict[str, tuple[bytes, int]]:
    """Each ref file's bytes and inode (a ref written again, even unchanged, is a new file)."""
    files = [*(repo_dir / 'refs').rglob('*'), repo_dir / 'packed-refs']
    return {str(f): (f.read_bytes(), f.stat().st_ino) for f in files if f.is_file()}


def test_a_capture_of_the_state_the_agent_sealed_reads_no_tree(
    cps: Checkpoints, desk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent's write sealed, the watch records it: the desk's tree, built from the scan,
    is the seal's, so the seal's tree is never read; a person's edit after the seal is told
    apart by reading it."""
    write(desk, 'Memory.md', 'start\n')
    cps.snapshot('start')
    reads = tree_reads(monkeypatch)
    for round_ in range(2):
        write(desk, f'notes/agent{round_}.md', 'written by the agent\n')
        cps.seal()
        if round_:
            write(desk, 'Memory.md', 'a person edited it after the seal\n')
        reads.clear()
        assert capture(cps).checkpoint_id is not None
        assert bool(reads) == bool(round_)
    assert cps.status().external == ()
