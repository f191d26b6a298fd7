"""Only the user's own processes: another user's process that reaches the warm server's socket
runs nothing, one that reaches a watcher's socket gets nothing and can report nothing, and a
private folder of the right mode but another owner is used by no one (server, client, watcher).

The other user is ``nobody``: a process started as root that drops to uid 65534 once it has
what it needs (its interpreter lives where nobody may not read). The sockets are opened to it
on purpose (their folder and file made reachable), as a mistake or a hostile ``chmod`` would.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from helpers.processes import environment
from helpers.warm import PROBE, client_env, run, server_pid, workspace_with_history

from trading_checkpoints import Checkpoints
from trading_checkpoints.desk import vouch, vouchprotocol
from trading_checkpoints.warm import address, wire

pytestmark = [
    pytest.mark.skipif(sys.platform != 'linux', reason='SO_PEERCRED and inotify (Linux)'),
    pytest.mark.skipif(os.geteuid() != 0, reason='needs root to start a process as another user'),
]
NOBODY = 65534

# As nobody (in the group argv[2]): connects to the socket argv[1], sends each stdin line's bytes
# (hex, the last field) in turn on a connection of its own, with, when the line has two fields,
# a token as a client's (a datagram socket whose queue holds the first field's bytes and this
# process's stdin, stdout and stderr); prints, per connection, what came back (hex) before it
# closed.
KNOCK = r"""
import array, binascii, os, socket, sys
lines = [[binascii.unhexlify(f) for f in line.split()] for line in sys.stdin if line.strip()]
os.setgroups([]); os.setgid(int(sys.argv[2])); os.setuid(65534)
for *streams, message in lines:
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.settimeout(10)
    connection.connect(sys.argv[1])
    answer = b''
    try:
        if streams:
            held, token = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
            rights = (socket.SOL_SOCKET, socket.SCM_RIGHTS)
            held.sendmsg(streams, [(*rights, array.array('i', [0, 1, 2]))])
            connection.sendmsg([message], [(*rights, array.array('i', [token.fileno()]))])
        else:
            connection.sendall(message)
        while chunk := connection.recv(65536):
            answer += chunk
    except (BrokenPipeError, ConnectionResetError):
        pass  # closed on before it could say anything
    print(answer.hex(), flush=True)
