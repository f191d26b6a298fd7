"""Agents and newcomers: the MCP server and the narrated demo."""

from __future__ import annotations

from pathlib import Path

import click

from .options import reports_errors, target_options, verb
from .render import style
from .target import DESK_KEY, WORKSPACE_KEY, Target


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

    Register it as the harness's hook command (see the README for the settings to paste).
    Before a write tool it snapshots (tool, path and the session's turn as metadata); after
    it, it seals; a prompt opens a turn. A failed checkpoint never blocks the tool (exit 1,
    shown to the user) unless --strict. Options: --harness claude|gemini, --strict, -v;
    `checkpoints hook --help` lists them. Arguments are passed through untouched, so a
    harness never sees a usage error as a refusal.

    \b
    Examples:
      checkpoints hook --harness claude
      checkpoints --workspace ~/agent hook --harness gemini --strict
    """
    from ..agent.hooks import main

    argv = list(args)
    for key, option in ((WORKSPACE_KEY, '--workspace'), (DESK_KEY, '--desk')):
        value = ctx.meta.get(key)
        if value is not None and option not in argv:
            argv[:0] = [option, str(value)]
    ctx.exit(main(argv))
