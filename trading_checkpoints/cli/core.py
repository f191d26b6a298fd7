"""The everyday verbs: snapshot, restore, status, desks and track (list: ``listing``)."""

from __future__ import annotations

import re
from typing import Any

import click

from ..errors import BadPathError, InvalidArgumentError
from . import complete, render
from .options import (
    at_option,
    dry_run_option,
    external_option,
    held_at,
    json_option,
    quiet_option,
    target_options,
    verb,
    verbose_option,
)
from .paths import desk_paths, suggesting
from .protect import desk_policy
from .render import ident, style
from .target import Target

_HEX_ARG = re.compile(r'[0-9a-fA-F]{4,40}')


def note_recovery(checkpoints: Any, target: Target) -> None:
    """One stderr line when the verb first completed a restore a crash had interrupted."""
    render.recovery_note(getattr(checkpoints, 'last_recovery', None), target)


@click.command()
@click.option(
    '-m',
    '--message',
    'reason',
    default='manual snapshot',
    show_default=True,
    help='Why the snapshot is taken; kept as its message.',
)
@click.option(
    '--turn',
    metavar='TURN',
    shell_complete=complete.turns,
    help="Tag it with agent turn TURN (one word, such as the user message's id). A turn's "
    'first snapshot is always kept, so `restore-turn TURN` can rewind the whole turn.',
)
@click.option('--tool', metavar='NAME', help='The tool about to write (kept as metadata).')
@click.option(
    '--path',
    'paths',
    multiple=True,
    metavar='PATH',
    help='A path the tool is about to write (repeat for each; relative to the current folder '
    'inside the desk). Later changes elsewhere are then reported as external by `status`.',
)
@json_option('Print {"id", "external", "skipped"} (id null when nothing changed).')
@target_options
@verb('folder')
def snapshot(
    target: Target,
    reason: str,
    turn: str | None,
    tool: str | None,
    paths: tuple[str, ...],
    as_json: bool,
) -> None:
    """Record the tracked files now, if they changed since the newest checkpoint.

    \b
    Examples:
      checkpoints snapshot
      checkpoints snapshot -m "before rewriting notes/plan.md"
      checkpoints snapshot --turn msg_17 --tool write_file --path notes/plan.md
    """
    from ..ops.turns import check_turn_id

    if turn is not None:
        check_turn_id(turn)
    checkpoints = target.opened()
    used = desk_paths(target, paths)
    with suggesting(target, paths, used, checkpoints.effective_tracked_paths):
        taken = checkpoints.snapshot_with_result(reason, tool=tool, paths=used or None, turn=turn)
    checkpoint_id = taken.checkpoint_id
    note_recovery(checkpoints, target)
    for path, why in taken.skipped:
        click.echo(f'warning: left out {path}: {why}', err=True)
    if as_json:
        render.echo_json(taken.to_dict())
        return
    where = target.where
    if checkpoint_id is None:
        click.echo(f'Nothing changed on {where} since the newest checkpoint; no snapshot taken.')
    elif taken.turn_start:
        click.echo(
            f'Snapshot {ident(checkpoint_id)} of {where} marks the start of turn {turn}: {reason}'
        )
    else:
        click.echo(f'Snapshot {ident(checkpoint_id)} of {where} taken: {reason}')
    if taken.external:
        click.echo(
            f'note: changed outside the agent since the state it left: {", ".join(taken.external)}'
        )


def split_restore_args(args: tuple[str, ...]) -> tuple[str | None, list[str]]:
    """``[ID] [PATH]...``: a first argument of 4 to 40 hex digits is the ID."""
    if args and _HEX_ARG.fullmatch(args[0]):
        return args[0], list(args[1:])
    return None, list(args)