"""


def knock(path: Path, *messages: bytes | tuple[bytes, bytes], group: int = NOBODY) -> list[bytes]:
    """What a process of user nobody (in ``group``) is answered on ``path``, one connection
    per message (a pair: the token's datagram and the request, sent as a client sends it)."""
    lines = [
        ' '.join(part.hex() for part in (message if isinstance(message, tuple) else (message,)))
        for message in messages
    ]
    done = subprocess.run(
        [sys.executable, '-c', KNOCK, str(path), str(group)],
        input=''.join(line + '\n' for line in lines),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return [bytes.fromhex(line) for line in done.stdout.splitlines()]


@contextmanager
def open_to_others(socket_path: Path) -> Iterator[None]:
    """The socket writable by every user and the two folders above it passable, for the
    time of the block (the folders are private again afterwards, else this user's own
    processes would use them no more)."""
    folders = (socket_path.parent, socket_path.parent.parent)
    os.chmod(socket_path, 0o777)
    for folder in folders:
        os.chmod(folder, 0o711)
    try:
        yield
    finally:
        for folder in folders:
            os.chmod(folder, 0o700)


def test_another_users_process_reaching_the_server_runs_nothing(
    tmp_path: Path, runtime: Path
) -> None:
    desk = workspace_with_history(tmp_path)
    repository = desk.parent.parent / '.checkpoints' / 'main.git'
    run(runtime, 'list', cwd=desk)
    server_pid(runtime)
    [path] = (runtime / address.FOLDER_NAME).glob('server-*.sock')
    before = len(Checkpoints(repository, desk).list(None))
    command = ['--workspace', str(desk.parent.parent), 'snapshot', '-m', 'theirs']
    request = wire.encode(['checkpoints'], command, [None, None, None])
    whole = (wire.STREAMS, request)  # with its streams, as a client sends it
    with open_to_others(path):
        answers = knock(path, request, request[: wire.LENGTH_DIGITS], whole)
        # another user in a group numbered as the server's user is (root: 0, 0): still another
        grouped = knock(path, whole, group=os.getgid())
    assert answers == [b'', b'', b''], 'nothing answered: no refusal, no run, no exit'
    assert grouped == [b''], 'nothing answered to a process of the same group either'
    assert len(Checkpoints(repository, desk).list(None)) == before
    mine = run(runtime, 'snapshot', '-m', 'mine', cwd=desk)
    assert mine.returncode == 0, mine.stderr
    assert [c.reason for c in Checkpoints(repository, desk).list(None)][0] == 'mine'


WATCHER = """
import sys
from pathlib import Path
from trading_checkpoints import Checkpoints
from trading_checkpoints.agent.watch import watch
checkpoints = Checkpoints(Path(sys.argv[1]), Path(sys.argv[2]), ('notes', 'Memory.md'))
watch(checkpoints, quiet=30.0, echo=lambda line: None, ready=lambda: print('ready', flush=True))
"""
TRACKED = ('notes', 'Memory.md')


@pytest.fixture
def watched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Checkpoints]:
    """A desk with a checkpoint, and ``checkpoints watch`` running on it, its socket in a
    runtime folder of the test's own."""
    runtime = Path(tempfile.mkdtemp(prefix='tc-', dir='/tmp'))
    monkeypatch.setenv('XDG_RUNTIME_DIR', str(runtime))
    desk = tmp_path / 'desk'
    (desk / 'notes').mkdir(parents=True)
    (desk / 'notes' / 'a.md').write_text('a\n')
    checkpoints = Checkpoints(tmp_path / 'repo.git', desk, TRACKED)
    checkpoints.snapshot('start')
    process = subprocess.Popen(
        [sys.executable, '-c', WATCHER, str(checkpoints.repository_directory), str(desk)],
        env=environment({'XDG_RUNTIME_DIR': str(runtime)}),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None and process.stdout.readline() == 'ready\n'
        yield checkpoints
    finally:
        process.kill()
        process.wait(15)
        subprocess.run(['rm', '-rf', str(runtime)], check=False)


def asked(name: str) -> vouchprotocol.Reply:
    deadline = time.monotonic() + 30
    while (answer := vouch.ask(name, TRACKED)) is None:
        assert time.monotonic() < deadline, 'the watcher never answered'
        time.sleep(0.05)
    return answer


def test_another_users_process_reaching_the_watcher_gets_nothing_and_reports_nothing(
    watched: Checkpoints,
) -> None:
    """Nobody asks (no answer) and reports the desk clean under the watcher's current token,
    with a record of its making: the watcher keeps no record from it."""
    name = vouch.key(watched.desk_directory, watched.repository_directory)
    assert name is not None
    path = vouch.socket_path(name)
    assert path is not None
    token = asked(name).token
    assert asked(name).clean is None, 'no walk has reported yet'
    state = vouchprotocol.State(
        'f' * 40, None, 'forged', None, TRACKED, 1 << 20, str(watched.desk_directory), None, ()
    )
    record = vouchprotocol.Record(state, vouchprotocol.Answer((), 'forged', ()))
    forged = vouchprotocol.encode(vouchprotocol.Report(token, record))
    ask = vouchprotocol.encode(vouchprotocol.Ask(TRACKED))
    with open_to_others(Path(path)):
        answers = knock(Path(path), ask, forged)
    assert answers == [b'', b'']
    answer = asked(name)
    assert answer.token == token, 'nothing changed on the desk meanwhile'
    assert answer.clean is None, 'the forged report was not kept'


def test_a_private_folder_of_another_owner_is_never_used(tmp_path: Path) -> None:
    """``TMPDIR`` names a shared folder where nobody made ``trading-checkpoints-0`` first, mode
    0700: commands run in-process and start no server there, and a watcher listens nowhere;
    nothing is ever written into that folder."""
    shared = Path(tempfile.mkdtemp(prefix='tc-shared-', dir='/tmp'))
    try:
        os.chmod(shared, 0o777)  # world-writable, and no sticky bit
        theirs = shared / f'{address.FOLDER_NAME}-{os.getuid()}'
        subprocess.run(
            [
                sys.executable,
                '-c',
                'import os, sys; os.setgroups([]); os.setgid(65534); os.setuid(65534); '
                'os.mkdir(sys.argv[1], 0o700)',
                str(theirs),
            ],
            check=True,
            timeout=60,
        )
        assert theirs.stat().st_uid == NOBODY
        desk = workspace_with_history(tmp_path)
        env = client_env(shared, TMPDIR=str(shared), TC_WARM_PROBE=str(tmp_path / 'probe'))
        del env['XDG_RUNTIME_DIR']
        for _ in range(3):
            done = subprocess.run(
                [*PROBE, 'list'], cwd=desk, env=env, input=b'', capture_output=True, timeout=120
            )
            assert done.returncode == 0 and b'second' in done.stdout, done.stderr
            time.sleep(0.5)
        assert (tmp_path / 'probe').read_text() == 'in-process\n' * 3
        repository = desk.parent.parent / '.checkpoints' / 'main.git'
        watcher = subprocess.Popen(
            [sys.executable, '-c', WATCHER, str(repository), str(desk)],
            env=environment({'TMPDIR': str(shared), 'XDG_RUNTIME_DIR': None}),
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert watcher.stdout is not None and watcher.stdout.readline() == 'ready\n'
        finally:
            watcher.kill()
            watcher.wait(15)
        assert list(theirs.iterdir()) == [], 'nothing written into their folder'
        assert sorted(path.name for path in shared.iterdir()) == [theirs.name]
    finally:
        subprocess.run(['rm', '-rf', str(shared)], check=False)


# Listens on argv[1] as nobody, answers every connection as a server's child would (a pid, a
# faked success), and prints how many bytes each connection sent it.
IMPOSTOR = r"""
import os, socket, sys
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o777)
os.setgroups([]); os.setgid(65534); os.setuid(65534)
server.listen(8)
print('ready', flush=True)
while True:
    connection, _ = server.accept()
    connection.settimeout(2)
    received = b''
    try:
        connection.sendall(b'pid 1\nexit 0\n')
        while chunk := connection.recv(65536):
            received += chunk
    except OSError:
        pass
    print(len(received), flush=True)
    connection.close()
"""


def test_a_listener_of_another_user_is_sent_nothing(tmp_path: Path, runtime: Path) -> None:
    """The server's socket replaced by one another user listens on (its file this user's, in
    this user's folder: a folder swapped under the client, as another user can in a shared
    folder without the sticky bit): the client sends it nothing (no environment, no streams)
    and runs the command itself."""
    desk = workspace_with_history(tmp_path)
    here = run(runtime, 'list', cwd=desk, CHECKPOINTS_SERVER='off')
    run(runtime, 'list', cwd=desk)
    server = server_pid(runtime)
    [path] = (runtime / address.FOLDER_NAME).glob('server-*.sock')
    os.kill(server, signal.SIGKILL)
    path.unlink()
    impostor = subprocess.Popen(
        [sys.executable, '-c', IMPOSTOR, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert impostor.stdout is not None and impostor.stdout.readline() == 'ready\n'
        assert path.lstat().st_uid == os.getuid()
        done = run(runtime, 'list', cwd=desk)
        assert (done.returncode, done.stdout, done.stderr) == (
            here.returncode,
            here.stdout,
            here.stderr,
        )
        assert impostor.stdout.readline() == '0\n', 'it was sent nothing'
    finally:
        impostor.kill()
        impostor.wait(15)
