"""``warm/context.py``: what the server's child must share with its client (read from ``/proc``
for a real process in each context) and what it takes from it (an ``adopt`` made by a real
second process, whose state is then read back)."""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from helpers import ROOT
from helpers.processes import environment
from helpers.warm import children_of

from trading_checkpoints.warm import context

pytestmark = pytest.mark.skipif(sys.platform != 'linux', reason='reads /proc (Linux)')
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason='needs root (namespaces, credentials)')

# A Python process that says it is ready and waits for its stdin to close.
WAIT = 'import sys; print("ready", flush=True); sys.stdin.read()'


def _is_python(pid: int) -> bool:
    try:
        here, there = os.stat('/proc/self/exe'), os.stat(f'/proc/{pid}/exe')
    except OSError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def _descendants(pid: int) -> list[int]:
    found, pending = [], [pid]
    while pending:
        parent = pending.pop()
        found.append(parent)
        pending.extend(children_of(parent))
    return found


@contextmanager
def process(*prefix: str, code: str = WAIT, **popen: object) -> Iterator[int]:
    """A Python process started under ``prefix`` (``unshare --mount``, ``setpriv ...``): the
    pid of the Python process itself once it is ready."""
    child = subprocess.Popen(
        [*prefix, sys.executable, '-c', code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=environment(),
        **popen,  # type: ignore[call-overload]
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line.startswith(b'ready'), line
        [pid] = [pid for pid in _descendants(child.pid) if _is_python(pid)]
        yield pid
    finally:
        child.kill()
        child.wait()


def refusal_of(pid: int) -> str | None:
    client = context.facts(pid)
    assert client is not None
    own = context.facts()
    assert own is not None
    return context.refusal(client, own)


def test_a_process_in_the_same_context_is_one_the_child_can_be() -> None:
    with process() as pid:
        assert refusal_of(pid) is None


@ROOT_ONLY
@pytest.mark.parametrize(
    'option, name',
    [
        ('--mount', 'mnt'),
        ('--user', 'user'),
        ('--pid', 'pid'),
        ('--net', 'net'),
        ('--ipc', 'ipc'),
        ('--uts', 'uts'),
        ('--cgroup', 'cgroup'),
        ('--time', 'time'),
    ],
)
def test_a_process_in_another_namespace_is_refused(option: str, name: str) -> None:
    if not Path(f'/proc/self/ns/{name}').exists():
        pytest.skip(f'this kernel has no {name} namespace')
    with process('unshare', option, '--fork') as pid:
        assert refusal_of(pid) == f'ns/{name} differs'


@ROOT_ONLY
def test_a_process_under_another_root_is_refused(tmp_path: Path) -> None:
    code = f'import os, sys; os.chroot({str(tmp_path)!r}); {WAIT}'
    with process(code=code) as pid:
        assert refusal_of(pid) == 'root differs'


def test_another_program_is_refused() -> None:
    child = subprocess.Popen(
        ['sh', '-c', 'echo ready; exec cat'], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == b'ready\n'
        assert refusal_of(child.pid) == 'exe differs'
    finally:
        child.kill()
        child.wait()


@ROOT_ONLY
@pytest.mark.parametrize(
    'options, name',
    [
        (['--reuid', '65534', '--regid', '65534', '--clear-groups'], 'Uid'),
        (['--regid', '65534', '--keep-groups'], 'Gid'),
        (['--groups', '65534'], 'Groups'),
        (['--inh-caps', '+chown'], 'CapInh'),
        (['--bounding-set', '-net_raw'], 'CapPrm'),
    ],
)
def test_a_process_with_other_credentials_is_refused(options: list[str], name: str) -> None:
    with process('setpriv', *options) as pid:
        assert refusal_of(pid) == f'{name} differs'


def test_a_process_with_no_new_privs_is_refused_even_by_a_child_like_it() -> None:
    """A process confined by Landlock has no_new_privs set, and Landlock shows nothing in
    /proc: such a client is never served, not even by a server confined alike."""
    with process('setpriv', '--no-new-privs') as pid:
        assert refusal_of(pid) == 'NoNewPrivs differs'
        client = context.facts(pid)
        assert client is not None
        assert context.refusal(client, client) is not None


# Installs a seccomp filter that allows every call (as root no no_new_privs is needed), then
# waits: prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, {1, [BPF_RET|BPF_K SECCOMP_RET_ALLOW]}).
SECCOMP = r"""
import ctypes, sys
class Filter(ctypes.Structure):
    _fields_ = [('code', ctypes.c_ushort), ('jt', ctypes.c_ubyte), ('jf', ctypes.c_ubyte),
                ('k', ctypes.c_uint)]
class Program(ctypes.Structure):
    _fields_ = [('len', ctypes.c_ushort), ('filter', ctypes.POINTER(Filter))]
allow = (Filter * 1)(Filter(0x06, 0, 0, 0x7fff0000))
program = Program(1, ctypes.cast(allow, ctypes.POINTER(Filter)))
if ctypes.CDLL(None, use_errno=True).prctl(22, 2, ctypes.byref(program), 0, 0) != 0:
    raise OSError(ctypes.get_errno(), 'prctl')
print('ready', flush=True)
sys.stdin.read()
"""


@ROOT_ONLY
def test_a_process_under_seccomp_is_refused() -> None:
    with process(code=SECCOMP) as pid:
        assert 'Seccomp:\t2' in Path(f'/proc/{pid}/status').read_text()
        assert refusal_of(pid) == 'Seccomp differs'


@ROOT_ONLY
def test_a_process_in_another_control_group_is_refused() -> None:
    hierarchy = Path('/sys/fs/cgroup/pids')
    if not (hierarchy / 'cgroup.procs').exists():
        hierarchy = Path('/sys/fs/cgroup')
    group = hierarchy / f'tc-test-{os.getpid()}'
    try:
        group.mkdir()
    except OSError as error:
        pytest.skip(f'cannot make a control group here: {error}')
    try:
        with process() as pid:
            (group / 'cgroup.procs').write_text(str(pid))
            assert refusal_of(pid) == 'cgroup differs'
    finally:
        group.rmdir()


# Runs ``context.adopt`` for the client whose pid is argv[1], then prints what this process
# then is, as JSON: umask, current folder, resource limits, signals ignored and blocked.
ADOPT = r"""
import json, os, resource, signal, sys
from trading_checkpoints.warm import context
pid = int(sys.argv[1])
if len(sys.argv) > 2:
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
reason = context.adopt(pid, context.facts(pid))
umask = os.umask(0)
limits = {name: resource.getrlimit(getattr(resource, name))
          for name in dir(resource) if name.startswith('RLIMIT_')}
ignored = sorted(n for n in signal.valid_signals()
                 if n not in (signal.SIGKILL, signal.SIGSTOP)
                 and signal.getsignal(n) == signal.SIG_IGN)
print(json.dumps({
    'reason': reason,
    'umask': umask,
    'cwd': os.readlink('/proc/self/cwd'),
    'limits': limits,
    'ignored': ignored,
    'interrupt': signal.getsignal(signal.SIGINT) is signal.default_int_handler,
    'blocked': sorted(signal.pthread_sigmask(signal.SIG_BLOCK, [])),
}))
"""


def adopted(pid: int, *argv: str, prefix: tuple[str, ...] = ()) -> dict[str, object]:
    """What a second process (started under ``prefix``) is after adopting process ``pid``."""
    done = subprocess.run(
        [*prefix, sys.executable, '-c', ADOPT, str(pid), *argv],
        capture_output=True,
        text=True,
        env=environment(),
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


def _confined_client(folder: Path) -> None:
    """What a client may have been given by its parent: a umask, limits, signals ignored and
    blocked, a current folder since removed."""
    os.umask(0o027)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.RLIM_INFINITY))
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 128))
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR2])
    os.chdir(folder)


