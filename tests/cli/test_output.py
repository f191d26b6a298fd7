"""What the command prints: usage errors, the overview, JSON (data and errors), the next step
after each verb, and follow-up commands that work when pasted anywhere. Real subprocesses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.builders import checkpoints_in, write
from helpers.cli import checkpoints, shell

from trading_checkpoints import Checkpoints


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A workspace whose desk main has three checkpoints (v1, v2, v3) and holds v3."""
    root = tmp_path / 'ws'
    cps = checkpoints_in(root)
    for n in (1, 2, 3):
        write(cps.desk_directory, 'Memory.md', f'v{n}\n')
        cps.snapshot(f'v{n}')
    return root


def ids(root: Path, desk: str = 'main') -> list[str]:
    done = checkpoints(
        '--workspace', str(root), '--desk', desk, 'list', '-n', '0', '--json', cwd=root
    )
    return [row['id'] for row in json.loads(done.stdout)]


# -- usage errors and the overview ------------------------------------------------------------


@pytest.mark.parametrize(
    ('args', 'first', 'hint'),
    [
        (['list', '--frob'], "error: no such option '--frob'.", 'checkpoints list --help'),
        (['show'], "error: missing argument 'ID' (or --at TIME).", 'checkpoints show --help'),
        (['list', '-n'], "error: option '-n' requires an argument", 'checkpoints list --help'),
        (['lst'], "error: no such verb 'lst'; did you mean 'list'?", 'checkpoints --help'),
        (['list', '-n', 'x'], "error: invalid value for '--limit' / '-n'", 'checkpoints list'),
        (['remote', 'add'], "error: missing argument 'NAME'.", 'checkpoints remote add --help'),
    ],
)
def test_usage_errors_are_one_line_and_a_hint(
    ws: Path, args: list[str], first: str, hint: str
) -> None:
    done = checkpoints(*args, cwd=ws)
    assert done.returncode == 2 and done.stdout == ''
    lines = done.stderr.splitlines()
    assert len(lines) == 2, done.stderr
    assert lines[0].startswith(first)
    assert lines[1].startswith('hint: ') and hint in lines[1]


def test_bare_command_prints_an_overview_with_exit_0(ws: Path, tmp_path: Path) -> None:
    done = checkpoints(cwd=ws / 'desks' / 'main')
    assert done.returncode == 0 and done.stderr == ''
    assert f"Workspace {ws}, desk 'main'." in done.stdout
    assert 'checkpoints restore ID' in done.stdout and 'checkpoints VERB --help' in done.stdout
    assert len(done.stdout.splitlines()) < 20
    empty = tmp_path / 'empty'
    empty.mkdir()
    away = checkpoints(cwd=empty)
    assert away.returncode == 0 and 'No workspace here' in away.stdout
    assert 'checkpoints demo --dir DIR' in away.stdout


def test_help_and_version(ws: Path) -> None:
    done = checkpoints('--help', cwd=ws)
    assert done.returncode == 0 and 'completion' in done.stdout and 'desks' in done.stdout
    version = checkpoints('--version', cwd=ws)
    assert version.returncode == 0 and version.stdout.startswith('checkpoints ')


# -- JSON: one style, errors as objects -------------------------------------------------------


def test_json_errors_are_one_object_on_stderr(ws: Path, tmp_path: Path) -> None:
    cases = [
        (['restore', 'abcdef1', '--json'], 1, 'UnknownCheckpointError', "no checkpoint 'abcdef1'"),
        (['list', '--json', '--desk', 'nope'], 1, 'MissingDeskError', "no desk 'nope'"),
        (['list', '--json', '--frob'], 2, 'UsageError', "no such option '--frob'"),
        (['list', '--json', '--desk', '../x'], 2, 'UsageError', 'is not a desk name'),
    ]
    for args, code, kind, message in cases:
        done = checkpoints(*args, cwd=ws)
        assert done.returncode == code and done.stdout == '', args
        error = json.loads(done.stderr)
        assert error['type'] == kind and message in error['error'], error
        assert set(error) <= {'error', 'type', 'hint', 'fields'}
    away = checkpoints('status', '--json', cwd=tmp_path)
    assert json.loads(away.stderr)['error'].startswith('no workspace found')


def test_every_verb_prints_the_same_json_style(ws: Path) -> None:
    desk = ws / 'desks' / 'main'
    first = ids(ws)[-1]
    for args in (
        ['list', '--json'],
        ['snapshot', '--json'],
        ['seal', '--json'],
        ['status', '--json'],
        ['log', '--json'],
        ['diff', first, '--json'],
        ['show', first, 'Memory.md', '--json'],
        ['turns', '--json'],
        ['desks', '--json'],
        ['track', '--json'],
        ['restore', first, '--dry-run', '--json'],
        ['prune', '--dry-run', '--json'],
        ['remote', 'list', '--json'],
    ):
        done = checkpoints(*args, cwd=desk)
        assert done.returncode == 0, (args, done.stderr)
        value = json.loads(done.stdout)
        assert done.stdout == json.dumps(value, indent=2) + '\n', args


