"""prune is irreversible: zero limits are refused, and a large drop is confirmed first (on a
terminal) or needs --yes. The real command in a subprocess; a pseudo-terminal for the prompt."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from helpers.builders import checkpoints_in, write
from helpers.cli import checkpoints, start


@pytest.fixture
def desk(tmp_path: Path) -> Path:
    """A desk with ten checkpoints."""
    cps = checkpoints_in(tmp_path)
    for n in range(10):
        write(cps.desk_directory, 'Memory.md', f'v{n}\n')
        cps.snapshot(f'v{n}')
    return cps.desk_directory


def count(desk: Path) -> int:
    return len(json.loads(checkpoints('list', '-n', '0', '--json', cwd=desk).stdout))


@pytest.mark.parametrize(
    ('args', 'message'),
    [
        (['--max-size', '0'], '--max-size 0 would drop every checkpoint but the newest'),
        (['--max-size', '0k'], '--max-size 0k would drop every checkpoint but the newest'),
        (['--older-than', '0d'], '--older-than 0d would drop every checkpoint but the newest'),
    ],
)
def test_zero_limits_are_errors(desk: Path, args: list[str], message: str) -> None:
    for extra in ([], ['--yes'], ['--dry-run']):
        done = checkpoints('prune', *args, *extra, cwd=desk)
        assert done.returncode == 1 and message in done.stderr
        assert len(done.stderr.splitlines()) == 1
    assert count(desk) == 10


def test_a_large_prune_off_a_terminal_needs_yes(desk: Path) -> None:
    refused = checkpoints('prune', '--keep', '3', cwd=desk)
    assert refused.returncode == 1
    assert refused.stderr == (
        'error: this prune would drop 7 of 10 checkpoints and cannot be undone; see which with '
        '--dry-run, then run it again with --yes\n'
    )
    assert count(desk) == 10
    dry = checkpoints('prune', '--keep', '3', '--dry-run', cwd=desk)
    assert dry.returncode == 0 and dry.stdout.startswith('Would prune 7 of 10 checkpoints')
    command = dry.stdout.splitlines()[-1]
    assert command.startswith('Prune them with: checkpoints --workspace ')
    assert command.endswith('prune --keep 3 --yes')
    assert count(desk) == 10
    done = checkpoints('prune', '--keep', '3', '--yes', cwd=desk)
    assert done.returncode == 0 and done.stdout.startswith('Pruned 7 of 10 checkpoints')
    assert count(desk) == 3


def test_a_small_prune_needs_no_confirmation(desk: Path) -> None:
    done = checkpoints('prune', '--keep', '5', cwd=desk)
    assert done.returncode == 0, done.stderr
    assert count(desk) == 5


def test_stored_limits_are_confirmed_too(desk: Path) -> None:
    saved = checkpoints('prune', '--keep', '2', '--save', cwd=desk)
    assert saved.returncode == 1 and 'would drop 8 of 10' in saved.stderr
    assert count(desk) == 10
    assert checkpoints('prune', '--keep', '2', '--save', '--yes', cwd=desk).returncode == 0
    assert count(desk) == 2


def on_a_terminal(desk: Path, answer: bytes, *args: str) -> tuple[int, str]:
    pty = pytest.importorskip('pty')
    primary, secondary = pty.openpty()
    process = start(
        'prune',
        *args,
        cwd=desk,
        stdin=secondary,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    os.close(secondary)
    os.write(primary, answer)
    out, err = process.communicate(timeout=60)
    os.close(primary)
    return process.returncode, out.decode() + err.decode()


def test_on_a_terminal_a_large_prune_asks_first(desk: Path) -> None:
    code, output = on_a_terminal(desk, b'n\n', '--keep', '3')
    assert code == 1
    assert 'Drop 7 of 10 checkpoints for good, keeping 3' in output
    assert 'aborted: nothing was changed' in output
    assert count(desk) == 10
    code, output = on_a_terminal(desk, b'y\n', '--keep', '3')
    assert code == 0 and 'Pruned 7 of 10 checkpoints' in output
    assert count(desk) == 3