def test_the_child_takes_the_clients_folder_umask_limits_and_signals(tmp_path: Path) -> None:
    folder = tmp_path / 'gone'
    folder.mkdir()
    with process(preexec_fn=lambda: _confined_client(folder)) as pid:
        folder.rmdir()
        state = adopted(pid)
    assert state['reason'] is None
    assert state['umask'] == 0o027
    assert state['cwd'] == f'{folder} (deleted)', 'a removed folder still works'
    limits = state['limits']
    assert isinstance(limits, dict)
    assert limits['RLIMIT_FSIZE'] == [4096, resource.RLIM_INFINITY]
    assert limits['RLIMIT_NOFILE'] == [64, 128]
    assert signal.SIGHUP in state['ignored'] and signal.SIGINT in state['ignored']  # type: ignore[operator]
    assert signal.SIGPIPE in state['ignored']  # type: ignore[operator]  # as Python sets it
    assert signal.SIGTERM not in state['ignored']  # type: ignore[operator]
    assert state['blocked'] == [signal.SIGUSR2]


@ROOT_ONLY
@pytest.mark.skipif(shutil.which('setpriv') is None, reason='needs setpriv (util-linux)')
def test_a_clients_folder_it_may_enter_but_not_list_is_taken(tmp_path: Path) -> None:
    """The child opens the client's folder only to enter it, as the client did: a folder of
    mode ``0311`` (to a user without root's powers over files) is taken too."""
    folder = tmp_path / 'enter only'
    folder.mkdir(mode=0o311)
    unprivileged = ('setpriv', '--bounding-set', '-dac_override,-dac_read_search')
    with process(cwd=folder) as pid:
        state = adopted(pid, prefix=unprivileged)
    assert state['reason'] is None
    assert state['cwd'] == str(folder)


def test_a_signal_the_client_does_not_ignore_gets_pythons_own_handling() -> None:
    with process() as pid:
        state = adopted(pid)
    assert state['reason'] is None
    assert state['interrupt'] is True, 'SIGINT raises KeyboardInterrupt, as in a new process'
    assert signal.SIGHUP not in state['ignored']  # type: ignore[operator]
    assert state['blocked'] == []


def test_a_limit_the_child_cannot_reach_is_refused() -> None:
    """The client may open more files than the child may allow itself (a hard limit above the
    child's): the child cannot be the client."""
    with process() as pid:
        state = adopted(pid, 'lower the hard limit first')
    assert state['reason'] is not None and 'RLIMIT_NOFILE' in str(state['reason'])


@pytest.mark.parametrize('kind', ['RLIMIT_AS', 'RLIMIT_DATA', 'RLIMIT_CPU'])
def test_a_limit_on_what_the_process_used_is_refused(kind: str) -> None:
    """Address space, data size and CPU time count what a process used before the command:
    the server's child, forked from a process that imported everything, differs there from a
    new process, so a client with such a limit runs its command itself."""
    limit = getattr(resource, kind)
    value = 3600 if kind == 'RLIMIT_CPU' else 8 << 30

    def confine() -> None:
        resource.setrlimit(limit, (value, resource.getrlimit(limit)[1]))

    with process(preexec_fn=confine) as pid:
        state = adopted(pid)
    assert state['reason'] == f'{kind} is limited'


def test_a_process_gone_cannot_be_adopted() -> None:
    with process() as pid:
        facts = context.facts(pid)
    assert facts is not None
    time.sleep(0.1)
    assert context.facts(pid) is None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert context.adopt(pid, facts) is not None
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