# -- the next step --------------------------------------------------------------------------


def test_list_ends_with_a_hint_and_says_how_many_more(ws: Path) -> None:
    desk = ws / 'desks' / 'main'
    done = checkpoints('list', '-n', '1', cwd=desk)
    lines = done.stdout.splitlines()
    assert lines[0].endswith('  v3  (1 file, +1/-1)')
    assert lines[1] == '... and 2 older (list -n 0 shows all)'
    assert 'checkpoints diff ID' in lines[2] and 'checkpoints restore ID' in lines[2]
    full = checkpoints('list', cwd=desk).stdout.splitlines()
    assert len(full) == 4 and 'older' not in full[-2] and full[-1].startswith('hint: ')


def test_list_n_0_shows_all_and_a_long_cut_counts_to_a_bound(ws: Path) -> None:
    cps = checkpoints_in(ws)
    for n in range(4, 46):
        write(cps.desk_directory, 'Memory.md', f'v{n}\n')
        cps.snapshot(f'v{n}')
    desk = ws / 'desks' / 'main'
    assert len(json.loads(checkpoints('list', '-n', '0', '--json', cwd=desk).stdout)) == 45
    assert len(json.loads(checkpoints('list', '--json', cwd=desk).stdout)) == 20
    lines = checkpoints('list', cwd=desk).stdout.splitlines()
    assert lines[20] == '... and more than 20 older (list -n 0 shows all)'
    lines = checkpoints('list', '-n', '30', cwd=desk).stdout.splitlines()
    assert lines[30] == '... and 15 older (list -n 0 shows all)'


def test_agent_only_hides_restore_bookkeeping(ws: Path) -> None:
    desk = ws / 'desks' / 'main'
    v1 = ids(ws)[-1]
    write(desk, 'Memory.md', 'unsaved\n')  # so the restore snapshots it first
    assert checkpoints('restore', v1, cwd=desk).returncode == 0
    assert checkpoints('undo', cwd=desk).returncode == 0
    everything = json.loads(checkpoints('list', '--json', cwd=desk).stdout)
    assert {row['action'] for row in everything} >= {'undo', 'restore', 'before-restore', None}
    agent = json.loads(checkpoints('list', '--agent-only', '--json', cwd=desk).stdout)
    assert [row['reason'] for row in agent] == ['v3', 'v2', 'v1']
    cut = checkpoints('list', '--agent-only', '-n', '1', cwd=desk).stdout.splitlines()
    assert (
        cut[0].endswith('  v3  (1 file, +1/-1)')
        and cut[1] == '... and 2 older (list -n 0 shows all)'
    )


def test_diff_without_changes_says_so(ws: Path) -> None:
    desk = ws / 'desks' / 'main'
    newest, older = ids(ws)[0], ids(ws)[1]
    done = checkpoints('diff', newest, cwd=desk)
    assert done.stdout == f'No changes: checkpoint {newest} and the desk now are the same.\n'
    assert checkpoints('diff', newest, '--stat', cwd=desk).stdout.startswith('No changes')
    assert checkpoints('diff', newest, '--name-status', cwd=desk).stdout == ''
    assert json.loads(checkpoints('diff', newest, '--json', cwd=desk).stdout)['changes'] == []
    assert '-v2\n+v3' in checkpoints('diff', older, cwd=desk).stdout


def test_log_marks_each_path_added_modified_deleted(ws: Path) -> None:
    desk = ws / 'desks' / 'main'
    write(desk, 'notes/a.md', 'a')
    write(desk, 'notes/b.md', 'b')
    assert checkpoints('snapshot', '-m', 'add notes', cwd=desk).returncode == 0
    (desk / 'notes' / 'a.md').unlink()
    write(desk, 'notes/b.md', 'b2')
    write(desk, 'Memory.md', 'v4\n')
    assert checkpoints('snapshot', '-m', 'edit', cwd=desk).returncode == 0
    lines = checkpoints('log', '-n', '2', cwd=desk).stdout.splitlines()
    assert lines[1:4] == ['    M Memory.md', '    D notes/a.md', '    M notes/b.md']
    assert lines[5:] == ['    A notes/a.md', '    A notes/b.md']
    first = checkpoints('log', '-n', '0', cwd=desk).stdout.splitlines()
    assert first[-2].endswith('  v1') and first[-1] == '    A Memory.md'
    rows = json.loads(checkpoints('log', 'notes', '--json', cwd=desk).stdout)
    assert rows[0]['changes'] == [
        {'path': 'notes/a.md', 'kind': 'deleted'},
        {'path': 'notes/b.md', 'kind': 'modified'},
    ]
    assert rows[0]['changed'] == ['notes/a.md', 'notes/b.md']


