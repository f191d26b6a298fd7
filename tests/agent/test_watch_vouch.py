"""A running `checkpoints watch` answers a no-op snapshot and a clean status without a walk.

Each test runs the watcher as its own process over a real desk (its capture made slow, so
that every change below is left for the snapshot to find), and counts the walks this process
makes (``ReadSession.scan``). What is pinned: a change of any kind made just before a snapshot
is recorded by it (the watcher never hides one); a vouched answer is exactly the walk's; a
killed, stopped or foreign watcher costs at most the timeout and a walk.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers.builders import write
from helpers.processes import environment
from helpers.watcher import (
    WATCHER,
    Walks,
    by_watcher,
    desk_files,
    end,
    newest_files,
    start_watcher,
    stop,
    vouched_noop,
)

from trading_checkpoints import Checkpoints, SnapshotResult, Status
from trading_checkpoints.desk import vouch
from trading_checkpoints.desk import vouchprotocol as protocol
from trading_checkpoints.ops import vouched
from trading_checkpoints.ops.session import open_reading

pytestmark = pytest.mark.skipif(not sys.platform.startswith('linux'), reason='inotify')

TRACKED = ('notes', 'Memory.md')
LIMIT = 64


@pytest.fixture
def runtime(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private runtime folder of the test's own for the watcher's socket (short: a socket's
    path has at most 108 bytes)."""
    folder = Path(tempfile.mkdtemp(prefix='vouch-', dir='/tmp'))
    monkeypatch.setenv('XDG_RUNTIME_DIR', str(folder))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def checkpoints(tmp_path: Path, runtime: Path) -> Checkpoints:
    desk = tmp_path / 'desk'
    for index in range(6):
        write(desk, f'notes/day{index % 2}/n{index}.md', f'note {index}\n')
    write(desk, 'Memory.md', 'memory\n')
    write(desk, 'scratch/draft.md', 'untracked\n')
    write(desk, 'scratch/folder/inner.md', 'untracked\n')
    cps = Checkpoints(tmp_path / 'repo.git', desk, TRACKED, max_file_size=LIMIT)
    assert cps.snapshot('start') is not None
    return cps


@pytest.fixture
def watcher(checkpoints: Checkpoints) -> Iterator[subprocess.Popen[str]]:
    process = start_watcher(checkpoints)
    yield process
    end(process)


@pytest.fixture
def walks(monkeypatch: pytest.MonkeyPatch) -> Walks:
    return Walks(monkeypatch)


def rewrite_same_size(desk: Path) -> None:
    """The same size, the same modification time (one clock tick): only the ctime moves."""
    path = desk / 'notes/day0/n0.md'
    before = path.stat()
    path.write_text('NOTE 0\n')
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def swap_symlink(desk: Path) -> None:
    link = desk / 'notes/link'
    fresh = desk / 'notes/link.new'
    fresh.symlink_to('day1/n1.md')
    fresh.rename(link)


CHANGES: dict[str, Callable[[Path], object]] = {
    'write': lambda desk: (desk / 'notes/day0/n0.md').write_text('changed\n'),
    'same size, same tick': rewrite_same_size,
    'create': lambda desk: write(desk, 'notes/day1/new.md', 'new\n'),
    'delete': lambda desk: (desk / 'notes/day1/n1.md').unlink(),
    'rename in': lambda desk: (desk / 'scratch/draft.md').rename(desk / 'notes/draft.md'),
    'rename out': lambda desk: (desk / 'notes/day1/n3.md').rename(desk / 'scratch/n3.md'),
    'folder renamed in': lambda desk: (desk / 'scratch/folder').rename(desk / 'notes/folder'),
    'folder renamed inside': lambda desk: (desk / 'notes/day0').rename(desk / 'notes/moved'),
    'mkdir and write': lambda desk: write(desk, 'notes/fresh/deeper/a.md', 'a\n'),
    'chmod +x': lambda desk: (desk / 'notes/day0/n2.md').chmod(0o755),
    'symlink swap': swap_symlink,
    'file becomes a symlink': lambda desk: (
        (desk / 'notes/day0/n4.md').unlink(),
        (desk / 'notes/day0/n4.md').symlink_to('../day1/n5.md'),
    ),
    'top file': lambda desk: (desk / 'Memory.md').write_text('memory 2\n'),
    'folder removed': lambda desk: (
        [p.unlink() for p in (desk / 'notes/day1').iterdir()] and (desk / 'notes/day1').rmdir()
    ),
}


