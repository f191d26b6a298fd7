"""One ``checkpoints ARGS`` command run in this process: by the console script when no server
takes it, by the warm server's child, and by ``python -m trading_checkpoints``, alike.

A hook event (``checkpoints hook ARGS``, what a harness runs on every tool call, and the
``checkpoints-hook`` script) goes straight to the hook's own parser
(``agent/hooks/process.py``) instead of through the command group: the group would only hand
``ARGS`` on to it untouched, after parsing itself. Everything else goes through the group:
every other verb, the hook's setup verbs (``hook install``, ``uninstall``, ``doctor``), options
given before ``hook`` (``--workspace``, ``--desk``, which the group adds to the hook's
arguments) and a line holding ``--``.
"""

from __future__ import annotations

import sys

from ..errors.lockwaits import show_lock_waits

HOOK = 'hook'
HOOK_SETUP_VERBS = frozenset({'install', 'uninstall', 'doctor'})


def hook_arguments(argv: list[str]) -> list[str] | None:
    """The hook's own arguments when ``argv`` is a hook event's command line, else None."""
    if not argv or argv[0] != HOOK or '--' in argv:
        return None
    if len(argv) > 1 and argv[1] in HOOK_SETUP_VERBS:
        return None
    return argv[1:]


def run(argv: list[str]) -> int:
    """Runs ``checkpoints ARGV`` here; its exit status."""
    show_lock_waits()
    hook = hook_arguments(argv)
    try:
        if hook is not None:
            from ..agent.hooks.process import main as hook_main

            return hook_main(hook)
        from ..cli.app import cli
        from ..cli.target import PROGRAM

        cli.main(argv, prog_name=PROGRAM)
    except SystemExit as done:
        return exit_status(done.code)
    return 0


def exit_status(code: object) -> int:
    """The process status ``sys.exit(code)`` gives (a message is printed, and is status 1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1
