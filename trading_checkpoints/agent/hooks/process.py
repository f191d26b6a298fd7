"""The hook process: one event read from stdin, acted on, answered as the harness expects.

Exit status, as both harnesses read it: 0 when done (or nothing to do), with nothing on stdout
for Claude Code and ``{}`` for Gemini CLI (which parses stdout as JSON); 1, a non-blocking
error, with one line on stderr, when the event cannot be read or the checkpoint failed: the
harness shows the line and the tool still runs. With ``--strict`` a failed checkpoint before a
write tool exits 2 instead, which blocks the tool and tells the agent why.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Sequence
from pathlib import Path

from .dispatch import run
from .events import HARNESSES, MAX_EVENT_BYTES, NON_BLOCKING, OK, Options

INTERRUPTED = 130  # as a shell reports a command ended by Ctrl-C; not 2, which would block


@functools.cache  # built once (the warm server builds it before forking its children)
def parser() -> argparse.ArgumentParser:
    cli = argparse.ArgumentParser(
        prog='checkpoints hook',
        description='Checkpoint a desk from a Claude Code or Gemini CLI hook event on stdin. '
        '(`checkpoints hook install|uninstall|doctor` set the hooks up.)',
    )
    cli.add_argument('--workspace', type=Path, help='the workspace (else found from the cwd)')
    cli.add_argument('--desk', help='the desk (else the one the file or cwd is in, else main)')
    cli.add_argument(
        '--harness',
        choices=HARNESSES,
        help='whose conventions to answer with (default: told by the event name)',
    )
    cli.add_argument(
        '--strict',
        action='store_true',
        help='block a write tool (exit 2) when its checkpoint cannot be taken',
    )
    cli.add_argument('-v', '--verbose', action='store_true', help='say what was done on stderr')
    return cli


def main(argv: Sequence[str] | None = None) -> int:
    """Reads one event from stdin, acts on it, prints what the harness expects; the exit status.

    Ctrl-C ends it with one line on stderr and status 130; a harness that stopped reading its
    output gets status 1 and nothing more (a non-blocking error either way)."""
    try:
        return _handle(argv)
    except KeyboardInterrupt:
        print('checkpoints hook: interrupted', file=sys.stderr, flush=True)
        return INTERRUPTED
    except BrokenPipeError:
        return NON_BLOCKING


def _handle(argv: Sequence[str] | None) -> int:
    try:
        args = parser().parse_args(argv)
    except SystemExit as stop:  # argparse's usage error is 2, which would block every tool
        return OK if stop.code in (0, None) else NON_BLOCKING
    options = Options(args.workspace, args.desk, args.harness, args.strict, args.verbose)
    if sys.stdin.isatty():
        print(
            'checkpoints hook: reading one hook event (JSON) from stdin; register this command '
            'as a Claude Code or Gemini CLI hook instead of running it here (Ctrl-D ends)',
            file=sys.stderr,
        )
    try:
        raw = sys.stdin.buffer.read(MAX_EVENT_BYTES + 1)
    except OSError as error:
        raw = b''
        print(f'checkpoints hook: cannot read stdin: {error}', file=sys.stderr)
    reply = run(raw, options)
    if reply.stdout:
        sys.stdout.write(reply.stdout)
        sys.stdout.flush()
    if reply.stderr:
        sys.stderr.write(reply.stderr)
        sys.stderr.flush()
    return reply.code
