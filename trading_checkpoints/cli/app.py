"""The ``checkpoints`` group: global options, the overview, usage errors, and the verbs.

Each topic module defines its verbs as standalone click commands; they are added here, so
no command module imports this one (no cycles), and none imports dulwich at module level.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Sequence
from typing import Any

import click

from ..errors.lockwaits import show_lock_waits
from ..workspace import DEFAULT_WORKSPACE
from . import agent, browse, complete, core, history, remote, render, retention, turns, undo
from .options import JSON_KEY, target_options
from .target import DESK_KEY, PROGRAM, WORKSPACE_KEY, resolve

OVERVIEW = [
    ('list', 'checkpoints, newest first'),
    ('diff ID', 'what changed since checkpoint ID'),
    ('restore ID', 'bring ID back (prints the command that undoes it)'),
    ('undo / redo', 'one step back / forward'),
    ('snapshot -m WHY', 'record the tracked files now'),
    ('status', 'what changed since the newest checkpoint'),
    ('desks', 'the desks of the workspace'),
    ('demo', 'a narrated example session'),
]


# Words people try for a verb that is named otherwise here, and the verbs they mean.
SYNONYMS: dict[str, tuple[str, ...]] = {
    'rollback': ('undo', 'restore'),
    'revert': ('undo', 'restore'),
    'reset': ('restore',),
    'checkout': ('restore',),
    'back': ('undo',),
    'rewind': ('undo', 'restore-turn'),
    'history': ('log', 'list'),
    'ls': ('list',),
    'commit': ('snapshot',),
    'save': ('snapshot',),
    'checkpoint': ('snapshot',),
    'init': ('snapshot',),
    'backup': ('push',),
    'fetch': ('pull',),
    'gc': ('prune',),
    'clean': ('prune',),
}
# How close a typo must be to a verb for it to be suggested (difflib's ratio).
TYPO_CUTOFF = 0.7
# The group's options that take a value (the verb is the first word after them).
_VALUED = ('--workspace', '--desk')


def _lower_first(text: str) -> str:
    if len(text) > 1 and text[0].isupper() and text[1].islower():
        return text[0].lower() + text[1:]
    return text


class CheckpointsGroup(click.Group):
    """A group whose usage errors are one ``error:`` line and a ``hint:`` line (or one JSON
    object with --json), and which suggests the verb meant by a typo."""

    def resolve_command(self, ctx: click.Context, args: list[str]) -> Any:
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as error:
            name = args[0] if args else ''
            meant = SYNONYMS.get(name.lower()) or tuple(
                difflib.get_close_matches(name, self.list_commands(ctx), n=1, cutoff=TYPO_CUTOFF)
            )
            if meant and not ctx.resilient_parsing:
                choices = ' or '.join(repr(verb) for verb in meant)
                raise click.UsageError(
                    f'no such verb {name!r}; did you mean {choices}?', ctx
                ) from error
            raise

    def verb_in(self, argv: Sequence[str]) -> str | None:
        """The verb a command line names (the first word that is not a group option)."""
        skip = False
        for word in argv:
            if skip:
                skip = False
            elif word in _VALUED:
                skip = True
            elif not word.startswith('-'):
                return word if word in self.commands else None
        return None

    def main(  # type: ignore[override, unused-ignore]  # click 8.1 overloads main; 8.2 does not
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        argv = list(sys.argv[1:] if args is None else args)
        as_json = '--json' in argv
        try:
            result = super().main(argv, prog_name or PROGRAM, complete_var, False, **extra)
        except click.UsageError as error:
            if error.ctx is not None:
                where = error.ctx.command_path
            else:  # an option's value missing: click's parser names no command
                verb = self.verb_in(argv)
                where = f'{PROGRAM} {verb}' if verb else PROGRAM
            render.error(
                _lower_first(error.format_message()),
                as_json=as_json or bool(error.ctx and error.ctx.meta.get(JSON_KEY)),
                kind='UsageError',
                hint=f'{where} --help shows the usage and examples',
            )
            sys.exit(error.exit_code)
        except click.ClickException as error:
            render.error(error.format_message(), as_json=as_json, kind=type(error).__name__)
            sys.exit(error.exit_code)
        except click.Abort:
            render.error('aborted: nothing was changed', as_json=as_json, kind='Aborted')
            sys.exit(1)
        sys.exit(result if isinstance(result, int) else 0)


def _print_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from importlib.metadata import PackageNotFoundError, version

    try:
        number = version('trading-checkpoints')
    except PackageNotFoundError:
        number = 'unknown (not installed)'
    click.echo(f'{PROGRAM} {number}')
    ctx.exit()


def _overview(ctx: click.Context) -> None:
    """What bare ``checkpoints`` prints: where it would act, and the common verbs."""
    click.echo(
        f"{PROGRAM}: snapshots of a desk's tracked files; any of them can be restored, and "
        'every restore undone.\n'
    )
    try:
        target = resolve(ctx.meta.get(WORKSPACE_KEY), ctx.meta.get(DESK_KEY))
    except Exception as error:  # noqa: BLE001 - the overview is best effort
        click.echo(f'({error})\n')
    else:
        if target.workspace.is_dir():
            click.echo(f'Workspace {target.workspace}, desk {target.desk!r}.\n')
        else:
            click.echo(
                f'No workspace here (a folder holding desks/ at or above this one, or '
                f'./{DEFAULT_WORKSPACE}).\nGive --workspace DIR, or make an example one: '
                f'{PROGRAM} demo --dir DIR\n'
            )
    width = max(len(words) for words, _ in OVERVIEW) + len(PROGRAM) + 3
    click.echo('Common commands:')
    for words, what in OVERVIEW:
        click.echo(f'  {f"{PROGRAM} {words}".ljust(width)}{what}')
    click.echo(f'\nEvery verb: {PROGRAM} --help; one verb: {PROGRAM} VERB --help')


@click.group(
    PROGRAM,
    cls=CheckpointsGroup,
    invoke_without_command=True,
    context_settings={'help_option_names': ['-h', '--help'], 'max_content_width': 100},
    epilog="""\b
