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
from helpers.reading import opened

from trading_checkpoints import Checkpoints
from trading_checkpoints.ops import calls, engine
from trading_checkpoints.ops.calls import SHELL, UNFINISHED, WRITE, WROTE, Call
from trading_checkpoints.store import metadata
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


def _newest_writers(cps: Checkpoints) -> dict[Writer | None, tuple[set[str], set[str]]]:
    """Who the newest checkpoint says wrote what: paths for certain, and maybe."""
    with opened(cps.repository_directory) as repo:
        head = repo.head()
        assert head is not None
        message = repo.commit_info(head).message
    return {g.writer: (set(g.paths), set(g.maybe)) for g in metadata.written_groups(message)}


def test_a_call_open_too_long_ended_at_that_age_and_a_commit_lets_it_go(
    cps: Checkpoints, desk: Path
) -> None:
    """A shell call whose hook after never came (its harness killed mid-command) counts as
    unfinished once older than the limit, ended at that age: the next commit cannot tell
    whether a change it holds came while the call ran, and leaves the call off the record;
    later changes are no turn's."""
    began = time.time_ns() - calls.MAX_OPEN_NS - 10**9
    record_file(cps).write_bytes(
        b'{"op":"begin","id":"c","turn":"t","session":"s","tool":"claude:Bash","kind":"shell",'
        b'"paths":[],"t":%d}\n' % began
    )
    assert calls.load(cps.repository_directory)['c'].ended == began + calls.MAX_OPEN_NS
    write(desk, 'notes/p1.md', 'a person\n')
    assert cps.snapshot('the first commit after') is not None
    assert _newest_writers(cps)[Writer('t', 's')] == (set(), {'notes/p1.md'})
    assert calls.load(cps.repository_directory) == {}
    write(desk, 'notes/p2.md', 'a person, later\n')
    assert cps.snapshot('a later commit') is not None
    assert Writer('t', 's') not in _newest_writers(cps)


def test_a_record_too_large_to_read_is_emptied_by_the_next_commit(
    cps: Checkpoints, desk: Path
) -> None:
    """Read as none, a record past its size limit would only grow (every call appended to it
    unread); the next commit empties it, and the calls begun after it are read again."""
    with open(record_file(cps), 'wb') as handle:
        handle.truncate(calls.MAX_BYTES + 1)
    write(desk, 'notes/p.md', 'a person\n')
    assert cps.snapshot('a commit') is not None
    assert record_file(cps).stat().st_size == 0
    with engine.locked(cps.desk_config) as session:
        calls.begin(session, 'c1', A, 'claude:Bash', None)
    assert list(calls.load(cps.repository_directory)) == ['c1']


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


# -- found by mutation (benchmarks/mutation.py calls) -----------------------------------------


def test_each_changed_path_is_credited_on_its_own() -> None:
    """The second path is credited whatever the first one's case was."""
    record = {
        'w': wrote('w', A, 'notes/a.md', OTHER, 1, 2),
        's': at_work('s', B, WRITE, 3, 'notes/b.md'),
    }
    found = calls.credit(record, [('notes/a.md', NEW), ('notes/b.md', NEW)])
    assert found.changed_after == {A: {'notes/a.md'}} and found.wrote[B] == {'notes/b.md'}


def test_only_calls_that_may_write_the_path_are_suspects() -> None:
    found = credit(wrote('w', A, 'notes/a.md', OTHER, 1, 2), wrote('o', B, 'notes/b.md', NEW, 3, 4))
    assert found.changed_after == {A: {'notes/a.md'}} and B not in found.uncertain
    later_write = credit(
        wrote('w', A, 'notes/a.md', OTHER, 1, 2), at_work('o', B, WRITE, 3, 'notes/a.md')
    )
    assert later_write.wrote == {B: {'notes/a.md'}} and not later_write.changed_after


def test_the_boundaries_of_a_window() -> None:
    """A call that ended at the very moment the write ended is no suspect; one begun at that
    moment did not work beside it."""
    ended_then = Call('s', B, 'claude:Bash', SHELL, (), 0, 2, UNFINISHED)
    assert credit(wrote('w', A, 'notes/a.md', OTHER, 1, 2), ended_then).changed_after == {
        A: {'notes/a.md'}
    }
    begun_then = credit(wrote('w', A, 'notes/a.md', OTHER, 1, 2), at_work('s', B, SHELL, 2))
    assert begun_then.wrote == {B: {'notes/a.md'}} and not begun_then.uncertain


def test_a_call_open_for_exactly_the_longest_time_counts_as_unfinished(cps: Checkpoints) -> None:
    record_file(cps).write_bytes(begun(id='c', kind='write', paths=['notes/a.md'], t=10) + b'\n')
    assert calls.load(cps.repository_directory, now=10 + calls.MAX_OPEN_NS - 1)['c'].open
    aged = calls.load(cps.repository_directory, now=10 + calls.MAX_OPEN_NS)['c']
    assert aged.outcome == UNFINISHED and aged.left == {}
    assert calls.credit({'c': aged}, [('notes/a.md', NEW)]).unknown == ['notes/a.md']


@pytest.mark.parametrize('length, kept', [(0, False), (200, True), (201, False)])
def test_a_call_id_is_one_to_200_characters(cps: Checkpoints, length: int, kept: bool) -> None:
    record_file(cps).write_bytes(begun(id='i' * length) + b'\n')
    assert bool(calls.load(cps.repository_directory, now=2)) == kept


