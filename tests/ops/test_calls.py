"""The call record (``ops/calls.py``): who may have written what, decided from the calls at work,
and a record file read as the untrusted file it is."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest
from helpers.builders import write

from trading_checkpoints import Checkpoints
from trading_checkpoints.ops import calls, engine
from trading_checkpoints.ops.calls import SHELL, UNFINISHED, WRITE, WROTE, Call
from trading_checkpoints.store.metadata import Writer

A, B, C = Writer('turn-a', 'A'), Writer('turn-b', 'B'), Writer('turn-c', 'C')
OLD, NEW, OTHER = (0o100644, b'1' * 40), (0o100644, b'2' * 40), (0o100644, b'3' * 40)


def wrote(call_id: str, writer: Writer, path: str, left: object, began: int, ended: int) -> Call:
    return Call(call_id, writer, 'claude:Write', WRITE, (path,), began, ended, WROTE, {path: left})


def at_work(call_id: str, writer: Writer, kind: str, began: int, *paths: str) -> Call:
    return Call(
        call_id, writer, 'claude:Bash' if kind == SHELL else 'claude:Write', kind, paths, began
    )


def credit(*found: Call, path: str = 'notes/a.md', entry: object = NEW) -> calls.Credit:
    return calls.credit({call.call_id: call for call in found}, [(path, entry)])  # type: ignore[list-item]


# -- who wrote it -----------------------------------------------------------------------------


def test_a_write_that_left_the_entry_wrote_it_whoever_else_was_at_work() -> None:
    found = credit(at_work('s', A, SHELL, 1), wrote('w', B, 'notes/a.md', NEW, 2, 3))
    assert found.wrote == {B: {'notes/a.md'}} and not found.uncertain


def test_the_newest_write_of_a_path_decides() -> None:
    found = credit(
        wrote('w1', A, 'notes/a.md', NEW, 1, 2), wrote('w2', B, 'notes/a.md', OTHER, 3, 4)
    )
    assert found.wrote == {B: {'notes/a.md'}} and found.changed_after == {B: {'notes/a.md'}}


def test_a_write_changed_after_by_no_call_is_changed_after() -> None:
    found = credit(wrote('w', A, 'notes/a.md', OTHER, 1, 2))
    assert found.wrote == {A: {'notes/a.md'}} and found.changed_after == {A: {'notes/a.md'}}
    assert found.explained() == set(), 'changed after: not the call as it is now'


def test_a_write_changed_after_while_a_shell_ran_is_uncertain_for_both() -> None:
    found = credit(wrote('w', A, 'notes/a.md', OTHER, 1, 2), at_work('s', B, SHELL, 0))
    assert found.uncertain == {A: {'notes/a.md'}, B: {'notes/a.md'}} and not found.wrote


def test_a_shell_begun_after_the_write_ended_changed_it_for_certain() -> None:
    found = credit(wrote('w', A, 'notes/a.md', OTHER, 1, 2), at_work('s', B, SHELL, 3))
    assert found.wrote == {B: {'notes/a.md'}} and not found.uncertain and not found.changed_after


def test_a_shell_that_ended_before_the_write_ended_is_no_suspect() -> None:
    shell = Call('s', B, 'claude:Bash', SHELL, (), 0, 1, UNFINISHED)
    found = credit(wrote('w', A, 'notes/a.md', OTHER, 1, 2), shell)
    assert found.changed_after == {A: {'notes/a.md'}} and not found.uncertain


def test_one_call_at_work_alone_wrote_it() -> None:
    assert credit(at_work('s', A, SHELL, 1)).wrote == {A: {'notes/a.md'}}
    assert credit(at_work('w', B, WRITE, 1, 'notes/a.md')).wrote == {B: {'notes/a.md'}}
    two_of_one_turn = credit(at_work('s', A, SHELL, 1), at_work('w', A, WRITE, 2, 'notes/a.md'))
    assert two_of_one_turn.wrote == {A: {'notes/a.md'}}


def test_two_turns_at_work_on_a_path_make_it_uncertain() -> None:
    found = credit(at_work('s', A, SHELL, 1), at_work('w', B, WRITE, 2, 'notes/a.md'))
    assert found.uncertain == {A: {'notes/a.md'}, B: {'notes/a.md'}} and not found.wrote


def test_a_write_at_work_on_another_path_is_no_suspect() -> None:
    found = credit(at_work('s', A, SHELL, 1), at_work('w', B, WRITE, 2, 'notes/b.md'))
    assert found.wrote == {A: {'notes/a.md'}}
    found = credit(at_work('w', B, WRITE, 2, 'notes/b.md'))
    assert found.unknown == ['notes/a.md'] and not found.wrote


def test_an_unfinished_call_is_uncertain_for_what_it_changed_only() -> None:
    changed = Call(
        'u', A, 'claude:Write', WRITE, ('notes/a.md',), 1, 2, UNFINISHED, {'notes/a.md': NEW}
    )
    assert credit(changed).uncertain == {A: {'notes/a.md'}}
    untouched = Call('u', A, 'claude:Write', WRITE, ('notes/a.md',), 1, 2, UNFINISHED, {})
    assert credit(untouched).unknown == ['notes/a.md']
    shell = Call('s', A, 'claude:Bash', SHELL, (), 1, 2, UNFINISHED)
    assert credit(shell).uncertain == {A: {'notes/a.md'}}, 'a shell left unanswered: any path'


def test_no_call_leaves_the_path_to_the_caller() -> None:
    assert credit().unknown == ['notes/a.md']


# -- the record on disk -----------------------------------------------------------------------


@pytest.fixture
def cps(workspace: Path, desk: Path) -> Checkpoints:
    write(desk, 'notes/a.md', 'a0\n')
    cps = Checkpoints.open(workspace / '.checkpoints' / 'main.git', desk)
    cps.snapshot('start')
    return cps


def record_file(cps: Checkpoints) -> Path:
    return cps.repository_directory / calls.NAME


def test_begin_and_end_round_trip(cps: Checkpoints, desk: Path) -> None:
    with engine.locked(cps.desk_config) as session:
        calls.begin(session, 'c1', A, 'claude:Write', ['notes/a.md'])
        calls.begin(session, 'c2', B, 'claude:Bash', None)
    write(desk, 'notes/a.md', 'a1\n')
    with engine.locked(cps.desk_config) as session:
        ended = calls.end(session, 'c1')
        assert calls.end(session, 'c1') is None, 'ended once'
        assert calls.end(session, 'c2') is None, 'a shell call ends with its capture'
    found = calls.load(cps.repository_directory)
    assert ended is not None and found['c1'] == ended
    assert (
        found['c1'].outcome == WROTE
        and found['c1'].before['notes/a.md'] != found['c1'].left['notes/a.md']
    )
    assert found['c2'].open and found['c2'].kind == SHELL
    assert [c.call_id for c in calls.open_calls(cps.repository_directory, 'B')] == ['c2']


def test_an_unfinished_call_keeps_only_what_changed(cps: Checkpoints, desk: Path) -> None:
    with engine.locked(cps.desk_config) as session:
        calls.begin(session, 'c1', A, 'claude:Write', ['notes/a.md', 'notes/b.md'])
    write(desk, 'notes/b.md', 'b\n')
    with engine.locked(cps.desk_config) as session:
        ended = calls.end(session, 'c1', UNFINISHED)
    assert ended is not None and set(ended.left) == {'notes/b.md'}


def test_a_commit_settles_what_ended_before_its_scan(cps: Checkpoints, desk: Path) -> None:
    with engine.locked(cps.desk_config) as session:
        calls.begin(session, 'done', A, 'claude:Write', ['notes/a.md'])
        calls.begin(session, 'shell', B, 'claude:Bash', None)
    write(desk, 'notes/a.md', 'a1\n')
    with engine.locked(cps.desk_config) as session:
        calls.end(session, 'done')
    cps.snapshot('after')
    assert list(calls.load(cps.repository_directory)) == ['shell'], 'the shell is still at work'


def begun(**changes: object) -> bytes:
    """A ``begin`` line of the record, with fields changed."""
    line = {'op': 'begin', 'id': 'x', 'turn': 't', 'tool': 'w', 'kind': 'write', 'paths': []}
    line.update({'t': 1, **changes})  # a fixed time: the ids of the cases must not change
    return json.dumps(line).encode()


@pytest.mark.parametrize(
    'line',
    [
        b'not json',
        b'[1, 2]',
        begun(paths=['../x']),
        begun(paths=['/etc/passwd']),
        begun(turn=''),
        begun(kind='rm -rf'),
        begun(t='soon'),
        b'{"op": "end", "id": "nobody", "outcome": "wrote", "left": {}, "t": 1}',
    ],
)
def test_a_malformed_line_is_left_out(cps: Checkpoints, line: bytes) -> None:
    good = begun(id='ok', session='S', kind='shell')
    record_file(cps).parent.mkdir(exist_ok=True)
    record_file(cps).write_bytes(line + b'\n' + good + b'\n')
    assert list(calls.load(cps.repository_directory)) == ['ok']


def test_a_bad_entry_in_an_end_leaves_the_call_at_work(cps: Checkpoints) -> None:
    now = time.time_ns()
    record_file(cps).write_bytes(
        b'{"op":"begin","id":"c","turn":"t","tool":"w","kind":"write","paths":["notes/a.md"],"t":%d}\n'
        b'{"op":"end","id":"c","outcome":"wrote","left":{"notes/a.md":[33188,"zz"]},"t":%d}\n'
        % (now, now)
    )
    assert calls.load(cps.repository_directory)['c'].open


def test_a_call_open_too_long_counts_as_unfinished(cps: Checkpoints) -> None:
    long_ago = time.time_ns() - calls.MAX_OPEN_NS - 1
    record_file(cps).write_bytes(
        b'{"op":"begin","id":"c","turn":"t","tool":"w","kind":"shell","paths":[],"t":%d}\n'
        % long_ago
    )
    found = calls.load(cps.repository_directory)['c']
    assert found.outcome == UNFINISHED and not found.open


def test_a_record_that_is_a_link_is_never_followed(cps: Checkpoints, tmp_path: Path) -> None:
    elsewhere = tmp_path / 'secret'
    elsewhere.write_bytes(
        b'{"op":"begin","id":"c","turn":"t","tool":"w","kind":"shell","paths":[],"t":1}\n'
    )
    os.symlink(elsewhere, record_file(cps))
    assert calls.load(cps.repository_directory) == {}
    with pytest.raises(Exception) as refused, engine.locked(cps.desk_config) as session:
        calls.begin(session, 'c1', A, 'claude:Bash', None)
    assert 'link' in str(refused.value)
    assert elsewhere.read_bytes().count(b'\n') == 1, 'nothing written through the link'


def test_a_record_that_is_a_fifo_is_refused_at_once(cps: Checkpoints) -> None:
    os.mkfifo(record_file(cps))
    done = threading.Event()

    def read() -> None:
        calls.load(cps.repository_directory)
        done.set()

    threading.Thread(target=read, daemon=True).start()
    assert done.wait(10), 'reading the record waited on a FIFO'


def test_a_huge_record_is_not_read(cps: Checkpoints) -> None:
    with open(record_file(cps), 'wb') as handle:
        handle.truncate(calls.MAX_BYTES + 1)
    assert calls.load(cps.repository_directory) == {}
