"""Dropping old checkpoints: prune, with a confirmation before a large irreversible drop."""

from __future__ import annotations

import sys

import click

from ..errors import InvalidArgumentError, NoCheckpointsError
from . import render
from .options import dry_run_option, json_option, target_options, verb
from .render import ident
from .target import Target

# A prune dropping more checkpoints than this asks first (on a terminal) or needs --yes.
CONFIRM_ABOVE = 5


def _check_limits(older_than: str | None, max_size: str | None) -> None:
    from ..ops.retention import parse_duration, parse_size

    if older_than is not None and parse_duration(older_than) == 0:
        raise InvalidArgumentError(
            f'--older-than {older_than} would drop every checkpoint but the newest; '
            'give a period like 30d (or --keep 1 to keep only the newest)',
            name='--older-than',
            value=older_than,
        )
    if max_size is not None and parse_size(max_size) == 0:
        raise InvalidArgumentError(
            f'--max-size {max_size} would drop every checkpoint but the newest; '
            'give a size like 500M (or --keep 1 to keep only the newest)',
            name='--max-size',
            value=max_size,
        )


def _confirm(checkpoints, keep, older_than, max_size) -> None:
    """Asks before dropping more than :data:`CONFIRM_ABOVE` checkpoints; off a terminal,
    refuses (the caller must have said --yes)."""
    plan = checkpoints.prune(keep, older_than, max_size, dry_run=True)
    count = plan.checkpoints_before - plan.checkpoints_after
    if count <= CONFIRM_ABOVE:
        return
    what = f'{count} of {plan.checkpoints_before} checkpoints'
    if not sys.stdin.isatty():
        raise InvalidArgumentError(
            f'this prune would drop {what} and cannot be undone; see which with --dry-run, '
            'then run it again with --yes',
            name='--yes',
            value=False,
        )
    click.confirm(
        f'Drop {what} for good, keeping {plan.checkpoints_after} (oldest kept: '
        f'{plan.oldest_kept})?',
        default=False,
        abort=True,
        err=True,
    )


@click.command()
@click.option('--keep', type=click.IntRange(min=1), metavar='N', help='Keep the N newest.')
@click.option(
    '--older-than',
    'older_than',
    metavar='AGE',
    help='Drop checkpoints older than AGE (30d, 12h, 90m, 2w; more than 0).',
)
@click.option(
    '--max-size',
    'max_size',
    metavar='SIZE',
    help='Drop the oldest checkpoints until the objects fit in SIZE (500M, 2G; more than 0).',
)
@dry_run_option('Only say what would be dropped.')
@click.option(
    '--yes',
    '-y',
    is_flag=True,
    help=f'Drop more than {CONFIRM_ABOVE} checkpoints without asking (needed off a terminal).',
)
@click.option(
    '--save',
    is_flag=True,
    help='Also store these limits in the repository, so every later snapshot '
    '(library or command line) applies them.',
)
@json_option('Print the figures as JSON.')
@target_options
@verb('desk')
def prune(
    target: Target,
    keep: int | None,
    older_than: str | None,
    max_size: str | None,
    dry_run: bool,
    yes: bool,
    save: bool,
    as_json: bool,
) -> None:
    """Drop old checkpoints; the ids of those kept never change. It cannot be undone.

    The newest checkpoint, and the snapshot a kept restore took before restoring, are always
    kept; nothing is pruned while a restore is unfinished. Without limits, the limits stored
    with --save are used; with none at all, the storage is only compacted. A prune that would
    drop more than 5 checkpoints asks first on a terminal; elsewhere it needs --yes (try
    --dry-run first).

    \b
    Examples:
      checkpoints prune --keep 200 --dry-run
      checkpoints prune --keep 200 --yes
      checkpoints prune --older-than 30d --max-size 500M --dry-run
      checkpoints prune --keep 500 --save      # every later snapshot keeps 500
    """
    from ..ops.retention import Limits, read_limits, write_limits

    _check_limits(older_than, max_size)
    checkpoints = target.checkpoints()
    given = keep is not None or older_than is not None or max_size is not None
    if save and not given:
        raise InvalidArgumentError(
            '--save needs at least one of --keep, --older-than, --max-size',
            name='--save',
            value=True,
        )
    if save and not target.repository_directory.is_dir():
        raise NoCheckpointsError(
            f'no checkpoints yet for desk {target.desk!r}',
            repository=target.repository_directory,
            desk=target.desk,
        )
    if not given:
        stored = read_limits(target.repository_directory)
        keep, older_than, max_size = stored.keep, stored.older_than, stored.max_size
    if not dry_run and not yes:
        _confirm(checkpoints, keep, older_than, max_size)
    if save:
        write_limits(target.repository_directory, Limits(keep, older_than, max_size))
    result = checkpoints.prune(keep, older_than, max_size, dry_run=dry_run)
    if as_json:
        render.echo_json(result.to_dict())
        return
    verb_text = 'Would prune' if result.dry_run else 'Pruned'
    size = 'estimated ' if result.dry_run else ''
    click.echo(
        f'{verb_text} {result.checkpoints_before - result.checkpoints_after} of '
        f'{result.checkpoints_before} checkpoints of {target.where}; objects '
        f'{result.bytes_before:,} -> '
        f'{size}{result.bytes_after:,} bytes.'
    )
    if result.oldest_kept and result.pruned:
        click.echo(f'Oldest kept: {ident(result.oldest_kept)}')
    if result.dry_run and result.pruned:
        words = ['prune']
        for flag, value in (('--keep', keep), ('--older-than', older_than)):
            if value is not None:
                words += [flag, str(value)]
        if max_size is not None:
            words += ['--max-size', str(max_size)]
        if len(result.pruned) > CONFIRM_ABOVE:
            words.append('--yes')
        click.echo(f'Prune them with: {target.command(*words)}')
