"""The same commands run through the warm server and in-process, across the contexts a client
may be in: the same exit status, output, files and checkpoints, or the command ran in-process
(the served side says where it ran: ``helpers/scripts/warm_probe``).

Each context runs on two alike workspaces whose paths have the same length: one side with
``CHECKPOINTS_SERVER=off``, the other as a harness runs the command. Before the served side,
a command run in the context's own way (``warm``) makes sure its server listens, started by a
client unlike the measured one where that matters (another umask, environment, time zone):
the child must become the measured client, not stay the one that started the server.
"""

from __future__ import annotations

import os
import random
import re
import resource
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from helpers import ROOT
from helpers.builders import write
from helpers.hookrun import event as hook_event
from helpers.warm import PROBE, client_env, copied

from trading_checkpoints import Checkpoints

pytestmark = pytest.mark.skipif(sys.platform != 'linux', reason='the warm server is Linux-only')
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason='needs root (namespaces, mounts)')

Preexec = Callable[[], None]


@dataclass
class Context:
    """How the client runs: a command before it (``unshare ...``), variables, what its parent
    set up in it (``preexec``), its stdin; how the server is started (``warm``: variables of
    the client that starts it); and where the command must run."""

    wrap: tuple[str, ...] = ()
    env: dict[str, str | None] = field(default_factory=dict)
    preexec: Preexec | None = None
    stdin: str = 'event'  # 'event' (a file), 'closed', 'write-only'
    stdout_read: bool = True  # False: stdout a pipe whose reader has closed it
    warm: dict[str, str | None] = field(default_factory=dict)
    served: bool = True
    cwd_removed: bool = False


def _umask(mask: int) -> Preexec:
    return lambda: os.umask(mask) and None


def _limit(kind: int, soft: int) -> Preexec:
    return lambda: resource.setrlimit(kind, (soft, resource.getrlimit(kind)[1]))


def _close_stdin() -> None:
    os.close(0)


def _write_only_stdin() -> None:
    fd = os.open(os.devnull, os.O_WRONLY)
    os.dup2(fd, 0)
    os.close(fd)


CONTEXTS = {
    'plain': Context(),
    'environment': Context(env={'TC_TEST_VARIABLE': 'client'}, warm={'CHECKPOINTS_DESK': 'x'}),
    'time zone': Context(env={'TZ': 'JST-9'}, warm={'TZ': 'UTC0'}),
    'umask 077': Context(preexec=_umask(0o077)),
    'umask 000': Context(preexec=_umask(0o000)),
    'file size limit': Context(preexec=_limit(resource.RLIMIT_FSIZE, 16384)),
    'open files limit': Context(preexec=_limit(resource.RLIMIT_NOFILE, 200)),
    'address space limit': Context(preexec=_limit(resource.RLIMIT_AS, 16 << 30), served=False),
    'removed current folder': Context(cwd_removed=True),
    'closed stdin': Context(stdin='closed', served=False),
    'stdout closed by its reader': Context(stdout_read=False),
    'write-only stdin': Context(stdin='write-only', served=False),
    'no_new_privs': Context(wrap=('setpriv', '--no-new-privs'), served=False),
    'mount namespace': Context(wrap=('unshare', '--mount'), served=False),
    'read-only bind mount': Context(
        wrap=('unshare', '--mount', 'sh', '-c', 'mount --bind -o ro "$0" "$0" && exec "$@"'),
        served=False,
    ),
    'another copy of click': Context(),  # its PYTHONPATH is set by the test
}
NEEDS_ROOT = {'mount namespace', 'read-only bind mount', 'no_new_privs'}
NEEDS_TOOL = {'no_new_privs': 'setpriv', 'mount namespace': 'unshare'}


@dataclass
class Side:
    root: Path
    workspace: Path
    desk: Path
    probe: Path
    runtime: Path


def side(root: Path, runtime: Path) -> Side:
    """A workspace whose desk has a checkpoint, then changes: an edit, and a 64 KB file that
    no compression shrinks (a snapshot of it writes more than a small file size limit)."""
    workspace = root / 'ws'
    desk = workspace / 'desks' / 'main'
    checkpoints = Checkpoints(workspace / '.checkpoints' / 'main.git', desk)
    write(desk, 'Memory.md', '# Memory\n')
    write(desk, 'notes/plan.md', 'Buy MSFT below 400.\n')
    checkpoints.snapshot('first')
    write(desk, 'notes/plan.md', 'SELL EVERYTHING\n')
    write(desk, 'memory/blob.bin', random.Random(7).randbytes(64 * 1024))
    return Side(root, workspace, desk, root / 'probe', runtime)


# The commands: (arguments, run from the desk or the workspace, the hook's event on stdin).
COMMANDS: list[tuple[tuple[str, ...], str, str | None]] = [
    (('status',), 'desk', None),
    (('snapshot', '-m', 'from the matrix'), 'desk', None),
    (('list',), 'desk', None),
    (('hook', '--harness', 'claude'), 'workspace', 'claude_pre_tool_use_write.json'),
    (('log', 'notes/plan.md'), 'desk', None),
]


