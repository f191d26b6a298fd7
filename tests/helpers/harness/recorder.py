"""A hook command that records what a harness gives it: ``python3 recorder.py FOLDER [REPLIES]``.

Registered for every hook event of Claude Code or Gemini CLI, it writes one JSON file per event
into FOLDER (``<start time in ns>-<pid>.json``): the event read from stdin, whether stdin was
closed after it, the hook's own folder, process ids, start and end times, and the environment's
harness variables (their values, except anything named like a key or token; the names of all the
others). REPLIES, a JSON file, maps ``EVENT`` or ``EVENT:TOOL`` to what this hook answers:
``{"stdout": text or object, "stderr": text, "code": status, "sleep": seconds}`` (default: exit 0,
silent; Gemini CLI reads an empty stdout as no decision).

Standard library only: the harness runs it with whatever interpreter is first on its PATH.
"""

from __future__ import annotations

import json
import os
import select
import sys
import time

SHOWN = ('CLAUDE', 'GEMINI', 'PROJECT', 'PWD', 'PYTHONPATH', 'HOME', 'SHELL', 'TERM', 'PATH')
HIDDEN = ('KEY', 'TOKEN', 'SECRET', 'PASSWORD', 'AUTH')
STDIN_WAIT = 5.0  # seconds to wait for the end of stdin after the last byte


def read_stdin() -> tuple[bytes, bool]:
    """Everything on stdin, and whether it was closed (rather than left open after the event)."""
    chunks = []
    while True:
        ready, _, _ = select.select([0], [], [], STDIN_WAIT)
        if not ready:
            return b''.join(chunks), False
        chunk = os.read(0, 65536)
        if not chunk:
            return b''.join(chunks), True
        chunks.append(chunk)


def environment() -> dict[str, object]:
    shown = {}
    for name, value in os.environ.items():
        if any(word in name for word in SHOWN) and not any(word in name for word in HIDDEN):
            shown[name] = value
    return {'values': shown, 'names': sorted(os.environ)}


def main() -> int:
    folder = sys.argv[1]
    replies = {}
    if len(sys.argv) > 2:
        with open(sys.argv[2]) as handle:
            replies = json.load(handle)
    start = time.time()
    raw, closed = read_stdin()
    try:
        event = json.loads(raw)
    except ValueError:
        event = {'unparsed': raw.decode(errors='replace')}
    name = event.get('hook_event_name', '?') if isinstance(event, dict) else '?'
    tool = event.get('tool_name') if isinstance(event, dict) else None
    reply = replies.get(f'{name}:{tool}', replies.get(name, {}))
    time.sleep(reply.get('sleep', 0))
    record = {
        'event': event,
        'stdin_closed': closed,
        'cwd': os.getcwd(),
        'pid': os.getpid(),
        'ppid': os.getppid(),
        'argv': sys.argv[1:],
        'env': environment(),
        'start': start,
        'end': time.time(),
        'reply': reply,
    }
    path = os.path.join(folder, f'{time.time_ns()}-{os.getpid()}.json')
    with open(path + '.tmp', 'w') as handle:
        json.dump(record, handle, indent=1)
    os.replace(path + '.tmp', path)
    stdout = reply.get('stdout')
    if stdout is not None:
        sys.stdout.write(stdout if isinstance(stdout, str) else json.dumps(stdout))
    if reply.get('stderr'):
        sys.stderr.write(reply['stderr'])
    return int(reply.get('code', 0))


if __name__ == '__main__':
    sys.exit(main())
