"""The warm command server: the console script's commands run in a forked child of a process
that imported everything already, with the same output, status, lock and files as in-process.

Every test runs real processes: the client as the console script runs it (``warm.client.main``
in a fresh interpreter), the server it starts in the background, and the forked children; each
test gets its own private runtime folder, so its server is its own, and stops it at the end.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from helpers import NO_TEXTUAL, ROOT
from helpers.builders import write
from helpers.hookrun import event as hook_event
from helpers.processes import lock_holder
from helpers.warm import (
    CLIENT,
    children_of,
    client_env,
    forwarding,
    gone,
    hook_client,
    reading_stdin,
    receiving,
    run,
    server_pid,
    serving,
    stopped,
    taken,
    waiting,
    workspace_with_history,
)

from trading_checkpoints import Checkpoints
from trading_checkpoints.core import installation
from trading_checkpoints.warm import address

pytestmark = pytest.mark.skipif(
    sys.platform != 'linux', reason='the server test reads /proc and SO_PEERCRED (Linux)'
)


def test_served_commands_print_and_exit_as_in_process(tmp_path: Path, runtime: Path) -> None:
    desk = workspace_with_history(tmp_path)
    commands = [
        ('list',),
        ('status',),
        ('diff', '--stat'),
        ('log', 'notes/plan.md', '--json'),
        ('restore', 'zzz'),  # an error: one line on stderr, status 1
        ('no-such-verb',),  # a usage error: status 2
    ]
    first = run(runtime, 'list', cwd=desk)  # no server yet: runs here, and starts one
    assert first.returncode == 0, first.stderr
    server = server_pid(runtime)
    for command in commands:
        here = run(runtime, *command, cwd=desk, CHECKPOINTS_SERVER='off')
        served = run(runtime, *command, cwd=desk)
        assert (served.returncode, served.stdout, served.stderr) == (
            here.returncode,
            here.stdout,
            here.stderr,
        ), command
    assert os.path.exists(f'/proc/{server}'), 'the server is still there'


def test_a_served_command_runs_in_a_child_of_the_server_once(tmp_path: Path, runtime: Path) -> None:
    """The command runs in the server's child forked ahead of the client (which reads the
    client's own stdin: a hook event), and the client relays its status; a write made there is
    made once."""
    desk = workspace_with_history(tmp_path)
    workspace = desk.parent.parent
    run(runtime, 'list', cwd=desk)
    server = server_pid(runtime)
    before = len(Checkpoints(workspace / '.checkpoints' / 'main.git', desk).list(None))
    ahead = waiting(server)
    client = hook_client(runtime, workspace)
    try:
        served = taken(server, client.pid)
        # The child forked ahead of the client took it, and the next one waits already.
        assert served == [ahead], (served, ahead, children_of(server), client.poll())
        assert reading_stdin(ahead)
        assert waiting(server) not in (ahead, server)
    finally:
        out, err = client.communicate(hook_event('claude_pre_tool_use_write.json', workspace), 60)
    assert (client.returncode, out, err) == (0, b'', b'')
    after = Checkpoints(workspace / '.checkpoints' / 'main.git', desk).list(None)
    assert len(after) == before + 1, 'one snapshot, not two'
    assert after[0].tool == 'claude:Write'


def test_the_hook_script_served_runs_the_hook(tmp_path: Path, runtime: Path) -> None:
    """``checkpoints-hook --harness claude``, whose own command line is not the command's
    (``hook --harness claude``): the child forked ahead of it runs the hook, once."""
    desk = workspace_with_history(tmp_path)
    workspace = desk.parent.parent
    run(runtime, 'list', cwd=desk)
    server = server_pid(runtime)
    before = len(Checkpoints(workspace / '.checkpoints' / 'main.git', desk).list(None))
    ahead = waiting(server)
    client = subprocess.Popen(
        [sys.executable, str(ROOT / 'bin' / 'checkpoints-hook'), '--harness', 'claude'],
        cwd=workspace,
        env=client_env(runtime),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert taken(server, client.pid) == [ahead]
    finally:
        out, err = client.communicate(hook_event('claude_pre_tool_use_write.json', workspace), 60)
    assert (client.returncode, out, err) == (0, b'', b'')
    after = Checkpoints(workspace / '.checkpoints' / 'main.git', desk).list(None)
    assert len(after) == before + 1 and after[0].tool == 'claude:Write'


def interrupted(runtime: Path, desk: Path, served: bool) -> tuple[int, bytes]:
    """``checkpoints hook`` blocked on its stdin, then SIGINT, as a terminal's Ctrl-C sends it
    to the foreground process: its status and stderr."""
    extra = {} if served else {'CHECKPOINTS_SERVER': 'off'}
    client = hook_client(runtime, desk, **extra)
    try:
        if served:
            server = server_pid(runtime)
            [reader] = taken(server, client.pid)
            assert forwarding(client.pid)
        else:
            reader = client.pid
        assert reading_stdin(reader)
        client.send_signal(signal.SIGINT)
        # The command ends of the signal, not of an end of input: stdin stays open till then.
        assert gone(reader), 'the interrupted command ended'
        client.wait(timeout=60)
        _, err = client.communicate(timeout=60)
    finally:
        if client.poll() is None:
            client.kill()
    return client.returncode, err


def test_ctrl_c_reaches_the_served_command(tmp_path: Path, runtime: Path) -> None:
    """SIGINT to the client interrupts the command in the server's child, which ends as the
    same command interrupted in-process does; the server goes on."""
    desk = workspace_with_history(tmp_path)
    run(runtime, 'list', cwd=desk)
    server = server_pid(runtime)
    here = interrupted(runtime, desk, served=False)
    there = interrupted(runtime, desk, served=True)
    assert there == here
    assert here == (130, b'checkpoints hook: interrupted\n')
    assert not gone(server, timeout=0), 'the server goes on'


def test_a_server_killed_mid_command_is_reported_never_rerun(tmp_path: Path, runtime: Path) -> None:
    """Once the child took the command, a client whose server dies (and its child, so that no
    one can say how the command ended) says so and exits 1: it never runs the command again
    itself (it may have written half of what it meant to)."""
    desk = workspace_with_history(tmp_path)
    run(runtime, 'list', cwd=desk)
    server = server_pid(runtime)
    client = hook_client(runtime, desk)
    try:
        [child] = taken(server, client.pid)
        assert forwarding(client.pid) and reading_stdin(child)
        os.kill(server, signal.SIGKILL)
        assert gone(server)
        os.kill(child, signal.SIGKILL)
        _, err = client.communicate(timeout=60)
    finally:
        if client.poll() is None:
            client.kill()
    assert client.returncode == 1
    assert err == b'error: the command server stopped while running the command; run it again\n'


def test_the_server_is_private_to_its_user(tmp_path: Path, runtime: Path) -> None:
    desk = workspace_with_history(tmp_path)
    run(runtime, 'list', cwd=desk)
    server_pid(runtime)
    folder = runtime / address.FOLDER_NAME
    assert stat.S_IMODE(folder.lstat().st_mode) == 0o700
    [sock] = folder.glob('*.sock')
    assert stat.S_IMODE(sock.lstat().st_mode) & 0o077 == 0


@pytest.mark.parametrize('how', ['open to others', 'a symlink'])
def test_no_server_in_a_folder_others_could_reach(tmp_path: Path, how: str) -> None:
    """A runtime folder others may enter (or a symlink to one): the command runs in-process
    and no socket is made there."""
    desk = workspace_with_history(tmp_path)
    runtime = Path(tempfile.mkdtemp(prefix='tc-', dir='/tmp'))
    if how == 'open to others':
        (runtime / address.FOLDER_NAME).mkdir(mode=0o755)
        os.chmod(runtime / address.FOLDER_NAME, 0o755)
    else:
        elsewhere = tmp_path / 'elsewhere'
        elsewhere.mkdir(mode=0o700)
        (runtime / address.FOLDER_NAME).symlink_to(elsewhere)
    os.chmod(runtime, 0o700)
    here = run(runtime, 'list', cwd=desk)
    assert here.returncode == 0 and b'second' in here.stdout
    time.sleep(1)
    assert not list(runtime.rglob('*.sock'))
    assert not list((tmp_path / 'elsewhere').glob('*')) if how == 'a symlink' else True


def test_the_off_switch_starts_no_server(tmp_path: Path, runtime: Path) -> None:
    desk = workspace_with_history(tmp_path)
    for _ in range(2):
        done = run(runtime, 'list', cwd=desk, CHECKPOINTS_SERVER='off')
        assert done.returncode == 0
    time.sleep(1)
    assert not list(runtime.rglob('*.sock'))


def test_an_idle_server_goes_away(tmp_path: Path, runtime: Path) -> None:
    desk = workspace_with_history(tmp_path)
    run(runtime, 'list', cwd=desk, CHECKPOINTS_SERVER_IDLE='1')
    server = server_pid(runtime)
    ahead = waiting(server)
    assert gone(server, timeout=30)
    assert gone(ahead, timeout=0), 'its waiting child went first'
    assert not list((runtime / address.FOLDER_NAME).glob('*.sock'))


def test_a_stopped_server_takes_its_waiting_child_along(tmp_path: Path, runtime: Path) -> None:
    desk = workspace_with_history(tmp_path)
    run(runtime, 'list', cwd=desk)
    server = server_pid(runtime)
    ahead = waiting(server)
    os.kill(server, signal.SIGTERM)
    assert gone(server, timeout=30)
    assert gone(ahead, timeout=0)
    assert not list((runtime / address.FOLDER_NAME).glob('*.sock'))


def test_a_killed_servers_waiting_child_goes_and_leaves_the_lock_free(
    tmp_path: Path, runtime: Path
) -> None:
    """SIGKILL leaves the parent no chance to retire its waiting child: the child notices
    within a second or two and goes, and it never held the server's lock, so the next client
    starts a new server at once; every command runs meanwhile."""
    desk = workspace_with_history(tmp_path)
    run(runtime, 'list', cwd=desk)
    server = server_pid(runtime)
    ahead = waiting(server)
    [lock] = (runtime / address.FOLDER_NAME).glob('*.lock')
    held = [os.readlink(fd) for fd in Path(f'/proc/{ahead}/fd').iterdir()]
    assert str(lock) not in held, 'the waiting child does not hold the server lock'
    os.kill(server, signal.SIGKILL)
    assert gone(server, timeout=30)
    listed = run(runtime, 'list', cwd=desk)  # served by the orphan, or in-process: either once
    assert listed.returncode == 0 and b'second' in listed.stdout, listed.stderr
    assert gone(ahead, timeout=10), 'the orphaned waiting child went'
    started = run(runtime, 'list', cwd=desk)
    assert started.returncode == 0, started.stderr
    replacement = server_pid(runtime)
    assert replacement != server
    waiting(replacement)


def test_changed_code_is_served_by_a_server_of_its_own(tmp_path: Path) -> None:
    """The socket is named after the installation's files: a module changed in place (an
    upgrade, an edit in a checkout) gives another name, so no client talks to a server that
    runs other code."""
    package = tmp_path / 'pkg'
    (package / 'sub').mkdir(parents=True)
    (package / 'a.py').write_text('x = 1\n')
    (package / 'sub' / 'b.py').write_text('y = 1\n')
    files = [str(package / 'a.py'), str(package / 'sub' / 'b.py')]
    before = installation.fingerprint(files)
    assert installation.fingerprint(files) == before
    (package / 'sub' / 'b.py').write_text('y = 22\n')
    assert installation.fingerprint(files) != before


def test_hook_events_served_record_what_they_record_in_process(
    tmp_path: Path, runtime: Path
) -> None:
    """A harness's hook events (JSON on stdin) handled by the server and in-process, on two
    identical workspaces: the same replies and the same checkpoints."""
    events = Path(__file__).resolve().parents[1] / 'helpers' / 'hook_events'
    sides = {}
    for name, extra in (('served', {}), ('here', {'CHECKPOINTS_SERVER': 'off'})):
        desk = workspace_with_history(tmp_path / name)
        workspace = desk.parent.parent
        if name == 'served':
            run(runtime, 'list', cwd=desk)
            server_pid(runtime)
        replies = []
        for event in (
            'claude_user_prompt_submit.json',
            'claude_pre_tool_use_write.json',
            None,  # the tool writes
            'claude_post_tool_use_write.json',
        ):
            if event is None:
                write(desk, 'notes/plan.md', '# Plan\n\n- merge into Memory.md\n')
                continue
            text = (events / event).read_text().replace('${WORKSPACE}', str(workspace))
            done = run(
                runtime, 'hook', '--harness', 'claude', cwd=workspace, stdin=text.encode(), **extra
            )
            replies.append((done.returncode, done.stdout, done.stderr))
        checkpoints = Checkpoints(workspace / '.checkpoints' / 'main.git', desk).list(None)
        sides[name] = (
            replies,
            [(c.reason, c.tool, c.paths, c.action) for c in checkpoints],
        )
    assert sides['served'] == sides['here']
    assert any(tool == 'claude:Write' for _, tool, _, _ in sides['served'][1])


def test_browse_runs_in_the_client_never_on_the_server(tmp_path: Path, runtime: Path) -> None:
    """An interactive verb owns the terminal: with a server running, ``browse`` still runs in
    the client's own process. The client is given a PYTHONPATH that hides Textual (the server,
    started before, has it): only a run in the client prints the install hint."""
    desk = workspace_with_history(tmp_path)
    assert run(runtime, 'list', cwd=desk).returncode == 0
    server = server_pid(runtime)
    hidden = os.pathsep.join([str(NO_TEXTUAL), str(ROOT)])
    done = run(runtime, 'browse', cwd=desk, PYTHONPATH=hidden)
    assert done.returncode == 1, done.stderr
    assert b"needs the optional 'ui' extra" in done.stderr
    assert serving(server) == []


def test_a_served_command_waiting_for_the_lock_says_so_in_one_line(
    tmp_path: Path, runtime: Path
) -> None:
    """As in-process: one ``note:`` line naming the holder, not Python's warning format."""
    desk = workspace_with_history(tmp_path)
    run(runtime, 'list', cwd=desk)
    server = server_pid(runtime)
    repository = desk.parent.parent / '.checkpoints' / 'main.git'
    holder = lock_holder(repository, 3)
    try:
        client = subprocess.Popen(
            [*CLIENT, 'snapshot', '-m', 'behind a restore'],
            cwd=desk,
            env=client_env(runtime),
            stdin=subprocess.PIPE,  # not /dev/null, which would hide the child (``serving``)
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        served = False
        deadline = time.monotonic() + 30
        while not served and client.poll() is None and time.monotonic() < deadline:
            served = bool(serving(server))
            time.sleep(0.02)
        out, err = client.communicate(b'', timeout=60)
    finally:
        holder.kill()
        holder.wait()
    assert served, 'the command ran in a child of the server'
    out, err = out.decode(), err.decode()
    assert client.returncode == 0, err
    assert 'Snapshot' in out
    notes = [line for line in err.splitlines() if 'waiting for the checkpoint lock' in line]
    assert len(notes) == 1, err
    assert notes[0].startswith('note: ') and f'pid {holder.pid}' in notes[0], err
    assert 'LockWaitWarning' not in err


def test_ctrl_c_as_the_child_answers_interrupts_the_command(tmp_path: Path, runtime: Path) -> None:
    """SIGINT that reaches the client after the child has answered ``pid N`` but before the
    client read it: the command started, so the client must forward the signal, never leave
    the command running on its own. The two processes are held with SIGSTOP so the signal lands
    exactly there: the waiting child until the client waits for its answer, then the client
    until the child's command reads its stdin."""
    desk = workspace_with_history(tmp_path)
    run(runtime, 'list', cwd=desk)
    server = server_pid(runtime)
    ahead = waiting(server)
    os.kill(ahead, signal.SIGSTOP)
    client = hook_client(runtime, desk)
    try:
        assert stopped(ahead)
        assert receiving(client.pid), 'the client sent its command and waits for the answer'
        os.kill(client.pid, signal.SIGSTOP)
        assert stopped(client.pid)
        os.kill(ahead, signal.SIGCONT)
        assert reading_stdin(ahead), 'the child answered and runs the command'
        client.send_signal(signal.SIGINT)
        os.kill(client.pid, signal.SIGCONT)
        assert gone(ahead, timeout=20), 'the command was interrupted, not left running'
        client.wait(timeout=60)
        _, err = client.communicate(timeout=60)
    finally:
        for pid in (ahead, client.pid):
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        if client.poll() is None:
            client.kill()
        client.communicate()
        if not gone(ahead, timeout=0):
            os.kill(ahead, signal.SIGKILL)
    assert (client.returncode, err) == (130, b'checkpoints hook: interrupted\n')


def test_ctrl_c_before_any_child_answers_runs_nothing(tmp_path: Path, runtime: Path) -> None:
    """SIGINT to a client whose command no child has taken yet (the waiting child held with
    SIGSTOP): the client stops within a few seconds as the signal makes it stop, and the child
    that takes the connection afterwards runs nothing and prints nothing on the client's
    stderr."""
    desk = workspace_with_history(tmp_path)
    run(runtime, 'list', cwd=desk)
    server = server_pid(runtime)
    ahead = waiting(server)
    os.kill(ahead, signal.SIGSTOP)
    client = hook_client(runtime, desk)
    try:
        assert stopped(ahead)
        assert receiving(client.pid), 'the client sent its command and waits for the answer'
        client.send_signal(signal.SIGINT)
        client.wait(timeout=30)
        os.kill(ahead, signal.SIGCONT)
        assert gone(ahead, timeout=20), 'the child ran nothing'
        _, err = client.communicate(timeout=60)
    finally:
        try:
            os.kill(ahead, signal.SIGCONT)
        except ProcessLookupError:
            pass
        if client.poll() is None:
            client.kill()
        client.communicate()
        if not gone(ahead, timeout=0):
            os.kill(ahead, signal.SIGKILL)
    assert b'BrokenPipeError' not in err, err
    assert client.returncode == -signal.SIGINT
    assert err.decode().rstrip().endswith('KeyboardInterrupt'), err


def test_a_killed_waiting_child_stops_the_server_at_once(tmp_path: Path, runtime: Path) -> None:
    """SIGKILL to the waiting child (held with SIGSTOP while a client connects to it): the
    server notices its end at once, not at its next periodic look (it waits up to 5 s between
    looks, and is killed here just after it started such a wait), and stops; the client, whose
    connection no one took, runs the command itself, once."""
    desk = workspace_with_history(tmp_path)
    run(runtime, 'list', cwd=desk)
    server = server_pid(runtime)
    first = waiting(server)
    here = run(runtime, 'list', cwd=desk, CHECKPOINTS_SERVER='off')
    client = subprocess.Popen(
        [*CLIENT, 'list'],
        cwd=desk,
        env=client_env(runtime),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert gone(first), 'the first waiting child took the client, ran it and ended'
        client.communicate(timeout=60)
        ahead = waiting(server)  # forked when the parent heard of the client: its wait began
        os.kill(ahead, signal.SIGSTOP)
        client = subprocess.Popen(
            [*CLIENT, 'list'],
            cwd=desk,
            env=client_env(runtime),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert receiving(client.pid), 'the client connected and waits for an answer'
        os.kill(ahead, signal.SIGKILL)
        killed = time.monotonic()
        assert gone(server, timeout=30)
        assert time.monotonic() - killed < 2.5, 'the server stopped as its waiting child ended'
        out, err = client.communicate(timeout=60)
    finally:
        if client.poll() is None:
            client.kill()
        client.communicate()
    assert (client.returncode, out, err) == (here.returncode, here.stdout, here.stderr)


def test_a_server_stopped_as_its_child_takes_a_client_keeps_no_one_waiting(
    tmp_path: Path, runtime: Path
) -> None:
    """SIGTERM reaches the server after its waiting child took a client but before the server
    heard of it (the server held with SIGSTOP meanwhile): the command runs on, and the server
    stops without waiting for it; a client that comes meanwhile is not left waiting on a socket
    no one will take (it ran the command only when that command ended, here never)."""
    desk = workspace_with_history(tmp_path)
    workspace = desk.parent.parent
    run(runtime, 'list', cwd=desk)
    server = server_pid(runtime)
    ahead = waiting(server)
    here = run(runtime, 'list', cwd=desk, CHECKPOINTS_SERVER='off')
    os.kill(server, signal.SIGSTOP)
    first = hook_client(runtime, workspace)
    try:
        assert stopped(server)
        assert reading_stdin(ahead), 'the waiting child took the client and runs its command'
        os.kill(server, signal.SIGTERM)
        os.kill(server, signal.SIGCONT)
        second = subprocess.run(
            [*CLIENT, 'list'],
            cwd=desk,
            env=client_env(runtime),
            input=b'',
            capture_output=True,
            timeout=30,  # a client left waiting on the socket waits till the hook ends
        )
        assert (second.returncode, second.stdout, second.stderr) == (
            here.returncode,
            here.stdout,
            here.stderr,
        )
        assert gone(server, timeout=30), 'the server stopped, its child still running'
        assert not gone(ahead, timeout=0)
    finally:
        out, err = first.communicate(hook_event('claude_pre_tool_use_write.json', workspace), 60)
    assert (first.returncode, out, err) == (0, b'', b'')
    assert gone(ahead, timeout=30)
