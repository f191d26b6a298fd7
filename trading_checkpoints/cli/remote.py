"""Backups through git remotes: remote add/list/remove, push, pull and clone."""

from __future__ import annotations

from typing import Any

import click

from ..errors import NoCheckpointsError
from . import complete, render
from .options import json_option, target_options, verb
from .render import ident
from .target import Target


def transfer_dict(result: Any) -> dict[str, Any]:
    return {
        'remote': result.remote,
        'url': result.url,
        'old': result.old,
        'new': result.new,
        'up_to_date': result.up_to_date,
        'marked_shallow': list(result.marked_shallow),
    }


@click.group('remote')
@target_options
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
@json_option('Print {"name", "url"} (password masked).')
@target_options
@verb('desk')
def remote_add(target: Target, name: str, url: str, as_json: bool) -> None:
    """Remember URL (a path, file://, http(s):// or ssh://) as remote NAME.

    Credentials may be in the URL (user:password@host) or in $CHECKPOINTS_REMOTE_USERNAME and
    $CHECKPOINTS_REMOTE_PASSWORD; they are never printed.

    \b
    Example:
      checkpoints remote add backup ssh://me@nas/srv/git/desk-main.git
    """
    if not target.repository_directory.is_dir():
        raise NoCheckpointsError(
            f'no checkpoints yet for desk {target.desk!r}; take a snapshot first '
            '(or use `checkpoints clone URL --desk NAME`)',
            repository=target.repository_directory,
            desk=target.desk,
        )
    remote = target.checkpoints().add_remote(name, url)
    if as_json:
        render.echo_json({'name': remote.name, 'url': remote.display_url})
        return
    click.echo(f'Remote {remote.name} -> {remote.display_url} (for {target.where})')


@remote_group.command('list')
@json_option('Print [{"name", "url"}] (passwords masked).')
@target_options
@verb('desk')
def remote_list(target: Target, as_json: bool) -> None:
    """List the remotes (passwords masked).

    \b
    Example:
      checkpoints remote list
    """
    remotes = target.checkpoints().remotes()
    if as_json:
        render.echo_json([{'name': r.name, 'url': r.display_url} for r in remotes])
        return
    if not remotes:
        click.echo(f'No remotes for {target.where}.')
    for remote in remotes:
        click.echo(f'{remote.name}\t{remote.display_url}')


@remote_group.command('remove')
@click.argument('name', shell_complete=complete.remotes)
@json_option('Print {"removed": NAME}.')
@target_options
@verb('desk')
def remote_remove(target: Target, name: str, as_json: bool) -> None:
    """Forget remote NAME (the remote itself is not touched).

    \b
    Example:
      checkpoints remote remove backup
    """
    target.checkpoints().remove_remote(name)
    if as_json:
        render.echo_json({'removed': name})
        return
    click.echo(f'Removed remote {name} of {target.where}.')


@click.command()
@click.argument('name', required=False, shell_complete=complete.remotes)
@click.option(
    '--create-parents',
    is_flag=True,
    help="Create the folders above a path remote's repository if they are missing (without "
    'it, a missing folder is an error: a backup drive may not be mounted).',
)
@json_option('Print what was pushed as JSON.')
@target_options
@verb('desk')
def push(target: Target, name: str | None, create_parents: bool, as_json: bool) -> None:
    """Back the checkpoints up to remote NAME (fast-forward only).

    NAME may be left out when there is one remote, or one named origin. A path remote is
    created on the first push, inside a folder that must already exist (or --create-parents).

    \b
    Examples:
      checkpoints push
      checkpoints --desk research push backup --json
      checkpoints push backup --create-parents   # also makes the missing folders above it
    """
    checkpoints = target.checkpoints()
    result = render.run_with_progress(
        lambda progress: checkpoints.push(name, progress=progress, create_parents=create_parents),
        as_json,
    )
    if as_json:
        render.echo_json(transfer_dict(result))
    elif result.up_to_date:
        click.echo(
            f'{result.remote} ({result.url}) is already up to date with {target.where} at '
            f'{result.new}.'
        )
    else:
        click.echo(
            f'Pushed {target.where} to {result.remote} ({result.url}): '
            f'{result.old or "(empty)"} -> {ident(result.new)}'
        )
        if result.marked_shallow:
            click.echo(
                'The remote starts at the oldest kept checkpoint '
                f'{", ".join(result.marked_shallow)} (history was pruned).'
            )


