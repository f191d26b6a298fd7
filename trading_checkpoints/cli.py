"""The ``checkpoints`` command: porcelain over the library (it never touches dulwich itself)."""

from __future__ import annotations

import base64
import json
import os
import re
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
        from .workspace import Workspace

        return Workspace(self.workspace).desk(self.name)

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
            _fail(
                f'unexpected {type(error).__name__}: {error} (set CHECKPOINTS_DEBUG=1 for details)'
            )

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
  checkpoints diff 3f2a9c1              # what changed since then
  checkpoints undo                      # one step back; redo reverses it
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
@click.option(
    '--limit',
    '-n',
    type=click.IntRange(min=0),
    default=20,
    show_default=True,
    help='Show at most this many checkpoints.',
)
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
        rows = [
            {
                'id': c.checkpoint_id,
                'created_at': c.created_at,
                'reason': c.reason,
                'tool': c.tool,
                'paths': list(c.paths),
                'turn': c.turn,
            }
            for c in items
        ]
        click.echo(json.dumps(rows, indent=2))
        return
    if not items:
        click.echo(f'No checkpoints yet for desk {desk.name!r} ({desk.repository_directory}).')
        return
    for item in items:
        click.echo(f'{_style(item.checkpoint_id, fg="yellow")}  {item.created_at}  {item.reason}')


@cli.command()
@click.option(
    '-m',
    '--message',
    'reason',
    default='manual snapshot',
    show_default=True,
    help='Why the snapshot is taken; kept as its message.',
)
@click.option(
    '--json',
    'as_json',
    is_flag=True,
    help='Print {"id": ..., "external": [...]} (id null when unchanged).',
)
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
    taken = desk.opened().snapshot_with_result(reason)
    checkpoint_id = taken.checkpoint_id
    if taken.recovered:
        click.echo(f'note: {taken.recovered}', err=True)
    for path, why in taken.skipped:
        click.echo(f'warning: left out {path}: {why}', err=True)
    if as_json:
        click.echo(
            json.dumps(
                {
                    'id': checkpoint_id,
                    'external': list(taken.external),
                    'skipped': [{'path': path, 'reason': why} for path, why in taken.skipped],
                }
            )
        )
    elif checkpoint_id is None:
        click.echo('Nothing changed since the newest checkpoint; no snapshot taken.')
    else:
        click.echo(f'Snapshot {_style(checkpoint_id, fg="yellow")} taken: {reason}')
    if taken.external and not as_json:
        click.echo(
            f'note: changed outside the agent since the state it left: {", ".join(taken.external)}'
        )


@cli.command()
@click.argument('args', nargs=-1, metavar='[ID] [PATH]...')
@click.option(
    '--dry-run', is_flag=True, help='Show what would be written and deleted; change nothing.'
)
@click.option('--json', 'as_json', is_flag=True, help='Print what was done as JSON.')
@click.pass_obj
@_reports_errors
def restore(desk: Desk, args: tuple[str, ...], dry_run: bool, as_json: bool) -> None:
    """Put the tracked files back as they were at checkpoint ID.

    The current files are snapshotted first, so the restore itself can be undone with the
    command it prints. Files created since ID are deleted; untracked files are never touched.
    Without ID, the newest checkpoint is restored (the changes made since are discarded). With
    PATHs, only those files or folders are restored. A first argument of 4 to 40 hex digits
    is the ID; any other is a PATH. Files changed outside the agent (see `status`) that the
    restore overwrites are named in a warning; they are kept in the pre-snapshot.

    \b
    Examples:
      checkpoints restore 3f2a9c1
      checkpoints restore 3f2a9c1 notes/plan.md --dry-run
      checkpoints restore notes/            # notes/ as at the newest checkpoint
      checkpoints restore 3f2a9c1 --json
    """
    from .history import BadPathError

    checkpoint_id, paths = _split_restore_args(args)
    try:
        result = desk.checkpoints().restore_with_result(
            checkpoint_id, paths=paths or None, dry_run=dry_run
        )
    except BadPathError as error:
        if checkpoint_id is None and error.path == args[0]:
            raise CheckpointError(
                f'{args[0]!r} is not a checkpoint id (expected 4 to 40 hex digits, as shown by '
                f'`checkpoints list`) nor a tracked path: {error}'
            ) from error
        raise
    if result.recovered:
        click.echo(f'note: {result.recovered}', err=True)
    _print_restore(result, as_json)