def run(
    where: Side,
    context: Context,
    args: tuple[str, ...],
    folder: str,
    event: str | None,
    *,
    served: bool,
    extra: dict[str, str | None],
) -> tuple[int, str, str]:
    cwd = where.desk if folder == 'desk' else where.workspace
    if context.cwd_removed:
        cwd = where.root / 'removed'
        cwd.mkdir(exist_ok=True)
        args = ('--workspace', str(where.workspace), *args)
    stdin_file = where.root / 'stdin'
    stdin_file.write_bytes(hook_event(event, where.workspace) if event else b'')
    env = client_env(where.runtime, TC_WARM_PROBE=str(where.probe))
    env.update({k: v for k, v in {**context.env, **extra}.items() if v is not None})
    if not served:
        env['CHECKPOINTS_SERVER'] = 'off'
    preexecs = [context.preexec] if context.preexec else []
    if context.stdin == 'closed':
        preexecs.append(_close_stdin)
    elif context.stdin == 'write-only':
        preexecs.append(_write_only_stdin)
    argv = [*context.wrap, *PROBE, *args]
    if context.wrap and context.wrap[-1].startswith('mount --bind'):
        argv = [*context.wrap[:-1], context.wrap[-1], str(where.workspace), *PROBE, *args]
    reader, writer = os.pipe()
    if not context.stdout_read:
        os.close(reader)
    with open(stdin_file, 'rb') as stdin:
        process = subprocess.Popen(
            argv,
            cwd=where.desk,
            env=env,
            stdin=stdin,
            stdout=writer,
            stderr=subprocess.PIPE,
            preexec_fn=_in(cwd, preexecs),
        )
        os.close(writer)
        _, err = process.communicate(timeout=120)
    out = b''
    if context.stdout_read:
        with open(reader, 'rb') as pipe:
            out = pipe.read()
    shown = (process.returncode, out.decode(), err.decode())
    return shown[0], normalized(shown[1], where), normalized(shown[2], where)


def _in(folder: Path, preexecs: list[Preexec]) -> Preexec:
    """Runs in the client before it starts: enters ``folder`` (removing it when it is the
    removed one), then the context's own set-up."""

    def prepare() -> None:
        os.chdir(folder)
        if folder.name == 'removed':
            os.rmdir(folder)
        for preexec in preexecs:
            preexec()

    return prepare


def normalized(text: str, where: Side) -> str:
    """Output with what differs between two alike runs named instead: the side's folder,
    checkpoint ids, times (their offset kept)."""
    text = text.replace(str(where.root), 'SIDE')
    text = re.sub(r'\b[0-9a-f]{7,40}\b', 'ID', text)
    text = re.sub(r'\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d)?', 'TIME', text)
    return re.sub(r'\b\d+(\.\d+)? ?(ms|s|seconds?|minutes?) ago\b', 'AGO', text)


def files(where: Side) -> dict[str, object]:
    """The desk's files (mode and bytes) and the modes of the repository's files and folders,
    by kind (their names hold ids)."""
    found: dict[str, object] = {}
    for path in sorted(where.desk.rglob('*')):
        info = path.lstat()
        content = path.read_bytes() if stat.S_ISREG(info.st_mode) else b''
        found[f'desk/{path.relative_to(where.desk)}'] = (oct(info.st_mode), content)
    modes: dict[str, list[str]] = {}
    for path in sorted((where.workspace / '.checkpoints').rglob('*')):
        name = str(path.relative_to(where.workspace))
        kind = re.sub(r'[0-9a-f]{38,40}|(?<=/)[0-9a-f]{2}(?=/|$)', 'X', name)
        modes.setdefault(kind, []).append(oct(path.lstat().st_mode))
    found['repository'] = {kind: sorted(values) for kind, values in modes.items()}
    return found


def checkpoints(where: Side) -> list[tuple[object, ...]]:
    listed = Checkpoints(where.workspace / '.checkpoints' / 'main.git', where.desk).list(None)
    return [(c.reason, c.tool, c.paths, c.action, c.created_at[19:]) for c in listed]


def warm_up(where: Side, context: Context, extra: dict[str, str | None]) -> None:
    """Runs ``list`` the context's way, started by the client ``context.warm`` describes, until
    a server serves it (or, for a context that must run in-process, once)."""
    warm = Context(context.wrap, context.env)
    deadline = time.monotonic() + 90
    while True:
        where.probe.unlink(missing_ok=True)
        run(where, warm, ('list',), 'desk', None, served=True, extra={**extra, **context.warm})
        said = where.probe.read_text() if where.probe.exists() else ''
        if said == 'served\n' or not context.served:
            return
        assert time.monotonic() < deadline, 'no server served the warm-up'
        time.sleep(0.2)


def compare(tmp_path: Path, runtime: Path, context: Context, extra: dict[str, str | None]) -> None:
    here, there = side(tmp_path / 'a', runtime), side(tmp_path / 'b', runtime)
    warm_up(there, context, extra)
    for args, folder, event in COMMANDS:
        there.probe.unlink(missing_ok=True)
        expected = run(here, context, args, folder, event, served=False, extra=extra)
        got = run(there, context, args, folder, event, served=True, extra=extra)
        assert got == expected, args
        where = there.probe.read_text() if there.probe.exists() else 'killed'
        assert where == ('served\n' if context.served else 'in-process\n'), args
    assert files(there) == files(here)
    assert checkpoints(there) == checkpoints(here)


@pytest.mark.parametrize('name', list(CONTEXTS))
def test_a_command_served_does_what_it_does_in_process(
    tmp_path: Path, runtime: Path, name: str
) -> None:
    if name in NEEDS_ROOT and os.geteuid() != 0:
        pytest.skip('needs root (namespaces, mounts, no_new_privs)')
    if name in NEEDS_TOOL and shutil.which(NEEDS_TOOL[name]) is None:
        pytest.skip(f'{NEEDS_TOOL[name]} is not installed')
    extra: dict[str, str | None] = {}
    if name == 'another copy of click':
        extra['PYTHONPATH'] = os.pathsep.join([str(copied(tmp_path / 'site', 'click')), str(ROOT)])
    compare(tmp_path, runtime, CONTEXTS[name], extra)
