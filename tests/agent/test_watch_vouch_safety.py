"""The conditions a vouched answer rests on, each checked with a real watcher process.

A vouch that goes wrong is a snapshot skipped while the desk changed: the one failure this
product exists to prevent. Each test below breaks if its condition is dropped from the code:

- a file held open and appended to (never closed) is seen by its writes, not by its close;
- a write through a shared memory map raises no event; the kernel's close event, once the
  writer unmapped and closed the file, makes the next snapshot walk;
- the answer waits for the cookie's event: a change queued behind thousands of events is
  counted before any answer, or there is no answer;
- everything else the answer depends on is compared: the size limit, the tracked paths, the
  seal, the repository's config;
- a pre-write snapshot that announces the agent's write is never a vouched no-op, so the write
  that follows is the turn's and ``restore-turn`` reverts it (through the hooks, which also
  keep a record of the agent's calls, and through the library, where the announcement alone
  says so).
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers.builders import write
from helpers.gitcli import git
from helpers.hookrun import event, hook, ok
from helpers.processes import environment
from helpers.watcher import (
    Walks,
    by_watcher,
    desk_files,
    end,
    newest_files,
    start_watcher,
    stop,
    vouched_noop,
)

from trading_checkpoints import Checkpoints
from trading_checkpoints.desk import vouch
from trading_checkpoints.ops.turns import Turn
from trading_checkpoints.workspace import Workspace

pytestmark = pytest.mark.skipif(not sys.platform.startswith('linux'), reason='inotify')

TRACKED = ('notes', 'Memory.md')
LIMIT = 64


@pytest.fixture
def runtime(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix='safety-', dir='/tmp'))  # a socket path is short
    monkeypatch.setenv('XDG_RUNTIME_DIR', str(folder))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def checkpoints(tmp_path: Path, runtime: Path) -> Checkpoints:
    desk = tmp_path / 'desk'
    for index in range(4):
        write(desk, f'notes/day{index % 2}/n{index}.md', f'note {index}\n')
    write(desk, 'Memory.md', 'memory\n')
    write(desk, 'notes/big.md', 'x' * (LIMIT * 2) + '\n')  # left out for its size
    cps = Checkpoints(tmp_path / 'repo.git', desk, TRACKED, max_file_size=LIMIT)
    assert cps.snapshot('start') is not None
    return cps


@pytest.fixture
def walks(monkeypatch: pytest.MonkeyPatch) -> Walks:
    return Walks(monkeypatch)


@pytest.fixture
def watcher(checkpoints: Checkpoints) -> Iterator[subprocess.Popen[str]]:
    process = start_watcher(checkpoints)
    yield process
    end(process)


def helper(code: str, *args: str) -> subprocess.Popen[str]:
    """Another process running ``code``, told what to do next by a line on its stdin; it says
    it is done with one line on its stdout."""
    return subprocess.Popen(
        [sys.executable, '-c', code, *args],
        env=environment(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def step(process: subprocess.Popen[str], line: str = 'go') -> str:
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(line + '\n')
    process.stdin.flush()
    return process.stdout.readline().strip()


APPENDER = """
import sys
held = open(sys.argv[1], 'a')  # never closed while the test runs
for line in sys.stdin:
    held.write(line)
    held.flush()
    print('appended', flush=True)