@cli.command()
@click.option(
    '--dir',
    'directory',
    type=click.Path(file_okay=False, path_type=Path),
    help='Build the example workspace here (an empty or new folder) and keep it; '
    'by default a temporary folder is used and removed.',
)
@_reports_errors
def demo(directory: Path | None) -> None:
    """Play a short scripted agent session on an example workspace.

    It writes a few files through a checkpointed write tool, lists the checkpoints, diffs the
    last write, restores one, and undoes that restore, printing each step.

    \b
    Examples:
      checkpoints demo
      checkpoints demo --dir /tmp/checkpoints-demo
    """
    from .demo import run_demo

    run_demo(directory, echo=click.echo, style=_style)


# -- looking back, undo/redo, external edits (history.py, undo.py, external.py) -------------

_HEX_ARG = re.compile(r'[0-9a-fA-F]{4,40}')
_NAME_STATUS = {
    'added': 'A',
    'modified': 'M',
    'deleted': 'D',
    'type-changed': 'T',
    'mode-changed': 'M',
}


def _split_restore_args(args: tuple[str, ...]) -> tuple[str | None, list[str]]:
    """``[ID] [PATH]...``: a first argument of 4 to 40 hex digits is the ID."""
    if args and _HEX_ARG.fullmatch(args[0]):
        return args[0], list(args[1:])
    return None, list(args)


def _restore_dict(result: Any) -> dict[str, Any]:
    return {
        'action': result.action,
        'dry_run': result.dry_run,
        'before_id': result.before_id,
        'target_id': result.target_id,
        'restored_id': result.restored_id,
        'written': list(result.written),
        'created': list(result.created),
        'deleted': list(result.deleted),
        'external': list(result.external),
    }


def _print_restore(result: Any, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(_restore_dict(result), indent=2))
        return
    verb = {'restore': 'Restored', 'undo': 'Undid: back to', 'redo': 'Redid: forward to'}[
        result.action
    ]
    if not result.written and not result.deleted:
        click.echo(f'The tracked files already match {result.target_id}; nothing to restore.')
        return
    if result.dry_run:
        verb = f'Would {result.action}' + (' to' if result.action != 'restore' else '')
    click.echo(
        f'{verb} {_style(result.target_id, fg="yellow")}: '
        f'{len(result.written)} written ({len(result.created)} created), '
        f'{len(result.deleted)} deleted.'
    )
    for path in result.written:
        click.echo(f'  {_style("W", fg="green")} {path}')
    for path in result.deleted:
        click.echo(f'  {_style("D", fg="red")} {path}')
    if result.external:
        word = 'would overwrite' if result.dry_run else 'overwrote'
        click.echo(
            _style('warning:', fg='red', bold=True)
            + f' {word} {len(result.external)} file(s) changed outside the agent: '
            + ', '.join(result.external)
            + ('' if result.dry_run else f' (kept in {result.before_id})')
        )
    if result.dry_run:
        click.echo('Dry run: nothing was changed.')
    elif result.action == 'undo':
        click.echo(f'Redo with: checkpoints redo   (or: checkpoints restore {result.before_id})')
    elif result.action == 'redo':
        click.echo(f'Undo with: checkpoints undo   (or: checkpoints restore {result.before_id})')
    else:
        click.echo(f'Undo with: checkpoints restore {result.before_id}')


def _color_patch(patch: str) -> str:
    if not _use_color():
        return patch
    lines = []
    for line in patch.splitlines():
        if line.startswith(('---', '+++')):
            lines.append(click.style(line, bold=True))
        elif line.startswith('+'):
            lines.append(click.style(line, fg='green'))
        elif line.startswith('-'):
            lines.append(click.style(line, fg='red'))
        elif line.startswith('@@'):
            lines.append(click.style(line, fg='cyan'))
        else:
            lines.append(line)
    return '\n'.join(lines) + '\n'


