"""Per-turn grouping: turns tag their checkpoints, cost nothing when empty, and rewind whole."""

from __future__ import annotations

import asyncio
import inspect
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from helpers.builders import checkpoints_in, write
from helpers.gitcli import git, needs_git
from helpers.reading import tree_of

from trading_checkpoints import CheckpointError, Checkpoints, UnknownCheckpointError
from trading_checkpoints.errors import TurnConflictError


def guarded_write(cps: Checkpoints, path: str, content: str) -> None:
    with cps.guard(f'write_file {path}'):
        write(cps.desk_directory, path, content)


def test_empty_turn_costs_nothing(cps: Checkpoints, repo_dir: Path) -> None:
    with cps.turn('just chatting') as turn:
        pass
    assert not repo_dir.exists(), 'no repository is created for a turn that never writes'
    assert turn.checkpoint_ids == [] and not turn.started
    assert cps.turns() == []


def test_every_checkpoint_of_a_turn_carries_its_id(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'v0')
    with cps.turn('remember things') as turn:
        guarded_write(cps, 'Memory.md', 'v1')
        guarded_write(cps, 'notes/a.md', 'a')
        guarded_write(cps, 'Memory.md', 'v2')
    items = cps.list()
    assert [c.checkpoint_id for c in reversed(items)] == turn.checkpoint_ids
    assert {c.turn for c in items} == {turn.turn_id}
    assert turn.turn_id.startswith('turn-')
    guarded_write(cps, 'Memory.md', 'v3')
    assert cps.list()[0].turn is None, 'outside the turn, checkpoints are untagged'


def test_restore_turn_rewinds_to_before_the_turn(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'v0')
    write(desk, 'scratch.txt', 'untracked')
    with cps.turn('turn one'):
        guarded_write(cps, 'Memory.md', 'v1')
    before_two = tree_of(desk)
    with cps.turn('turn two') as two:
        guarded_write(cps, 'Memory.md', 'v2')
        guarded_write(cps, 'notes/new.md', 'created in turn two')
        write(desk, 'scratch.txt', 'changed, but untracked')
    after_two = tree_of(desk)
    result = cps.restore_turn(two.turn_id)
    expected = dict(before_two, **{'scratch.txt': ('-', b'changed, but untracked')})
    assert tree_of(desk) == expected
    assert result.deleted == ('notes/new.md',)
    cps.restore(result.before_id)  # a rewind is itself undoable
    assert tree_of(desk) == after_two


def test_first_write_of_a_turn_on_an_unchanged_desk_still_marks_the_start(
    cps: Checkpoints, desk: Path
) -> None:
    write(desk, 'Memory.md', 'v0')
    cps.snapshot('manual')  # the desk now equals the newest checkpoint
    with cps.turn('edit twice') as turn:
        guarded_write(cps, 'Memory.md', 'v1')
        guarded_write(cps, 'Memory.md', 'v2')
    first = cps.list()[-2]
    assert first.turn == turn.turn_id and first.reason == 'before write_file Memory.md'
    assert len(turn.checkpoint_ids) == 2
    cps.restore_turn(turn.turn_id)
    assert (desk / 'Memory.md').read_text() == 'v0', 'before the turn, not after its first write'


def test_restore_turn_refuses_where_a_later_turn_wrote_the_same_file(
    cps: Checkpoints, desk: Path
) -> None:
    write(desk, 'Memory.md', 'v0')
    ids = []
    for n in range(1, 4):
        with cps.turn(f'turn {n}') as turn:
            guarded_write(cps, 'Memory.md', f'v{n}')
            guarded_write(cps, f'notes/{n}.md', str(n))
        ids.append(turn.turn_id)
    before, history = tree_of(desk), cps.list(None)
    with pytest.raises(TurnConflictError) as refused:
        cps.restore_turn(ids[1])
    assert (refused.value.paths, refused.value.turn) == (('Memory.md',), ids[1])
    assert 'refusing to rewind turn' in str(refused.value) and 'Memory.md' in str(refused.value)
    assert tree_of(desk) == before and cps.list(None) == history, 'nothing was changed'

    kept = cps.restore_turn(ids[1], on_external='keep')
    assert kept.deleted == ('notes/2.md',) and kept.written == ()
    assert kept.kept == (('Memory.md', 'changed outside the agent'),)
    assert (desk / 'Memory.md').read_text() == 'v3' and (desk / 'notes/3.md').exists()
    cps.restore(kept.before_id)

    forced = cps.restore_turn(ids[1], force=True)
    assert (desk / 'Memory.md').read_text() == 'v1', 'the file as before turn 2'
    assert sorted(forced.written + forced.deleted) == ['Memory.md', 'notes/2.md']
    assert forced.external == ('Memory.md',)
    assert (desk / 'notes/1.md').exists() and (desk / 'notes/3.md').exists(), 'others stay'
    assert cps.show(forced.before_id, 'Memory.md') == b'v3', 'the pre-snapshot keeps it'


