"""Agents and newcomers: the MCP server and the narrated demo."""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ..errors import NoWorkspaceError
from . import render
from .options import dry_run_option, json_option, reports_errors, target_options, verb
from .render import style
from .target import DESK_KEY, WORKSPACE_KEY, Target

F = TypeVar('F', bound=Callable[..., Any])


@click.command('mcp')
@target_options
@verb(None)
def mcp_command(target: Target) -> None:
    """Serve the workspace to an MCP-capable agent (Model Context Protocol over stdio).

    Needs the optional extra: pip install 'trading-checkpoints[mcp]'. Tools: list_desks,
    list_checkpoints, list_turns, snapshot, restore, restore_turn, diff, show_file, log,
    status, undo, redo, seal, prune (a dry run unless asked); --desk is the default desk of
    every tool.

    \b
    Examples:
      checkpoints --workspace ~/agent mcp
      checkpoints --workspace ~/agent --desk research mcp
    """
    from ..agent.mcp import serve

    serve(target.workspace, target.desk)


@click.command('watch')
@click.option(
    '--debounce',
    type=click.FloatRange(min=0.01, max=3600),
    default=1.0,
    show_default=True,
    metavar='SECONDS',
    help='How long writes must pause before a checkpoint is taken.',
)
@target_options
@verb('folder')
def watch_command(target: Target, debounce: float) -> None:
    """Record every change to the desk as it happens, whoever makes it (Ctrl-C stops).

    Waits on the kernel's file events (never polling) and, once writes to the tracked files
    pause, takes a checkpoint of what changed (tool "watch", the changed paths), under the
    same lock as every writer. Run it beside an agent and the changes of scripts, cron jobs
    and editors are recorded as they happen. SIGINT and SIGTERM stop it (exit 0). Needs the
    optional extra: pip install 'trading-checkpoints[watch]'.

    \b
    Examples:
      checkpoints watch
      checkpoints --workspace ~/agent --desk research watch --debounce 2
    """
    from ..agent.watch import watch

    checkpoints = target.opened()
    ready = f'Watching desk {target.desk!r} ({target.desk_directory}); Ctrl-C stops.'
    watch(checkpoints, quiet=debounce, echo=click.echo, ready=lambda: click.echo(ready))


@click.command()
@click.option(
    '--dir',
    'directory',
    type=click.Path(file_okay=False, path_type=Path),
    help='Build the example workspace here (an empty or new folder) and keep it; '
    'by default a temporary folder is used and removed.',
)
@reports_errors
def demo(directory: Path | None) -> None:
    """Play a short scripted agent session on an example workspace.

    It writes a few files through a checkpointed write tool, lists the checkpoints, diffs the
    last write, restores one, and undoes that restore, printing each step. With --dir the
    workspace is kept: cd into its desk and try the commands it prints.

    \b
    Examples:
      checkpoints demo
      checkpoints demo --dir /tmp/checkpoints-demo
    """
    from ..agent.demo import run_demo

    run_demo(directory, echo=click.echo, style=style)


