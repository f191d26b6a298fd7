"""Paths as git takes them: relative to the current folder when it is inside the desk, for every
verb that takes paths (show, log, diff, restore, track, snapshot --path), and a suggestion when
a path names nothing tracked. The real command in a subprocess, run from desk subfolders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.builders import checkpoints_in, write
from helpers.cli import checkpoints


@pytest.fixture
def fx(tmp_path: Path) -> Path:
    """Desk fx of a workspace: memory/lessons.md, notes/plan.md, Memory.md, two checkpoints;
    then notes/plan.md and memory/lessons.md changed on the desk."""
    root = tmp_path / 'workspace'
    cps = checkpoints_in(root, 'fx')
    desk = cps.desk_directory
    write(desk, 'Memory.md', '# Memory\n')
    write(desk, 'memory/lessons.md', 'lesson one\n')
    write(desk, 'notes/plan.md', 'Buy below 400.\n')
    write(desk, 'scratch/readme.txt', 'untracked\n')
    cps.snapshot('first')
    write(desk, 'memory/lessons.md', 'lesson one\nlesson two\n')
    cps.snapshot('second')
    write(desk, 'notes/plan.md', 'SELL EVERYTHING\n')
    write(desk, 'memory/lessons.md', 'forgotten\n')
    return desk


def ids(desk: Path) -> list[str]:
    done = checkpoints('list', '--json', cwd=desk)
    assert done.returncode == 0, done.stderr
    return [row['id'] for row in json.loads(done.stdout)]


def ok(*args: str, cwd: Path) -> str:
    done = checkpoints(*args, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_show_and_log_take_paths_from_the_current_folder(fx: Path) -> None:
    second, first = ids(fx)
    memory = fx / 'memory'
    assert ok('show', first, 'lessons.md', cwd=memory) == 'lesson one\n'
    assert ok('show', first, './lessons.md', cwd=memory) == 'lesson one\n'
    assert ok('show', first, '../notes/plan.md', cwd=memory) == 'Buy below 400.\n'
    assert ok('show', first, str(fx / 'Memory.md'), cwd=memory) == '# Memory\n'
    shown = json.loads(ok('show', first, 'lessons.md', '--json', cwd=memory))
    assert shown['path'] == 'memory/lessons.md'
    log = json.loads(ok('log', 'lessons.md', '--json', cwd=memory))
    assert [entry['id'] for entry in log] == [second, first]
    assert ok('log', '../notes', '-n', '1', cwd=memory).startswith(first)
    # From the desk's root and from outside the desk, paths are taken from the desk's root.
    assert ok('show', first, 'memory/lessons.md', cwd=fx) == 'lesson one\n'
    outside = fx.parent.parent
    assert ok('--desk', 'fx', 'show', first, 'memory/lessons.md', cwd=outside) == 'lesson one\n'


def test_diff_takes_paths_from_the_current_folder_and_defaults_to_the_newest(fx: Path) -> None:
    second, first = ids(fx)
    notes = fx / 'notes'
    names = ok('diff', '--name-status', cwd=notes)  # no id: since the newest checkpoint
    assert names == 'M\tmemory/lessons.md\nM\tnotes/plan.md\n'
    assert ok('diff', second, '--name-status', cwd=notes) == names
    assert ok('diff', 'plan.md', '--name-status', cwd=notes) == 'M\tnotes/plan.md\n'
    assert ok('diff', first, second, '../memory', '--name-status', cwd=notes) == (
        'M\tmemory/lessons.md\n'
    )
    assert ok('diff', '.', '--name-status', cwd=fx) == names  # the desk itself: everything
    patch = ok('diff', 'plan.md', cwd=notes)
    assert '-Buy below 400.' in patch and '+SELL EVERYTHING' in patch


def test_restore_takes_paths_from_the_current_folder(fx: Path) -> None:
    _, first = ids(fx)
    memory = fx / 'memory'
    done = checkpoints('restore', first, 'lessons.md', cwd=memory)
    assert done.returncode == 0, done.stderr
    assert '  W memory/lessons.md' in done.stdout.splitlines()
    assert (fx / 'memory/lessons.md').read_text() == 'lesson one\n'
    assert (fx / 'notes/plan.md').read_text() == 'SELL EVERYTHING\n'  # not asked for
    assert ok('restore', first, '../notes/plan.md', cwd=memory).count('W notes/plan.md') == 1
    assert (fx / 'notes/plan.md').read_text() == 'Buy below 400.\n'
    write(fx, 'notes/plan.md', 'changed again\n')
    write(fx, 'memory/lessons.md', 'changed again\n')
    dry = ok('restore', first, '.', '--dry-run', cwd=fx / 'notes').splitlines()
    assert dry[1:2] == ['  W notes/plan.md'] and dry[-1] == 'Dry run: nothing was changed.'
    # '.' in notes/ is notes/: nothing else would be written
    out = ok('restore', first, '.', cwd=fx).splitlines()  # '.' at the desk's root: all of it
    assert out[1:3] == ['  W memory/lessons.md', '  W notes/plan.md']


def test_snapshot_path_and_track_take_paths_from_the_current_folder(fx: Path) -> None:
    notes = fx / 'notes'
    ok('snapshot', '--path', 'plan.md', '-m', 'declared', cwd=notes)
    rows = json.loads(ok('list', '--json', '-n', '1', cwd=notes))
    assert rows[0]['paths'] == ['notes/plan.md']
    scratch = fx / 'scratch'
    tracked = json.loads(ok('track', 'readme.txt', '--json', cwd=scratch))
    assert 'scratch/readme.txt' in tracked['tracked']
    tracked = json.loads(ok('track', '--remove', 'readme.txt', '--json', cwd=scratch))
    assert 'scratch/readme.txt' not in tracked['tracked']


def test_a_path_leading_out_of_the_desk_is_refused_naming_where_it_was_taken_from(
    fx: Path,
) -> None:
    before = (fx / 'notes/plan.md').read_text()
    for args in (['restore', '../../x.md'], ['log', '../../fx/../x'], ['show', 'abcd123', '/etc']):
        done = checkpoints(*args, cwd=fx / 'memory')
        assert done.returncode == 1, args
        assert done.stderr.startswith('error: ') and 'desk' in done.stderr
    assert (fx / 'notes/plan.md').read_text() == before


@pytest.mark.parametrize(
    ('cwd', 'args', 'meant'),
    [
        ('desks/fx', ['log', 'lessons.md'], 'memory/lessons.md'),  # a tracked file of that name
        ('desks/fx/memory', ['restore', 'memory/lessons.md'], 'memory/lessons.md'),  # from root
        ('desks/fx/scratch', ['show', 'ID', 'plan.md'], 'notes/plan.md'),
        ('.', ['--desk', 'fx', 'diff', 'desks/fx/notes/plan.md'], 'notes/plan.md'),  # from here
        ('desks/fx', ['show', 'ID', 'notes/pln.md'], 'notes/plan.md'),  # a typo: the closest
        ('desks/fx', ['diff', 'ID', 'notse'], 'notes'),
        ('desks/fx/notes', ['blame', 'plna.md'], 'notes/plan.md'),
    ],
)
def test_a_path_outside_the_tracked_set_suggests_the_tracked_one(
    fx: Path, cwd: str, args: list[str], meant: str
) -> None:
    _, first = ids(fx)
    args = [first if arg == 'ID' else arg for arg in args]
    where = fx.parent.parent / cwd
    done = checkpoints(*args, cwd=where)
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert lines[0].startswith('error: ') and lines[1] == f'hint: did you mean {meant}?'
    as_json = json.loads(checkpoints(*args, '--json', cwd=where).stderr)
    assert as_json['hint'] == f'did you mean {meant}?'


def test_a_log_of_a_path_from_the_desk_root_inside_a_subfolder_suggests_it(fx: Path) -> None:
    out = ok('log', 'memory/lessons.md', cwd=fx / 'memory')
    assert out.splitlines() == [
        'No checkpoints changed memory/memory/lessons.md.',
        'hint: did you mean memory/lessons.md?',
    ]


def test_nothing_is_suggested_when_nothing_fits(fx: Path) -> None:
    done = checkpoints('log', 'nothing-like-it.txt', cwd=fx)
    assert done.returncode == 1 and 'hint:' not in done.stderr