@click.command()
@click.argument('args', nargs=-1, metavar='[ID] [PATH]...', shell_complete=complete.ids)
@dry_run_option('Show what would be written and deleted; change nothing.')
@external_option
@at_option('Instead of ID:')
@quiet_option
@verbose_option
@json_option('Print what was done as JSON.')
@target_options
@verb('desk')
def restore(
    target: Target,
    args: tuple[str, ...],
    dry_run: bool,
    on_external: str | None,
    at: str | None,
    quiet: bool,
    verbose: bool,
    as_json: bool,
) -> None:
    """Put the tracked files back as they were at checkpoint ID.

    The current files are snapshotted first, so the restore itself can be undone with the
    command it prints. Files created since ID are deleted; untracked files are never touched.
    Without ID, the newest checkpoint is restored (the changes made since are discarded). With
    PATHs, only those files or folders are restored (inside the desk, a PATH is taken from the
    current folder, as git does). A first argument of 4 to 40 hex digits is the ID; any other
    is a PATH. A long list of files is cut short unless -v. Files changed outside the agent
    (see `status`) are overwritten and named in a warning (they are kept in the pre-snapshot); with
    --keep-external they are left as they are and only the agent's changes are reverted;
    with --refuse-external nothing is changed if any would be overwritten. With --at TIME,
    the checkpoint the desk held at TIME is restored (it is named on stderr first).

    \b
    Examples:
      checkpoints restore 3f2a9c1
      checkpoints restore 3f2a9c1 --keep-external
      checkpoints restore 3f2a9c1 notes/plan.md --dry-run
      checkpoints restore notes/            # notes/ as at the newest checkpoint
      checkpoints restore 3f2a9c1 --json
      checkpoints restore --at 2025-03-14T14:30:00+01:00 --dry-run
    """
    checkpoint_id, typed = split_restore_args(args)
    taken = desk_paths(target, typed)
    used = [] if '.' in taken else taken  # the desk itself: every tracked path
    checkpoints = target.checkpoints()
    if at is not None:
        checkpoint_id = held_at(checkpoints, at, checkpoint_id)
    try:
        with suggesting(target, typed, used, checkpoints.effective_tracked_paths):
            result = checkpoints.restore_with_result(
                checkpoint_id, paths=used or None, dry_run=dry_run, on_external=on_external
            )
    except BadPathError as error:
        if checkpoint_id is None and typed and error.path in (args[0], taken[0]):
            raise BadPathError(
                f'{args[0]!r} is not a checkpoint id (expected 4 to 40 hex digits, as shown by '
                f'`checkpoints list`) nor a tracked path: {error}',
                error.path,
            ) from error
        raise
    note_recovery(checkpoints, target)
    if as_json:
        render.echo_json(result.to_dict())
    else:
        render.restore(result, target, quiet=quiet, verbose=verbose, keeping=on_external == 'keep')


@click.command()
@quiet_option
@json_option('Print the status as JSON.')
@target_options
@verb('desk')
def status(target: Target, quiet: bool, as_json: bool) -> None:
    """Show what changed in the desk since the newest checkpoint, what was external, and the
    desk's policy: its protected paths, and its size budgets with what each path holds now.

    A change is external when it differs from the state the agent left: the last `seal` (or
    restore/undo/redo), else the newest checkpoint outside the paths it declared.

    \b
    Examples:
      checkpoints status
      checkpoints status --json
    """
    checkpoints = target.checkpoints()
    result = checkpoints.status()
    policy = desk_policy(checkpoints)
    if as_json:
        render.echo_json({**result.to_dict(), **policy.to_dict()})
        return
    if result.newest_id is None:
        click.echo(
            f'No checkpoints yet for desk {target.desk!r}; '
            f'{len(result.changes)} tracked file(s) in the desk.'
        )
        click.echo(f'Take one with: {target.command("snapshot", "-m", "why")}')
        return
    if result.clean:
        click.echo(f'No changes since checkpoint {ident(result.newest_id)}.')
    else:
        click.echo(
            f'{len(result.changes)} file(s) changed since checkpoint {ident(result.newest_id)}:'
        )
        if not quiet:
            for change in result.changes:
                mark = style(' (external)', fg='red') if change.path in result.external else ''
                click.echo(f'  {render.NAME_STATUS[change.kind]} {change.path}{mark}')
    changed = {change.path for change in result.changes}
    if not quiet:
        for path in result.external:
            if path not in changed:
                note = style(' (external: differs from the state the agent left)', fg='red')
                click.echo(f'  {path}{note}')
    if result.basis == 'unknown' and not result.clean:
        click.echo(
            'Cannot tell which changes were external: nothing was sealed and the newest '
            'checkpoint declared no paths (snapshot --path PATH declares them; seal records '
            'the state the agent left).'
        )
    elif result.external:
        click.echo(f'{len(result.external)} changed outside the agent.')
    if not result.clean:
        click.echo(f'Keep them with:    {target.command("snapshot", "-m", "why")}')
        click.echo(f'Discard them with: {target.command("restore")}')
    policy.show(quiet)
    if result.storage is not None:
        from ..ops.storageuse import describe

        click.echo(f'Storage: {describe(result.storage)}.')


