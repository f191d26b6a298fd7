"""``checkpoints browse``: the terminal browser (the ``ui`` package, imported only here and
only when the verb runs, so every other command starts without Textual)."""

from __future__ import annotations

import sys

import click

from .options import target_options, verb
from .target import Target


@click.command('browse')
@target_options
@verb('desk')
def browse_command(target: Target) -> None:
    """Browse the desk's checkpoints in the terminal (q quits).

    The timeline, newest first (a turn's checkpoints folded under it: Enter or space folds),
    the selected checkpoint's files and its diff. Keys: arrows or j/k move, Enter opens the
    diff (Esc goes back), / searches reasons and paths (n: the next match), d diffs with the
    desk now, h shows a file's history (Tab: the file list), r restores the checkpoint and u
    undoes, each after showing its plan and asking.

    \b
    Needs the optional extra:
      pip install 'trading-checkpoints[ui]'

    \b
    Examples:
      checkpoints browse
      checkpoints --desk research browse
    """
    from ..ui import load

    app = load()
    sys.exit(app.run(target.checkpoints()))
