"""Agent turns: turns and restore-turn."""

from __future__ import annotations

import click

from . import complete, render
from .options import (
    dry_run_option,
    external_option,
    json_option,
    limit_option,
    quiet_option,
    target_options,
    verb,
)
from .render import ident, style
from .target import Target


@click.command()
@limit_option('turns')
@json_option('Print a JSON array instead of a list.')
@target_options
@verb('desk')
def turns(target: Target, limit: int, as_json: bool) -> None:
    """List agent turns newest first, each with its checkpoints.

    A turn groups the checkpoints an agent took while answering one message
    (Checkpoints.turn in the library, `snapshot --turn` here); `restore-turn TURN` rewinds one.

    \b
    Examples:
      checkpoints turns
      checkpoints turns -n 3 --json
    """
    items = target.checkpoints().turns(limit or None)
    if as_json:
        render.echo_json([item.to_dict() for item in items])
        return
    if not items:
        click.echo(
            f'No turns recorded for desk {target.desk!r} '
            '(snapshot --turn TURN, or Checkpoints.turn in the library, records them).'
        )
        return
    for item in items:
        label = f'  {item.label}' if item.label else ''
        click.echo(f'{style(item.turn_id, fg="cyan")}  {item.started_at}{label}')
        for checkpoint in item.checkpoints:
            click.echo(f'  {ident(checkpoint.checkpoint_id)}  {checkpoint.reason}')
    click.echo(style('hint: checkpoints restore-turn TURN rewinds a turn (undoably)', dim=True))


@click.command('restore-turn')
@click.argument('turn_id', metavar='TURN', shell_complete=complete.turns)
@dry_run_option('Only say what would be written and deleted.')
@quiet_option
@external_option
@json_option('Print what was done as JSON.')
@target_options
@verb('desk')
def restore_turn(
    target: Target,
    turn_id: str,
    dry_run: bool,
    on_external: str | None,
    quiet: bool,
    as_json: bool,
) -> None:
    """Rewind the tracked files to the state before agent turn TURN began.

    Restores the turn's first checkpoint (taken before its first write), so later turns are
    rewound too. Like every restore it snapshots first and prints the command that undoes it.

    \b
    Examples:
      checkpoints turns                       # find the turn
      checkpoints restore-turn msg_01H8
      checkpoints restore-turn msg_01H8 --dry-run --json
    """
    result = target.checkpoints().restore_turn(turn_id, dry_run=dry_run, on_external=on_external)
    if as_json:
        form = result.to_dict()
        render.echo_json(
            {
                'turn_id': turn_id,
                'dry_run': dry_run,
                'before_id': None if dry_run else form['before_id'],
                'target_id': form['target_id'],
                'restored_id': None if dry_run else form['restored_id'],
                'written': form['written'],
                'deleted': form['deleted'],
            }
        )
        return
    verb_text = 'Would restore' if dry_run else 'Restored'
    click.echo(
        f'{verb_text} {ident(result.target_id)} (before turn {turn_id}): '
        f'{len(result.written)} written, {len(result.deleted)} deleted.'
    )
    if not quiet:
        render.file_lines(result.written, result.deleted)
    if dry_run:
        click.echo('Dry run: nothing was changed.')
    else:
        click.echo(f'Undo with: {target.command("restore", result.before_id)}')
