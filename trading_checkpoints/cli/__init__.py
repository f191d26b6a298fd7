"""The ``checkpoints`` command: porcelain over the library (it never touches dulwich itself).

One module per topic, like pip's ``commands/``: :mod:`.core` (list, snapshot, restore, status,
desks, track), :mod:`.history` (diff, show, log), :mod:`.undo` (undo, redo, seal),
:mod:`.turns`, :mod:`.retention` (prune), :mod:`.remote` (remote, push, pull, clone),
:mod:`.protect` (protect, budget),
:mod:`.agent` (mcp, demo), :mod:`.browse` (the terminal browser) and :mod:`.complete` (shell
completion); they share the options of :mod:`.options`, the views of :mod:`.render` and the
workspace/desk resolution of :mod:`.target`. :mod:`.app` assembles the group.
"""

from .app import cli, main

__all__ = ['cli', 'main']
