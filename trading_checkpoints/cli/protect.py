"""The desk's policy: ``protect`` (paths the agent may read but not change) and ``budget`` (the
size the agent is told to keep a file or folder under). A person's verbs: the hooks deny them
to an agent's shell command."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import click

from ..errors import InvalidArgumentError
from . import render
from .options import json_option, target_options, verb
from .paths import desk_paths
from .target import Target


@click.command('protect')
@click.argument('added', nargs=-1, metavar='[PATH]...')
@click.option(
    '--remove', multiple=True, metavar='PATH', help='Stop protecting PATH (repeat for each).'
)
@json_option('Print {"desk", "protected", "changed"}.')
@target_options
@verb('desk')
def protect(target: Target, added: tuple[str, ...], remove: tuple[str, ...], as_json: bool) -> None:
    """Show the protected paths, or protect PATHs too: tracked files or folders the agent may
    read but not change.

    A hooked write tool aimed at one is denied and the agent told why; what a hooked shell
    command changes there is put back right after (a restore, which you can undo) and the
    agent told. Your own edits, and your restores, are never refused. The list is kept in the
    desk's repository, never in the desk.

    \b
    Examples:
      checkpoints protect                               # show them
      checkpoints protect notes/risk-limits.md skills/agent
      checkpoints protect --remove skills/agent
    """
    checkpoints = target.checkpoints()
    before = checkpoints.protected()
    if added or remove:
        protected = checkpoints.protect(desk_paths(target, added)) if added else before
        if remove:
            protected = checkpoints.unprotect(desk_paths(target, remove))
    else:
        protected = before
    changed = protected != before
    if as_json:
        render.echo_json({'desk': target.desk, 'protected': list(protected), 'changed': changed})
        return
    where = target.where[0].upper() + target.where[1:]
    if not protected:
        click.echo(f'{where} protects nothing.')
        click.echo(f'Protect a tracked path with: {target.command("protect", "PATH")}')
        return
    click.echo(f'{where} now protects:' if changed else f'{where} protects:')
    for path in protected:
        click.echo(f'  {path}')


@click.command('budget')
@click.argument('path', required=False, metavar='[PATH]')
@click.argument('size', required=False, metavar='[BYTES]')
@click.option('--tokens', type=int, metavar='N', help='The budget in tokens (4 bytes each).')
@click.option('--remove', is_flag=True, help="Drop PATH's budget.")
@json_option('Print {"desk", "budgets": [{"path", "bytes", "tokens", "size", "over"}]}.')
@target_options
@verb('desk')
def budget(
    target: Target,
    path: str | None,
    size: str | None,
    tokens: int | None,
    remove: bool,
    as_json: bool,
) -> None:
    """Show the size budgets and what each path holds now, or set PATH's budget: BYTES (like
    20480 or 20k) or --tokens N.

    When a hooked write takes a tracked file or folder past its budget, the write goes ahead
    and the agent is told, once per turn, to condense it.

    \b
    Examples:
      checkpoints budget                       # show them, with the sizes now
      checkpoints budget Memory.md 20k
      checkpoints budget memory --tokens 20000
      checkpoints budget --remove memory
    """
    from ..ops.retention import parse_size

    checkpoints = target.checkpoints()
    if path is None:
        if size is not None or tokens is not None or remove:
            raise InvalidArgumentError('name the PATH whose budget to set', name='PATH', value=None)
    else:
        [entry] = desk_paths(target, [path])
        if remove:
            if size is not None or tokens is not None:
                raise InvalidArgumentError(
                    '--remove takes only the PATH', name='--remove', value=size or tokens
                )
            checkpoints.remove_budget(entry)
        else:
            limit = None
            if size is not None:
                try:
                    limit = parse_size(size)
                except InvalidArgumentError:
                    raise InvalidArgumentError(
                        f'{size!r} is not a size in bytes (like 20480, 20k or 1M)',
                        name='BYTES',
                        value=size,
                    ) from None
            checkpoints.budget(entry, limit, tokens=tokens)
    uses = checkpoints.budgets()
    if as_json:
        render.echo_json({'desk': target.desk, 'budgets': [use.to_dict() for use in uses]})
        return
    where = target.where[0].upper() + target.where[1:]
    if not uses:
        click.echo(f'{where} has no size budgets.')
        click.echo(f'Set one with: {target.command("budget", "PATH", "BYTES")}')
        return
    click.echo(f'{where} budgets:')
    budget_lines(uses)


def budget_lines(uses: list) -> None:
    """One line per budget: the path, its size now and its budget, marked when over."""
    width = max(len(use.budget.path) for use in uses)
    for use in uses:
        line = f'  {use.budget.path.ljust(width)}  {use.describe()}'
        click.echo(render.style(f'{line}  (over)', fg='red') if use.over else line)


@dataclass(frozen=True)
class DeskPolicy:
    """What ``status`` shows of the desk's policy: the protected paths, and each budget with
    its size now."""

    protected: tuple[str, ...]
    uses: list[Any]

    def to_dict(self) -> dict[str, object]:
        return {'protected': list(self.protected), 'budgets': [u.to_dict() for u in self.uses]}

    def show(self, quiet: bool) -> None:
        """A line for the protected paths, one per budget (only those over, with ``quiet``)."""
        if self.protected:
            click.echo(f'Protected: {", ".join(self.protected)}')
        for use in self.uses:
            if use.over or not quiet:
                mark = render.style('  (over)', fg='red') if use.over else ''
                click.echo(f'Budget: {use.budget.path} {use.describe()}{mark}')


def desk_policy(checkpoints: Any) -> DeskPolicy:
    uses = checkpoints.budgets() if checkpoints.desk_directory.is_dir() else []
    return DeskPolicy(checkpoints.protected(), uses)
