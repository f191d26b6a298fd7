"""Looking back: diff, show and log."""

from __future__ import annotations

import click

from . import complete, render
from .options import json_option, limit_option, target_options, verb
from .render import ident
from .target import Target

_ALL = 2**62


@click.command()
@click.argument('from_id', metavar='ID', shell_complete=complete.ids)
@click.argument('to_id', metavar='[ID2]', required=False, shell_complete=complete.ids)
@click.option('--stat', 'mode', flag_value='stat', help='Per-file counts of changed lines.')
@click.option(
    '--name-status',
    'mode',
    flag_value='name-status',
    help='One line per file: A, M, D or T, a tab and the path (nothing when nothing changed).',
)
@json_option('Print the changes (with patches) as JSON.')
@target_options
@verb('desk')
def diff(target: Target, from_id: str, to_id: str | None, mode: str | None, as_json: bool) -> None:
    """Show what changed from checkpoint ID to ID2, or to the desk as it is now.

    Text files get a unified diff (coloured on a terminal, never with NO_COLOR); binary
    files are reported as binary.

    \b
    Examples:
      checkpoints diff 3f2a9c1              # checkpoint -> the desk now
      checkpoints diff 3f2a9c1 9b0e4d2 --stat
      checkpoints diff 3f2a9c1 --name-status
      checkpoints diff 3f2a9c1 --json
    """
    result = target.checkpoints().diff(from_id, to_id)
    if as_json:
        render.echo_json(result.to_dict())
    elif mode == 'name-status':
        for change in result.changes:
            click.echo(f'{render.NAME_STATUS[change.kind]}\t{change.path}')
    elif not result.changes:
        other = f'checkpoint {ident(result.to_id)}' if result.to_id else 'the desk now'
        click.echo(f'No changes: checkpoint {ident(result.from_id)} and {other} are the same.')
    elif mode == 'stat':
        render.stat(result.changes)
    else:
        render.patches(result.changes)


@click.command()
@click.argument('checkpoint_id', metavar='ID', shell_complete=complete.ids)
@click.argument('path', metavar='PATH')
@json_option('Print {"id", "path", "size", "encoding", "content"}; binary as base64.')
@target_options
@verb('desk')
def show(target: Target, checkpoint_id: str, path: str, as_json: bool) -> None:
    """Print file PATH as it was at checkpoint ID (raw bytes, as stored).

    \b
    Examples:
      checkpoints show 3f2a9c1 notes/plan.md
      checkpoints show 3f2a9c1 Memory.md > Memory.old.md
      checkpoints show 3f2a9c1 memory/chart.png --json
    """
    data = target.checkpoints().show(checkpoint_id, path)
    if not as_json:
        click.echo(data, nl=False)
        return
    from ..ops.results import file_content

    content, encoding = file_content(data)
    render.echo_json(
        {
            'id': checkpoint_id,
            'path': path,
            'size': len(data),
            'encoding': encoding,
            'content': content,
        }
    )


@click.command()
@click.argument('path', metavar='[PATH]', required=False)
@limit_option('checkpoints')
@json_option('Print a JSON array; each entry\'s "changes" names the kind of each path.')
@target_options
@verb('desk')
def log(target: Target, path: str | None, limit: int, as_json: bool) -> None:
    """List checkpoints newest first with the files each changed (only PATH's, if given).

    A checkpoint "changed" a file when the file differs from the checkpoint before it: A
    added, M modified, D deleted, T file <-> symlink.

    \b
    Examples:
      checkpoints log
      checkpoints log notes/plan.md -n 5
      checkpoints log memory --json
    """
    checkpoints = target.checkpoints()
    entries = checkpoints.log(path, limit or _ALL)
    if as_json:
        render.echo_json([entry.to_dict() for entry in entries])
        return
    if not entries:
        click.echo('No checkpoints changed it.' if path else 'No checkpoints yet.')
        return
    for entry in entries:
        c = entry.checkpoint
        extra = [
            f'{key}={value}'
            for key, value in (('action', entry.action), ('tool', c.tool), ('turn', c.turn))
            if value
        ]
        suffix = f'  [{" ".join(extra)}]' if extra else ''
        click.echo(f'{ident(c.checkpoint_id)}  {c.created_at}  {c.reason}{suffix}')
        for change in entry.changes[:20]:
            click.echo(f'    {render.NAME_STATUS[change.kind]} {change.path}')
        if len(entry.changed) > 20:
            click.echo(f'    ... and {len(entry.changed) - 20} more')
