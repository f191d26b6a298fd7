"""The ``checkpoints`` command: porcelain over the library (it never touches dulwich itself)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

import click

from .errors import CheckpointError

F = TypeVar('F', bound=Callable[..., Any])


@dataclass(frozen=True)
class Desk:
    """Where one desk and its shadow repository live in the standard workspace layout."""

    workspace: Path
    name: str

    @property
    def desk_directory(self) -> Path:
        return self.workspace / 'desks' / self.name

    @property
    def repository_directory(self) -> Path:
        return self.workspace / '.checkpoints' / f'{self.name}.git'

    def checkpoints(self):  # -> Checkpoints, imported lazily so --help stays fast
        from .checkpoints import Checkpoints

        return Checkpoints(self.repository_directory, self.desk_directory)


def _use_color() -> bool:
    return sys.stdout.isatty() and 'NO_COLOR' not in os.environ


def _style(text: str, **kwargs: Any) -> str:
    return click.style(text, **kwargs) if _use_color() else text


def _fail(message: str) -> None:
    click.echo(f'error: {message}', err=True)
    sys.exit(1)


def _reports_errors(function: F) -> F:
    """Turns every failure into one line on stderr and a non-zero exit, never a traceback."""

    @wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except CheckpointError as error:
            _fail(str(error))
        except OSError as error:
            _fail(f'{error.strerror or error}{f": {error.filename}" if error.filename else ""}')
        except (click.exceptions.Exit, click.ClickException, KeyboardInterrupt):
            raise
        except Exception as error:  # noqa: BLE001 - the command line never shows a traceback
            if os.environ.get('CHECKPOINTS_DEBUG'):
                raise
            _fail(f'unexpected {type(error).__name__}: {error} (set CHECKPOINTS_DEBUG=1 for details)')

    return wrapper  # type: ignore[return-value]


def _validate_desk_name(ctx: click.Context, param: click.Parameter, value: str) -> str:
    if not value or value in ('.', '..') or '/' in value or '\\' in value or '\0' in value:
        raise click.BadParameter(f'{value!r} is not a desk name (a plain folder name, like "main")')
    return value


@click.group(
    context_settings={'help_option_names': ['-h', '--help'], 'max_content_width': 100},
    epilog="""\b
Examples:
  checkpoints demo                      # try it on a throw-away example workspace
  checkpoints snapshot -m "before cleanup"
  checkpoints list
  checkpoints restore 3f2a9c1
  checkpoints --workspace ~/agent --desk research list --json