@pytest.mark.parametrize('change', sorted(CHANGES))
def test_every_change_made_just_before_a_snapshot_is_recorded(
    checkpoints: Checkpoints, watcher: subprocess.Popen[str], walks: Walks, change: str
) -> None:
    desk = checkpoints.desk_directory
    (desk / 'notes/link').symlink_to('day0/n0.md')
    assert checkpoints.snapshot('the link') is not None
    vouched_noop(checkpoints, walks)
    CHANGES[change](desk)
    assert checkpoints.snapshot('after the change') is not None
    assert newest_files(checkpoints) == desk_files(checkpoints)
    # Then a write in each tracked folder in turn, the watcher vouching in between: a folder
    # made, moved or replaced by the change is watched too.
    folders = [desk / 'notes', *sorted(p for p in (desk / 'notes').rglob('*') if p.is_dir())]
    for folder in folders:
        if folder.is_symlink():
            continue
        vouched_noop(checkpoints, walks)
        write(folder, 'later.md', f'later in {folder.name}\n')
        assert checkpoints.snapshot(f'later in {folder.name}') is not None
        assert newest_files(checkpoints) == desk_files(checkpoints)


def test_a_change_seen_by_status_is_never_hidden(
    checkpoints: Checkpoints, watcher: subprocess.Popen[str], walks: Walks
) -> None:
    vouched_noop(checkpoints, walks)
    before = walks.count
    assert checkpoints.status().clean
    assert walks.count == before  # answered by the watcher
    (checkpoints.desk_directory / 'notes/day0/n0.md').write_text('changed\n')
    status = checkpoints.status()
    assert [change.path for change in status.changes] == ['notes/day0/n0.md']


def test_an_untracked_change_keeps_the_vouch(
    checkpoints: Checkpoints, watcher: subprocess.Popen[str], walks: Walks
) -> None:
    vouched_noop(checkpoints, walks)
    write(checkpoints.desk_directory, 'scratch/other.md', 'not tracked\n')
    before = walks.count
    assert checkpoints.snapshot('noop') is None
    assert walks.count == before


def plain_walk(cps: Checkpoints, runtime: Path, call: Callable[[], object]) -> object:
    """``call`` made with no watcher to ask (another runtime folder): the walk's answer."""
    elsewhere = runtime / 'elsewhere'
    elsewhere.mkdir(mode=0o700, exist_ok=True)
    kept = os.environ['XDG_RUNTIME_DIR']
    os.environ['XDG_RUNTIME_DIR'] = str(elsewhere)
    try:
        return call()
    finally:
        os.environ['XDG_RUNTIME_DIR'] = kept


def answered(status: object) -> object:
    """A status without its storage figures: those are measured on disk at each call (never
    vouched), and the walks between two calls rewrite the stat cache, whose blocks they count."""
    assert isinstance(status, Status) and status.storage is not None
    return dataclasses.replace(status, storage=None)


@pytest.mark.parametrize('left_out', [False, True])
def test_a_vouched_answer_is_exactly_the_walks(
    checkpoints: Checkpoints,
    watcher: subprocess.Popen[str],
    walks: Walks,
    runtime: Path,
    left_out: bool,
) -> None:
    """With changes made outside the agent (a sealed state the desk differs from), and with
    files left out (too large, a name git cannot store) or none, the vouched status and
    snapshot equal the walk's, field for field (a status with files left out walks)."""
    desk = checkpoints.desk_directory
    if left_out:
        write(desk, 'notes/big.bin', b'x' * (LIMIT + 1))
        write(desk, 'notes/bad\\name.md', 'odd\n')
    assert checkpoints.snapshot('agent', tool='Write', paths=['notes/day0/n0.md']) is None
    write(desk, 'notes/day0/n0.md', 'agent wrote\n')
    checkpoints.seal()
    write(desk, 'notes/day0/n0.md', 'note 0\n')  # a person puts it back
    walked_status = plain_walk(checkpoints, runtime, checkpoints.status)
    assert isinstance(walked_status, Status) and walked_status.clean
    assert (walked_status.external, walked_status.basis) == (('notes/day0/n0.md',), 'sealed')
    assert bool(walked_status.skipped) == left_out
    if not left_out:
        assert answered(by_watcher(checkpoints.status, walks)) == answered(walked_status)
    # A no-op snapshot announces the write to come (the seal moves): the walk's answer after.
    plain_walk(checkpoints, runtime, lambda: checkpoints.snapshot_with_result('noop'))
    walked = plain_walk(checkpoints, runtime, lambda: checkpoints.snapshot_with_result('noop'))
    assert isinstance(walked, SnapshotResult) and bool(walked.skipped) == left_out
    assert by_watcher(lambda: checkpoints.snapshot_with_result('noop'), walks) == walked
    walked_status = plain_walk(checkpoints, runtime, checkpoints.status)
    before = walks.count
    assert answered(checkpoints.status()) == answered(walked_status)
    assert walks.count == before + left_out