def test_status_says_how_to_keep_or_discard(ws: Path) -> None:
    desk = ws / 'desks' / 'main'
    write(desk, 'notes/new.md', 'n')
    done = checkpoints('status', cwd=desk)
    assert '  A notes/new.md' in done.stdout
    assert f'Discard them with: checkpoints --workspace {ws} --desk main restore' in done.stdout
    quiet = checkpoints('status', '-q', cwd=desk)
    assert 'notes/new.md' not in quiet.stdout and '1 file(s) changed' in quiet.stdout


# -- follow-up commands, pasted from anywhere -----------------------------------------------


def follow_up(output: str, label: str) -> str:
    [line] = [line for line in output.splitlines() if line.strip().startswith(label)]
    return line.split(label, 1)[1].strip()


def test_printed_commands_work_when_pasted_in_another_folder(tmp_path: Path) -> None:
    """A workspace whose path needs quoting, a desk other than main, and the commands run by a
    real shell from a folder that is no workspace at all."""
    root = tmp_path / "my agent's ws"
    cps = checkpoints_in(root, 'copy')
    write(cps.desk_directory, 'Memory.md', 'old\n')
    old = cps.snapshot('old')
    write(cps.desk_directory, 'Memory.md', 'new\n')
    cps.snapshot('new')
    assert old
    elsewhere = tmp_path / 'elsewhere'
    elsewhere.mkdir()
    restored = checkpoints(
        'restore', old, '--workspace', str(root), '--desk', 'copy', cwd=elsewhere
    )
    assert restored.returncode == 0, restored.stderr
    undo_command = follow_up(restored.stdout, 'Undo with:')
    assert undo_command.startswith("checkpoints --workspace '") and '--desk copy' in undo_command
    assert (cps.desk_directory / 'Memory.md').read_text() == 'old\n'
    pasted = shell(undo_command, cwd=elsewhere)
    assert pasted.returncode == 0, pasted.stderr
    assert (cps.desk_directory / 'Memory.md').read_text() == 'new\n'
    # undo prints redo commands; both forms work pasted.
    undone = checkpoints('--workspace', str(root), '--desk', 'copy', 'undo', cwd=elsewhere)
    assert (cps.desk_directory / 'Memory.md').read_text() == 'old\n'
    redo_command = follow_up(undone.stdout, 'Redo with:')
    assert shell(redo_command, cwd=elsewhere).returncode == 0
    assert (cps.desk_directory / 'Memory.md').read_text() == 'new\n'
    or_command = follow_up(undone.stdout, 'or:')
    assert or_command.split()[-2] == 'restore'
    # From inside the desk the options were found, not given: the command still names them.
    inside = checkpoints('restore', old, cwd=cps.desk_directory)
    assert shell(follow_up(inside.stdout, 'Undo with:'), cwd=elsewhere).returncode == 0
    assert (cps.desk_directory / 'Memory.md').read_text() == 'new\n'


def test_pull_prints_a_restore_command_that_works_pasted(tmp_path: Path) -> None:
    root = tmp_path / 'ws'
    source = checkpoints_in(root)
    write(source.desk_directory, 'Memory.md', 'one\n')
    source.snapshot('one')
    backup = tmp_path / 'backup.git'
    assert checkpoints('remote', 'add', 'b', str(backup), cwd=source.desk_directory).returncode == 0
    assert checkpoints('push', cwd=source.desk_directory).returncode == 0
    cloned = checkpoints('clone', str(backup), '--desk', 'twin', '--no-restore', cwd=root)
    assert cloned.returncode == 0, cloned.stderr
    write(source.desk_directory, 'Memory.md', 'two\n')
    source.snapshot('two')
    assert checkpoints('push', cwd=source.desk_directory).returncode == 0
    pulled = checkpoints('pull', '--desk', 'twin', cwd=root)
    assert pulled.returncode == 0, pulled.stderr
    command = follow_up(pulled.stdout, 'Bring the desk to it with:')
    assert '--desk twin' in command
    assert shell(command, cwd=tmp_path).returncode == 0
    assert (root / 'desks' / 'twin' / 'Memory.md').read_text() == 'two\n'