def _print_patches(changes: Any) -> None:
    for change in changes:
        if change.kind == 'mode-changed':
            click.echo(f'mode change {change.old_mode:06o} => {change.new_mode:06o} {change.path}')
        elif change.binary:
            click.echo(_style(f'Binary file {change.path} {change.kind}', bold=True))
        elif change.patch is None:
            click.echo(_style(f'{change.path} {change.kind} (over 1 MiB: no line diff)', bold=True))
        else:
            if change.kind == 'type-changed':
                click.echo(_style(f'type change (file <-> symlink) {change.path}', bold=True))
            click.echo(_color_patch(change.patch), nl=False)


def _print_stat(changes: Any) -> None:
    if not changes:
        return
    width = max(len(change.path) for change in changes)
    added = removed = 0
    for change in changes:
        if change.binary:
            counts = 'Bin'
        else:
            counts = (
                f'{change.added_lines + change.removed_lines} '
                + _style('+' * min(change.added_lines, 40), fg='green')
                + _style('-' * min(change.removed_lines, 40), fg='red')
            )
        added += change.added_lines
        removed += change.removed_lines
        click.echo(f' {change.path.ljust(width)} | {counts}')
    click.echo(
        f' {len(changes)} file(s) changed, {added} insertion(s)(+), {removed} deletion(s)(-)'
    )


@cli.command()
@click.argument('from_id', metavar='ID')
@click.argument('to_id', metavar='[ID2]', required=False)
@click.option('--stat', 'mode', flag_value='stat', help='Per-file counts of changed lines.')
@click.option(
    '--name-status',
    'mode',
    flag_value='name-status',
    help='One line per file: A, M, D or T and the path.',
)
@click.option('--json', 'as_json', is_flag=True, help='Print the changes (with patches) as JSON.')
@click.pass_obj
@_reports_errors
def diff(desk: Desk, from_id: str, to_id: str | None, mode: str | None, as_json: bool) -> None:
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
    result = desk.checkpoints().diff(from_id, to_id)
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2))
    elif mode == 'stat':
        _print_stat(result.changes)
    elif mode == 'name-status':
        for change in result.changes:
            click.echo(f'{_NAME_STATUS[change.kind]}\t{change.path}')
    else:
        _print_patches(result.changes)


@cli.command()
@click.argument('checkpoint_id', metavar='ID')
@click.argument('path', metavar='PATH')
@click.option(
    '--json',
    'as_json',
    is_flag=True,
    help='Print {"id", "path", "size", "encoding", "content"}; binary as base64.',
)
@click.pass_obj
@_reports_errors
def show(desk: Desk, checkpoint_id: str, path: str, as_json: bool) -> None:
    """Print file PATH as it was at checkpoint ID (raw bytes, as stored).

    \b
    Examples:
      checkpoints show 3f2a9c1 notes/plan.md
      checkpoints show 3f2a9c1 Memory.md > Memory.old.md
      checkpoints show 3f2a9c1 memory/chart.png --json
    """
    data = desk.checkpoints().show(checkpoint_id, path)
    if not as_json:
        click.echo(data, nl=False)
        return
    try:
        content, encoding = data.decode('utf-8'), 'utf-8'
    except UnicodeDecodeError:
        content, encoding = base64.b64encode(data).decode('ascii'), 'base64'
    click.echo(
        json.dumps(
            {
                'id': checkpoint_id,
                'path': path,
                'size': len(data),
                'encoding': encoding,
                'content': content,
            },
            indent=2,
        )
    )


@cli.command()
@click.argument('path', metavar='[PATH]', required=False)
@click.option(
    '--limit',
    '-n',
    type=click.IntRange(min=0),
    default=20,
    show_default=True,
    help='Show at most this many checkpoints.',
)
@click.option('--json', 'as_json', is_flag=True, help='Print a JSON array.')
@click.pass_obj
@_reports_errors
def log(desk: Desk, path: str | None, limit: int, as_json: bool) -> None:
    """List checkpoints newest first with the files each changed (only PATH's, if given).

    A checkpoint "changed" a file when the file differs from the checkpoint before it.

    \b
    Examples:
      checkpoints log
      checkpoints log notes/plan.md -n 5
      checkpoints log memory --json
    """
    entries = desk.checkpoints().log(path, limit)
    if as_json:
        click.echo(json.dumps([entry.to_dict() for entry in entries], indent=2))
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
        click.echo(f'{_style(c.checkpoint_id, fg="yellow")}  {c.created_at}  {c.reason}{suffix}')
        for changed in entry.changed[:20]:
            click.echo(f'    {changed}')
        if len(entry.changed) > 20:
            click.echo(f'    ... and {len(entry.changed) - 20} more')