@pytest.mark.parametrize(
    'paths, kept', [(5, False), (['notes/a.md'] * 64, True), (['n'] * 65, False)]
)
def test_a_call_names_at_most_64_paths(cps: Checkpoints, paths: object, kept: bool) -> None:
    record_file(cps).write_bytes(begun(paths=paths) + b'\n')
    assert bool(calls.load(cps.repository_directory, now=2)) == kept


def test_what_an_end_may_say(cps: Checkpoints) -> None:
    start = begun(id='c', paths=['notes/a.md'])
    ends = [
        {'left': {'notes/a.md': None}},
        {'left': {'../a.md': None}},
        {'left': {f'notes/{n}.md': None for n in range(64)}},
        {'left': {f'notes/{n}.md': None for n in range(65)}},
    ]
    found = []
    for end in ends:
        line = json.dumps({'op': 'end', 'id': 'c', 'outcome': 'wrote', 't': 2, **end}).encode()
        record_file(cps).write_bytes(start + b'\n' + line + b'\n')
        found.append(calls.load(cps.repository_directory, now=3)['c'])
    assert found[0].left == {'notes/a.md': None} and found[0].outcome == WROTE
    assert found[1].open, 'a path outside the desk: the end is left out'
    assert not found[2].open and found[3].open


def test_what_a_call_was_given_pairs_its_hooks(cps: Checkpoints) -> None:
    given = calls.digest('S', ['Bash', {'command': 'echo one'}])
    assert given != calls.digest('S', ['Bash', {'command': 'echo two'}])
    assert given != calls.digest('T', ['Bash', {'command': 'echo one'}]), 'keyed by session'
    assert given == calls.digest('S', ['Bash', {'command': 'echo one'}]) and len(given) == 16
    assert 'echo' not in given
    with engine.locked(cps.desk_config) as session:
        calls.begin(session, 'c1', A, 'gemini:run_shell_command', None, given)
        calls.begin(session, 'c2', A, 'gemini:run_shell_command', None, 'x' * 70)
        calls.begin(session, 'c3', A, 'gemini:write_file', ['notes/a.md'])
        calls.begin(session, 'c4', B, 'gemini:run_shell_command', None)
    record = calls.load(cps.repository_directory)
    assert record['c1'].inputs == given and record['c2'].inputs == 'x' * 64
    assert record['c3'].inputs == ''
    where = cps.repository_directory
    other = calls.digest('A', 'other')
    assert calls.find(where, 'A', 'gemini:run_shell_command', (), given).call_id == 'c1'
    assert calls.find(where, 'A', 'gemini:run_shell_command', (), 'x' * 64).call_id == 'c2'
    assert calls.find(where, 'A', 'gemini:run_shell_command', (), other) is None
    assert calls.find(where, 'A', 'gemini:write_file', ['notes/a.md']).call_id == 'c3'
    assert calls.find(where, 'A', 'gemini:write_file', ['notes/b.md']) is None
    assert calls.find(where, 'B', 'gemini:run_shell_command', ()).call_id == 'c4'
    assert calls.find(where, 'B', 'gemini:run_shell_command', (), given).call_id == 'c4'
    assert calls.find(where, 'A', 'gemini:run_shell_command', ()).call_id == 'c1'
    assert [c.call_id for c in calls.open_calls(where, 'B')] == ['c4']
    assert calls.new_id() != calls.new_id() and len(calls.new_id()) == len('call-') + 16


def test_the_digest_of_any_input() -> None:
    assert calls.digest('S', {'a': 1, 'b': 2}) == calls.digest('S', {'b': 2, 'a': 1})
    assert calls.digest('S', {'path': Path('x')}) == calls.digest('S', {'path': 'x'})
    assert len(calls.digest('S\udcff' * 40, 'echo \udcff')) == 16, 'lone surrogates, long keys'


@pytest.mark.parametrize('inputs', [5, 'x' * 65, None])
def test_a_digest_that_is_no_digest_is_none(cps: Checkpoints, inputs: object) -> None:
    record_file(cps).write_bytes(begun(id='c', inputs=inputs) + b'\n')
    assert calls.load(cps.repository_directory, now=2)['c'].inputs == ''


def test_a_file_name_that_is_not_utf_8_is_recorded(cps: Checkpoints, desk: Path) -> None:
    name = os.fsdecode(b'notes/caf\xe9.md')
    (desk / 'notes' / name.split('/')[1]).write_bytes(b'x')
    with engine.locked(cps.desk_config) as session:
        calls.begin(session, 'c1', A, 'claude:Write', [name])
    assert calls.load(cps.repository_directory)['c1'].paths == (name,)


def test_settling_keeps_a_call_that_ended_once_the_scan_began(cps: Checkpoints) -> None:
    kept = Call('k', A, 'claude:Write', WRITE, ('notes/a.md',), 1, 5, WROTE, {'notes/a.md': NEW})
    gone = Call('g', B, 'claude:Write', WRITE, ('notes/b.md',), 1, 4, WROTE, {'notes/b.md': NEW})
    at, also = at_work('s', C, SHELL, 2), at_work('t', C, SHELL, 3)
    with engine.locked(cps.desk_config) as session:
        calls.settle(session, {'s': at, 't': also, 'k': kept, 'g': gone}, seen_at=5)
    assert calls.load(cps.repository_directory, now=6) == {'s': at, 't': also, 'k': kept}