def test_quiet_restore_prints_only_the_summary_and_the_undo(ws: Path) -> None:
    desk = ws / 'desks' / 'main'
    for n in range(20):
        write(desk, f'notes/{n}.md', str(n))
    assert checkpoints('snapshot', cwd=desk).returncode == 0
    v1 = ids(ws)[-1]
    loud = checkpoints('restore', v1, cwd=desk).stdout.splitlines()
    assert len(loud) == 13  # the summary, 10 rows, how many more, the undo
    assert loud[11] == '  ... and 11 more (11 deleted; -v lists every file)'
    assert checkpoints('undo', cwd=desk).returncode == 0
    every = checkpoints('restore', v1, '-v', cwd=desk).stdout.splitlines()
    assert len(every) == 23 and every[1].startswith('  W ') and every[21].startswith('  D ')
    assert checkpoints('undo', cwd=desk).returncode == 0
    quiet = checkpoints('restore', v1, '--quiet', cwd=desk).stdout.splitlines()
    assert quiet[0].startswith(f"Restored {v1} on desk 'main': 1 written (0 created), 20 deleted.")
    assert len(quiet) == 2 and quiet[1].startswith('Undo with: ')
    quiet_undo = checkpoints('undo', '-q', cwd=desk).stdout.splitlines()
    assert len(quiet_undo) == 3 and quiet_undo[0].startswith("Undid on desk 'main', back to")


# -- snapshot metadata, track ----------------------------------------------------------------


def test_snapshot_turn_tool_and_paths_reach_turns_and_status(ws: Path) -> None:
    desk = ws / 'desks' / 'main'
    first = checkpoints(
        'snapshot', '--turn', 'msg_1', '--tool', 'write_file', '--path', 'notes/plan.md',
        '-m', 'before write_file notes/plan.md', '--json', cwd=desk,
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    marker = json.loads(first.stdout)['id']
    assert marker, "a turn's first snapshot leaves a checkpoint even with nothing changed"
    write(desk, 'notes/plan.md', 'plan\n')
    write(desk, 'Memory.md', 'edited by a person\n')
    status = checkpoints('status', '--json', cwd=desk)
    data = json.loads(status.stdout)
    assert data['basis'] != 'unknown' and data['external'] == ['Memory.md']
    second = checkpoints('snapshot', '--turn', 'msg_1', '-m', 'again', '--json', cwd=desk)
    assert json.loads(second.stdout)['id']
    again = checkpoints('snapshot', '--turn', 'msg_1', '-m', 'nothing new', cwd=desk)
    assert again.stdout.startswith('Nothing changed'), 'a started turn adds no empty checkpoint'
    [turn] = json.loads(checkpoints('turns', '--json', cwd=desk).stdout)
    assert turn['turn_id'] == 'msg_1' and turn['first_checkpoint'] == marker
    assert turn['checkpoints'][-1]['tool'] == 'write_file'
    assert turn['checkpoints'][-1]['paths'] == ['notes/plan.md']
    rewound = checkpoints('restore-turn', 'msg_1', cwd=desk)
    assert rewound.returncode == 0 and not (desk / 'notes' / 'plan.md').exists()
    bad = checkpoints('snapshot', '--turn', 'two words', cwd=desk)
    assert bad.returncode == 1 and 'one word' in bad.stderr


def test_track_shows_adds_removes_and_resets(ws: Path) -> None:
    desk = ws / 'desks' / 'main'
    shown = checkpoints('track', cwd=desk)
    assert shown.stdout.splitlines() == [
        "Desk 'main' tracks:",
        '  Memory.md',
        '  memory',
        '  notes',
        '  skills/agent',
    ]
    write(desk, 'research/r.md', 'r')
    added = checkpoints('track', 'research/', cwd=desk)
    assert added.returncode == 0 and '  research' in added.stdout
    assert 'Record the files now tracked with: checkpoints --workspace' in added.stdout
    assert checkpoints('snapshot', cwd=desk).returncode == 0
    newest = ids(ws)[0]
    assert checkpoints('show', newest, 'research/r.md', cwd=desk).stdout == 'r'
    data = json.loads(checkpoints('track', '--json', cwd=desk).stdout)
    assert data == {
        'desk': 'main',
        'tracked': ['Memory.md', 'memory', 'notes', 'skills/agent', 'research'],
        'changed': False,
    }
    lib = Checkpoints(ws / '.checkpoints' / 'main.git', desk)
    assert 'research' in lib.effective_tracked_paths(), 'the library sees what the CLI set'
    refused = checkpoints('track', '--remove', 'notes/sub', cwd=desk)
    assert refused.returncode == 1 and 'it lies in notes' in refused.stderr
    removed = checkpoints('track', '--remove', 'research', '--remove', 'skills/agent', cwd=desk)
    assert removed.returncode == 0 and 'research' not in removed.stdout
    assert (desk / 'research' / 'r.md').exists(), 'untracking changes nothing in the desk'
    reset = json.loads(checkpoints('track', '--reset', '--json', cwd=desk).stdout)
    assert reset['tracked'] == ['Memory.md', 'memory', 'notes', 'skills/agent']
    empty = checkpoints('track', *sum((['--remove', p] for p in reset['tracked']), []), cwd=desk)
    assert empty.returncode == 1 and 'track nothing' in empty.stderr