@cli.command()
@click.option('--json', 'as_json', is_flag=True, help='Print the status as JSON.')
@click.pass_obj
@_reports_errors
def status(desk: Desk, as_json: bool) -> None:
    """Show what changed in the desk since the newest checkpoint, and what was external.

    A change is external when it differs from the state the agent left: the last `seal` (or
    restore/undo/redo), else the newest checkpoint outside the paths it declared.

    \b
    Examples:
      checkpoints status
      checkpoints status --json
    """
    result = desk.checkpoints().status()
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2))
        return
    if result.newest_id is None:
        click.echo(f'No checkpoints yet; {len(result.changes)} tracked file(s) in the desk.')
        return
    if result.clean:
        click.echo(f'No changes since checkpoint {_style(result.newest_id, fg="yellow")}.')
    else:
        click.echo(
            f'{len(result.changes)} file(s) changed since checkpoint '
            f'{_style(result.newest_id, fg="yellow")}:'
        )
        for change in result.changes:
            mark = _style(' (external)', fg='red') if change.path in result.external else ''
            click.echo(f'  {_NAME_STATUS[change.kind]} {change.path}{mark}')
    others = [path for path in result.external if path not in {c.path for c in result.changes}]
    for path in others:
        note = _style(' (external: differs from the state the agent left)', fg='red')
        click.echo(f'  {path}{note}')
    if result.basis == 'unknown' and not result.clean:
        click.echo(
            'Cannot tell which changes were external: nothing was sealed and the newest '
            'checkpoint declared no paths.'
        )
    elif result.external:
        click.echo(f'{len(result.external)} changed outside the agent.')


def _undo_or_redo(desk: Desk, which: str, force: bool, dry_run: bool, as_json: bool) -> None:
    checkpoints = desk.checkpoints()
    method = checkpoints.undo if which == 'undo' else checkpoints.redo
    result = method(force=force, dry_run=dry_run)
    _print_restore(result, as_json)


@cli.command()
@click.option(
    '--force',
    is_flag=True,
    help='Overwrite files changed outside the agent (kept in the pre-snapshot).',
)
@click.option('--dry-run', is_flag=True, help='Show what would change; change nothing.')
@click.option('--json', 'as_json', is_flag=True, help='Print what was done as JSON.')
@click.pass_obj
@_reports_errors
def undo(desk: Desk, force: bool, dry_run: bool, as_json: bool) -> None:
    """Step back one checkpoint; repeat to go further back (three undos, three writes).

    With changes since the newest checkpoint, it goes back to that checkpoint; otherwise to the
    state before the current one, like an editor's undo. It is an ordinary restore: `redo`
    reverses it. It refuses to overwrite files changed outside the agent unless --force.

    \b
    Examples:
      checkpoints undo
      checkpoints undo --dry-run
      checkpoints undo --force --json
    """
    _undo_or_redo(desk, 'undo', force, dry_run, as_json)


@cli.command()
@click.option(
    '--force',
    is_flag=True,
    help='Redo even though the desk changed since the undo (changes are kept).',
)
@click.option('--dry-run', is_flag=True, help='Show what would change; change nothing.')
@click.option('--json', 'as_json', is_flag=True, help='Print what was done as JSON.')
@click.pass_obj
@_reports_errors
def redo(desk: Desk, force: bool, dry_run: bool, as_json: bool) -> None:
    """Reverse the last undo not yet redone (new checkpoints after an undo end the chain).

    \b
    Examples:
      checkpoints undo && checkpoints redo
      checkpoints redo --json
    """
    _undo_or_redo(desk, 'redo', force, dry_run, as_json)