""",
)
@click.option(
    '--workspace',
    type=click.Path(file_okay=False, path_type=Path),
    default=lambda: os.environ.get('CHECKPOINTS_WORKSPACE', 'workspace'),
    show_default='$CHECKPOINTS_WORKSPACE or ./workspace',
    help='Folder holding desks/<desk> and .checkpoints/<desk>.git.',
)
@click.option(
    '--desk',
    default=lambda: os.environ.get('CHECKPOINTS_DESK', 'main'),
    show_default='$CHECKPOINTS_DESK or main',
    callback=_validate_desk_name,
    help='Name of the desk: its files are in <workspace>/desks/<desk>.',
)
@click.version_option(package_name='trading-checkpoints')
@click.pass_context
def cli(ctx: click.Context, workspace: Path, desk: str) -> None:
    """Checkpoints of a desk's tracked files: snapshot, list and restore, all undoable.

    Only Memory.md, memory/, notes/ and skills/agent/ (or the paths the desk's repository
    was created with) are recorded and restored; nothing else in the desk is ever touched.
    """
    ctx.obj = Desk(workspace, desk)


@cli.command('list')
@click.option('--limit', '-n', type=click.IntRange(min=0), default=20, show_default=True,
              help='Show at most this many checkpoints.')
@click.option('--json', 'as_json', is_flag=True, help='Print a JSON array instead of a table.')
@click.pass_obj
@_reports_errors
def list_command(desk: Desk, limit: int, as_json: bool) -> None:
    """List checkpoints, newest first.

    \b
    Examples:
      checkpoints list
      checkpoints list -n 5 --json
    """
    checkpoints = desk.checkpoints()
    items = checkpoints.list(limit)
    _note_recovery(checkpoints)
    if as_json:
        rows = [{'id': c.checkpoint_id, 'created_at': c.created_at, 'reason': c.reason} for c in items]
        click.echo(json.dumps(rows, indent=2))
        return
    if not items:
        click.echo(f'No checkpoints yet for desk {desk.name!r} ({desk.repository_directory}).')
        return
    for item in items:
        click.echo(f'{_style(item.checkpoint_id, fg="yellow")}  {item.created_at}  {item.reason}')


@cli.command()
@click.option('-m', '--message', 'reason', default='manual snapshot', show_default=True,
              help='Why the snapshot is taken; kept as its message.')
@click.option('--json', 'as_json', is_flag=True, help='Print {"id": ...} (null when unchanged).')
@click.pass_obj
@_reports_errors
def snapshot(desk: Desk, reason: str, as_json: bool) -> None:
    """Record the tracked files now, if they changed since the newest checkpoint.

    \b
    Examples:
      checkpoints snapshot
      checkpoints snapshot -m "before rewriting notes/plan.md"
    """
    if not desk.desk_directory.is_dir():
        raise CheckpointError(
            f'no desk {desk.name!r} in {desk.workspace} (expected the folder {desk.desk_directory})'
        )
    result = desk.checkpoints().snapshot_with_result(reason)
    checkpoint_id = result.checkpoint_id
    if result.recovered:
        click.echo(f'note: {result.recovered}', err=True)
    for path, why in result.skipped:
        click.echo(f'warning: left out {path}: {why}', err=True)
    if as_json:
        click.echo(json.dumps({
            'id': checkpoint_id,
            'skipped': [{'path': path, 'reason': why} for path, why in result.skipped],
        }))
    elif checkpoint_id is None:
        click.echo('Nothing changed since the newest checkpoint; no snapshot taken.')
    else:
        click.echo(f'Snapshot {_style(checkpoint_id, fg="yellow")} taken: {reason}')


@cli.command()
@click.argument('checkpoint_id', metavar='ID')
@click.option('--json', 'as_json', is_flag=True, help='Print what was done as JSON.')
@click.pass_obj
@_reports_errors
def restore(desk: Desk, checkpoint_id: str, as_json: bool) -> None:
    """Put the tracked files back as they were at checkpoint ID.

    The current files are snapshotted first, so the restore itself can be undone with the
    command it prints. Files created since ID are deleted; untracked files are never touched.

    \b
    Examples:
      checkpoints restore 3f2a9c1
      checkpoints restore 3f2a9c1 --json
    """
    result = desk.checkpoints().restore_with_result(checkpoint_id)
    if result.recovered:
        click.echo(f'note: {result.recovered}', err=True)
    if as_json:
        click.echo(json.dumps({
            'before_id': result.before_id,
            'target_id': result.target_id,
            'restored_id': result.restored_id,
            'written': list(result.written),
            'deleted': list(result.deleted),
        }, indent=2))
        return
    if not result.written and not result.deleted:
        click.echo(f'The tracked files already match {result.target_id}; nothing to restore.')
        return
    click.echo(
        f'Restored {_style(result.target_id, fg="yellow")}: '
        f'{len(result.written)} written, {len(result.deleted)} deleted.'
    )
    for path in result.written:
        click.echo(f'  {_style("W", fg="green")} {path}')
    for path in result.deleted:
        click.echo(f'  {_style("D", fg="red")} {path}')
    click.echo(f'Undo with: checkpoints restore {result.before_id}')


@cli.command()
@click.option('--dir', 'directory', type=click.Path(file_okay=False, path_type=Path),
              help='Build the example workspace here (an empty or new folder) and keep it; '
                   'by default a temporary folder is used and removed.')
@_reports_errors
def demo(directory: Path | None) -> None:
    """Play a short scripted agent session on an example workspace.

    It writes a few files through a checkpointed write tool, lists the checkpoints, restores
    one, and undoes that restore, printing each step.

    \b
    Examples:
      checkpoints demo
      checkpoints demo --dir /tmp/checkpoints-demo
    """
    from .demo import run_demo

    run_demo(directory, echo=click.echo, style=_style)


def _note_recovery(checkpoints: Any) -> None:
    """One stderr line when the verb first completed a restore a crash had interrupted."""
    recovery = getattr(checkpoints, 'last_recovery', None)
    if recovery is not None:
        click.echo(f'note: {recovery}', err=True)


def main() -> None:
    cli(prog_name='checkpoints')


if __name__ == '__main__':  # pragma: no cover
    main()