"""


def test_appends_to_a_file_held_open_are_recorded(
    checkpoints: Checkpoints, watcher: subprocess.Popen[str], walks: Walks
) -> None:
    desk = checkpoints.desk_directory
    appender = helper(APPENDER, str(desk / 'notes/day0/n0.md'))
    try:
        for round_ in range(4):
            vouched_noop(checkpoints, walks)
            assert step(appender, f'appended {round_}') == 'appended'
            assert checkpoints.snapshot(f'after append {round_}') is not None
            assert newest_files(checkpoints) == desk_files(checkpoints)
    finally:
        appender.kill()
        appender.wait(15)


MAPPER = """
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
mapped = mmap.mmap(fd, os.fstat(fd).st_size)
os.close(fd)  # the map keeps the file open
sys.stdin.readline()
mapped[:4] = sys.argv[2].encode()
mapped.flush()  # msync
print('written', flush=True)
sys.stdin.readline()
mapped.close()  # the last reference: the kernel reports the file closed after writing
print('closed', flush=True)
sys.stdin.readline()
"""


def test_a_write_through_a_memory_map_is_walked_once_the_map_is_closed(
    checkpoints: Checkpoints, watcher: subprocess.Popen[str], walks: Walks
) -> None:
    """A write through a shared map raises no event of its own; the file's close, when the
    writer unmaps it, does: the next snapshot walks and records the write."""
    desk = checkpoints.desk_directory
    for round_ in range(3):
        mapper = helper(MAPPER, str(desk / 'notes/day1/n1.md'), f'MAP{round_}')
        try:
            vouched_noop(checkpoints, walks)
            assert step(mapper) == 'written'
            assert step(mapper) == 'closed'
            before = walks.count
            assert checkpoints.snapshot(f'after the map {round_}') is not None
            assert walks.count == before + 1
            assert newest_files(checkpoints)['notes/day1/n1.md'][1].startswith(b'MAP')
            assert newest_files(checkpoints) == desk_files(checkpoints)
        finally:
            mapper.kill()
            mapper.wait(15)


def test_a_change_queued_behind_a_full_queue_is_counted_before_any_answer(
    checkpoints: Checkpoints, watcher: subprocess.Popen[str], walks: Walks
) -> None:
    """While the watcher is stopped, nearly a full kernel queue of untracked events, then one
    tracked write; asked the moment it runs again, the watcher answers only once it has read
    up to the question: never with the record from before the write."""
    limit = int(Path('/proc/sys/fs/inotify/max_queued_events').read_text())
    desk = checkpoints.desk_directory
    name = vouch.key(desk, checkpoints.repository_directory)
    assert name is not None
    for round_ in range(4):
        vouched_noop(checkpoints, walks)
        stop(watcher)
        try:
            for index in range((limit - 200) // 2):  # two events each: made, closed
                (desk / f'junk{round_}-{index}').touch()
            (desk / 'notes/day0/n2.md').write_text(f'behind the queue {round_}\n')
        finally:
            watcher.send_signal(signal.SIGCONT)
        reply = vouch.ask(name, TRACKED)
        assert reply is None or reply.clean is None
        assert checkpoints.snapshot(f'round {round_}') is not None
        assert newest_files(checkpoints) == desk_files(checkpoints)


def test_a_larger_size_limit_records_the_file_left_out(
    checkpoints: Checkpoints, watcher: subprocess.Popen[str], walks: Walks
) -> None:
    vouched_noop(checkpoints, walks)
    larger = Checkpoints(
        checkpoints.repository_directory, checkpoints.desk_directory, TRACKED, max_file_size=1024
    )
    assert larger.snapshot('a larger limit') is not None
    assert 'notes/big.md' in newest_files(larger)


def test_a_size_limit_set_in_the_config_records_the_file_left_out(
    checkpoints: Checkpoints, watcher: subprocess.Popen[str], walks: Walks
) -> None:
    """The repository's config sets the limit for a caller that gives none."""
    configured = Checkpoints(checkpoints.repository_directory, checkpoints.desk_directory, TRACKED)
    repository = checkpoints.repository_directory
    git(repository, 'config', 'checkpoints.maxFileSize', str(LIMIT))
    vouched_noop(configured, walks)
    git(repository, 'config', 'checkpoints.maxFileSize', '1024')
    assert configured.snapshot('a larger limit') is not None
    assert 'notes/big.md' in newest_files(configured)


def test_more_tracked_paths_are_never_vouched_by_a_watcher_of_fewer(
    checkpoints: Checkpoints, watcher: subprocess.Popen[str], walks: Walks
) -> None:
    """The watcher watches the folders of its own tracked paths: a snapshot that tracks more
    is never answered by it, and records what changes in the folder it alone tracks."""
    vouched_noop(checkpoints, walks)
    desk = checkpoints.desk_directory
    write(desk, 'skills/agent/skill.md', 'a skill\n')
    more = Checkpoints(checkpoints.repository_directory, desk, (*TRACKED, 'skills/agent'))
    assert more.snapshot('more tracked paths') is not None
    for round_ in range(3):
        assert more.snapshot('noop') is None
        write(desk, 'skills/agent/skill.md', f'a skill, version {round_}\n')
        assert more.snapshot(f'skill {round_}') is not None
        assert newest_files(more) == desk_files(more)


