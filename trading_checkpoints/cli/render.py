"""How the commands print: colour, the one JSON style, errors, and the shared result views."""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

import click

from .target import Target

NAME_STATUS = {
    'added': 'A',
    'modified': 'M',
    'deleted': 'D',
    'type-changed': 'T',
    'mode-changed': 'M',
    'changed': '?',
}


def use_color() -> bool:
    return sys.stdout.isatty() and 'NO_COLOR' not in os.environ


def style(text: str, **kwargs: Any) -> str:
    return click.style(text, **kwargs) if use_color() else text


def ident(checkpoint_id: str | None) -> str:
    """A checkpoint id as shown to people (yellow on a terminal)."""
    return style(checkpoint_id or '', fg='yellow')


def printable(text: str) -> str:
    """Text from the repository (a reason, a prompt label) with its control characters shown as
    ``\\xNN``, so a terminal never obeys them."""
    return ''.join(c if c.isprintable() else f'\\x{ord(c):02x}' for c in text)


def turn_labels(target: Target, checkpoints: Sequence[Any]) -> dict[str | None, str]:
    """The prompt label of the turn of each of ``checkpoints`` that has one (see
    ``ops.prompts.labels``)."""
    from ..ops.prompts import labels

    turns = {c.turn for c in checkpoints if c.turn}
    found: dict[str | None, str] = {}
    found.update(labels(target.repository_directory, turns) if turns else {})
    return found


def turn_note(turn: str, label: str | None) -> str:
    """``turn=T prompt="..."``: a turn and its prompt, as log and list show them."""
    note = f'turn={printable(turn)}'
    return note + (f' prompt="{printable(label)}"' if label else '')


def to_json(value: Any) -> str:
    """The one JSON style of every verb: indented by two, ASCII (non-UTF-8 names escaped)."""
    return json.dumps(value, indent=2)


def echo_json(value: Any) -> None:
    click.echo(to_json(value))


def json_value(value: Any) -> Any:
    """A field of an error as JSON: paths as text, tuples as lists, anything else by its repr."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, (list, tuple)):
        return [json_value(item) for item in value]
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return repr(value)


def error(
    message: str,
    *,
    as_json: bool,
    kind: str,
    hint: str | None = None,
    fields: dict[str, Any] | None = None,
) -> None:
    """An error on stderr: one ``error:`` line (and a ``hint:`` line), or one JSON object
    ``{"error", "type"[, "hint"][, "fields"]}`` when --json was asked for; ``fields`` are the
    error kind's (see :meth:`CheckpointError.details`), given only when it has some."""
    if as_json:
        body: dict[str, Any] = {'error': message, 'type': kind}
        if hint:
            body['hint'] = hint
        if fields:
            body['fields'] = {name: json_value(value) for name, value in fields.items()}
        click.echo(to_json(body), err=True)
        return
    click.echo(f'error: {message}', err=True)
    if hint:
        click.echo(f'hint: {hint}', err=True)


# -- restores (restore, undo, redo, restore-turn) ---------------------------------------------


# A restore listing longer than this many rows shows only its first SHOWN_ROWS (-v: all).
LONG_LISTING = 20
SHOWN_ROWS = 10


def file_lines(written: Sequence[str], deleted: Sequence[str]) -> None:
    for path in written:
        click.echo(f'  {style("W", fg="green")} {path}')
    for path in deleted:
        click.echo(f'  {style("D", fg="red")} {path}')


def file_summary(written: Sequence[str], deleted: Sequence[str], *, every: bool) -> None:
    """The written and deleted files, one row each; a listing longer than
    :data:`LONG_LISTING` rows shows its first :data:`SHOWN_ROWS` and counts the rest, unless
    ``every``."""
    if every or len(written) + len(deleted) <= LONG_LISTING:
        file_lines(written, deleted)
        return
    shown_written = list(written[:SHOWN_ROWS])
    shown_deleted = list(deleted[: SHOWN_ROWS - len(shown_written)])
    file_lines(shown_written, shown_deleted)
    more_written = len(written) - len(shown_written)
    more_deleted = len(deleted) - len(shown_deleted)
    counts = ', '.join(
        f'{count:,} {what}'
        for count, what in ((more_written, 'written'), (more_deleted, 'deleted'))
        if count
    )
    click.echo(f'  ... and {more_written + more_deleted:,} more ({counts}; -v lists every file)')


def kept_lines(kept: Sequence[tuple[str, str]]) -> None:
    """The files a restore left as they are, each with why."""
    for path, why in kept:
        click.echo(f'  {style("K", fg="yellow")} {path}  (kept: {why})')