@click.command('desks')
@json_option('Print [{"name", "folder", "checkpoints", "current"}].')
@target_options
@verb('workspace')
def desks_command(target: Target, as_json: bool) -> None:
    """List the desks of the workspace; the current one is marked with *.

    A desk is a folder in desks/ or a repository in .checkpoints/ (a desk whose folder is gone
    but whose checkpoints remain is listed: it can be restored).

    \b
    Examples:
      checkpoints desks
      checkpoints --workspace ~/agent desks --json
    """
    from ..workspace import Workspace

    workspace = Workspace(target.workspace)
    names = workspace.desks()
    rows = [
        {
            'name': name,
            'folder': workspace.desk_directory(name).is_dir(),
            'checkpoints': workspace.repository_directory(name).is_dir(),
            'current': name == target.desk,
        }
        for name in names
    ]
    if as_json:
        render.echo_json(rows)
        return
    if not rows:
        click.echo(
            f'No desks in workspace {target.workspace} yet '
            f'(a desk is a folder in {target.workspace / "desks"}).'
        )
        return
    width = max(len(name) for name in names)
    for name, row in zip(names, rows, strict=True):
        notes = []
        if not row['folder']:
            notes.append('no folder: checkpoints only')
        elif not row['checkpoints']:
            notes.append('no checkpoints yet')
        mark = '*' if row['current'] else ' '
        text = f'{mark} {name.ljust(width)}'
        click.echo(f'{text}  ({", ".join(notes)})' if notes else text.rstrip())
    if len(rows) > 1:
        click.echo(style('hint: checkpoints --desk NAME VERB acts on another desk', dim=True))


@click.command('track')
@click.argument('added', nargs=-1, metavar='[PATH]...')
@click.option(
    '--remove', multiple=True, metavar='PATH', help='Stop tracking PATH (repeat for each).'
)
@click.option(
    '--reset',
    is_flag=True,
    help='Track the default paths again (Memory.md memory notes skills/agent).',
)
@json_option('Print {"desk", "tracked", "changed"}.')
@target_options
@verb('desk')
def track(
    target: Target, added: tuple[str, ...], remove: tuple[str, ...], reset: bool, as_json: bool
) -> None:
    """Show the tracked paths, or track PATHs too (files or folders, relative to the desk, or
    to the current folder inside the desk).

    The list is recorded in the desk's repository, so the library and every command agree.
    Files outside it are never read, written or deleted; checkpoints taken before a change
    keep what they hold, and nothing in the desk is changed.

    \b
    Examples:
      checkpoints track                        # show them
      checkpoints track research plan.txt      # also track research/ and plan.txt
      checkpoints track --remove skills/agent
      checkpoints track --reset
    """
    from ..core.paths import TRACKED_PATHS, Allowlist

    checkpoints = target.checkpoints()
    current = checkpoints.effective_tracked_paths()
    wanted = list(TRACKED_PATHS if reset else current)
    added = tuple(desk_paths(target, added))
    remove = tuple(desk_paths(target, remove))
    for path in Allowlist(added).entries if added else ():
        if not Allowlist(wanted).covers(path):
            wanted.append(path)
    if remove:
        for path in Allowlist(remove).entries:
            if path not in wanted:
                covered = [entry for entry in wanted if Allowlist([entry]).covers(path)]
                why = f'; it lies in {covered[0]}, which stays tracked' if covered else ''
                raise BadPathError(
                    f'{path!r} is not one of the tracked paths ({", ".join(wanted)}){why}', path
                )
            wanted.remove(path)
        if not wanted:
            raise InvalidArgumentError(
                'that would track nothing; keep at least one path',
                name='--remove',
                value=list(remove),
            )
    changed = Allowlist(wanted) != Allowlist(current)
    tracked = checkpoints.set_tracked_paths(wanted) if changed else current
    if as_json:
        render.echo_json({'desk': target.desk, 'tracked': list(tracked), 'changed': changed})
        return
    where = target.where[0].upper() + target.where[1:]
    click.echo(f'{where} now tracks:' if changed else f'{where} tracks:')
    for path in tracked:
        click.echo(f'  {path}')
    if set(tracked) - set(current):
        click.echo(f'Record the files now tracked with: {target.command("snapshot")}')
    elif changed:
        click.echo('Files no longer tracked stay as they are; checkpoints keep what they hold.')
