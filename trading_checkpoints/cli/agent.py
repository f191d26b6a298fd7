"""Agents and newcomers: the MCP server and the narrated demo."""

from __future__ import annotations

from pathlib import Path

import click

from .options import reports_errors, target_options, verb
from .render import style
from .target import Target


@click.command('mcp')
@target_options
@verb(None)
def mcp_command(target: Target) -> None:
    """Serve the workspace to an MCP-capable agent (Model Context Protocol over stdio).

    Needs the optional extra: pip install 'trading-checkpoints[mcp]'. Tools: list_desks,
    list_checkpoints, list_turns, snapshot, restore (with dry_run), restore_turn, diff,
    show_file, undo; --desk is the default desk of every tool.

    \b
    Examples:
      checkpoints --workspace ~/agent mcp
      checkpoints --workspace ~/agent --desk research mcp
    """
    from ..mcp import serve

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
    from ..demo import run_demo

    run_demo(directory, echo=click.echo, style=style)
