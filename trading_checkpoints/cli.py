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

    def opened(self):  # -> Checkpoints pruned to the limits stored in its repository
        from .checkpoints import Checkpoints

        return Checkpoints.open(self.repository_directory, self.desk_directory)


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
    items = desk.checkpoints().list(limit)
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
    checkpoint_id = desk.opened().snapshot(reason)
    if as_json:
        click.echo(json.dumps({'id': checkpoint_id}))
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


# -- retention and remotes (issue 6) ----------------------------------------------------------


def _progress_reporter():  # -> callable or None: a one-line progress display on a TTY only
    if not sys.stderr.isatty():
        return None
    width = [0]

    def report(text: str) -> None:
        line = text[:100]
        sys.stderr.write('\r' + line + ' ' * max(0, width[0] - len(line)))
        sys.stderr.flush()
        width[0] = len(line)

    report.finish = lambda: width[0] and sys.stderr.write('\r' + ' ' * width[0] + '\r')  # type: ignore[attr-defined]
    return report


def _finish(progress) -> None:
    if progress is not None:
        progress.finish()


def _transfer_json(result) -> dict[str, Any]:
    return {
        'remote': result.remote,
        'url': result.url,
        'old': result.old,
        'new': result.new,
        'up_to_date': result.up_to_date,
        'marked_shallow': list(result.marked_shallow),
    }


@cli.command()
@click.option('--keep', type=click.IntRange(min=1), help='Keep at most N newest checkpoints.')
@click.option('--older-than', 'older_than', metavar='AGE',
              help='Drop checkpoints older than AGE (30d, 12h, 90m, 2w).')
@click.option('--max-size', 'max_size', metavar='SIZE',
              help='Drop the oldest checkpoints until the objects fit in SIZE (500M, 2G).')
@click.option('--dry-run', is_flag=True, help='Only say what would be dropped.')
@click.option('--save', is_flag=True,
              help='Also store these limits in the repository, so every later snapshot '
                   '(library or command line) applies them.')
@click.option('--json', 'as_json', is_flag=True, help='Print the figures as JSON.')
@click.pass_obj
@_reports_errors
def prune(desk: Desk, keep: int | None, older_than: str | None, max_size: str | None,
          dry_run: bool, save: bool, as_json: bool) -> None:
    """Drop old checkpoints; the ids of those kept never change.

    The newest checkpoint, and the snapshot a kept restore took before restoring, are always
    kept; nothing is pruned while a restore is unfinished. Without limits, the limits stored
    with --save are used; with none at all, the storage is only compacted.

    \b
    Examples:
      checkpoints prune --keep 200
      checkpoints prune --older-than 30d --max-size 500M --dry-run
      checkpoints prune --keep 500 --save      # every later snapshot keeps 500
    """
    from .retention import Limits, parse_duration, parse_size, read_limits, write_limits

    if older_than is not None:
        parse_duration(older_than)
    if max_size is not None:
        parse_size(max_size)
    checkpoints = desk.checkpoints()
    if save:
        if keep is None and older_than is None and max_size is None:
            raise CheckpointError('--save needs at least one of --keep, --older-than, --max-size')
        if not desk.repository_directory.is_dir():
            raise CheckpointError(f'no checkpoints yet for desk {desk.name!r}')
        write_limits(desk.repository_directory, Limits(keep, older_than, max_size))
    if keep is None and older_than is None and max_size is None:
        stored = read_limits(desk.repository_directory)
        keep, older_than, max_size = stored.keep, stored.older_than, stored.max_size
    result = checkpoints.prune(keep, older_than, max_size, dry_run=dry_run)
    if as_json:
        click.echo(json.dumps({
            'dry_run': result.dry_run,
            'checkpoints_before': result.checkpoints_before,
            'checkpoints_after': result.checkpoints_after,
            'bytes_before': result.bytes_before,
            'bytes_after': result.bytes_after,
            'pruned': list(result.pruned),
            'oldest_kept': result.oldest_kept,
        }, indent=2))
        return
    verb = 'Would prune' if result.dry_run else 'Pruned'
    size = 'estimated ' if result.dry_run else ''
    click.echo(
        f'{verb} {result.checkpoints_before - result.checkpoints_after} of '
        f'{result.checkpoints_before} checkpoints; objects {result.bytes_before:,} -> '
        f'{size}{result.bytes_after:,} bytes.'
    )
    if result.oldest_kept and result.pruned:
        click.echo(f'Oldest kept: {_style(result.oldest_kept, fg="yellow")}')


@cli.group('remote')
def remote_group() -> None:
    """Manage the git remotes a desk's checkpoints are backed up to.

    \b
    Examples:
      checkpoints remote add backup /mnt/usb/desk-main.git
      checkpoints remote add web https://git.example.com/desks/main.git
      checkpoints remote list --json
      checkpoints remote remove web
    """


@remote_group.command('add')
@click.argument('name')
@click.argument('url')
@click.pass_obj
@_reports_errors
def remote_add(desk: Desk, name: str, url: str) -> None:
    """Remember URL (a path, file://, http(s):// or ssh://) as remote NAME.

    Credentials may be in the URL (user:password@host) or in $CHECKPOINTS_REMOTE_USERNAME and
    $CHECKPOINTS_REMOTE_PASSWORD; they are never printed.

    \b
    Example:
      checkpoints remote add backup ssh://me@nas/srv/git/desk-main.git
    """
    if not desk.repository_directory.is_dir():
        raise CheckpointError(
            f'no checkpoints yet for desk {desk.name!r}; take a snapshot first '
            '(or use `checkpoints clone URL --desk NAME`)'
        )
    remote = desk.checkpoints().add_remote(name, url)
    click.echo(f'Remote {remote.name} -> {remote.display_url}')