@click.command(
    'hook',
    context_settings={'ignore_unknown_options': True, 'allow_extra_args': True},
    add_help_option=False,
)
@click.argument('args', nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def hook_command(ctx: click.Context, args: tuple[str, ...]) -> None:
    """Checkpoint from an agent harness's hook event (JSON on stdin): Claude Code or Gemini CLI.

    `checkpoints hook install --harness claude` registers it in the harness's settings (and
    `uninstall` removes it, `doctor` checks what the harness would see). Registered, it reads
    one event: a prompt opens a turn; before a write or shell tool it snapshots (tool, path,
    session and turn as metadata); after a write tool it seals, after a shell command it
    checkpoints what the command changed. A failed checkpoint never blocks the tool (exit 1,
    shown to the user) unless --strict. Options: --harness claude|gemini, --strict, -v;
    `checkpoints hook --help` lists them. Arguments are passed through untouched, so a
    harness never sees a usage error as a refusal.

    \b
    Examples:
      checkpoints hook install --harness claude
      checkpoints hook doctor
      checkpoints hook --harness claude          # what the harness runs
    """
    if args and args[0] in HOOK_VERBS:
        command = HOOK_VERBS[args[0]]
        name = f'{ctx.info_name} {args[0]}'  # under the group: `checkpoints hook install`
        with command.make_context(name, list(args[1:]), parent=ctx.parent or ctx) as sub:
            command.invoke(sub)
        return
    from ..agent.hooks import main

    argv = list(args)
    for key, option in ((WORKSPACE_KEY, '--workspace'), (DESK_KEY, '--desk')):
        value = ctx.meta.get(key)
        if value is not None and option not in argv:
            argv[:0] = [option, str(value)]
    ctx.exit(main(argv))


def _harness_option(required: bool) -> Callable[[F], F]:
    return click.option(
        '--harness',
        type=click.Choice(['claude', 'gemini']),
        required=required,
        help='Claude Code or Gemini CLI.' + ('' if required else ' Default: both.'),
    )


def _where_options(function: F) -> F:
    function = click.option(
        '--global',
        'everywhere',
        is_flag=True,
        help="The user's settings (~/.claude/settings.json, ~/.gemini/settings.json): every "
        'project; events from a folder with no workspace are ignored.',
    )(function)
    return click.option(
        '--settings',
        type=click.Path(dir_okay=False, path_type=Path),
        help='This settings file. Default: the project settings of the current folder, where '
        'the harness is started: .claude/settings.local.json or .gemini/settings.json.',
    )(function)


def _bound(target: Target, everywhere: bool) -> Path | None:
    """The workspace the hook command is bound to: the one every verb finds from here (None
    for every project, unless --workspace names one)."""
    if everywhere and target.workspace_source != 'option':
        return None
    try:
        target.require_workspace()
    except NoWorkspaceError as error:
        raise NoWorkspaceError(
            f'{error}; or --global to install for every project', workspace=target.workspace
        ) from None
    return target.workspace


_ORIGINS = {
    'option': 'from --workspace',
    'environment': 'from $CHECKPOINTS_WORKSPACE',
    'found': 'found at or above this folder',
    'default': 'found as ./workspace',
}


@click.command('install')
@_harness_option(True)
@_where_options
@dry_run_option('Print the settings file as it would be; change nothing.')
@target_options
@verb(None)
def hook_install(
    target: Target, harness: str, settings: Path | None, everywhere: bool, dry_run: bool
) -> None:
    """Register the hooks in a harness's settings file, with an absolute command.

    Run it in the folder you start the agent from: it writes that folder's project settings
    (.claude/settings.local.json, or .gemini/settings.json), and the hook command names the
    workspace found from there as every verb finds it ($CHECKPOINTS_WORKSPACE, else a
    workspace at or above the folder, else ./workspace). It merges entries for a prompt,
    before and after Write, Edit, MultiEdit, NotebookEdit and Bash (write_file, replace and
    run_shell_command), a failed tool and the end of the answer, and keeps every other key and
    comment; an older spelling of them is replaced, the old file is copied aside, and a second
    run changes nothing.

    \b
    Examples:
      checkpoints hook install --harness claude
      checkpoints hook install --harness gemini --global
      checkpoints hook install --harness claude --settings .claude/settings.json --dry-run
    """
    from ..agent.hooks import install
    from ..agent.hooks.doctor import gemini_trusts, untrusted

    workspace = _bound(target, everywhere)
    path = install.settings_file(harness, settings, everywhere, target.cwd)
    done = install.install(harness, path, dry_run, workspace)
    _said(done, dry_run, f'Installed the {harness} hooks in', 'already has the hooks')
    if dry_run:
        return
    name = install.NAMES[harness]
    if workspace is None:
        click.echo(f'The hook acts on the workspace found from the folder {name} runs in.')
    else:
        origin = _ORIGINS[target.workspace_source]
        click.echo(f'The hook acts on the workspace {workspace} ({origin}).')
    if everywhere:
        click.echo(f'{name} reads it in every project.')
    elif settings is None:
        click.echo(f'{name} started in {target.cwd} reads it.')
        if harness == 'gemini' and not gemini_trusts(target.cwd):
            click.echo(f'Note: {untrusted(target.cwd, path)}.')
    check = ['checkpoints', 'hook', 'doctor', '--harness', harness, '--from', str(target.cwd)]
    if settings is not None:
        check += ['--settings', str(path)]
    click.echo(f'Check with: {shlex.join(check)}')


@click.command('uninstall')
@_harness_option(True)
@_where_options
@dry_run_option('Print the settings file as it would be; change nothing.')
@target_options
@verb(None)
def hook_uninstall(
    target: Target, harness: str, settings: Path | None, everywhere: bool, dry_run: bool
) -> None:
    """Remove the hooks from a harness's settings file (only the entries that run them).

    \b
    Examples:
      checkpoints hook uninstall --harness claude
      checkpoints hook uninstall --harness gemini --global
    """
    from ..agent.hooks import install

    path = install.settings_file(harness, settings, everywhere, target.cwd)
    done = install.uninstall(path, dry_run)
    _said(done, dry_run, 'Removed the hooks from', 'has no hooks of checkpoints')


def _said(done: Any, dry_run: bool, did: str, nothing: str) -> None:
    if not done.changed:
        click.echo(f'{done.path} {nothing}; nothing changed.')
    elif dry_run:
        click.echo(done.after, nl=False)
        click.echo(f'Dry run: {done.path} was not changed.')
    else:
        real = f' (the file its link leads to: {done.real})' if done.real != done.path else ''
        backup = f' (the old file is {done.backup})' if done.backup else ''
        click.echo(f'{did} {done.path}{real}{backup}.')


@click.command('doctor')
@_harness_option(False)
@click.option(
    '--from',
    'folder',
    type=click.Path(file_okay=False, path_type=Path),
    help='The folder the harness is started in. Default: the current one.',
)
@click.option(
    '--settings',
    type=click.Path(dir_okay=False, path_type=Path),
    help='Check only this settings file, for the harness whose hooks it holds.',
)
@json_option('Print the findings as JSON.')
@target_options
@verb(None)
def hook_doctor(
    target: Target,
    harness: str | None,
    folder: Path | None,
    settings: Path | None,
    as_json: bool,
) -> None:
    """Say what a harness started in a folder would see: the hooks in the settings it reads,
    whether their command runs, the workspace it acts on and the desk, and the last event
    handled and the last that failed (with the error a harness run headless does not show).

    \b
    Examples:
      checkpoints hook doctor
      checkpoints hook doctor --harness claude --from ~/project
      checkpoints hook doctor --settings ~/.gemini/settings.json
    """
    from ..agent.hooks.doctor import doctor
    from ..workspace import locate_workspace

    start = Path(os.path.abspath(folder if folder is not None else target.cwd))
    # Where a hook whose command names no workspace acts: found from the folder as every verb
    # finds it (an option given here reaches no harness).
    spot, _ = locate_workspace(start)
    found = spot if spot.is_dir() else None
    where = settings.expanduser().absolute() if settings is not None else None
    report = doctor(harness, start, where, found)
    if as_json:
        render.echo_json(
            {
                'problems': report.problems,
                'findings': [
                    {'topic': f.topic, 'seen': f.seen, 'problem': f.problem}
                    for f in report.findings
                ],
            }
        )
    else:
        for finding in report.findings:
            mark = style('problem', fg='red', bold=True) if finding.problem else 'ok'
            click.echo(f'{finding.topic:<11} {mark:<7} {finding.seen}')
        if not report.problems:
            click.echo('No problems found.')
    if report.problems:
        raise click.exceptions.Exit(1)


HOOK_VERBS: dict[str, click.Command] = {
    'install': hook_install,
    'uninstall': hook_uninstall,
    'doctor': hook_doctor,
}