Examples:
  checkpoints demo --dir /tmp/demo      # an example workspace to try it on
  cd /tmp/demo/desks/main               # inside a desk, no options are needed
  checkpoints list
  checkpoints diff 3f2a9c1              # what changed since then
  checkpoints restore 3f2a9c1           # prints the command that undoes it
  checkpoints undo                      # one step back; redo reverses it
  checkpoints list --workspace ~/agent --desk research --json
  eval "$(checkpoints completion bash)" # complete verbs, desks and ids (also zsh, fish)
""",
)
@target_options
@click.option(
    '--version',
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help='Show the version and exit.',
)
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Checkpoints of a desk's tracked files: snapshot, list and restore, all undoable.

    Only Memory.md, memory/, notes/ and skills/agent/ (or the paths set with `track`) are
    recorded and restored; nothing else in the desk is ever touched. The workspace is found
    from the current folder upward (like git); inside desks/NAME the desk is NAME.
    --workspace and --desk go before or after the verb.
    """
    if ctx.invoked_subcommand is None and not ctx.resilient_parsing:
        _overview(ctx)


for command in (
    core.list_command,
    core.snapshot,
    core.restore,
    core.status,
    core.desks_command,
    core.track,
    history.diff,
    history.show,
    history.log,
    undo.undo,
    undo.redo,
    undo.seal,
    turns.turns,
    turns.restore_turn,
    retention.prune,
    remote.remote_group,
    remote.push,
    remote.pull,
    remote.clone,
    agent.mcp_command,
    agent.hook_command,
    agent.watch_command,
    agent.demo,
    browse.browse_command,
    complete.completion,
):
    cli.add_command(command)


def main() -> None:
    """``checkpoints`` run in this process, with ``sys.argv`` (``warm/command.py`` runs it the
    same way, for the console script and ``python -m trading_checkpoints``)."""
    show_lock_waits()
    cli.main(prog_name=PROGRAM)