@remote_group.command('list')
@click.option('--json', 'as_json', is_flag=True, help='Print [{"name", "url"}] (passwords masked).')
@click.pass_obj
@_reports_errors
def remote_list(desk: Desk, as_json: bool) -> None:
    """List the remotes (passwords masked).

    \b
    Example:
      checkpoints remote list
    """
    remotes = desk.checkpoints().remotes()
    if as_json:
        click.echo(json.dumps([{'name': r.name, 'url': r.display_url} for r in remotes], indent=2))
        return
    if not remotes:
        click.echo(f'No remotes for desk {desk.name!r}.')
    for remote in remotes:
        click.echo(f'{remote.name}\t{remote.display_url}')


@remote_group.command('remove')
@click.argument('name')
@click.pass_obj
@_reports_errors
def remote_remove(desk: Desk, name: str) -> None:
    """Forget remote NAME (the remote itself is not touched).

    \b
    Example:
      checkpoints remote remove backup
    """
    desk.checkpoints().remove_remote(name)
    click.echo(f'Removed remote {name}.')


@cli.command()
@click.argument('name', required=False)
@click.option('--json', 'as_json', is_flag=True, help='Print what was pushed as JSON.')
@click.pass_obj
@_reports_errors
def push(desk: Desk, name: str | None, as_json: bool) -> None:
    """Back the checkpoints up to remote NAME (fast-forward only).

    NAME may be left out when there is one remote, or one named origin.

    \b
    Examples:
      checkpoints push
      checkpoints --desk research push backup --json
    """
    progress = None if as_json else _progress_reporter()
    try:
        result = desk.checkpoints().push(name, progress=progress)
    finally:
        _finish(progress)
    if as_json:
        click.echo(json.dumps(_transfer_json(result), indent=2))
    elif result.up_to_date:
        click.echo(f'{result.remote} ({result.url}) is already up to date at {result.new}.')
    else:
        click.echo(f'Pushed to {result.remote} ({result.url}): {result.old or "(empty)"} -> '
                   f'{_style(result.new or "", fg="yellow")}')
        if result.marked_shallow:
            click.echo('The remote starts at the oldest kept checkpoint '
                       f'{", ".join(result.marked_shallow)} (history was pruned).')


@cli.command()
@click.argument('name', required=False)
@click.option('--json', 'as_json', is_flag=True, help='Print what was pulled as JSON.')
@click.pass_obj
@_reports_errors
def pull(desk: Desk, name: str | None, as_json: bool) -> None:
    """Fast-forward the checkpoints to remote NAME's; the desk's files are not touched.

    Restore the newest checkpoint afterwards to bring the desk to it.

    \b
    Examples:
      checkpoints pull
      checkpoints pull backup --json
    """
    progress = None if as_json else _progress_reporter()
    try:
        result = desk.checkpoints().pull(name, progress=progress)
    finally:
        _finish(progress)
    if as_json:
        click.echo(json.dumps(_transfer_json(result), indent=2))
    elif result.up_to_date:
        click.echo(f'Already up to date with {result.remote} at {result.new}.')
    else:
        click.echo(f'Pulled from {result.remote} ({result.url}): {result.old or "(none)"} -> '
                   f'{_style(result.new or "", fg="yellow")}')
        click.echo(f'Bring the desk to it with: checkpoints restore {result.new}')


@cli.command()
@click.argument('url')
@click.option('--desk', 'desk_name', callback=lambda c, p, v: v and _validate_desk_name(c, p, v),
              help='The new desk to clone into (default: the group option --desk).')
@click.option('--track', 'tracked', multiple=True, metavar='PATH',
              help='A tracked path of the cloned desk, if it was not created with the default '
                   'ones (repeat for each).')
@click.option('--no-restore', is_flag=True,
              help='Only copy the history; do not write the newest checkpoint into the desk.')
@click.option('--json', 'as_json', is_flag=True, help='Print what was cloned as JSON.')
@click.pass_obj
@_reports_errors
def clone(desk: Desk, url: str, desk_name: str | None, tracked: tuple[str, ...],
          no_restore: bool, as_json: bool) -> None:
    """Copy a desk's checkpoints from URL onto a new desk, and restore the newest.

    The desk is named by --desk after the verb (or before it: `checkpoints --desk NAME clone
    URL`). Its repository must not exist yet; the newest checkpoint is written into the desk
    only when the desk has no tracked files. URL is remembered as the remote origin.

    \b
    Examples:
      checkpoints clone /mnt/usb/desk-main.git --desk main
      checkpoints --workspace ~/agent clone https://git.example.com/d/main.git --desk research
    """
    from .checkpoints import Checkpoints

    target = Desk(desk.workspace, desk_name) if desk_name else desk
    progress = None if as_json else _progress_reporter()
    try:
        from .paths import TRACKED_PATHS

        _, result, written = Checkpoints.clone(
            url, target.repository_directory, target.desk_directory,
            restore=not no_restore, progress=progress, tracked_paths=tracked or TRACKED_PATHS,
        )
    finally:
        _finish(progress)
    if as_json:
        click.echo(json.dumps({**_transfer_json(result), 'desk': target.name,
                               'restored': None if written is None else list(written)}, indent=2))
        return
    click.echo(f'Cloned {result.url} onto desk {target.name!r} at '
               f'{_style(result.new or "", fg="yellow")}.')
    if written is not None:
        click.echo(f'Restored the newest checkpoint: {len(written)} files written.')
    elif not no_restore:
        click.echo('The desk already had tracked files; they were left alone. '
                   f'Restore with: checkpoints --desk {target.name} restore {result.new}')


def main() -> None:
    cli(prog_name='checkpoints')


if __name__ == '__main__':  # pragma: no cover
    main()
