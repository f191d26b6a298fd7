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
@click.option(
    '--force',
    is_flag=True,
    help='Put back files another turn or writer changed after TURN did (the pre-snapshot '
    'keeps them); by default such a conflict changes nothing.',
)
@quiet_option
@external_option
@json_option('Print what was done as JSON.')
@target_options
@verb('desk')
def restore_turn(
    target: Target,
    turn_id: str,
    dry_run: bool,
    force: bool,
    on_external: str | None,
    quiet: bool,
    as_json: bool,
) -> None:
    """Put back the files agent turn TURN wrote, as they were before it began.

    Only the turn's own files are rewound: what later turns, other sessions or a person
    changed elsewhere stays. Where someone else changed one of its files afterwards, nothing
    is changed and the files are named, unless --force (put them back anyway) or
    --keep-external (leave them as they are). Like every restore it snapshots first and
    prints the command that undoes it.

    \b
    Examples:
      checkpoints turns                       # find the turn
      checkpoints restore-turn msg_01H8
      checkpoints restore-turn msg_01H8 --keep-external
      checkpoints restore-turn msg_01H8 --dry-run --json
    """
    if force and on_external is not None:
        raise click.UsageError('choose --force or --keep-external/--refuse-external, not both')
    result = target.checkpoints().restore_turn(
        turn_id, dry_run=dry_run, force=force, on_external=on_external
    )
    if result.recovered:
        click.echo(f'note: {result.recovered}', err=True)
    if as_json:
        form: dict[str, object] = {'turn_id': turn_id, **result.to_dict()}
        if dry_run:
            form.update(before_id=None, restored_id=None)
        render.echo_json(form)
        return
    title = f' (before turn {turn_id})'
    render.restore(result, target, quiet=quiet, title=title, keeping=on_external == 'keep')
