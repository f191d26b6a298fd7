"""A tool call on a desk from its hook before to its hook after (``ops/toolcalls.py``), driven in
the test's process on a real desk and repository: the checkpoint before it, the call on record,
its end, the seal, and a call closed as unfinished."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from helpers.builders import write
from helpers.faults import ChildOutcome, armed, run_child
from helpers.gitcli import fsck

from trading_checkpoints import Checkpoints
from trading_checkpoints.desk import scan as scans
from trading_checkpoints.errors import MissingDeskError
from trading_checkpoints.ops import calls, engine, external, snapshot, toolcalls, turnindex
from trading_checkpoints.ops.calls import SHELL, UNFINISHED, WRITE, WROTE
from trading_checkpoints.ops.prompts import LABEL_PREFIX
from trading_checkpoints.ops.toolcalls import ToolCall
from trading_checkpoints.store import metadata
from trading_checkpoints.store.metadata import Writer
from trading_checkpoints.store.repo import PRIVATE_DIR, ShadowRepo

S = Writer('t-1', 'S')
WRITE_TOOL, SHELL_TOOL = 'claude:Write', 'claude:Bash'


@pytest.fixture
def cps(workspace: Path, desk: Path) -> Checkpoints:
    write(desk, 'Memory.md', 'v0\n')
    cps = Checkpoints.open(workspace / '.checkpoints' / 'main.git', desk)
    cps.snapshot('start')
    return cps


def newest_message(cps: Checkpoints) -> str:
    repo = ShadowRepo.open(cps.repository_directory)
    assert repo is not None
    try:
        head = repo.head()
        assert head is not None
        return repo.commit_info(head).message
    finally:
        repo.close()


def seal_and_head(cps: Checkpoints) -> tuple[bytes | None, bytes | None]:
    repo = ShadowRepo.open(cps.repository_directory)
    assert repo is not None
    try:
        return external.seal_id(repo), repo.head()
    finally:
        repo.close()


def record(cps: Checkpoints) -> dict[str, calls.Call]:
    return calls.load(cps.repository_directory)


def count(cps: Checkpoints) -> int:
    return len(cps.list(None))


def settled(cps: Checkpoints) -> None:
    """Waits past the second of the desk's last change, then seals the desk (as another hook
    would): the desk is its newest checkpoint, sealed as such, and no stat cache entry is
    racy, so a look finds it settled without reading a file again."""
    time.sleep(1.05 - time.time() % 1)
    assert cps.snapshot('refresh the stat cache') is None
    cps.seal()
    assert snapshot.settled(cps.desk_config)


def walks_under_lock(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether the repository's lock was held, for each walk of the desk from now on."""
    walks: list[bool] = []
    held = [False]
    walk, locked = scans.walk, engine.locked

    def counted(*args: object, **kwargs: object) -> object:
        walks.append(held[0])
        return walk(*args, **kwargs)  # type: ignore[arg-type]

    @contextmanager
    def holding(*args: Any, **kwargs: Any) -> Iterator[object]:
        with locked(*args, **kwargs) as session:
            held[0] = True
            try:
                yield session
            finally:
                held[0] = False

    monkeypatch.setattr(scans, 'walk', counted)
    monkeypatch.setattr(engine, 'locked', holding)
    return walks


# -- a write tool ---------------------------------------------------------------------------


def test_a_write_without_a_session_is_a_plain_checkpoint_and_no_call(
    cps: Checkpoints, desk: Path
) -> None:
    call = ToolCall('toolu_1', WRITE_TOOL, None)
    assert toolcalls.before_write(cps, call, 'before Write Memory.md', ['Memory.md']) is None
    write(desk, 'Memory.md', 'v1 by a person\n')
    new_id = toolcalls.before_write(cps, call, 'before Write Memory.md', ['Memory.md'])
    [newest] = cps.list(1)
    assert new_id == newest.checkpoint_id and newest.reason == 'before Write Memory.md'
    assert (newest.tool, newest.paths, newest.turn) == (WRITE_TOOL, ('Memory.md',), None)
    assert record(cps) == {}, 'no session: no call on record'


def test_a_write_in_a_turn_marks_its_start_and_goes_on_record(cps: Checkpoints) -> None:
    call = ToolCall('toolu_1', WRITE_TOOL, S, label='fix the memory', inputs='d' * 64)
    first = toolcalls.before_write(cps, call, 'before Write Memory.md', ['Memory.md'])
    [newest] = cps.list(1)
    assert first == newest.checkpoint_id, "the turn's first checkpoint, though nothing changed"
    assert (newest.reason, newest.tool, newest.paths) == (
        'before Write Memory.md',
        WRITE_TOOL,
        ('Memory.md',),
    )
    assert metadata.parse(newest_message(cps)).session == 'S'
    [turn] = cps.turns(None)
    assert (turn.turn_id, turn.label) == ('t-1', 'fix the memory')
    on_record = record(cps)['toolu_1']
    assert (on_record.writer, on_record.tool, on_record.kind) == (S, WRITE_TOOL, WRITE)
    assert (on_record.paths, on_record.inputs, on_record.open) == (('Memory.md',), 'd' * 64, True)
    second = ToolCall('toolu_2', WRITE_TOOL, S, label='fix the memory')
    assert toolcalls.before_write(cps, second, 'before Write notes/a.md', ['notes/a.md']) is None
    assert record(cps)['toolu_2'].paths == ('notes/a.md',)


