"""``checkpoints demo``: a scripted agent session on an example workspace, narrated."""

from __future__ import annotations

import os
import shlex
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..checkpoints import Checkpoints
from ..errors import InvalidArgumentError

Echo = Callable[[str], Any]

# What the pretend agent writes, turn by turn: (path in the desk, new content).
SESSION: list[tuple[str, str]] = [
    ('Memory.md', '# Desk memory\n\n- Watchlist: AAPL, MSFT\n'),
    ('notes/plan.md', '# Plan\n\nBuy MSFT below 400.\n'),
    ('Memory.md', '# Desk memory\n\n- Watchlist: AAPL, MSFT, NVDA\n- Risk limit: 2% per trade\n'),
    ('memory/lessons.md', '- Earnings weeks are noisy; halve position size.\n'),
    ('notes/plan.md', '# Plan\n\nSELL EVERYTHING NOW!!!\n'),  # the bad write we will undo
]


def build_workspace(root: Path) -> Checkpoints:
    """An example workspace: one desk with a little history and one untracked file."""
    desk = root / 'desks' / 'main'
    desk.mkdir(parents=True, exist_ok=True)
    (desk / 'Memory.md').write_text('# Desk memory\n')
    (desk / 'scratch.txt').write_text('Untracked: checkpoints never read or touch this file.\n')
    return Checkpoints(root / '.checkpoints' / 'main.git', desk)


def run_demo(
    directory: Path | None,
    echo: Echo = print,
    style: Callable[..., str] = lambda t, **_: t,
) -> None:
    if directory is not None:
        if directory.exists() and any(directory.iterdir()):
            raise InvalidArgumentError(
                f'{directory} is not empty; give a new or empty folder for the demo workspace',
                name='directory',
                value=str(directory),
            )
        directory.mkdir(parents=True, exist_ok=True)
        _play(directory, echo, style, str(directory))
        desk = Path(os.path.abspath(directory)) / 'desks' / 'main'
        echo(f'\nThe workspace is kept in {directory}. Inside its desk, no options are needed:')
        echo(f'  cd {shlex.quote(str(desk))}')
        echo('  checkpoints list')
        return
    root = Path(tempfile.mkdtemp(prefix='checkpoints-demo-'))
    try:
        _play(root, echo, style, 'a temporary folder, removed at the end')
    finally:
        shutil.rmtree(root, ignore_errors=True)
    echo(
        '\nThe example workspace is gone again. To keep one and try the commands on it:\n'
        '  checkpoints demo --dir DIR'
    )


def _play(root: Path, echo: Echo, style: Callable[..., str], where: str) -> None:
    """The session on a new example workspace at ``root``, shown to be in ``where``."""
    checkpoints = build_workspace(root)
    desk = checkpoints.desk_directory
    echo(style(f'Example workspace: {where}', bold=True))
    echo(
        f'  desk {desk.relative_to(root)}, checkpoints in '
        f'{checkpoints.repository_directory.relative_to(root)}\n'
    )

    def write_file(path: str, content: str) -> str | None:
        """The agent's write tool: snapshot first, then write."""
        checkpoint_id = checkpoints.snapshot(
            f'before write_file {path}', tool='write_file', paths=[path]
        )
        target = desk / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
        return checkpoint_id

    echo(style('1. The agent writes five times; each write is preceded by a snapshot.', bold=True))
    for path, content in SESSION:
        checkpoint_id = write_file(path, content)
        taken = style(checkpoint_id, fg='yellow') if checkpoint_id else '(unchanged, none taken)'
        echo(f'  snapshot {taken}, then write {path}')
    echo(f'  notes/plan.md now says: {(desk / "notes/plan.md").read_text().splitlines()[-1]!r}\n')

    echo(style('2. The checkpoints, newest first:', bold=True))
    listing = checkpoints.list()
    for item in listing:
        echo(f'  {style(item.checkpoint_id, fg="yellow")}  {item.created_at}  {item.reason}')

    target = listing[0]  # "before write_file notes/plan.md": the state before the bad write
    echo(
        style(
            f'\n3. What changed since {target.checkpoint_id}? diff {target.checkpoint_id}:',
            bold=True,
        )
    )
    for change in checkpoints.diff(target.checkpoint_id).changes:
        for line in (change.patch or f'{change.kind} {change.path}\n').splitlines():
            color = 'green' if line.startswith('+') else 'red' if line.startswith('-') else None
            echo(f'  {style(line, fg=color) if color else line}')

    echo(style(f'\n4. Restore {target.checkpoint_id} ({target.reason}):', bold=True))
    result = checkpoints.restore_with_result(target.checkpoint_id)
    for path in result.written:
        echo(f'  wrote   {path}')
    for path in result.deleted:
        echo(f'  deleted {path}')
    echo(f'  notes/plan.md now says: {(desk / "notes/plan.md").read_text().splitlines()[-1]!r}')
    echo(f'  scratch.txt untouched:  {(desk / "scratch.txt").read_text().strip()!r}')
    echo(f'  the state before the restore was saved as {style(result.before_id, fg="yellow")}\n')

    echo(style('5. Undo the restore: undo', bold=True))
    undo = checkpoints.undo()
    for path in undo.written:
        echo(f'  wrote   {path}')
    echo(f'  notes/plan.md says again: {(desk / "notes/plan.md").read_text().splitlines()[-1]!r}')
    echo('  (and redo would redo it: nothing is ever lost)\n')

    echo(style('6. The full history, restores included:', bold=True))
    for item in checkpoints.list():
        echo(f'  {style(item.checkpoint_id, fg="yellow")}  {item.reason}')
