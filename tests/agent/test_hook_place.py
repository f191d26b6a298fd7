"""Where a hook event acts, in this process (``agent/hooks/place.py``): the workspace and the desk
an event names, the session's turn kept between hook processes, and the old sessions' records
forgotten. ``test_hook_dispatch.py`` drives the same through whole events."""

from __future__ import annotations

import json
import os
import re
import time
from datetime import datetime, timezone, tzinfo
from pathlib import Path

import pytest
from helpers.builders import write
from helpers.faults import readers_let_go

from trading_checkpoints import Checkpoints
from trading_checkpoints.agent.hooks import dispatch, place
from trading_checkpoints.agent.hooks.events import HookError, Options


def test_the_workspace_an_option_or_the_environment_names(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv('CHECKPOINTS_WORKSPACE', raising=False)
    assert place.find_workspace(Options(workspace=workspace), '/', ()) == workspace
    monkeypatch.setenv('CHECKPOINTS_WORKSPACE', str(workspace))
    assert place.find_workspace(Options(), None, ()) == workspace
    missing = tmp_path / 'missing'
    with pytest.raises(HookError) as caught:
        place.find_workspace(Options(workspace=missing), '/', ())
    assert str(caught.value) == f'the workspace {missing} is not a folder'
    assert not caught.value.blocks


def test_the_workspace_found_from_the_cwd_or_a_path(
    workspace: Path,
    desk: Path,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv('CHECKPOINTS_WORKSPACE', raising=False)
    assert place.find_workspace(Options(), str(desk), ()) == workspace
    away = tmp_path_factory.mktemp('away')
    target = str(desk / 'notes' / 'a.md')
    assert place.find_workspace(Options(), str(away), [target]) == workspace
    assert place.find_workspace(Options(), 'relative', [target]) == workspace
    assert place.find_workspace(Options(), str(away), ['/nowhere/a.md']) is None
    assert place.find_workspace(Options(), None, ()) is None
    # The folder holding ``workspace/`` (the README's layout) is found by its default.
    layout = tmp_path_factory.mktemp('project')
    (layout / 'workspace' / 'desks').mkdir(parents=True)
    assert place.find_workspace(Options(), str(layout), ()) == layout / 'workspace'
    (away / 'workspace').mkdir()
    assert place.find_workspace(Options(), str(away), ()) is None, 'no desks, no repositories'


def test_the_desk_a_path_lies_in(workspace: Path, tmp_path: Path) -> None:
    desks = workspace / 'desks'
    assert place.desk_holding(workspace, str(desks / 'main' / 'a.md')) == 'main'
    assert place.desk_holding(workspace, str(desks / 'main')) == 'main'
    assert place.desk_holding(workspace, str(desks)) is None
    assert place.desk_holding(workspace, str(desks) + '/') is None
    assert place.desk_holding(workspace, str(workspace / 'desksx' / 'a')) is None
    assert place.desk_holding(workspace, 'desks/main/a.md') is None
    assert place.desk_holding(workspace, None) is None
    assert place.desk_holding(workspace, '') is None
    assert place.desk_holding(workspace, str(desks / 'x' / '..' / 'main' / 'a')) == 'main'
    link = tmp_path / 'link'
    link.symlink_to(workspace)
    assert place.desk_holding(link, str(workspace / 'desks' / 'r' / 'a.md')) == 'r'
    assert place.desk_holding(workspace, str(link / 'desks' / 'r' / 'a.md')) is None


def test_the_desk_named_told_by_place_or_main(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv('CHECKPOINTS_DESK', raising=False)
    research = str(workspace / 'desks' / 'research' / 'a.md')
    main = str(workspace / 'desks' / 'main')
    assert place.desk_name(Options(desk='x'), workspace, [research], main) == ('x', False)
    assert place.desk_name(Options(), workspace, [research], main) == ('research', True)
    assert place.desk_name(Options(), workspace, ['/elsewhere'], main) == ('main', True)
    assert place.desk_name(Options(), workspace, [], None) == ('main', False)
    monkeypatch.setenv('CHECKPOINTS_DESK', 'y')
    assert place.chosen_desk(Options()) == 'y'
    assert place.chosen_desk(Options(desk='x')) == 'x'
    monkeypatch.setenv('CHECKPOINTS_DESK', '')
    assert place.chosen_desk(Options()) is None


def test_every_desk_with_a_folder(workspace: Path, tmp_path: Path) -> None:
    for name in ('b', 'a', '.hidden', 'bad name\n'):
        (workspace / 'desks' / name).mkdir(parents=True)
    write(workspace, 'desks/file.md', 'not a desk\n')
    (workspace / 'desks' / 'link').symlink_to(tmp_path)
    assert place.all_desks(workspace) == ['a', 'b', 'main']
    assert place.all_desks(tmp_path / 'nowhere') == []


@pytest.mark.parametrize(
    'session, word, kept',
    [
        (None, None, None),
        ('', None, None),
        ('abc-1.2:3', 'abc-1.2:3', 'abc-1.2:3'),
        ('_.:-a b/c-_.:', 'a_b_c', '_.:-a b/c-_.:'),
        ('///', None, '///'),
        ('x' * 70, 'x' * 64, 'x' * 70),
        ('  two\n lines ', 'two_lines', 'two lines'),
        (' \n ', None, None),
        ('y' * 250, 'y' * 64, 'y' * 200),
        ('Xy-X', 'Xy-X', 'Xy-X'),
    ],
)
def test_a_session_id_as_a_word_and_as_kept(session, word, kept) -> None:
    assert place.session_word(session) == word
    assert place.session_id(session) == kept


def test_the_state_folder_is_a_plain_folder(workspace: Path, tmp_path: Path) -> None:
    folder = workspace / '.checkpoints' / 'hooks'
    assert place.state_folder(workspace, create=False) == folder and not folder.exists()
    assert place.state_folder(workspace, create=True) == folder and folder.is_dir()
    folder.rmdir()
    folder.symlink_to(tmp_path)
    with pytest.raises(HookError) as caught:
        place.state_folder(workspace, create=False)
    assert str(caught.value) == f'{folder} is not a plain folder; refusing to keep hook state there'
    folder.unlink()
    folder.write_text('a file')
    with pytest.raises(HookError):
        place.state_folder(workspace, create=False)


def test_a_session_s_file_is_named_by_its_digest(workspace: Path) -> None:
    path = place.session_file(workspace, 'a session', 'told.json')
    assert path.parent == workspace / '.checkpoints' / 'hooks'
    assert re.fullmatch(r'[0-9a-f]{32}\.told\.json', path.name)
    assert place.session_file(workspace, 'other', 'json').name != path.name
    assert place.session_file(workspace, 'a\udcffb', 'json').name.endswith('.json')


def test_a_state_file_is_read_up_to_64_kib_and_one_byte(workspace: Path) -> None:
    path = workspace / 'state'
    assert place.read_small(path) is None
    path.write_bytes(b'x' * (64 * 1024 + 10))
    assert place.read_small(path) == b'x' * (64 * 1024 + 1)


def test_a_turn_opened_and_read_back(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    session = 'sess/one'
    assert place.turn_of(workspace, None) is None
    assert place.turn_of(workspace, '///') is None, 'no word of it: no turn'
    assert place.turn_of(workspace, session) == ('sess_one', '')
    turn = place.open_turn(workspace, session, '  tidy\n the   desk ' + 'x' * 300)
    assert re.fullmatch(r'sess_one-\d{8}T\d{6}', turn)
    label = ('tidy the desk ' + 'x' * 300)[: place.MAX_LABEL]
    assert place.turn_of(workspace, session) == (turn, label)
    record = json.loads(place.session_file(workspace, session, 'json').read_text())
    assert record == {'turn': turn, 'label': label, 'session': session}
    # A second prompt in the same second gets a turn of its own.
    second = place.open_turn(workspace, session, 'again')
    assert second != turn and (second.startswith(turn + '-') or second > turn)


def test_two_prompts_in_one_second_get_two_turns(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = 's'
    path = place.session_file(workspace, session, 'json', create=True)
    now = place.datetime.now(place.timezone.utc).strftime('%Y%m%dT%H%M%S')
    path.write_text(json.dumps({'turn': f's-{now}', 'label': ''}))
    turn = place.open_turn(workspace, session, 'p')
    if turn.startswith(f's-{now}'):  # the same second still
        assert re.fullmatch(rf's-{now}-[0-9a-f]{{4}}', turn)
    assert place.read_turn(workspace, session) == (turn, 'p')


@pytest.mark.parametrize(
    'record',
    [
        '{"turn": "two words"}',
        '{"turn": "t", "label": 3}',
        '{"label": "x"}',
        '[]',
        'not json',
        '{"turn": 5}',
    ],
)
def test_a_damaged_turn_record_is_none(workspace: Path, record: str) -> None:
    path = place.session_file(workspace, 's', 'json', create=True)
    path.write_text(record)
    assert place.read_turn(workspace, 's') is None
    assert place.turn_of(workspace, 's') == ('s', '')


def test_a_record_without_a_label_has_an_empty_one(workspace: Path) -> None:
    path = place.session_file(workspace, 's', 'json', create=True)
    path.write_text('{"turn": "t1"}')
    assert place.read_turn(workspace, 's') == ('t1', '')


def test_sessions_older_than_30_days_are_forgotten(workspace: Path) -> None:
    folder = place.state_folder(workspace, create=True)
    old = time.time() - place.STATE_MAX_AGE - 60
    young = time.time() - place.STATE_MAX_AGE + 3600
    names = ['old.json', 'young.json', place.LAST_EVENT, 'old.told.json', 'old.txt']
    for name in names:
        (folder / name).write_text('{}')
        os.utime(folder / name, (old, old))
    os.utime(folder / 'young.json', (young, young))
    (folder / 'folder.json').mkdir()
    os.utime(folder / 'folder.json', (old, old))
    (folder / 'link.json').symlink_to(folder / 'young.json')
    os.utime(folder / 'link.json', (old, old), follow_symlinks=False)
    place.open_turn(workspace, 'someone', 'p')
    left = sorted(path.name for path in folder.iterdir())
    kept = place.session_file(workspace, 'someone', 'json').name
    assert left == sorted(
        [kept, 'young.json', place.LAST_EVENT, 'old.txt', 'folder.json', 'link.json']
    )


def test_a_relative_cwd_is_no_place_to_look_from(
    workspace: Path, desk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hook's own folder means nothing: a cwd that is not absolute finds nothing."""
    monkeypatch.delenv('CHECKPOINTS_WORKSPACE', raising=False)
    monkeypatch.chdir(desk)
    assert place.find_workspace(Options(), 'notes', ()) is None


def test_a_turn_is_timed_in_utc_whatever_the_local_time(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv('TZ', 'Asia/Kolkata')  # 5:30 ahead of UTC, no summer time
    time.tzset()
    try:
        before = place.datetime.now(place.timezone.utc).replace(microsecond=0, tzinfo=None)
        turn = place.open_turn(workspace, 's', 'p')
    finally:
        monkeypatch.undo()
        time.tzset()
    when = place.datetime.strptime(turn.split('-')[1], '%Y%m%dT%H%M%S')
    assert 0 <= (when - before).total_seconds() < 60


def test_a_state_file_that_is_a_fifo_or_a_device_is_refused_without_waiting(
    workspace: Path,
) -> None:
    """A FIFO put where a session's state goes (by a command the agent ran, say) is never
    opened to wait for a writer, which would hang every hook of the session; a device is no
    state either. Each is an ``OSError`` naming it, as a folder there is."""
    path = workspace / 'state'
    os.mkfifo(path)
    with readers_let_go(path) as released, pytest.raises(OSError) as refused:
        place.read_small(path)
    assert released == [], 'the reader waited for a writer'
    assert (refused.value.strerror, refused.value.filename) == ('Not a regular file', str(path))
    with pytest.raises(OSError) as device:
        place.read_small(Path(os.devnull))
    assert (device.value.strerror, device.value.filename) == ('Not a regular file', os.devnull)


SESSION = '3f1c2b7e-8d4a-4c55-9a0e-2b6f7c1d9e42'


class _Clock(datetime):
    """A wall clock the test sets (``place`` reads the time through ``datetime.now``)."""

    at = datetime(2026, 3, 1, 12, 0, 5, tzinfo=timezone.utc)

    @classmethod
    def now(cls, tz: tzinfo | None = None) -> _Clock:  # type: ignore[override]
        return cls.at  # type: ignore[return-value]


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> type[_Clock]:
    monkeypatch.setattr(place, 'datetime', _Clock)
    return _Clock


def test_a_sessions_turns_never_take_an_older_turns_id_when_the_clock_steps_back(
    workspace: Path, clock: type[_Clock]
) -> None:
    """Prompts at 12:00:05 and :09, then after the clock stepped back to :05, at :05 and :09
    again, then :10: each turn has its own id, and none names a second before its forerunner's."""
    opened = []
    for second in (5, 9, 5, 9, 10):
        clock.at = datetime(2026, 3, 1, 12, 0, second, tzinfo=timezone.utc)
        opened.append(place.open_turn(workspace, SESSION, f'at {second}'))
    assert len(set(opened)) == len(opened), opened
    word = f'{place.session_word(SESSION)}-'
    seconds = [turn.removeprefix(word)[:15] for turn in opened]
    assert seconds == ['20260301T1200' + s for s in ('05', '09', '09', '09', '10')]


def test_a_turn_opened_after_the_clock_stepped_back_is_rewound_alone(
    workspace: Path, desk: Path, clock: type[_Clock]
) -> None:
    """Turn A writes a.md at 12:00:05, B writes b.md at :09, then the clock steps back to :05
    and turn C writes c.md: rewinding the newest turn takes back c.md only."""
    write(desk, 'notes/a.md', 'a0\n')
    write(desk, 'notes/c.md', 'c0\n')
    cps = Checkpoints.open(workspace / '.checkpoints' / 'main.git', desk)
    cps.snapshot('start')

    def send(name: str, **fields: object) -> None:
        data = {'session_id': SESSION, 'cwd': str(workspace), 'hook_event_name': name, **fields}
        reply = dispatch.run(json.dumps(data).encode(), Options())
        assert reply.code == 0 and reply.stderr == '', reply

    for second, path in ((5, 'notes/a.md'), (9, 'notes/b.md'), (5, 'notes/c.md')):
        clock.at = datetime(2026, 3, 1, 12, 0, second, tzinfo=timezone.utc)
        send('UserPromptSubmit', prompt=f'write {path}')
        given = {'file_path': str(desk / path), 'content': 'written\n'}
        send('PreToolUse', tool_name='Write', tool_input=given, tool_use_id=f'toolu_{second}{path}')
        write(desk, path, 'written\n')
        done = {'success': True}
        send(
            'PostToolUse',
            tool_name='Write',
            tool_input=given,
            tool_use_id=f'toolu_{second}{path}',
            tool_response=done,
        )
        send('Stop', stop_hook_active=False)
    turns = cps.turns(None)
    assert len(turns) == 3, [t.turn_id for t in turns]
    cps.restore_turn(turns[0].turn_id)
    assert (desk / 'notes/c.md').read_text() == 'c0\n'
    assert (desk / 'notes/a.md').read_text() == 'written\n', "turn A's write is kept"