def test_a_later_write_on_an_unchanged_desk_declares_its_paths(
    cps: Checkpoints, desk: Path
) -> None:
    """Not the turn's first write, on a desk equal to its newest checkpoint: the paths the
    tool declares are announced, so a person's edit elsewhere before the write is sealed still
    counts as made outside the agent (with nothing declared, nothing could)."""
    first = ToolCall('toolu_1', WRITE_TOOL, S)
    toolcalls.before_write(cps, first, 'before Write Memory.md', ['Memory.md'])
    write(desk, 'Memory.md', 'v1 by the agent\n')
    toolcalls.after_write(cps.desk_config, first, ['Memory.md'])
    assert cps.snapshot('the sealed write committed') is not None
    later = ToolCall('toolu_2', WRITE_TOOL, S)
    assert toolcalls.before_write(cps, later, 'before Write notes/a.md', ['notes/a.md']) is None
    write(desk, 'notes/a.md', 'by the agent\n')
    write(desk, 'Memory.md', 'v2 by a person\n')
    status = cps.status()
    assert (status.basis, status.external) == ('declared', ('Memory.md',))


def test_a_later_write_on_a_changed_desk_names_its_tool_turn_and_session(
    cps: Checkpoints, desk: Path
) -> None:
    """Not the turn's first write: the checkpoint of a change made since (a person's) carries
    the tool, the paths, the turn and the session, as the turn's first does."""
    toolcalls.before_write(cps, ToolCall('toolu_1', WRITE_TOOL, S), 'before Write', ['Memory.md'])
    write(desk, 'notes/b.md', 'by a person\n')
    later = ToolCall('toolu_2', WRITE_TOOL, S)
    new_id = toolcalls.before_write(cps, later, 'before Write notes/a.md', ['notes/a.md'])
    [newest] = cps.list(1)
    assert new_id == newest.checkpoint_id
    assert (newest.tool, newest.paths, newest.turn) == (WRITE_TOOL, ('notes/a.md',), 't-1')
    assert metadata.parse(newest_message(cps)).session == 'S'


@pytest.mark.parametrize('changed', [False, True], ids=['unchanged', 'changed'])
def test_a_write_tools_first_hook_walks_the_desk_once(
    cps: Checkpoints, desk: Path, monkeypatch: pytest.MonkeyPatch, changed: bool
) -> None:
    """The look without the lock walks the desk; the locked session commits (or marks the
    turn's start) from that scan, not from a second walk: the lock is never held for a
    walk."""
    if changed:
        write(desk, 'notes/b.md', 'by a person\n')
    walks = walks_under_lock(monkeypatch)
    call = ToolCall('toolu_1', WRITE_TOOL, S)
    assert toolcalls.before_write(cps, call, 'before Write', ['Memory.md']) is not None
    assert walks == [False]


def test_a_write_tools_first_hook_remembers_how_far_back_its_turn_began(
    cps: Checkpoints, desk: Path
) -> None:
    """Learning that the turn is new walked back through many checkpoints: the hook leaves
    the turn index, so the next event of the turn walks back only to its tip."""
    for index in range(turnindex.REMEMBER_AFTER + 2):
        write(desk, 'Memory.md', f'v{index + 1}\n')
        cps.snapshot(f'version {index}')
    index_file = cps.repository_directory / turnindex.NAME
    assert not index_file.exists()
    call = ToolCall('toolu_1', WRITE_TOOL, S)
    assert toolcalls.before_write(cps, call, 'before Write', ['Memory.md']) is not None
    assert index_file.is_file()


@pytest.mark.parametrize('hook', ['before', 'after'])
def test_a_shell_commands_hooks_remember_how_far_back_its_turn_began(
    cps: Checkpoints, desk: Path, hook: str
) -> None:
    """Either hook of a command (the one after alone when the one before was not seen) asks
    whether its turn began, walking back through many checkpoints: it leaves the turn index
    for the next event."""
    for index in range(turnindex.REMEMBER_AFTER + 2):
        write(desk, 'Memory.md', f'v{index + 1}\n')
        cps.snapshot(f'version {index}')
    index_file = cps.repository_directory / turnindex.NAME
    assert not index_file.exists()
    write(desk, 'notes/a.md', 'changed before the command\n')
    call = ToolCall('toolu_1', SHELL_TOOL, S)
    if hook == 'before':
        toolcalls.before_shell(cps.desk_config, call, 'before Bash: echo')
    else:
        toolcalls.after_shell(cps.desk_config, call, 'after Bash: echo')
    assert index_file.is_file()