def test_message_id_is_the_turn_id(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'v0')
    with cps.turn('please fix the plan', message_id='msg_01H8') as turn:
        guarded_write(cps, 'notes/plan.md', 'plan')
    assert turn.turn_id == 'msg_01H8'
    assert cps.list()[0].turn == 'msg_01H8'
    cps.restore_turn('msg_01H8')
    assert not (desk / 'notes/plan.md').exists()


@pytest.mark.parametrize('bad', ['', '  ', 'two words', 'line\nbreak', 7])
def test_bad_message_ids_are_refused(cps: Checkpoints, bad: object) -> None:
    with pytest.raises(CheckpointError, match='message_id'):
        with cps.turn('x', message_id=bad):  # type: ignore[arg-type]
            pass


def test_turns_lists_newest_first_with_labels(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'v0')
    with cps.turn('first: remember the watchlist') as one:
        guarded_write(cps, 'Memory.md', 'v1')
        guarded_write(cps, 'notes/a.md', 'a')
    guarded_write(cps, 'Memory.md', 'outside any turn')
    with cps.turn('second\nlabel  spread   over lines') as two:
        guarded_write(cps, 'Memory.md', 'v2')
    with cps.turn('no writes'):
        pass
    listed = cps.turns()
    assert [t.turn_id for t in listed] == [two.turn_id, one.turn_id]
    assert [t.label for t in listed] == [
        'second label spread over lines',
        'first: remember the watchlist',
    ]
    assert [c.checkpoint_id for c in listed[1].checkpoints] == one.checkpoint_ids[::-1]
    assert listed[1].first.checkpoint_id == one.checkpoint_ids[0]
    assert listed[1].started_at == listed[1].first.created_at
    assert [t.turn_id for t in cps.turns(limit=1)] == [two.turn_id]
    with pytest.raises(CheckpointError, match='limit'):
        cps.turns(limit=-1)


def test_unknown_turn_changes_nothing(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'v0')
    with pytest.raises(CheckpointError, match='no checkpoints yet'):
        cps.restore_turn('turn-x')
    guarded_write(cps, 'Memory.md', 'v1')
    before = tree_of(desk)
    with pytest.raises(UnknownCheckpointError, match="no turn 'turn-x'"):
        cps.restore_turn('turn-x')
    assert tree_of(desk) == before and len(cps.list()) == 1


def test_turns_of_one_desk_do_not_nest(cps: Checkpoints, workspace: Path) -> None:
    other = checkpoints_in(workspace, 'b')
    with cps.turn('outer') as outer:
        with pytest.raises(CheckpointError, match='do not nest'):
            with Checkpoints(cps.repository_directory, cps.desk_directory).turn('inner'):
                pass
        with other.turn('another desk') as inner:
            assert inner.turn_id != outer.turn_id
    with cps.turn('after'):  # the failed nesting left no turn open
        pass


def test_turns_are_per_thread(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'v0')
    opened = threading.Event()
    release = threading.Event()

    def agent() -> None:
        with cps.turn('on another thread'):
            opened.set()
            release.wait(10)

    thread = threading.Thread(target=agent)
    thread.start()
    try:
        assert opened.wait(10)
        guarded_write(cps, 'Memory.md', 'v1')
    finally:
        release.set()
        thread.join()
    assert cps.list()[0].turn is None, "another thread's turn must not tag this write"


def test_parallel_tool_calls_of_one_turn_share_one_pre_image(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'v0')
    cps.snapshot('start')
    with cps.turn('parallel tools') as turn:

        def tool(n: int) -> None:
            with cps.guard(f'write_file notes/{n}.md', turn=turn):
                write(desk, f'notes/{n}.md', str(n))

        with ThreadPoolExecutor(4) as pool:
            list(pool.map(tool, range(8)))
    tagged = [c for c in cps.list() if c.turn == turn.turn_id]
    assert len(tagged) == len(turn.checkpoint_ids) >= 1
    cps.restore_turn(turn.turn_id)
    assert not (desk / 'notes').exists() and (desk / 'Memory.md').read_text() == 'v0'


