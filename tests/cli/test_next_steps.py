"""What a newcomer is told: the next step after an error (an unknown id, a refused restore, a
diverged remote, a mistyped verb), listings that never print ``None``, ``diff`` with no id, and
a demo that never names a folder it removes. Real subprocesses."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from helpers.builders import checkpoints_in, write
from helpers.cli import checkpoints

from trading_checkpoints import Checkpoints


@pytest.fixture
def cps(tmp_path: Path) -> Checkpoints:
    """Desk main with two checkpoints: Memory.md 'one', then 'two'; the desk holds 'two'."""
    cps = checkpoints_in(tmp_path / 'ws')
    write(cps.desk_directory, 'Memory.md', 'one\n')
    cps.snapshot('one')
    write(cps.desk_directory, 'Memory.md', 'two\n')
    cps.snapshot('two')
    return cps


def test_list_never_prints_none_for_a_commit_without_line_counts(cps: Checkpoints) -> None:
    desk = cps.desk_directory
    oldest = cps.list()[-1].checkpoint_id
    write(desk, 'Memory.md', 'three\n')
    time.sleep(0.2)  # hashed well after it was written: the stat cache trusts it from now on
    cps.snapshot('three')
    cps.restore(oldest)  # the desk's 'two' was not read back: the commit counts files only
    rows = json.loads(checkpoints('list', '--json', cwd=desk).stdout)
    restored = next(row for row in rows if row['action'] == 'restore')
    assert restored['files_changed'] == 1 and restored['lines_added'] is None
    listed = checkpoints('list', cwd=desk).stdout
    assert 'None' not in listed
    shown = rf'^\w{{7}}  \S+  restored {oldest}  \(1 file, \+\?/-\?\)$'  # the counts unknown
    assert re.search(shown, listed, re.M), listed


def test_diff_without_an_id_is_since_the_newest_checkpoint(
    cps: Checkpoints, tmp_path: Path
) -> None:
    desk = cps.desk_directory
    done = checkpoints('diff', cwd=desk)
    newest = cps.list(1)[0].checkpoint_id
    assert (done.returncode, done.stdout) == (
        0,
        f'No changes: checkpoint {newest} and the desk now are the same.\n',
    )
    write(desk, 'Memory.md', 'three\n')
    assert checkpoints('diff', '--name-status', cwd=desk).stdout == 'M\tMemory.md\n'
    assert json.loads(checkpoints('diff', '--json', cwd=desk).stdout)['from'] == newest
    empty = checkpoints_in(tmp_path / 'ws', 'empty').desk_directory
    empty.mkdir()
    done = checkpoints('diff', cwd=empty)
    assert done.returncode == 1
    assert done.stderr.startswith("error: no checkpoints yet for desk 'empty'")
    assert 'snapshot -m why' in done.stderr


@pytest.mark.parametrize(
    'args', [['restore', 'abcdef1'], ['diff', '0000000'], ['show', 'abcd', 'Memory.md']]
)
def test_an_unknown_id_hints_at_list(cps: Checkpoints, args: list[str]) -> None:
    desk = cps.desk_directory
    done = checkpoints(*args, cwd=desk)
    assert done.returncode == 1
    error, hint = done.stderr.splitlines()
    assert error.startswith('error: no checkpoint')
    workspace = desk.parent.parent
    assert hint == (
        f'hint: checkpoints --workspace {workspace} --desk main list shows the checkpoint ids'
    )
    as_json = json.loads(checkpoints(*args, '--json', cwd=desk).stderr)
    assert as_json['type'] == 'UnknownCheckpointError' and 'list shows' in as_json['hint']


def test_an_unknown_turn_hints_at_turns(cps: Checkpoints) -> None:
    done = checkpoints('restore-turn', 'nosuch', cwd=cps.desk_directory)
    assert done.returncode == 1
    assert done.stderr.splitlines()[1].endswith('--desk main turns lists the turns')


def test_refused_restores_name_the_flags_that_choose(cps: Checkpoints) -> None:
    desk = cps.desk_directory
    oldest = cps.list()[-1].checkpoint_id
    cps.seal()
    write(desk, 'Memory.md', 'a person wrote this\n')
    done = checkpoints('restore', oldest, '--refuse-external', cwd=desk)
    assert done.returncode == 1
    error, hint = done.stderr.splitlines()
    assert error.startswith('error: refusing to restore') and 'Memory.md' in error
    assert hint == (
        "hint: restore --keep-external keeps them and reverts only the agent's changes; "
        'without --refuse-external they are overwritten (kept in the pre-snapshot)'
    )
    assert (desk / 'Memory.md').read_text() == 'a person wrote this\n'
    # undo: the agent's last step changed the file a person changed since.
    cps.snapshot('before write_file Memory.md', paths=['Memory.md'])
    write(desk, 'Memory.md', 'the agent wrote this\n')
    cps.seal()
    write(desk, 'Memory.md', 'and a person changed it\n')
    done = checkpoints('undo', cwd=desk)
    assert done.returncode == 1
    error, hint = done.stderr.splitlines()
    assert error.startswith('error: refusing to undo')
    assert hint == (
        'hint: undo --keep-external leaves those files as they are; undo --force puts the '
        'older version back (what it overwrites is kept in the pre-snapshot)'
    )
    assert (desk / 'Memory.md').read_text() == 'and a person changed it\n'


@pytest.mark.parametrize(
    ('typed', 'meant'),
    [
        ('rollback', "'undo' or 'restore'"),
        ('revert', "'undo' or 'restore'"),
        ('history', "'log' or 'list'"),
        ('commit', "'snapshot'"),
        ('lst', "'list'"),
        ('stauts', "'status'"),
    ],
)
def test_a_mistyped_verb_suggests_the_verb_meant(tmp_path: Path, typed: str, meant: str) -> None:
    done = checkpoints(typed, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines()[0] == f'error: no such verb {typed!r}; did you mean {meant}?'


@pytest.mark.parametrize('typed', ['back-up-everything', 'zzz', 'rollbackk'])
def test_a_verb_like_none_suggests_nothing_rather_than_a_wrong_one(
    tmp_path: Path, typed: str
) -> None:
    done = checkpoints(typed, cwd=tmp_path)
    assert done.returncode == 2
    first = done.stderr.splitlines()[0]
    assert 'did you mean' not in first and "'track'" not in first


def test_push_and_pull_of_diverged_histories_do_not_send_each_other_round(
    cps: Checkpoints, tmp_path: Path
) -> None:
    desk = cps.desk_directory
    backup = tmp_path / 'backup.git'
    assert checkpoints('remote', 'add', 'usb', str(backup), cwd=desk).returncode == 0
    assert checkpoints('push', cwd=desk).returncode == 0
    other = checkpoints_in(tmp_path / 'other')
    Checkpoints.clone(str(backup), other.repository_directory, other.desk_directory)
    write(other.desk_directory, 'Memory.md', 'elsewhere\n')
    other.snapshot('elsewhere')
    other.push()
    write(desk, 'Memory.md', 'here\n')
    cps.snapshot('here')
    pushed = checkpoints('push', cwd=desk)
    pulled = checkpoints('pull', cwd=desk)
    assert pushed.returncode == pulled.returncode == 1
    for done in (pushed, pulled):
        error, hint = done.stderr.splitlines()
        assert 'diverged' in error and 'clone the remote onto another desk' in error
        assert f'clone {backup} --desk main-usb' in hint and 'remote add NEW URL' in hint
    assert 'Pull first, or push' not in pushed.stderr  # pull would send it back here
    assert 'a pull brings its checkpoints here' in pushed.stderr  # only when merely ahead


def test_the_demo_never_names_the_folder_it_removes(tmp_path: Path) -> None:
    done = checkpoints('demo', cwd=tmp_path, env={'TMPDIR': str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert str(tmp_path) not in done.stdout and 'checkpoints-demo-' not in done.stdout
    assert done.stdout.splitlines()[0] == (
        'Example workspace: a temporary folder, removed at the end'
    )
    assert done.stdout.splitlines()[-1] == '  checkpoints demo --dir DIR'
    kept = tmp_path / 'kept'
    done = checkpoints('demo', '--dir', str(kept), cwd=tmp_path)
    assert done.stdout.splitlines()[0] == f'Example workspace: {kept}'
    assert kept.is_dir()