def test_a_shell_command_on_a_desk_never_checkpointed_takes_its_first_checkpoint(
    workspace: Path, desk: Path
) -> None:
    """No repository yet (the look without the lock gives up): the locked session makes it
    and checkpoints the desk before the command, in the command's turn."""
    write(desk, 'Memory.md', 'v0\n')
    cps = Checkpoints.open(workspace / '.checkpoints' / 'main.git', desk)
    call = ToolCall('toolu_1', SHELL_TOOL, S)
    new_id = toolcalls.before_shell(cps.desk_config, call, 'before Bash: echo')
    [first] = cps.list(None)
    assert new_id is not None and first.checkpoint_id.startswith(new_id)
    assert first.turn == 't-1' and 'toolu_1' in record(cps)


def test_a_shell_command_later_in_a_turn_checkpoints_a_changed_desk_under_its_name(
    cps: Checkpoints, desk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The turn has begun: the checkpoint before the command carries its reason, tool, turn
    and session as composed at first; the desk is walked without the lock, never under it."""
    toolcalls.before_write(cps, ToolCall('toolu_1', WRITE_TOOL, S), 'before Write', ['Memory.md'])
    write(desk, 'Memory.md', 'v1 by the agent\n')
    write(desk, 'notes/b.md', 'by a person\n')
    walks = walks_under_lock(monkeypatch)
    call = ToolCall('toolu_2', SHELL_TOOL, S)
    new_id = toolcalls.before_shell(cps.desk_config, call, 'before Bash: ls')
    assert walks == [False]
    [newest] = cps.list(1)
    assert new_id is not None and newest.checkpoint_id.startswith(new_id)
    assert (newest.reason, newest.tool, newest.turn) == ('before Bash: ls', SHELL_TOOL, 't-1')
    assert metadata.parse(newest_message(cps)).session == 'S'


def test_a_write_on_a_desk_folder_that_does_not_exist_is_refused(workspace: Path) -> None:
    """Refused before anything is written: no repository is made for it."""
    cps = Checkpoints.open(workspace / '.checkpoints' / 'gone.git', workspace / 'desks' / 'gone')
    call = ToolCall('toolu_1', WRITE_TOOL, S)
    with pytest.raises(MissingDeskError):
        toolcalls.before_write(cps, call, 'before Write', ['Memory.md'])
    assert not cps.repository_directory.exists()


def test_after_a_write_the_call_ends_with_what_it_left_and_the_desk_is_sealed(
    cps: Checkpoints, desk: Path
) -> None:
    call = ToolCall('toolu_1', WRITE_TOOL, S)
    toolcalls.before_write(cps, call, 'before Write Memory.md', ['Memory.md'])
    write(desk, 'Memory.md', 'v1 by the agent\n')
    sealed = toolcalls.after_write(cps.desk_config, call, ['Memory.md'])
    seal, head = seal_and_head(cps)
    assert seal is not None and seal != head and seal.decode().startswith(sealed)
    assert cps.show(sealed, 'Memory.md') == b'v1 by the agent\n'
    ended = record(cps)['toolu_1']
    assert ended.outcome == WROTE and set(ended.left) == {'Memory.md'}


def test_a_call_without_an_id_is_found_by_its_session_tool_paths_and_inputs(
    cps: Checkpoints, desk: Path
) -> None:
    call = ToolCall(None, WRITE_TOOL, S, inputs='a' * 64)
    toolcalls.before_write(cps, call, 'before Write Memory.md', ['Memory.md'])
    [made_up] = record(cps)
    assert made_up.startswith('call-')
    other = ToolCall(None, WRITE_TOOL, S, inputs='b' * 64)
    toolcalls.after_write(cps.desk_config, other, ['Memory.md'])  # given something else
    assert record(cps)[made_up].open
    write(desk, 'Memory.md', 'v1\n')
    toolcalls.after_write(cps.desk_config, call, ['Memory.md'])
    assert record(cps)[made_up].outcome == WROTE


def test_an_end_of_a_call_not_on_record_ends_nothing_and_still_seals(
    cps: Checkpoints, desk: Path
) -> None:
    toolcalls.before_write(cps, ToolCall('toolu_1', WRITE_TOOL, S), 'before', ['Memory.md'])
    write(desk, 'Memory.md', 'v1\n')
    for stranger in (ToolCall('toolu_9', WRITE_TOOL, S), ToolCall(None, WRITE_TOOL, None)):
        toolcalls.after_write(cps.desk_config, stranger, ['Memory.md'])
        assert record(cps)['toolu_1'].open and set(record(cps)) == {'toolu_1'}
    seal, head = seal_and_head(cps)
    assert seal is not None and seal != head, 'the write is sealed all the same'


# -- a shell command ------------------------------------------------------------------------


def test_a_shell_command_without_a_session_checkpoints_only_a_changed_desk(
    cps: Checkpoints, desk: Path
) -> None:
    call = ToolCall('toolu_1', SHELL_TOOL, None)
    assert toolcalls.before_shell(cps.desk_config, call, 'before Bash: ls') is None
    write(desk, 'Memory.md', 'v1 by a person\n')
    new_id = toolcalls.before_shell(cps.desk_config, call, 'before Bash: ls')
    [newest] = cps.list(1)
    assert new_id == newest.checkpoint_id
    assert (newest.reason, newest.tool, newest.turn) == ('before Bash: ls', SHELL_TOOL, None)
    assert record(cps) == {}


def test_a_shell_command_in_a_turn_labels_its_first_checkpoint_and_goes_on_record(
    cps: Checkpoints, desk: Path
) -> None:
    call = ToolCall('toolu_1', SHELL_TOOL, S, label='tidy up')
    assert toolcalls.before_shell(cps.desk_config, call, 'before Bash: ls') is None, (
        'an unchanged desk: no checkpoint, not even to mark the turn'
    )
    on_record = record(cps)['toolu_1']
    assert (on_record.kind, on_record.paths, on_record.writer) == (SHELL, (), S)
    write(desk, 'Memory.md', 'v1 by a person\n')
    later = ToolCall('toolu_2', SHELL_TOOL, S, label='tidy up')
    new_id = toolcalls.before_shell(cps.desk_config, later, 'before Bash: cat')
    [newest] = cps.list(1)
    assert new_id == newest.checkpoint_id and (newest.turn, newest.tool) == ('t-1', SHELL_TOOL)
    assert metadata.parse(newest_message(cps)).session == 'S'
    assert [(t.turn_id, t.label) for t in cps.turns(None)] == [('t-1', 'tidy up')]
    write(desk, 'Memory.md', 'v2 by a person\n')
    third = ToolCall('toolu_3', SHELL_TOOL, S, label='tidy up')
    toolcalls.before_shell(cps.desk_config, third, 'before Bash: wc')
    assert LABEL_PREFIX not in newest_message(cps), 'the turn had begun: no label again'


def test_after_a_shell_command_what_it_changed_is_its_turns(cps: Checkpoints, desk: Path) -> None:
    call = ToolCall('toolu_1', SHELL_TOOL, S, label='tidy up')
    toolcalls.before_shell(cps.desk_config, call, 'before Bash: echo')
    write(desk, 'notes/new.md', 'by the command\n')
    done = toolcalls.after_shell(cps.desk_config, call, 'after Bash: echo')
    [newest] = cps.list(1)
    assert done.checkpoint_id == newest.checkpoint_id and done.paths == ('notes/new.md',)
    assert (newest.reason, newest.turn, newest.tool) == ('after Bash: echo', 't-1', SHELL_TOOL)
    assert metadata.parse(newest_message(cps)).session == 'S'
    assert [(t.turn_id, t.label) for t in cps.turns(None)] == [('t-1', 'tidy up')]
    [group] = metadata.written_groups(newest_message(cps))
    assert group.writer == S and group.paths == {'notes/new.md'}
    assert 'toolu_1' not in record(cps), 'the capture settled the command'
    again = ToolCall('toolu_2', SHELL_TOOL, S, label='tidy up')
    toolcalls.before_shell(cps.desk_config, again, 'before Bash: echo')
    write(desk, 'notes/new.md', 'by the command, again\n')
    toolcalls.after_shell(cps.desk_config, again, 'after Bash: echo')
    assert LABEL_PREFIX not in newest_message(cps), 'the turn had begun: no label again'


def test_after_a_command_that_changed_nothing_its_call_still_ends(cps: Checkpoints) -> None:
    settled(cps)  # no racy entry: the second look reads no file again
    call = ToolCall('toolu_1', SHELL_TOOL, S)
    assert toolcalls.before_shell(cps.desk_config, call, 'before Bash: ls') is None, 'unchanged'
    before = count(cps)
    assert toolcalls.after_shell(cps.desk_config, call, 'after Bash: ls').checkpoint_id is None
    assert count(cps) == before and 'toolu_1' not in record(cps)
    first, second = ToolCall('toolu_2', SHELL_TOOL, S), ToolCall('toolu_3', SHELL_TOOL, S)
    assert toolcalls.before_shell(cps.desk_config, first, 'before Bash: ls') is None
    seal, head = seal_and_head(cps)
    assert seal != head, "the command's turn is announced: what it changes is the turn's"
    # Two commands at once: the second's look answers (the first declared the same already).
    assert toolcalls.before_shell(cps.desk_config, second, 'before Bash: ls') is None
    assert {'toolu_2', 'toolu_3'} <= set(record(cps))


def test_after_a_command_not_on_record_a_settled_desk_is_left_alone(
    cps: Checkpoints, desk: Path
) -> None:
    denied = ToolCall('toolu_1', WRITE_TOOL, S)  # closed, changing nothing: the desk settled
    toolcalls.before_write(cps, denied, 'before Write Memory.md', ['Memory.md'])
    toolcalls.unfinished(cps.desk_config, denied, None, ['Memory.md'])
    settled(cps)
    stranger = ToolCall('toolu_9', SHELL_TOOL, S)  # its hook before never ran here
    before = count(cps), seal_and_head(cps), record(cps)
    assert toolcalls.after_shell(cps.desk_config, stranger, 'after Bash').checkpoint_id is None
    assert (count(cps), seal_and_head(cps), record(cps)) == before
    call = ToolCall(None, SHELL_TOOL, None)
    before = count(cps), seal_and_head(cps), record(cps)
    assert toolcalls.after_shell(cps.desk_config, call, 'after Bash: ls').checkpoint_id is None
    assert (count(cps), seal_and_head(cps), record(cps)) == before
    write(desk, 'notes/new.md', 'by the command\n')
    done = toolcalls.after_shell(cps.desk_config, call, 'after Bash: echo')
    assert done.paths == ('notes/new.md',) and cps.list(1)[0].turn is None


def test_a_command_whose_hook_before_was_not_seen_is_credited_to_its_turn(
    cps: Checkpoints, desk: Path
) -> None:
    """The command's hook before never ran here (the hooks installed while it ran): what
    changed since the newest checkpoint and no call on record explains is its turn's, for
    certain, while another session's write is at work on another path; the capture seals,
    and leaves only that write on record (a write that ended before is settled)."""
    other = ToolCall('toolu_2', WRITE_TOOL, Writer('t-2', 'U'))
    toolcalls.before_write(cps, other, 'before Write notes/plan.md', ['notes/plan.md'])
    v = Writer('t-3', 'V')
    done_before = ToolCall('toolu_1', WRITE_TOOL, v)
    toolcalls.before_write(cps, done_before, 'before Write notes/v.md', ['notes/v.md'])
    write(desk, 'notes/v.md', 'by the write\n')
    toolcalls.after_write(cps.desk_config, done_before, ['notes/v.md'])
    assert sorted(record(cps)) == ['toolu_1', 'toolu_2']
    write(desk, 'notes/new.md', 'by the command\n')
    stranger = ToolCall('toolu_9', SHELL_TOOL, S)
    done = toolcalls.after_shell(cps.desk_config, stranger, 'after Bash: echo')
    [newest] = cps.list(1)
    assert done.checkpoint_id == newest.checkpoint_id
    assert done.paths == ('notes/new.md', 'notes/v.md')
    assert (newest.turn, newest.tool) == ('t-1', SHELL_TOOL)
    groups = {g.writer: (g.paths, g.maybe) for g in metadata.written_groups(newest_message(cps))}
    assert groups == {S: ({'notes/new.md'}, set()), v: ({'notes/v.md'}, set())}
    seal, head = seal_and_head(cps)
    assert seal == head, 'the state the command left is sealed'
    assert list(record(cps)) == ['toolu_2']
    lines = (cps.repository_directory / calls.NAME).read_bytes().splitlines()
    assert {json.loads(line)['id'] for line in lines} == {'toolu_2'}


def test_a_command_after_a_write_that_changed_nothing_is_credited_alone(
    cps: Checkpoints, desk: Path
) -> None:
    """A write that left its file as it was (its call ended and still on record: no
    checkpoint settled it), then a command that changes the file: the command began after
    the write ended, so the change is the command's turn's, for certain."""
    write(desk, 'notes/a.md', 'same\n')
    cps.snapshot('a')
    same = ToolCall('toolu_1', WRITE_TOOL, Writer('t-2', 'U'))
    toolcalls.before_write(cps, same, 'before Write notes/a.md', ['notes/a.md'])
    write(desk, 'notes/a.md', 'same\n')
    toolcalls.after_write(cps.desk_config, same, ['notes/a.md'])
    shell = ToolCall('toolu_2', SHELL_TOOL, S)
    toolcalls.before_shell(cps.desk_config, shell, 'before Bash: echo')
    assert record(cps)['toolu_1'].outcome == WROTE, 'the write is still on record'
    write(desk, 'notes/a.md', 'by the command\n')
    done = toolcalls.after_shell(cps.desk_config, shell, 'after Bash: echo')
    assert done.paths == ('notes/a.md',)
    [group] = metadata.written_groups(newest_message(cps))
    assert (group.writer, group.paths, group.maybe) == (S, {'notes/a.md'}, frozenset())


def test_a_command_that_changed_nothing_seals_over_a_write_that_never_came(
    cps: Checkpoints,
) -> None:
    """A write announced (its hook before ran) whose tool never wrote nor reported, then a
    command of the same turn that changed nothing: no checkpoint, and the desk as the agent
    left it is the newest checkpoint, sealed as such."""
    toolcalls.before_write(cps, ToolCall('toolu_1', WRITE_TOOL, S), 'before Write', ['Memory.md'])
    shell = ToolCall('toolu_2', SHELL_TOOL, S)
    toolcalls.before_shell(cps.desk_config, shell, 'before Bash: ls')
    seal, head = seal_and_head(cps)
    assert seal != head, 'the write is announced'
    before = count(cps)
    assert toolcalls.after_shell(cps.desk_config, shell, 'after Bash: ls').checkpoint_id is None
    assert count(cps) == before and seal_and_head(cps) == (head, head)


def test_a_command_closed_unfinished_stores_a_large_file_it_wrote(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    """A file over the size a scan streams to the store, written by a command closed as
    unfinished: its checkpoint holds the file's blob (git fsck finds none missing) and a
    restore brings the file back."""
    call = ToolCall('toolu_1', SHELL_TOOL, S)
    toolcalls.before_shell(cps.desk_config, call, 'before Bash: make')
    big = os.urandom(1024) * (scans.STREAM_THRESHOLD // 1024 + 1)
    (desk / 'notes').mkdir(exist_ok=True)
    (desk / 'notes' / 'big.bin').write_bytes(big)
    done = toolcalls.unfinished(cps.desk_config, call, None)
    assert done is not None and done.paths == ('notes/big.bin',)
    fsck(repo_dir)
    (desk / 'notes' / 'big.bin').write_bytes(b'changed\n')
    assert done.checkpoint_id is not None
    cps.restore(done.checkpoint_id)
    assert (desk / 'notes' / 'big.bin').read_bytes() == big


def test_a_write_tools_seal_stores_a_large_file_it_wrote(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    """A file over the size a scan streams to the store, written by a write tool: its seal
    holds the file's blob (git fsck finds none missing), and the snapshot after it commits it."""
    call = ToolCall('toolu_1', WRITE_TOOL, S)
    toolcalls.before_write(cps, call, 'before Write notes/big.bin', ['notes/big.bin'])
    big = os.urandom(1024) * (scans.STREAM_THRESHOLD // 1024 + 1)
    (desk / 'notes').mkdir(exist_ok=True)
    (desk / 'notes' / 'big.bin').write_bytes(big)
    toolcalls.after_write(cps.desk_config, call, ['notes/big.bin'])
    fsck(repo_dir)
    new_id = cps.snapshot('after the write')
    assert new_id is not None
    (desk / 'notes' / 'big.bin').write_bytes(b'changed\n')
    cps.restore(new_id)
    assert (desk / 'notes' / 'big.bin').read_bytes() == big


# -- a call closed as unfinished ------------------------------------------------------------


def test_nothing_is_closed_on_a_desk_without_a_repository(workspace: Path) -> None:
    cps = Checkpoints.open(workspace / '.checkpoints' / 'main.git', workspace / 'desks' / 'main')
    assert toolcalls.unfinished(cps.desk_config, None, 'S') is None
    assert not cps.repository_directory.exists()


def test_a_call_not_on_record_closes_nothing(cps: Checkpoints) -> None:
    before = count(cps), seal_and_head(cps)
    for stranger in (ToolCall('toolu_9', WRITE_TOOL, S), ToolCall(None, WRITE_TOOL, S)):
        assert toolcalls.unfinished(cps.desk_config, stranger, None, ['Memory.md']) is None
    assert toolcalls.unfinished(cps.desk_config, None, 'S') is None
    assert (count(cps), seal_and_head(cps)) == before


def test_a_denied_write_that_changed_nothing_withdraws_its_announcement(cps: Checkpoints) -> None:
    call = ToolCall('toolu_1', WRITE_TOOL, S)
    toolcalls.before_write(cps, call, 'before Write Memory.md', ['Memory.md'])
    seal, head = seal_and_head(cps)
    assert seal != head, 'the write is announced'
    before = count(cps)
    done = toolcalls.unfinished(cps.desk_config, call, None, ['Memory.md'])
    assert done is not None and done.checkpoint_id is None and count(cps) == before
    assert seal_and_head(cps) == (head, head), 'the newest checkpoint is the desk again'
    assert record(cps)['toolu_1'].outcome == UNFINISHED


def test_a_denied_write_leaves_an_earlier_sealed_write_sealed(cps: Checkpoints, desk: Path) -> None:
    """A write that happened and was sealed, then a second write of the same desk whose
    checkpoint found nothing new (the first write is in it) and that was denied: the seal of
    the first write is not replaced by the newest checkpoint."""
    first = ToolCall('toolu_1', WRITE_TOOL, S)
    toolcalls.before_write(cps, first, 'before Write Memory.md', ['Memory.md'])
    write(desk, 'Memory.md', 'v1 by the agent\n')
    toolcalls.after_write(cps.desk_config, first, ['Memory.md'])
    sealed = seal_and_head(cps)
    repo = ShadowRepo.open(cps.repository_directory)
    assert repo is not None and sealed[0] is not None
    try:
        info = repo.commit_info(sealed[0])
    finally:
        repo.close()
    assert metadata.action_of(info.message) != external.ANNOUNCE
    denied = ToolCall('toolu_2', WRITE_TOOL, S)
    calls_before = set(record(cps))
    # Recorded as the hooks record a call whose checkpoint took nothing: only on record.
    from trading_checkpoints.ops import engine

    with engine.locked(cps.desk_config, light=True) as session:
        calls.begin(session, 'toolu_2', S, WRITE_TOOL, ['notes/a.md'])
    assert set(record(cps)) == calls_before | {'toolu_2'}
    toolcalls.unfinished(cps.desk_config, denied, None, ['notes/a.md'])
    assert seal_and_head(cps) == sealed, "the agent's sealed write still holds"


def test_a_failed_write_that_changed_its_file_is_captured_as_uncertain(
    cps: Checkpoints, desk: Path
) -> None:
    call = ToolCall('toolu_1', WRITE_TOOL, S)
    toolcalls.before_write(cps, call, 'before Write Memory.md', ['Memory.md'])
    write(desk, 'Memory.md', 'maybe by the agent\n')
    done = toolcalls.unfinished(cps.desk_config, call, None, ['Memory.md'])
    [newest] = cps.list(1)
    assert done is not None and done.checkpoint_id == newest.checkpoint_id
    assert (newest.reason, newest.tool) == ('after an unfinished tool call', 'hooks')
    [group] = metadata.written_groups(newest_message(cps))
    assert group.writer == S and group.maybe == {'Memory.md'}


def test_a_session_moving_on_closes_its_calls_of_the_kind_asked(
    cps: Checkpoints, desk: Path
) -> None:
    other = Writer('t-2', 'O')
    toolcalls.before_write(cps, ToolCall('w', WRITE_TOOL, S), 'before', ['Memory.md'])
    toolcalls.before_shell(cps.desk_config, ToolCall('s', SHELL_TOOL, S), 'before Bash')
    toolcalls.before_write(cps, ToolCall('o', WRITE_TOOL, other), 'before', ['notes/o.md'])
    assert toolcalls.unfinished(cps.desk_config, None, 'S', kind=WRITE) is not None
    left = record(cps)
    assert (left['w'].outcome, left['s'].open, left['o'].open) == (UNFINISHED, True, True)
    write(desk, 'notes/new.md', 'by the command\n')
    done = toolcalls.unfinished(cps.desk_config, None, 'S')
    assert done is not None and done.paths == ('notes/new.md',), 'a shell closed: captured'
    assert 's' not in record(cps) and record(cps)['o'].open
    assert toolcalls.unfinished(cps.desk_config, None, 'S') is None, 'none left at work'


# -- the lock each step holds -----------------------------------------------------------------


def verbs_while(cps: Checkpoints, step: Callable[[], object]) -> set[str]:
    """The verbs the desk's lock file named each time the call record was written during
    ``step`` (what a writer waiting for the lock is told it waits for)."""
    holder = cps.repository_directory / PRIVATE_DIR / engine.LOCK
    seen: set[str] = set()
    reading: list[bool] = []

    def look(event: str, args: tuple) -> None:
        if reading or event not in ('open', 'os.rename') or not args:
            return
        names = [os.fsdecode(a) for a in args[:2] if isinstance(a, (str, bytes))]
        if event == 'open' and not (isinstance(args[2], int) and args[2] & os.O_WRONLY):
            return
        if any(os.path.basename(name) == 'calls' for name in names[: 2 if event != 'open' else 1]):
            reading.append(True)
            try:
                seen.add(holder.read_text().split()[-1])
            finally:
                reading.pop()

    with armed(look):
        step()
    return seen


def test_each_step_names_itself_in_the_lock(cps: Checkpoints, desk: Path) -> None:
    config = cps.desk_config
    write_call = ToolCall('toolu_1', WRITE_TOOL, S)
    assert verbs_while(  # one session takes the checkpoint and puts the call on record
        cps, lambda: toolcalls.before_write(cps, write_call, 'before', ['Memory.md'])
    ) == {'snapshot'}
    write(desk, 'Memory.md', 'v1\n')
    assert verbs_while(cps, lambda: toolcalls.after_write(config, write_call, ['Memory.md'])) == {
        'seal'
    }
    denied = ToolCall('toolu_2', WRITE_TOOL, S)
    toolcalls.before_write(cps, denied, 'before', ['notes/a.md'])
    assert verbs_while(cps, lambda: toolcalls.unfinished(config, denied, None, ['notes/a.md'])) == {
        'close'
    }
    shell = ToolCall('toolu_3', SHELL_TOOL, S)
    assert verbs_while(cps, lambda: toolcalls.before_shell(config, shell, 'before Bash: echo')) == {
        'snapshot'
    }
    write(desk, 'notes/b.md', 'by the command\n')
    assert verbs_while(cps, lambda: toolcalls.after_shell(config, shell, 'after')) == {'capture'}


# -- a settled desk ---------------------------------------------------------------------------


def test_a_command_on_record_is_settled_even_on_a_settled_desk(cps: Checkpoints) -> None:
    call = ToolCall('toolu_1', SHELL_TOOL, S)
    toolcalls.before_shell(cps.desk_config, call, 'before Bash: ls')
    settled(cps)
    assert toolcalls.after_shell(cps.desk_config, call, 'after Bash: ls').checkpoint_id is None
    assert 'toolu_1' not in record(cps), 'its capture settled it'


def test_a_write_without_an_id_denied_is_found_and_closed(cps: Checkpoints, desk: Path) -> None:
    call = ToolCall(None, WRITE_TOOL, S)
    toolcalls.before_write(cps, call, 'before Write Memory.md', ['Memory.md'])
    [made_up] = record(cps)
    done = toolcalls.unfinished(cps.desk_config, call, None, ['Memory.md'])
    assert done is not None and record(cps)[made_up].outcome == UNFINISHED


def test_a_call_closed_twice_is_closed_once(cps: Checkpoints) -> None:
    """The harness reports a denied write twice (or its failure after the session moved on):
    the second finds it on record but no longer at work, and closes nothing."""
    call = ToolCall('toolu_1', WRITE_TOOL, S)
    toolcalls.before_write(cps, call, 'before Write Memory.md', ['Memory.md'])
    assert toolcalls.unfinished(cps.desk_config, call, None, ['Memory.md']) is not None
    again = toolcalls.unfinished(cps.desk_config, call, None, ['Memory.md'])
    assert again is not None and again.checkpoint_id is None
    assert record(cps)['toolu_1'].outcome == UNFINISHED


def _twin_calls_end_together(
    cps: Checkpoints, monkeypatch: pytest.MonkeyPatch, end: Callable[[ToolCall], object]
) -> None:
    """Two calls of one session with the same tool and input, as Gemini CLI runs them (no call
    id), both at work; ``end`` (a hook after, or a close) runs for each at once: the second in
    another process, between the first's look at the record without the lock and its lock.
    Both calls must end: one left at work explains any change, a person's edit made
    afterwards included."""
    settled(cps)
    call = ToolCall(None, 'gemini:run_shell_command', S, inputs='digest-of-ls')
    for _ in range(2):
        assert toolcalls.before_shell(cps.desk_config, call, 'before run_shell_command: ls') is None
    assert len(calls.open_calls(cps.repository_directory, S.session)) == 2
    real_find = calls.find
    twin: list[ChildOutcome] = []
    forked: list[bool] = []

    def find(*args: Any, **kwargs: Any) -> calls.Call | None:
        found = real_find(*args, **kwargs)
        if not forked:
            forked.append(True)  # before the fork: the twin does not fork again
            twin.append(run_child(lambda: end(call)))
        return found

    monkeypatch.setattr(calls, 'find', find)
    end(call)
    monkeypatch.undo()
    assert twin and twin[0].error is None
    assert calls.open_calls(cps.repository_directory, S.session) == []


def test_twin_shell_calls_whose_hooks_after_run_at_once_both_end(
    cps: Checkpoints, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = cps.desk_config
    _twin_calls_end_together(
        cps, monkeypatch, lambda call: toolcalls.after_shell(config, call, 'after: ls')
    )
    write(cps.desk_directory, 'notes/person.md', 'a person, while the agent thinks\n')
    assert cps.status().external == ('notes/person.md',)


def test_twin_shell_calls_closed_as_unfinished_at_once_both_close(
    cps: Checkpoints, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = cps.desk_config
    _twin_calls_end_together(
        cps, monkeypatch, lambda call: toolcalls.unfinished(config, call, S.session)
    )


@pytest.mark.parametrize('writes', [True, False], ids=['a-write', 'nothing-changed'])
def test_a_shell_call_the_harness_names_no_id_for_ends_at_its_hook_after(
    cps: Checkpoints, desk: Path, writes: bool
) -> None:
    """Gemini CLI names no call id: the hook after a shell command finds its call by session,
    tool and input, and ends it, whether the command changed anything or not. Left at work
    until the turn's end, it would explain a person's edit made meanwhile (a command may write
    anywhere) as the agent's."""
    settled(cps)
    call = ToolCall(None, 'gemini:run_shell_command', S, inputs='digest-of-echo')
    assert toolcalls.before_shell(cps.desk_config, call, 'before run_shell_command: echo') is None
    if writes:
        write(desk, 'notes/shell.md', 'by the command\n')
    done = toolcalls.after_shell(cps.desk_config, call, 'after run_shell_command: echo')
    assert done.paths == (('notes/shell.md',) if writes else ())
    assert not calls.open_calls(cps.repository_directory, S.session), 'the call ended'
    write(desk, 'notes/person.md', 'a person, while the agent thinks\n')
    assert cps.status().external == ('notes/person.md',)