def test_a_killed_or_stopped_watcher_costs_the_timeout_and_a_walk(
    checkpoints: Checkpoints, watcher: subprocess.Popen[str], walks: Walks
) -> None:
    vouched_noop(checkpoints, walks)
    stop(watcher)
    try:
        name = vouch.key(checkpoints.desk_directory, checkpoints.repository_directory)
        assert name is not None
        started = time.monotonic()
        assert vouch.ask(name, TRACKED) is None
        assert time.monotonic() - started < 4 * vouch.TIMEOUT + 0.2
        (checkpoints.desk_directory / 'notes/day0/n0.md').write_text('while stopped\n')
        before = walks.count
        assert checkpoints.snapshot('stopped') is not None
        assert walks.count > before
    finally:
        watcher.send_signal(signal.SIGCONT)
    watcher.kill()
    watcher.wait(15)
    (checkpoints.desk_directory / 'notes/day0/n0.md').write_text('after the kill\n')
    assert checkpoints.snapshot('killed') is not None
    assert newest_files(checkpoints) == desk_files(checkpoints)


def test_a_stale_socket_or_a_folder_others_may_enter_is_ignored(
    checkpoints: Checkpoints, runtime: Path, walks: Walks
) -> None:
    name = vouch.key(checkpoints.desk_directory, checkpoints.repository_directory)
    assert name is not None
    path = vouch.socket_path(name, create=True)
    assert path is not None
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(path)
    stale.close()  # the file stays, nobody listens
    assert vouch.ask(name, TRACKED) is None
    assert checkpoints.snapshot('noop') is None
    os.unlink(path)
    process = start_watcher(checkpoints)
    try:
        vouched_noop(checkpoints, walks)
        os.chmod(Path(path).parent, 0o755)  # another user could have made it
        assert vouch.ask(name, TRACKED) is None
        before = walks.count
        assert checkpoints.snapshot('noop') is None
        assert walks.count > before
    finally:
        process.kill()
        process.wait(15)


@pytest.mark.skipif(os.geteuid() != 0, reason='needs to start a process as another user')
def test_a_socket_served_by_another_user_is_never_asked(
    checkpoints: Checkpoints, runtime: Path
) -> None:
    name = vouch.key(checkpoints.desk_directory, checkpoints.repository_directory)
    assert name is not None
    path = vouch.socket_path(name, create=True)
    assert path is not None
    code = (
        'import os, socket, sys\n'
        'server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n'
        'server.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o777)\n'
        'os.setuid(65534)\n'
        'server.listen(4)\n'
        'print("ready", flush=True)\n'
        'while True:\n'
        '    connection, _ = server.accept()\n'
        '    connection.recv(65536)\n'
        '    connection.sendall(sys.argv[2].encode())\n'
        '    connection.close()\n'
    )
    reply = protocol.encode(protocol.Reply(protocol.Token('foreign', 1), ())).decode()
    foreign = subprocess.Popen(
        [sys.executable, '-c', code, path, reply], stdout=subprocess.PIPE, text=True
    )
    try:
        assert foreign.stdout is not None and foreign.stdout.readline() == 'ready\n'
        assert vouch.ask(name, TRACKED) is None
    finally:
        foreign.kill()
        foreign.wait(15)


def test_a_second_process_racing_the_snapshots_is_never_missed(
    checkpoints: Checkpoints, watcher: subprocess.Popen[str], walks: Walks
) -> None:
    """Another process writes while snapshots run; once it is done, one more snapshot and
    the newest checkpoint is the desk, after every one of its writes."""
    vouched_noop(checkpoints, walks)
    code = (
        'import pathlib, sys, time\n'
        'desk = pathlib.Path(sys.argv[1])\n'
        'for i in range(60):\n'
        '    (desk / "notes" / f"day{i % 2}" / f"n{i % 6}.md").write_text(f"{i}\\n")\n'
        '    time.sleep(0.005)\n'
    )
    racer = subprocess.Popen([sys.executable, '-c', code, str(checkpoints.desk_directory)])
    while racer.poll() is None:
        checkpoints.snapshot('racing')
    assert racer.wait() == 0
    checkpoints.snapshot('after')
    assert newest_files(checkpoints) == desk_files(checkpoints)