def restore(
    result: Any,
    target: Target,
    *,
    quiet: bool = False,
    verbose: bool = False,
    title: str | None = None,
    keeping: bool = False,
) -> None:
    """The human view of a restore, undo or redo: which desk, what changed (a long listing
    summarised unless ``verbose``), and how to take it back."""
    where = target.where
    if not result.written and not result.deleted:
        if result.kept:
            click.echo(
                f'Nothing to {result.action} on {where}: every difference from '
                f'{result.target_id} is left as it is.'
            )
            kept_lines(result.kept)
        else:
            click.echo(
                f'The tracked files of {where} already match {result.target_id}; '
                f'nothing to {result.action}.'
            )
        return
    direction = {'restore': '', 'undo': ', back to', 'redo': ', forward to'}[result.action]
    if result.dry_run:
        verb = f'Would {result.action}'
    else:
        verb = {'restore': 'Restored', 'undo': 'Undid', 'redo': 'Redid'}[result.action]
    if result.action == 'restore':
        head = f'{verb} {ident(result.target_id)}{title or ""} on {where}'
    else:
        head = f'{verb} on {where}{direction} {ident(result.target_id)}{title or ""}'
    click.echo(
        f'{head}: {len(result.written)} written ({len(result.created)} created), '
        f'{len(result.deleted)} deleted.'
    )
    if not quiet:
        file_summary(result.written, result.deleted, every=verbose)
    if result.kept:
        kept_lines(result.kept)
    if keeping and result.attribution == 'unknown':
        click.echo(
            'note: nothing records what the agent wrote (no seal, no declared paths), so '
            'changes made outside it could not be told apart; every tracked file was restored'
        )
    if result.external:
        word = 'would overwrite' if result.dry_run else 'overwrote'
        click.echo(
            style('warning:', fg='red', bold=True)
            + f' {word} {len(result.external)} file(s) changed outside the agent: '
            + ', '.join(result.external)
            + ('' if result.dry_run else f' (kept in {result.before_id})')
        )
    if result.dry_run:
        click.echo('Dry run: nothing was changed.')
    elif result.action == 'undo':
        click.echo(f'Redo with: {target.command("redo")}')
        click.echo(f'       or: {target.command("restore", result.before_id)}')
    elif result.action == 'redo':
        click.echo(f'Undo with: {target.command("undo")}')
        click.echo(f'       or: {target.command("restore", result.before_id)}')
    else:
        click.echo(f'Undo with: {target.command("restore", result.before_id)}')


def recovery_note(recovery: Any, target: Target) -> None:
    """One stderr line when a restore that a crash or Ctrl-C interrupted was completed first:
    what it did, and the command that undoes it."""
    if recovery is None:
        return
    if not recovery.target_id:  # a record that was refused: nothing was restored
        click.echo(f'note: {recovery}', err=True)
        return
    line = (
        f'note: completed {recovery.what} of {recovery.target_id} '
        f'({len(recovery.written)} written, {len(recovery.deleted)} deleted); '
        f'undo with: {target.command("restore", recovery.before_id)}'
    )
    if recovery.saved_id:
        line += f'; the desk as found was saved first as {recovery.saved_id}'
    click.echo(line, err=True)


def interrupted(stop: Any, target: Target, *, as_json: bool) -> None:
    """Ctrl-C stopped a restore part way: how far it got, and that the next command (any of
    them) completes it, with the command that undoes it then."""
    what = 'the completion of an interrupted restore' if stop.completing else 'the restore'
    message = (
        f'interrupted: {what} of {stop.label} stopped after changing {stop.changed} of '
        f'{stop.planned} files in the desk; the next checkpoints command on this desk '
        f'completes it first (or run now: {target.command("status")})'
    )
    hint = f'once it is completed, undo it with: {target.command("restore", stop.before_id)}'
    fields = {
        name: getattr(stop, name)
        for name in (
            'label',
            'target_id',
            'before_id',
            'changed',
            'planned',
            'completing',
            'record',
        )
    }
    error(message, as_json=as_json, kind=type(stop).__name__, hint=hint, fields=fields)


# -- diffs ------------------------------------------------------------------------------------


def _color_patch(patch: str) -> str:
    if not use_color():
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


def patches(changes: Sequence[Any]) -> None:
    for change in changes:
        if change.kind == 'mode-changed':
            click.echo(f'mode change {change.old_mode:06o} => {change.new_mode:06o} {change.path}')
        elif change.binary:
            click.echo(style(f'Binary file {change.path} {change.kind}', bold=True))
        elif change.patch is None:
            click.echo(style(f'{change.path} {change.kind} (over 1 MiB: no line diff)', bold=True))
        else:
            if change.kind == 'type-changed':
                click.echo(style(f'type change (file <-> symlink) {change.path}', bold=True))
            click.echo(_color_patch(change.patch), nl=False)


def stat(changes: Sequence[Any]) -> None:
    width = max(len(change.path) for change in changes)
    added = removed = 0
    for change in changes:
        if change.binary:
            counts = 'Bin'
        else:
            counts = (
                f'{change.added_lines + change.removed_lines} '
                + style('+' * min(change.added_lines, 40), fg='green')
                + style('-' * min(change.removed_lines, 40), fg='red')
            )
        added += change.added_lines
        removed += change.removed_lines
        click.echo(f' {change.path.ljust(width)} | {counts}')
    click.echo(
        f' {len(changes)} file(s) changed, {added} insertion(s)(+), {removed} deletion(s)(-)'
    )


# -- progress of transfers ----------------------------------------------------------------


class Progress:
    """One line of progress on stderr, redrawn in place; only on a terminal."""

    def __init__(self) -> None:
        self.width = 0

    def __call__(self, text: str) -> None:
        line = text[:100]
        sys.stderr.write('\r' + line + ' ' * max(0, self.width - len(line)))
        sys.stderr.flush()
        self.width = len(line)

    def finish(self) -> None:
        if self.width:
            sys.stderr.write('\r' + ' ' * self.width + '\r')
            sys.stderr.flush()


def progress(as_json: bool) -> Progress | None:
    return None if as_json or not sys.stderr.isatty() else Progress()


def run_with_progress(work: Callable[[Progress | None], Any], as_json: bool) -> Any:
    reporter = progress(as_json)
    try:
        return work(reporter)
    finally:
        if reporter is not None:
            reporter.finish()
