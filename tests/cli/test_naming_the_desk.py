"""Every verb that writes names the desk it acted on (and the workspace, when it did not come
from the current folder), and $CHECKPOINTS_WORKSPACE / $CHECKPOINTS_DESK never win silently over
the folder the command runs from. The real command in a subprocess, from inside desks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.builders import checkpoints_in, write
from helpers.cli import checkpoints


@pytest.fixture
def two(tmp_path: Path) -> tuple[Path, Path]:
    """Project A (desks main and fx) and project B (desk main), each with a checkpoint."""
    roots = []
    for project, desks in (('a', ('main', 'fx')), ('b', ('main',))):
        root = tmp_path / project / 'workspace'
        for name in desks:
            cps = checkpoints_in(root, name)
            write(cps.desk_directory, 'Memory.md', f'{project} {name}\n')
            cps.snapshot('first')
        roots.append(root)
    return roots[0], roots[1]


def run(*args: str, cwd: Path, env: dict[str, str | None] | None = None):
    done = checkpoints(*args, cwd=cwd, env=env)
    assert done.returncode == 0, done.stderr
    return done


def test_the_environment_never_wins_silently_over_where_you_stand(two: tuple[Path, Path]) -> None:
    a, b = two
    here = b / 'desks' / 'main'
    write(here, 'Memory.md', 'B rates\n')
    done = run('snapshot', '-m', 'projB rates', cwd=here, env={'CHECKPOINTS_WORKSPACE': str(a)})
    assert done.stdout == (
        f"Nothing changed on desk 'main' of workspace {a} since the newest checkpoint; "
        'no snapshot taken.\n'
    )
    assert done.stderr == (
        f'note: acting on workspace {a} from $CHECKPOINTS_WORKSPACE, not on {b} where you are '
        '(--workspace or unsetting it chooses)\n'
    )
    # Without the variable the same command acts on B, names only the desk, and says nothing.
    done = run('snapshot', '-m', 'projB rates', cwd=here)
    assert (
        done.stdout.startswith('Snapshot ') and " of desk 'main' taken: projB rates" in done.stdout
    )
    assert done.stderr == ''
    # Reading verbs get the note too (on stderr: their output stays as it was).
    listed = run('list', '--json', cwd=here, env={'CHECKPOINTS_WORKSPACE': str(a)})
    assert [row['reason'] for row in json.loads(listed.stdout)] == ['first']
    assert listed.stderr.startswith(f'note: acting on workspace {a} from $CHECKPOINTS_WORKSPACE')


def test_a_desk_from_the_environment_other_than_the_one_you_are_in_is_noted(
    two: tuple[Path, Path],
) -> None:
    a, _ = two
    inside_main = a / 'desks' / 'main'
    done = run('seal', cwd=inside_main, env={'CHECKPOINTS_DESK': 'fx'})
    assert done.stdout.startswith("Sealed desk 'fx' as the state the agent left (")
    assert done.stderr == (
        "note: acting on desk 'fx' from $CHECKPOINTS_DESK, not on desk 'main' where you are "
        '(--desk or unsetting it chooses)\n'
    )
    assert run('seal', cwd=inside_main, env={'CHECKPOINTS_DESK': 'main'}).stderr == ''
    assert run('seal', cwd=a, env={'CHECKPOINTS_DESK': 'fx'}).stderr == ''  # in no desk
    assert run('seal', cwd=a.parent, env={'CHECKPOINTS_WORKSPACE': str(a)}).stderr == ''
    # An option chooses as plainly as the folder: no note.
    assert run('--desk', 'fx', 'seal', cwd=inside_main).stderr == ''


def test_every_writing_verb_names_the_desk(two: tuple[Path, Path], tmp_path: Path) -> None:
    a, _ = two
    desk = a / 'desks' / 'main'
    first = json.loads(run('list', '--json', cwd=desk).stdout)[0]['id']
    write(desk, 'Memory.md', 'changed\n')
    lines = {
        'snapshot': run('snapshot', '-m', 'why', cwd=desk).stdout,
        'restore': run('restore', first, cwd=desk).stdout,
        'undo': run('undo', cwd=desk).stdout,
        'redo': run('redo', cwd=desk).stdout,
        'seal': run('seal', cwd=desk).stdout,
        'track': run('track', 'extra.md', cwd=desk).stdout,
        'remote add': run('remote', 'add', 'usb', str(tmp_path / 'usb.git'), cwd=desk).stdout,
        'push': run('push', cwd=desk).stdout,
        'pull': run('pull', cwd=desk).stdout,
        'prune': run('prune', '--keep', '100', cwd=desk).stdout,
        'remote remove': run('remote', 'remove', 'usb', cwd=desk).stdout,
    }
    for verb, out in lines.items():
        first_line = out.splitlines()[0]
        assert "desk 'main'" in first_line or "Desk 'main'" in first_line, (verb, out)
        assert str(a) not in first_line, (verb, 'the workspace came from the current folder')
    # Given by an option, the workspace is named too.
    done = run('--workspace', str(a), '--desk', 'fx', 'snapshot', '-m', 'x', cwd=tmp_path)
    assert f"desk 'fx' of workspace {a}" in done.stdout.splitlines()[0]
    write(a / 'desks' / 'fx', 'Memory.md', 'changed\n')
    done = run('--workspace', str(a), '--desk', 'fx', 'undo', '--dry-run', cwd=tmp_path)
    assert f"desk 'fx' of workspace {a}" in done.stdout.splitlines()[0]


def test_clone_outside_a_workspace_says_where_it_created_one(
    two: tuple[Path, Path], tmp_path: Path
) -> None:
    a, _ = two
    backup = tmp_path / 'backup.git'
    run('remote', 'add', 'usb', str(backup), cwd=a / 'desks' / 'main')
    run('push', cwd=a / 'desks' / 'main')
    elsewhere = tmp_path / 'new-machine'
    elsewhere.mkdir()
    done = run('clone', str(backup), '--desk', 'main', cwd=elsewhere)
    created = elsewhere / 'workspace'
    assert done.stdout.splitlines()[0] == (
        f'Created workspace {created} (no workspace at or above {elsewhere}; '
        '--workspace DIR chooses another).'
    )
    assert f"onto desk 'main' of workspace {created} at " in done.stdout.splitlines()[1]
    assert (created / 'desks' / 'main' / 'Memory.md').read_text() == 'a main\n'
    named = tmp_path / 'named'
    done = run('--workspace', str(named), 'clone', str(backup), '--desk', 'main', cwd=elsewhere)
    assert done.stdout.splitlines()[0] == f'Created workspace {named}.'
    # Into an existing workspace: nothing is created, so nothing is said about it.
    again = run('clone', str(backup), '--desk', 'copy', cwd=created)
    assert not again.stdout.startswith('Created') and "onto desk 'copy' at " in again.stdout
