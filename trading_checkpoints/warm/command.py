"""One ``checkpoints ARGS`` command run in this process: by the console script when no server
takes it, by the warm server's child, and by ``python -m trading_checkpoints``, alike.

:func:`run_to_end` runs it and then does what the interpreter does at a process's end, but
for the teardown of its modules: the server's child and the ``bin/`` scripts then end with
``os._exit``. A hook event run in-process imports about 230 modules, and tearing them down
took 12-15 ms of each event.

A hook event (``checkpoints hook ARGS``, what a harness runs on every tool call, and the
``checkpoints-hook`` script) goes straight to the hook's own parser
(``agent/hooks/process.py``) instead of through the command group: the group would only hand
``ARGS`` on to it untouched, after parsing itself. Everything else goes through the group:
every other verb, the hook's setup verbs (``hook install``, ``uninstall``, ``doctor``), options
given before ``hook`` (``--workspace``, ``--desk``, which the group adds to the hook's
arguments) and a line holding ``--``.
"""

from __future__ import annotations

import os
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


def run_to_end(argv: list[str]) -> int:
    """Runs the command, then ends it as the interpreter ends a process (:func:`finish`): the
    status to end this process with at once (``os._exit``). An uncaught ``KeyboardInterrupt``
    is printed and ends this process by SIGINT here; any other uncaught error is printed and
    is status 1."""
    interrupted = False
    try:
        status = run(argv)
    except KeyboardInterrupt:
        sys.excepthook(*sys.exc_info())
        status, interrupted = 1, True
    except BaseException:  # noqa: BLE001 - printed as the interpreter prints it
        sys.excepthook(*sys.exc_info())
        status = 1
    status = finish(status)
    if interrupted:
        import signal  # only here: the rest of a command's run needs none of it

        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    return status


def finish(status: int) -> int:
    """What the interpreter does at its end, short of tearing its modules down: joins the
    threads the command left (a pool's pending work done), runs the ``atexit`` handlers, and
    flushes stdout and stderr; 120 when a flush fails (stdout's failure printed, as Python
    prints it)."""
    import atexit
    import threading

    threading._shutdown()  # type: ignore[attr-defined]  # the interpreter's own step
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
    except Exception as error:  # noqa: BLE001 - what Python reports at its end
        import traceback

        status = 120
        try:
            sys.stderr.write(f'Exception ignored in: {sys.stdout!r}\n')
            sys.stderr.write(''.join(traceback.format_exception_only(type(error), error)))
        except Exception:  # noqa: BLE001, S110 - nowhere left to report it
            pass
    try:
        sys.stderr.flush()
    except Exception:  # noqa: BLE001
        status = 120
    return status
