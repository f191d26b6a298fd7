"""Shell completion, as bash, zsh and fish ask for it (click's protocol, a real process)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.builders import checkpoints_in, write
from helpers.cli import checkpoints


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / 'ws'
    main = checkpoints_in(root)
    write(main.desk_directory, 'Memory.md', 'v1')
    with main.turn('a question', message_id='msg_7'):
        with main.guard('write_file Memory.md'):
            write(main.desk_directory, 'Memory.md', 'v2')
    (root / 'desks' / 'research').mkdir()
    return root


def bash_complete(words: str, cwd: Path) -> list[tuple[str, str]]:
    """What bash would offer after typing ``words`` (the last word being completed)."""
    parts = words.split(' ')
    done = checkpoints(
        cwd=cwd,
        env={
            '_CHECKPOINTS_COMPLETE': 'bash_complete',
            'COMP_WORDS': words,
            'COMP_CWORD': str(len(parts) - 1),
        },
    )
    assert done.returncode == 0, done.stderr
    return [tuple(line.split(',', 1)) for line in done.stdout.splitlines() if line]  # type: ignore[misc]


def test_verbs_complete(ws: Path) -> None:
    offered = [value for _, value in bash_complete('checkpoints re', ws)]
    assert offered == ['redo', 'remote', 'restore', 'restore-turn']


def test_desk_names_complete_before_and_after_the_verb(ws: Path, tmp_path: Path) -> None:
    assert bash_complete('checkpoints --desk ', ws) == [('plain', 'main'), ('plain', 'research')]
    assert bash_complete('checkpoints list --desk r', ws) == [('plain', 'research')]
    # With --workspace typed first, from a folder that is no workspace.
    words = f'checkpoints --workspace {ws} list --desk m'
    assert bash_complete(words, tmp_path) == [('plain', 'main')]


def test_checkpoint_ids_and_turns_complete(ws: Path) -> None:
    ids = checkpoints_in(ws).list()
    inside = ws / 'desks' / 'main'
    offered = [value for _, value in bash_complete('checkpoints diff ', inside)]
    assert offered == [c.checkpoint_id for c in ids]
    prefix = ids[0].checkpoint_id[:3]
    assert ids[0].checkpoint_id in [
        v for _, v in bash_complete(f'checkpoints restore {prefix}', inside)
    ]
    assert bash_complete('checkpoints restore-turn ', inside) == [('plain', 'msg_7')]
    # Outside any workspace: nothing offered, no error.
    assert bash_complete('checkpoints diff ', ws.parent) == []


def test_zsh_gets_descriptions(ws: Path) -> None:
    done = checkpoints(
        cwd=ws / 'desks' / 'main',
        env={
            '_CHECKPOINTS_COMPLETE': 'zsh_complete',
            'COMP_WORDS': 'checkpoints diff ',
            'COMP_CWORD': '2',
        },
    )
    assert 'before write_file Memory.md' in done.stdout


@pytest.mark.parametrize('shell', ['bash', 'zsh', 'fish'])
def test_completion_prints_the_script(ws: Path, shell: str) -> None:
    done = checkpoints('completion', shell, cwd=ws)
    assert done.returncode == 0 and '_CHECKPOINTS_COMPLETE' in done.stdout
    assert f'{shell}_complete' in done.stdout