def test_a_moved_seal_changes_the_vouched_answer(
    checkpoints: Checkpoints, watcher: subprocess.Popen[str], walks: Walks
) -> None:
    """An agent's declared and sealed write, then a person puts the file back: the status
    says the person's change was made outside the agent. Once the desk is sealed as it is, it
    no longer does, vouched or walked."""
    desk = checkpoints.desk_directory
    (desk / 'notes/big.md').unlink()  # a status with a file left out is always walked
    assert checkpoints.snapshot('agent', tool='Write', paths=['notes/day0/n0.md']) is None
    write(desk, 'notes/day0/n0.md', 'the agent wrote\n')
    checkpoints.seal()
    write(desk, 'notes/day0/n0.md', 'note 0\n')  # a person puts it back
    found = by_watcher(checkpoints.status, walks)
    assert (found.external, found.basis) == (('notes/day0/n0.md',), 'sealed')  # type: ignore[attr-defined]
    checkpoints.seal()
    found = by_watcher(checkpoints.status, walks)
    assert (found.external, found.basis) == ((), 'sealed')  # type: ignore[attr-defined]


def test_a_pre_write_snapshot_keeps_its_announcement_while_watch_vouches(
    workspace: Path, desk: Path, walks: Walks, runtime: Path
) -> None:
    """The hooks' pre-write snapshot on an unchanged desk (the turn's second write: not its
    first checkpoint, which is always taken) is answered by no vouch: it records the write
    to come, so when the watch records the write first, the write is still the turn's, and
    restore-turn reverts it."""
    write(desk, 'Memory.md', 'memory\n')
    cps = Workspace(workspace).desk('main')
    assert cps.snapshot('start') is not None
    process = start_watcher(cps, quiet=0.2)

    def tool_writes(path: str, call: str) -> None:
        fields = {
            'tool_input': {'file_path': str(desk / path), 'content': f'{path}\n'},
            'tool_use_id': call,
        }
        ok(hook(event('claude_pre_tool_use_write.json', workspace, **fields)))
        count = len(cps.list(None))
        write(desk, path, f'{path}\n')  # the tool runs
        taken = wait_for(lambda: len(cps.list(None)) > count and cps.list(1)[0])
        assert taken.tool == 'watch'  # type: ignore[attr-defined]
        response = {'filePath': str(desk / path), 'success': True}
        ok(
            hook(
                event(
                    'claude_post_tool_use_write.json', workspace, tool_response=response, **fields
                )
            )
        )

    try:
        ok(hook(event('claude_user_prompt_submit.json', workspace)))
        tool_writes('notes/plan.md', 'toolu_first')
        vouched_noop(cps, walks)
        tool_writes('notes/second.md', 'toolu_second')
        [turn] = cps.turns()
        result = cps.restore_turn(turn.turn_id)
        assert result.deleted == ('notes/plan.md', 'notes/second.md') and result.written == ()
        assert not (desk / 'notes/plan.md').exists() and not (desk / 'notes/second.md').exists()
    finally:
        end(process)


def test_a_declared_write_in_a_library_turn_stays_the_turns_while_watch_vouches(
    checkpoints: Checkpoints, walks: Walks
) -> None:
    """The same through the library (as the MCP server does: no hook, no record of calls):
    the turn's second declared write is announced by a snapshot on an unchanged desk that no
    vouch answers, so the watch's checkpoint of it credits the turn, and restore-turn reverts
    it."""
    desk = checkpoints.desk_directory
    process = start_watcher(checkpoints, quiet=0.2)

    def declared_write(turn: Turn, path: str) -> None:
        turn.snapshot(f'before writing {path}', tool='write_file', paths=[path])
        count = len(checkpoints.list(None))
        write(desk, path, f'{path}\n')  # the tool runs
        taken = wait_for(lambda: len(checkpoints.list(None)) > count and checkpoints.list(1)[0])
        assert taken.tool == 'watch'  # type: ignore[attr-defined]
        checkpoints.seal()

    try:
        with checkpoints.turn('two writes') as turn:
            declared_write(turn, 'notes/plan.md')
            vouched_noop(checkpoints, walks)
            declared_write(turn, 'notes/second.md')
        result = checkpoints.restore_turn(turn.turn_id)
        assert result.deleted == ('notes/plan.md', 'notes/second.md') and result.written == ()
    finally:
        end(process)


def wait_for(condition: Callable[[], object], seconds: float = 15) -> object:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f'not within {seconds} s')