@click.command()
@click.argument('name', required=False, shell_complete=complete.remotes)
@json_option('Print what was pulled as JSON.')
@target_options
@verb('desk')
def pull(target: Target, name: str | None, as_json: bool) -> None:
    """Fast-forward the checkpoints to remote NAME's; the desk's files are not touched.

    Restore the newest checkpoint afterwards to bring the desk to it (the command is printed).

    \b
    Examples:
      checkpoints pull
      checkpoints pull backup --json
    """
    checkpoints = target.checkpoints()
    result = render.run_with_progress(
        lambda progress: checkpoints.pull(name, progress=progress), as_json
    )
    if as_json:
        render.echo_json(transfer_dict(result))
    elif result.up_to_date:
        click.echo(
            f'{target.where[0].upper()}{target.where[1:]} is already up to date with '
            f'{result.remote} at {result.new}.'
        )
    else:
        click.echo(
            f'Pulled from {result.remote} ({result.url}) into {target.where}: '
            f'{result.old or "(none)"} -> {ident(result.new)}'
        )
        click.echo(f'Bring the desk to it with: {target.command("restore", result.new or "")}')


@click.command()
@click.argument('url')
@click.option(
    '--track',
    'tracked',
    multiple=True,
    metavar='PATH',
    help='A tracked path of the cloned desk, if it was not created with the default '
    'ones (repeat for each).',
)
@click.option(
    '--no-restore',
    is_flag=True,
    help='Only copy the history; do not write the newest checkpoint into the desk.',
)
@json_option('Print what was cloned as JSON.')
@target_options
@verb(None)
def clone(
    target: Target, url: str, tracked: tuple[str, ...], no_restore: bool, as_json: bool
) -> None:
    """Copy a desk's checkpoints from URL onto a new desk, and restore the newest.

    The desk is named by --desk (before or after the verb). Its repository must not exist
    yet; the newest checkpoint is written into the desk only when the desk has no tracked
    files. URL is remembered as the remote origin.

    \b
    Examples:
      checkpoints clone /mnt/usb/desk-main.git --desk main
      checkpoints --workspace ~/agent clone https://git.example.com/d/main.git --desk research
    """
    from ..checkpoints import Checkpoints
    from ..core.paths import TRACKED_PATHS

    created = not target.workspace.exists()
    _, result, written = render.run_with_progress(
        lambda progress: Checkpoints.clone(
            url,
            target.repository_directory,
            target.desk_directory,
            restore=not no_restore,
            progress=progress,
            tracked_paths=tracked or TRACKED_PATHS,
        ),
        as_json,
    )
    if as_json:
        render.echo_json(
            {
                **transfer_dict(result),
                'desk': target.desk,
                'restored': None if written is None else list(written),
            }
        )
        return
    if created and target.workspace_source == 'default':
        click.echo(
            f'Created workspace {target.workspace} (no workspace at or above {target.cwd}; '
            '--workspace DIR chooses another).'
        )
    elif created:
        click.echo(f'Created workspace {target.workspace}.')
    click.echo(f'Cloned {result.url} onto {target.where} at {ident(result.new)}.')
    if written is not None:
        click.echo(f'Restored the newest checkpoint: {len(written)} files written.')
    elif not no_restore:
        click.echo(
            'The desk already had tracked files; they were left alone. '
            f'Restore with: {target.command("restore", result.new or "")}'
        )
