"""The command line's answers to "who wrote that line, in answer to what?": blame, show ID (a
checkpoint described as git show describes a commit), and the turn's prompt beside its id in
log and list --turns; real processes on a real repository."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers.authors import append, four_writers, hook_write
from helpers.builders import write
from helpers.cli import checkpoints

from trading_checkpoints import Checkpoints


@pytest.fixture
def ids(cps: Checkpoints, desk: Path) -> dict[str, str]:
    return four_writers(cps, desk)


def test_blame_prints_each_line_s_checkpoint_time_and_writer_then_the_prompts(
    desk: Path, ids: dict[str, str]
) -> None:
    done = checkpoints('blame', 'Memory.md', cwd=desk)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f'{ids["start"]} 2025-03-14T14:30:00+00:00  unknown                  1) # Memory',
        f'{ids["t-1"]} 2025-03-14T14:32:00+00:00  turn t-1 (claude:Write)  2) - Watchlist: AAPL',
        f'{ids["t-2"]} 2025-03-14T14:33:00+00:00  turn t-2 (claude:Write)  3) '
        '- Risk limit: 2% per trade',
        f'{ids["person"]} 2025-03-14T14:34:00+00:00  outside the agent        4) - my own note',
        f'{ids["watch"]} 2025-03-14T14:35:00+00:00  seen by watch            5) '
        '- from the nightly job',
        '',
        'turn t-1: add AAPL to the watchlist',
        'turn t-2: set the risk limit',
    ]


def test_blame_json_and_at_an_id_or_a_time(desk: Path, ids: dict[str, str]) -> None:
    done = checkpoints('blame', 'Memory.md', '--json', cwd=desk)
    form = json.loads(done.stdout)
    assert form['path'] == 'Memory.md' and form['checkpoint'] is None
    assert form['lines'][1] == {
        'line': 2,
        'text': '- Watchlist: AAPL',
        'checkpoint': ids['t-1'],
        'created_at': '2025-03-14T14:32:00+00:00',
        'reason': 'before Write Memory.md',
        'state': 'checkpoint',
        'who': 'agent',
        'turn': 't-1',
        'session': 'S1',
        'tool': 'claude:Write',
        'label': 'add AAPL to the watchlist',
    }
    assert [line['who'] for line in form['lines']] == [
        'unknown', 'agent', 'agent', 'outside', 'watch'
    ]  # fmt: skip
    older = json.loads(
        checkpoints('blame', 'Memory.md', '--at', ids['t-2'], '--json', cwd=desk).stdout
    )
    assert older['checkpoint'] == ids['t-2'] and len(older['lines']) == 3
    at_time = checkpoints('blame', 'Memory.md', '--at', '2025-03-14T14:34:30Z', cwd=desk)
    assert at_time.returncode == 0, at_time.stderr
    assert at_time.stderr.startswith(
        f'note: at 2025-03-14T14:34:30Z the desk held checkpoint {ids["person"]}'
    )
    assert at_time.stdout.splitlines()[3].endswith('4) - my own note')
    assert len([line for line in at_time.stdout.splitlines() if ') ' in line]) == 4


def test_blame_of_what_is_not_a_file_there_is_one_line(desk: Path, ids: dict[str, str]) -> None:
    gone = checkpoints('blame', 'notes/plan.md', '--at', ids['start'], cwd=desk)
    assert gone.returncode == 1 and gone.stdout == ''
    assert gone.stderr == f"error: checkpoint {ids['start']} holds no file 'notes/plan.md'\n"
    mistyped = checkpoints('blame', 'Memroy.md', cwd=desk)
    assert mistyped.returncode == 1
    assert mistyped.stderr.splitlines()[-1] == 'hint: did you mean Memory.md?'


def test_show_id_describes_the_checkpoint_as_git_show_a_commit(
    desk: Path, ids: dict[str, str]
) -> None:
    done = checkpoints('show', ids['t-1'], cwd=desk)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f'checkpoint {ids["t-1"]}') and len(lines[0]) == 51
    assert lines[1:10] == [
        'Date:    2025-03-14T14:32:00+00:00',
        'Tool:    claude:Write (before writing Memory.md)',
        'Turn:    t-2 (session S2)',  # taken before t-2's write...
        'Prompt:  set the risk limit',
        'Wrote:   turn t-1: Memory.md',  # ...it holds t-1's
        '',
        '    before Write Memory.md',
        '',
        '    Turn label: set the risk limit',
    ]
    assert lines[10:] == [
        '',
        ' Memory.md | 1 +',
        ' 1 file(s) changed, 1 insertion(s)(+), 0 deletion(s)(-)',
    ]
    patched = checkpoints('show', ids['t-1'], '--patch', cwd=desk).stdout
    assert patched.endswith(' # Memory\n+- Watchlist: AAPL\n')
    form = json.loads(checkpoints('show', ids['watch'], '--json', cwd=desk).stdout)
    assert form['checkpoint']['action'] == 'captured' and form['turn_label'] is None
    assert form['written_by'] == [
        {'path': 'Memory.md', 'turn': None, 'session': None, 'uncertain': False}
    ]
    change = form['changes'][0]
    assert (change['added_lines'], change['removed_lines'], change['patch']) == (1, 0, None)
    at_time = checkpoints('show', '--at', '2025-03-14T14:33:10+00:00', cwd=desk)
    assert at_time.stdout.startswith(f'checkpoint {ids["t-2"]}')
    assert 'Wrote:   turn t-2: Memory.md' in at_time.stdout
    wrong = checkpoints('show', 'Memory.md', cwd=desk)
    assert wrong.returncode == 2 and "'Memory.md' is not a checkpoint id" in wrong.stderr


def test_log_and_list_turns_print_the_turn_s_prompt_beside_its_id(
    desk: Path, ids: dict[str, str]
) -> None:
    log = checkpoints('log', '-n', '5', cwd=desk).stdout
    assert (
        f'{ids["t-1"]}  2025-03-14T14:32:00+00:00  before Write Memory.md  '
        '[tool=claude:Write turn=t-2 prompt="set the risk limit"]'
    ) in log.splitlines()
    rows = json.loads(checkpoints('log', '--json', cwd=desk).stdout)
    assert {row['turn']: row['turn_label'] for row in rows} == {
        None: None,
        't-1': 'add AAPL to the watchlist',
        't-2': 'set the risk limit',
    }
    listed = checkpoints('list', '--turns', cwd=desk).stdout.splitlines()
    assert listed[3].endswith('(1 file, +1/-0)  [turn=t-2 prompt="set the risk limit"]')
    assert listed[4].endswith('  [turn=t-1 prompt="add AAPL to the watchlist"]')
    assert 'turn=' not in checkpoints('list', cwd=desk).stdout  # only with --turns
    rows = json.loads(checkpoints('list', '--turns', '--json', cwd=desk).stdout)
    assert [row['turn_label'] for row in rows][3:5] == [
        'set the risk limit',
        'add AAPL to the watchlist',
    ]


def test_a_prompt_s_control_characters_are_never_sent_to_the_terminal(
    cps: Checkpoints, desk: Path
) -> None:
    write(desk, 'Memory.md', '# Memory\n')
    cps.snapshot('start')
    hook_write(cps, 't-9', 'clear the screen \x1b[2J\x07 now', 'S9', '- hostile')
    append(desk, '- more')
    cps.snapshot('after')
    for args in (['log'], ['list', '--turns'], ['blame', 'Memory.md']):
        shown = checkpoints(*args, cwd=desk).stdout
        assert '\x1b' not in shown and '\x07' not in shown, args
        assert 'clear the screen \\x1b[2J\\x07 now' in shown, args


def test_blame_of_a_history_built_with_the_command_line(desk: Path, cps: Checkpoints) -> None:
    """Two turns declared, written and sealed through the command line, then a person's line
    recorded by a plain snapshot; blame names each, and --at an id blames the older version."""

    def run(*args: str) -> str:
        done = checkpoints(*args, cwd=desk)
        assert done.returncode == 0, done.stderr
        return done.stdout

    write(desk, 'Memory.md', '# Memory\n')
    run('snapshot', '-m', 'start')
    for turn, line in (('t-1', '- Watchlist: AAPL'), ('t-2', '- Risk limit: 2%')):
        run('snapshot', '--turn', turn, '--tool', 'write_file', '--path', 'Memory.md')
        append(desk, line)
        run('seal')
    before_the_person = run('snapshot', '-m', 'end of the session').split()[1]
    append(desk, '- my own note')
    run('snapshot', '-m', "a person's note")
    rows = json.loads(run('blame', 'Memory.md', '--json'))['lines']
    assert [(row['who'], row['turn'], row['tool']) for row in rows] == [
        ('unknown', None, None),
        ('agent', 't-1', 'write_file'),
        ('agent', 't-2', 'write_file'),
        ('outside', None, None),
    ]
    older = json.loads(run('blame', 'Memory.md', '--at', before_the_person, '--json'))
    assert [row['text'] for row in older['lines']] == [
        '# Memory',
        '- Watchlist: AAPL',
        '- Risk limit: 2%',
    ]


def test_blame_at_an_id_that_also_reads_as_a_period_blames_that_checkpoint(
    desk: Path, cps: Checkpoints
) -> None:
    """An id that begins with digits then d (``123d4f0``: its prefix ``123d`` is also 123 days
    before now) names the checkpoint when one has it; a value no checkpoint has is a time."""
    write(desk, 'Memory.md', '# Memory\n')
    prefix, lines = None, 1
    for index in range(1000):  # about 1 id in 25 begins so
        append(desk, f'- line {index}')
        lines += 1
        new_id = cps.snapshot(f'line {index}')
        assert new_id is not None
        found = re.match(r'[0-9]{3,}d', new_id)
        if found:
            prefix = found.group(0)
            break
    assert prefix is not None
    append(desk, '- a line after it')
    cps.snapshot('after')
    done = checkpoints('blame', 'Memory.md', '--at', prefix, '--json', cwd=desk)
    assert done.returncode == 0, done.stderr
    blamed = json.loads(done.stdout)
    assert blamed['checkpoint'] == new_id and len(blamed['lines']) == lines
    far = checkpoints('blame', 'Memory.md', '--at', '99999d', cwd=desk)  # no such id: a time
    assert far.returncode != 0 and 'before' in far.stderr, far.stderr
