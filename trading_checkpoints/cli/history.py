"""Looking back: diff, show and log."""

from __future__ import annotations

import re

import click

from ..errors import NoCheckpointsError
from . import complete, render
from .options import json_option, limit_option, target_options, verb
from .paths import desk_path, desk_paths, suggesting, suggestion
from .render import ident, style
from .target import Target

_ALL = 2**62
_HEX_ARG = re.compile(r'[0-9a-fA-F]{4,40}')


def split_diff_args(args: tuple[str, ...]) -> tuple[str | None, str | None, list[str]]:
    """``[ID [ID2]] [PATH]...``: the leading arguments of 4 to 40 hex digits (two at most) are
    the ids, the rest paths."""
    ids: list[str] = []
    rest = list(args)
    while rest and len(ids) < 2 and _HEX_ARG.fullmatch(rest[0]):
        ids.append(rest.pop(0))
    ids += [None] * (2 - len(ids))  # type: ignore[list-item]
    return ids[0], ids[1], rest


@click.command()
@click.argument('args', nargs=-1, metavar='[ID [ID2]] [PATH]...', shell_complete=complete.ids)
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
def diff(target: Target, args: tuple[str, ...], mode: str | None, as_json: bool) -> None:
    """Show what changed from checkpoint ID to ID2, or to the desk as it is now.

    Without ID, from the newest checkpoint (what changed since). With PATHs, only those files
    or folders (inside the desk, taken from the current folder, as git does). Text files get a
    unified diff (coloured on a terminal, never with NO_COLOR); binary files are reported as
    binary.

    \b
    Examples:
      checkpoints diff                      # the newest checkpoint -> the desk now
      checkpoints diff 3f2a9c1              # checkpoint -> the desk now
      checkpoints diff 3f2a9c1 9b0e4d2 --stat
      checkpoints diff 3f2a9c1 notes/plan.md
      checkpoints diff 3f2a9c1 --name-status
      checkpoints diff 3f2a9c1 --json
    """
    from_id, to_id, typed = split_diff_args(args)
    used = desk_paths(target, typed)
    if '.' in used:  # the desk itself: every tracked path
        used = []
    checkpoints = target.checkpoints()
    if from_id is None:
        newest = checkpoints.list(1)
        if not newest:
            raise NoCheckpointsError(
                f'no checkpoints yet for {target.where}, nothing to compare the desk with '
                f'(take one with: {target.command("snapshot", "-m", "why")})',
                repository=target.repository_directory,
                desk=target.desk,
            )
        from_id = newest[0].checkpoint_id
    with suggesting(target, typed, used, checkpoints.effective_tracked_paths):
        result = checkpoints.diff(from_id, to_id, paths=used or None)
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

    Inside the desk, PATH is taken from the current folder, as git does.

    \b
    Examples:
      checkpoints show 3f2a9c1 notes/plan.md
      checkpoints show 3f2a9c1 Memory.md > Memory.old.md
      checkpoints show 3f2a9c1 memory/chart.png --json
    """
    used = desk_path(target, path)
    checkpoints = target.checkpoints()
    with suggesting(target, [path], [used], checkpoints.effective_tracked_paths):
        data = checkpoints.show(checkpoint_id, used)
    if not as_json:
        click.echo(data, nl=False)
        return
    from ..ops.results import file_content

    content, encoding = file_content(data)
    render.echo_json(
        {
            'id': checkpoint_id,
            'path': used,
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
    added, M modified, D deleted, T file <-> symlink. Inside the desk, PATH is taken from the
    current folder, as git does.

    \b
    Examples:
      checkpoints log
      checkpoints log notes/plan.md -n 5
      checkpoints log memory --json
    """
    checkpoints = target.checkpoints()
    used = None if path is None else desk_path(target, path)
    if used == '.':  # the desk itself
        used = None
    with suggesting(target, [path or ''], [used or ''], checkpoints.effective_tracked_paths):
        entries = checkpoints.log(used, limit or _ALL)
    if as_json:
        render.echo_json([entry.to_dict() for entry in entries])
        return
    if not entries:
        if used is None:
            click.echo(f'No checkpoints yet for {target.where}.')
            return
        click.echo(f'No checkpoints changed {used}.')
        hint = suggestion(target, path or '', used, checkpoints.effective_tracked_paths())
        if hint is not None:
            click.echo(style(f'hint: {hint}', dim=True))
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