def test_a_change_queued_behind_many_others_is_never_hidden(
    checkpoints: Checkpoints, watcher: subprocess.Popen[str], walks: Walks
) -> None:
    """While the watcher is stopped, thousands of untracked events, then one tracked write,
    queue up; the snapshot asked as soon as it runs again records the write (the watcher
    answers only once it has read its queue up to the question)."""
    desk = checkpoints.desk_directory
    for round_ in range(5):
        vouched_noop(checkpoints, walks)
        stop(watcher)
        try:
            for index in range(3000):
                (desk / f'junk{index}').touch()  # beside the tracked paths
            (desk / 'notes/day0/n0.md').write_text(f'round {round_}\n')
        finally:
            watcher.send_signal(signal.SIGCONT)
        assert checkpoints.snapshot(f'round {round_}') is not None
        assert newest_files(checkpoints) == desk_files(checkpoints)


def test_a_walk_that_raced_a_change_never_makes_the_watcher_vouch(
    checkpoints: Checkpoints, watcher: subprocess.Popen[str], walks: Walks
) -> None:
    """A walk reports the desk clean under the token it was handed, but a tracked file changed
    after the token (the walk may have read it before): the watcher keeps no record."""
    vouched_noop(checkpoints, walks)
    with open_reading(checkpoints.desk_config) as session:
        assert session is not None
        head = session.repo.head()
        assert head is not None
        asked = vouched.Asked.of(session)
        assert asked is not None
        before = asked.state(head)
        (checkpoints.desk_directory / 'notes/day0/n0.md').write_text('during the walk\n')
        asked.report(head, vouched.Answer((), 'unknown', ()), before)
    assert checkpoints.snapshot('after the walk') is not None
    assert newest_files(checkpoints) == desk_files(checkpoints)


def test_a_change_lost_to_a_queue_overflow_is_never_hidden(
    checkpoints: Checkpoints, watcher: subprocess.Popen[str], walks: Walks
) -> None:
    """More events than the kernel queues while the watcher is stopped: the tracked write
    made last is dropped from the queue, and the overflow makes the watcher walk again."""
    limit = int(Path('/proc/sys/fs/inotify/max_queued_events').read_text())
    desk = checkpoints.desk_directory
    vouched_noop(checkpoints, walks)
    stop(watcher)
    try:
        for index in range(limit // 2 + 1000):  # two events each: made, closed after writing
            (desk / f'junk{index}').touch()
        (desk / 'notes/day0/n0.md').write_text('after the overflow\n')
    finally:
        watcher.send_signal(signal.SIGCONT)
    name = vouch.key(desk, checkpoints.repository_directory)
    assert name is not None
    deadline = time.monotonic() + 15
    while vouch.ask(name, TRACKED) is None:  # until it has read its queue
        assert time.monotonic() < deadline
    assert checkpoints.snapshot('after the overflow') is not None
    assert newest_files(checkpoints) == desk_files(checkpoints)
    vouched_noop(checkpoints, walks)  # the watcher starts over and vouches again


def test_a_second_watcher_of_the_desk_is_refused_and_the_next_one_serves(
    checkpoints: Checkpoints, walks: Walks
) -> None:
    """A second watcher of a running watcher's desk is refused (naming the first's pid) and
    disturbs nothing; once the first stops, a new one serves the desk."""
    first = start_watcher(checkpoints, quiet=0.2)
    try:
        vouched_noop(checkpoints, walks)
        desk, repository = str(checkpoints.desk_directory), str(checkpoints.repository_directory)
        second = subprocess.run(
            [sys.executable, '-c', WATCHER, repository, desk, '0.2', ','.join(TRACKED), str(LIMIT)],
            env=environment(),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert second.returncode == 1 and f'pid {first.pid} ' in second.stderr
        assert 'LockTimeoutError: checkpoints watch already runs on the desk' in second.stderr
        vouched_noop(checkpoints, walks)  # the first's socket and record are its own still
        first.terminate()
        assert first.wait(15) == 0
        (checkpoints.desk_directory / 'notes/day0/n0.md').write_text('seen by the third\n')
        third = start_watcher(checkpoints, quiet=0.2)
        try:
            checkpoints.snapshot('a change')  # recorded by it, or captured by the third first
            assert newest_files(checkpoints) == desk_files(checkpoints)
            vouched_noop(checkpoints, walks)
        finally:
            third.kill()
            third.wait(15)
    finally:
        first.kill()
        first.wait(15)