def test_asyncio_tasks_keep_their_own_turns(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'v0')

    async def agent(path: str) -> tuple[str, list[str]]:
        with cps.turn(f'writes {path}') as turn:  # both tasks, one desk, at the same time
            for n in range(3):
                await asyncio.sleep(0.005)
                guarded_write(cps, path, f'{path} {n}')
        return turn.turn_id, turn.checkpoint_ids

    async def main() -> list[tuple[str, list[str]]]:
        return list(await asyncio.gather(agent('Memory.md'), agent('notes/b.md')))

    results = asyncio.run(main())
    tags = {c.checkpoint_id: c.turn for c in cps.list()}
    for turn_id, ids in results:
        assert ids and all(tags[i] == turn_id for i in ids)
    assert results[0][0] != results[1][0]


@needs_git
def test_turn_id_is_a_real_git_trailer(cps: Checkpoints, desk: Path, repo_dir: Path) -> None:
    write(desk, 'Memory.md', 'v0')
    with cps.turn('look at me', message_id='msg_9'):
        guarded_write(cps, 'Memory.md', 'v1')
    out = git(repo_dir, 'log', '-1', '--format=%(trailers:key=Checkpoint-Turn,valueonly)%n%b')
    assert out.splitlines()[0] == 'msg_9'
    assert 'Turn label: look at me' in out


def test_snapshot_in_turn_without_an_open_turn(cps: Checkpoints, desk: Path) -> None:
    from trading_checkpoints.ops.turns import snapshot_in_turn

    write(desk, 'Memory.md', 'v0')
    cps.snapshot('manual')  # unchanged desk: the turn's first snapshot must still mark it
    first = snapshot_in_turn(cps, 'msg_5', 'before edit 1', label='two edits')
    write(desk, 'Memory.md', 'v1')
    second = snapshot_in_turn(cps, 'msg_5', 'before edit 2')
    assert first is not None and second is not None
    assert snapshot_in_turn(cps, 'msg_5', 'nothing changed') is None, 'only the first is forced'
    write(desk, 'Memory.md', 'v2')
    [turn] = cps.turns()
    assert turn.label == 'two edits' and turn.first.checkpoint_id == first
    cps.restore_turn('msg_5')
    assert (desk / 'Memory.md').read_text() == 'v0'
    with pytest.raises(CheckpointError, match='one word'):
        snapshot_in_turn(cps, 'two words', 'x')


def test_restore_turn_dry_run_changes_nothing(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'v0')
    with cps.turn('edit', message_id='msg_1'):
        guarded_write(cps, 'Memory.md', 'v1')
        guarded_write(cps, 'notes/a.md', 'a')
    before, history = tree_of(desk), cps.list()
    if 'dry_run' in inspect.signature(cps.restore_with_result).parameters:
        plan = cps.restore_turn('msg_1', dry_run=True)
        assert set(plan.written) == {'Memory.md'} and set(plan.deleted) == {'notes/a.md'}
    else:  # the library's dry run arrives with the history verbs
        with pytest.raises(CheckpointError, match='dry run of a restore is not available'):
            cps.restore_turn('msg_1', dry_run=True)
    assert tree_of(desk) == before and cps.list() == history


def test_a_snapshot_naming_a_turn_marks_its_start_on_an_unchanged_desk(
    cps: Checkpoints, desk: Path
) -> None:
    write(desk, 'Memory.md', 'v0')
    cps.snapshot('manual')  # the desk now equals the newest checkpoint
    first = cps.snapshot('before write', tool='write_file', paths=['Memory.md'], turn='t-7')
    assert first is not None, "the turn's first snapshot leaves a checkpoint"
    [turn] = cps.turns()
    assert (turn.turn_id, turn.first.checkpoint_id) == ('t-7', first)
    assert cps.snapshot('again', turn='t-7') is None, 'only the first one is forced'
    write(desk, 'Memory.md', 'v1')
    assert cps.restore_turn('t-7').written == ('Memory.md',)
    assert (desk / 'Memory.md').read_text() == 'v0'
    assert cps.snapshot_with_result('untagged').checkpoint_id is None