@cli.command()
@click.option('--json', 'as_json', is_flag=True, help='Print {"id": ...}.')
@click.pass_obj
@_reports_errors
def seal(desk: Desk, as_json: bool) -> None:
    """Record the desk as the state the agent left (run it after the agent's write).

    Later changes that differ from it are reported as external by `status`, and `undo`
    refuses to overwrite them unless --force.

    \b
    Examples:
      checkpoints seal
      checkpoints seal --json
    """
    sealed = desk.checkpoints().seal()
    if as_json:
        click.echo(json.dumps({'id': sealed}))
    else:
        click.echo(f'Sealed the desk as the state the agent left ({_style(sealed, fg="yellow")}).')


@cli.command()
@click.option(
    '--limit',
    '-n',
    type=click.IntRange(min=0),
    default=20,
    show_default=True,
    help='Show at most this many turns.',
)
@click.option('--json', 'as_json', is_flag=True, help='Print a JSON array instead of a list.')
@click.pass_obj
@_reports_errors
def turns(desk: Desk, limit: int, as_json: bool) -> None:
    """List agent turns newest first, each with its checkpoints.

    A turn groups the checkpoints an agent took while answering one message
    (Checkpoints.turn in the library); `restore-turn TURN` rewinds one.

    \b
    Examples:
      checkpoints turns
      checkpoints turns -n 3 --json
    """
    items = desk.checkpoints().turns(limit)
    if as_json:
        rows = [
            {
                'turn_id': t.turn_id,
                'label': t.label,
                'started_at': t.started_at,
                'first_checkpoint': t.first.checkpoint_id,
                'checkpoints': [
                    {
                        'id': c.checkpoint_id,
                        'created_at': c.created_at,
                        'reason': c.reason,
                        'tool': c.tool,
                        'paths': list(c.paths),
                    }
                    for c in t.checkpoints
                ],
            }
            for t in items
        ]
        click.echo(json.dumps(rows, indent=2))
        return
    if not items:
        click.echo(f'No turns recorded for desk {desk.name!r}.')
        return
    for item in items:
        label = f'  {item.label}' if item.label else ''
        click.echo(f'{_style(item.turn_id, fg="cyan")}  {item.started_at}{label}')
        for checkpoint in item.checkpoints:
            click.echo(f'  {_style(checkpoint.checkpoint_id, fg="yellow")}  {checkpoint.reason}')


@cli.command('restore-turn')
@click.argument('turn_id', metavar='TURN')
@click.option('--dry-run', is_flag=True, help='Only say what would be written and deleted.')
@click.option('--json', 'as_json', is_flag=True, help='Print what was done as JSON.')
@click.pass_obj
@_reports_errors
def restore_turn_command(desk: Desk, turn_id: str, dry_run: bool, as_json: bool) -> None:
    """Rewind the tracked files to the state before agent turn TURN began.

    Restores the turn's first checkpoint (taken before its first write), so later turns are
    rewound too. Like every restore it snapshots first and prints the command that undoes it.

    \b
    Examples:
      checkpoints turns                       # find the turn
      checkpoints restore-turn msg_01H8
      checkpoints restore-turn msg_01H8 --dry-run --json
    """
    result = desk.checkpoints().restore_turn(turn_id, dry_run=dry_run)
    row = {
        'turn_id': turn_id,
        'dry_run': dry_run,
        'before_id': None if dry_run else result.before_id,
        'target_id': result.target_id,
        'restored_id': None if dry_run else result.restored_id,
        'written': list(result.written),
        'deleted': list(result.deleted),
    }
    if as_json:
        click.echo(json.dumps(row, indent=2))
        return
    verb = 'Would restore' if dry_run else 'Restored'
    click.echo(
        f'{verb} {_style(result.target_id, fg="yellow")} (before turn {turn_id}): '
        f'{len(result.written)} written, {len(result.deleted)} deleted.'
    )
    for path in result.written:
        click.echo(f'  {_style("W", fg="green")} {path}')
    for path in result.deleted:
        click.echo(f'  {_style("D", fg="red")} {path}')
    if not dry_run:
        click.echo(f'Undo with: checkpoints restore {result.before_id}')


