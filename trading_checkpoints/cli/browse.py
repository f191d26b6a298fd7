"""``checkpoints browse``: the terminal browser (the ``ui`` package, imported only here and
only when the verb runs, so every other command starts without Textual)."""

from __future__ import annotations

import sys

import click

from .options import at_option, held_at, target_options, verb
from .target import Target


@click.command('browse')
@at_option('Start on')
@target_options
@verb('desk')
def browse_command(target: Target, at: str | None) -> None:
    """Browse the desk's checkpoints in the terminal (q quits).

    The timeline, newest first (a turn's checkpoints folded under it: Enter or space folds),
    the selected checkpoint's files and its diff. Keys: arrows or j/k move, Enter opens the
    diff (Esc goes back), / searches reasons and paths (n: the next match), d diffs with the
    desk now, h shows a file's history and b who wrote each of its lines (Tab: the file list),
    r restores the checkpoint, u undoes and U (or Ctrl-R) redoes as `undo` and `redo` do, each
    after showing its plan (or the refusal) and asking. With --at TIME, the cursor starts on
    the checkpoint the desk held at TIME.

    \b
    Needs the optional extra:
      pip install 'trading-checkpoints[ui]'

    \b
    Examples:
      checkpoints browse
      checkpoints browse --at 2h
      checkpoints --desk research browse
    """
    from ..ui import load

    app = load()
    checkpoints = target.checkpoints()
    start = None if at is None else held_at(checkpoints, at, None)
    sys.exit(app.run(checkpoints, start))
