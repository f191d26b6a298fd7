"""What a served command's child shares with its client and what it takes from it: the rule of
``warm/__init__`` in code.

Everything here is read from ``/proc`` for the client's process (its pid comes from the
socket, ``SO_PEERCRED``), never taken on the client's word, and compared with the server's own:

- **Shared** (:data:`SHARED`), or the child refuses and the client runs the command itself:
  the namespaces (mount, user, pid, net, ipc, uts, cgroup, time), the root folder, the
  interpreter's executable, the credentials (user and group ids, supplementary groups,
  capabilities), the ``no_new_privs`` bit and the seccomp mode and filter count, and the control
  groups. ``no_new_privs`` must moreover be off: a process confined by Landlock has it on (or
  is privileged), and Landlock leaves nothing in ``/proc`` to compare, so two confined processes
  could not be told to be confined alike.
- **Taken** (:func:`adopt`): the current folder (opened through ``/proc/PID/cwd``, so a folder
  removed since still works as it does in-process), the umask, the signals ignored and blocked
  (a signal the client ignores, under ``nohup`` or in a background job, stays ignored), and the
  resource limits, set to the client's; where the child cannot set one (a hard limit above its
  own) it refuses. It refuses too when the client's CPU time, address space or data size is
  limited: those count what a process used before the command, and the child, forked from a
  server that imported everything, has used other amounts than a new process would.

The client names its server after the shared part of its own context (:func:`shared`, read
from ``/proc/self``), so a client in another namespace, under other credentials or in another
control group starts a server of its own there instead of being refused by this one; the
child's comparison still decides.

Imported by the client on every command: ``os`` only (``resource`` and ``signal`` inside the
functions the server's child runs).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # as ``typing``'s, without importing it (the client imports this module)
if TYPE_CHECKING:
    import signal
    from collections.abc import Callable

NAMESPACES = ('mnt', 'user', 'pid', 'net', 'ipc', 'uts', 'cgroup', 'time')
SHARED_STATUS = (
    'Uid',
    'Gid',
    'Groups',
    'CapInh',
    'CapPrm',
    'CapEff',
    'CapBnd',
    'CapAmb',
    'NoNewPrivs',
    'Seccomp',
    'Seccomp_filters',
)
SHARED = (
    *(f'ns/{name}' for name in NAMESPACES),
    'root',
    'exe',
    'cgroup',
    *SHARED_STATUS,
)
# Limits on what a process has used since it started, which the server's child has used
# differently from a new process.
USAGE_LIMITS = ('RLIMIT_CPU', 'RLIMIT_AS', 'RLIMIT_DATA')
ABSENT = '-'


def facts(pid: int | str = 'self') -> dict[str, str] | None:
    """What the rule reads of process ``pid``: the shared facts (:data:`SHARED`) and every line
    of its status (``Umask``, ``SigIgn``, ``SigBlk`` among them); None when ``/proc`` does not
    tell (no such process, another user's, no ``/proc``)."""
    proc = f'/proc/{pid}'
    found: dict[str, str] = {}
    try:
        for name in NAMESPACES:
            try:
                found[f'ns/{name}'] = os.readlink(f'{proc}/ns/{name}')
            except FileNotFoundError:
                if not os.path.isdir(f'{proc}/ns'):
                    raise
                found[f'ns/{name}'] = ABSENT  # a kernel without that kind of namespace
        root = os.stat(f'{proc}/root')
        found['root'] = f'{os.readlink(f"{proc}/root")}:{root.st_dev}:{root.st_ino}'
        exe = os.stat(f'{proc}/exe')
        found['exe'] = f'{exe.st_dev}:{exe.st_ino}'
        found['cgroup'] = _read(f'{proc}/cgroup')
        status = _read(f'{proc}/status')
    except (OSError, ValueError):
        return None
    for line in status.splitlines():
        name, colon, value = line.partition(':')
        if colon:
            found.setdefault(name, ' '.join(value.split()))
    for name in SHARED_STATUS:
        found.setdefault(name, ABSENT)
    return found


def shared(found: dict[str, str]) -> str:
    """The shared part of a process's facts, as one text."""
    return '\n'.join(f'{name}={found[name]}' for name in SHARED)


def refusal(client: dict[str, str], own: dict[str, str]) -> str | None:
    """Why a child with the facts ``own`` cannot be the client with ``client``'s (the first
    fact that differs), None when it can."""
    for name in SHARED:
        if client[name] != own[name]:
            return f'{name} differs'
    if client['NoNewPrivs'] != '0':
        return 'no_new_privs is set (a confinement /proc cannot show)'
    return None


def adopt(pid: int, client: dict[str, str]) -> str | None:
    """Makes this process, whose signals are a new Python process's (:func:`fresh_signals`),
    take the client's current folder, umask, signals and resource limits; None when it did,
    else why it cannot (the caller then runs nothing)."""
    import signal

    try:
        umask = int(client['Umask'], 8)
        ignored = _signals(client['SigIgn'])
        blocked = _signals(client['SigBlk'])
        folder = os.open(f'/proc/{pid}/cwd', os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except (KeyError, ValueError):
        return 'no umask or signal masks in /proc'
    except OSError as error:
        return f'cannot open the current folder: {error.strerror}'
    try:
        os.fchdir(folder)
    except OSError as error:
        return f'cannot enter the current folder: {error.strerror}'
    finally:
        os.close(folder)
    os.umask(umask)
    for number in ignored.symmetric_difference(_python_ignores()):
        try:
            signal.signal(number, _fresh_handler(number, number in ignored))
        except (OSError, ValueError):
            continue  # SIGKILL, SIGSTOP, or a signal the C library keeps for itself
    if blocked:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    return _limits(pid)


def fresh_signals() -> None:
    """Gives this process the signal handling of a new Python process that inherited none
    ignored or blocked (its own SIGPIPE and SIGXFSZ ignored, SIGINT ``KeyboardInterrupt``),
    which :func:`adopt` expects: the waiting child calls it before a client comes, so taking a
    client's signals costs only what differs."""
    import signal

    ignored = _python_ignores()
    for number in signal.valid_signals():
        try:
            signal.signal(number, _fresh_handler(number, number in ignored))
        except (OSError, ValueError):
            continue  # SIGKILL, SIGSTOP, or a signal the C library keeps for itself
    signal.pthread_sigmask(signal.SIG_SETMASK, [])


def _python_ignores() -> set[int]:
    """The signals a new Python process ignores whatever it inherited."""
    import signal

    return {signal.SIGPIPE, signal.SIGXFSZ}


def _fresh_handler(number: int, ignored: bool) -> signal.Handlers | Callable[..., object]:
    """What a new Python process does with signal ``number``: it keeps an ignored signal
    ignored, makes SIGINT ``KeyboardInterrupt``, and leaves the others to their default."""
    import signal

    if ignored:
        return signal.SIG_IGN
    if number == signal.SIGINT:
        return signal.default_int_handler
    return signal.SIG_DFL


def _limits(pid: int) -> str | None:
    """Sets each resource limit to the client's; why it cannot, else None."""
    import resource

    for name in sorted(dir(resource)):
        if not name.startswith('RLIMIT_'):
            continue
        kind = getattr(resource, name)
        try:
            theirs = resource.prlimit(pid, kind)
        except (OSError, ValueError) as error:
            return f'cannot read the limit {name}: {error}'
        if name in USAGE_LIMITS and theirs[0] != resource.RLIM_INFINITY:
            return f'{name} is limited'
        if resource.getrlimit(kind) == theirs:
            continue
        try:
            resource.setrlimit(kind, theirs)
        except (OSError, ValueError) as error:
            return f'cannot set the limit {name}: {error}'
    return None


def _signals(mask: str) -> set[int]:
    """The signal numbers of a ``/proc`` status mask (hexadecimal, bit N-1 for signal N)."""
    bits = int(mask, 16)
    return {number + 1 for number in range(bits.bit_length()) if bits >> number & 1}


def _read(path: str) -> str:
    with open(path, encoding='utf-8', errors='replace') as file:
        return file.read()