@cli.command('mcp')
@click.pass_obj
@_reports_errors
def mcp_command(desk: Desk) -> None:
    """Serve the workspace to an MCP-capable agent (Model Context Protocol over stdio).

    Needs the optional extra: pip install 'trading-checkpoints[mcp]'. Tools: list_desks,
    list_checkpoints, list_turns, snapshot, restore (with dry_run), restore_turn, diff,
    show_file, undo; --desk is the default desk of every tool.

    \b
    Examples:
      checkpoints --workspace ~/agent mcp
      checkpoints --workspace ~/agent --desk research mcp
    """
    from .mcp import serve

    serve(desk.workspace, desk.name)


def _note_recovery(checkpoints: Any) -> None:
    """One stderr line when the verb first completed a restore a crash had interrupted."""
    recovery = getattr(checkpoints, 'last_recovery', None)
    if recovery is not None:
        click.echo(f'note: {recovery}', err=True)


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
@click.option(
    '--older-than',
    'older_than',
    metavar='AGE',
    help='Drop checkpoints older than AGE (30d, 12h, 90m, 2w).',
)
@click.option(
    '--max-size',
    'max_size',
    metavar='SIZE',
    help='Drop the oldest checkpoints until the objects fit in SIZE (500M, 2G).',
)
@click.option('--dry-run', is_flag=True, help='Only say what would be dropped.')
@click.option(
    '--save',
    is_flag=True,
    help='Also store these limits in the repository, so every later snapshot '
    '(library or command line) applies them.',
)
@click.option('--json', 'as_json', is_flag=True, help='Print the figures as JSON.')
@click.pass_obj
@_reports_errors
def prune(
    desk: Desk,
    keep: int | None,
    older_than: str | None,
    max_size: str | None,
    dry_run: bool,
    save: bool,
    as_json: bool,
) -> None:
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
        click.echo(
            json.dumps(
                {
                    'dry_run': result.dry_run,
                    'checkpoints_before': result.checkpoints_before,
                    'checkpoints_after': result.checkpoints_after,
                    'bytes_before': result.bytes_before,
                    'bytes_after': result.bytes_after,
                    'pruned': list(result.pruned),
                    'oldest_kept': result.oldest_kept,
                },
                indent=2,
            )
        )
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
        click.echo(
            f'Pushed to {result.remote} ({result.url}): {result.old or "(empty)"} -> '
            f'{_style(result.new or "", fg="yellow")}'
        )
        if result.marked_shallow:
            click.echo(
                'The remote starts at the oldest kept checkpoint '
                f'{", ".join(result.marked_shallow)} (history was pruned).'
            )


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
        click.echo(
            f'Pulled from {result.remote} ({result.url}): {result.old or "(none)"} -> '
            f'{_style(result.new or "", fg="yellow")}'
        )
        click.echo(f'Bring the desk to it with: checkpoints restore {result.new}')


@cli.command()
@click.argument('url')
@click.option(
    '--desk',
    'desk_name',
    callback=lambda c, p, v: v and _validate_desk_name(c, p, v),
    help='The new desk to clone into (default: the group option --desk).',
)
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
@click.option('--json', 'as_json', is_flag=True, help='Print what was cloned as JSON.')
@click.pass_obj
@_reports_errors
def clone(
    desk: Desk,
    url: str,
    desk_name: str | None,
    tracked: tuple[str, ...],
    no_restore: bool,
    as_json: bool,
) -> None:
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
            url,
            target.repository_directory,
            target.desk_directory,
            restore=not no_restore,
            progress=progress,
            tracked_paths=tracked or TRACKED_PATHS,
        )
    finally:
        _finish(progress)
    if as_json:
        click.echo(
            json.dumps(
                {
                    **_transfer_json(result),
                    'desk': target.name,
                    'restored': None if written is None else list(written),
                },
                indent=2,
            )
        )
        return
    click.echo(
        f'Cloned {result.url} onto desk {target.name!r} at {_style(result.new or "", fg="yellow")}.'
    )
    if written is not None:
        click.echo(f'Restored the newest checkpoint: {len(written)} files written.')
    elif not no_restore:
        click.echo(
            'The desk already had tracked files; they were left alone. '
            f'Restore with: checkpoints --desk {target.name} restore {result.new}'
        )


def main() -> None:
    cli(prog_name='checkpoints')


if __name__ == '__main__':  # pragma: no cover
    main()
