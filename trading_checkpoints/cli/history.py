"""Looking back: diff, show and log."""

from __future__ import annotations

import base64
from typing import Any

import click

from ..errors import CheckpointError
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
    try:
        content, encoding = data.decode('utf-8'), 'utf-8'
    except UnicodeDecodeError:
        content, encoding = base64.b64encode(data).decode('ascii'), 'base64'
    render.echo_json(
        {
            'id': checkpoint_id,
            'path': path,
            'size': len(data),
            'encoding': encoding,
            'content': content,
        }
    )


def kinds_of(checkpoints: Any, entries: list[Any]) -> list[dict[str, str]]:
    """For each log entry, the kind of change (added, modified, ...) of each path it names.

    The library's log names the changed paths only, so each entry is compared with the
    checkpoint before it (the next older one in the listing) over just those paths. The
    oldest checkpoint (the first, or the oldest kept by a prune) added everything it holds.
    A path the comparison cannot place (tracked paths changed since) is ``changed``.
    """
    if not entries:
        return []
    oldest = entries[-1].checkpoint.checkpoint_id
    wanted = max(64, 2 * len(entries))
    while True:
        ids = [item.checkpoint_id for item in checkpoints.list(wanted)]
        if oldest in ids[:-1] or len(ids) < wanted:
            break
        wanted *= 4
    parent_of = dict(zip(ids, ids[1:], strict=False))
    kinds: list[dict[str, str]] = []
    for entry in entries:
        checkpoint_id = entry.checkpoint.checkpoint_id
        parent = parent_of.get(checkpoint_id)
        if parent is None:
            kinds.append({path: 'added' for path in entry.changed})
            continue
        try:
            found = checkpoints.diff(
                parent, checkpoint_id, patches=False, paths=list(entry.changed)
            ).changes
        except CheckpointError:
            found = ()
        known = {change.path: change.kind for change in found}
        kinds.append({path: known.get(path, 'changed') for path in entry.changed})
    return kinds


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
    kinds = kinds_of(checkpoints, entries)
    if as_json:
        rows = []
        for entry, kind in zip(entries, kinds, strict=True):
            row = entry.to_dict()
            row['changes'] = [{'path': p, 'kind': kind[p]} for p in entry.changed]
            rows.append(row)
        render.echo_json(rows)
        return
    if not entries:
        click.echo('No checkpoints changed it.' if path else 'No checkpoints yet.')
        return
    for entry, kind in zip(entries, kinds, strict=True):
        c = entry.checkpoint
        extra = [
            f'{key}={value}'
            for key, value in (('action', entry.action), ('tool', c.tool), ('turn', c.turn))
            if value
        ]
        suffix = f'  [{" ".join(extra)}]' if extra else ''
        click.echo(f'{ident(c.checkpoint_id)}  {c.created_at}  {c.reason}{suffix}')
        for changed in entry.changed[:20]:
            click.echo(f'    {render.NAME_STATUS[kind[changed]]} {changed}')
        if len(entry.changed) > 20:
            click.echo(f'    ... and {len(entry.changed) - 20} more')
