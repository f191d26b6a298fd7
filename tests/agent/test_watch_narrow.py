"""With `checkpoints watch` running, a snapshot after a change walks only the folders it touched.

The watcher runs as its own process over a real desk (its capture made slow, so every change is
left for the snapshot). Each change is made after the watcher vouched for the desk; then the
snapshot must walk only what changed (``walk.walk_since``, never the full ``walk``), and
commit exactly the tree a full walk commits: a second repository of the same desk, which no
watcher serves, takes the same snapshot by walking everything, and the two trees and the files
left out must be equal. After the narrowed snapshot the watcher vouches again at once (the
no-op that follows walks nothing). A stale, killed or lying watcher costs a full walk.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from array import array
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.builders import write
from helpers.faults import ChildOutcome, run_child
from helpers.processes import environment
from helpers.reading import head_of

from trading_checkpoints import Checkpoints
from trading_checkpoints.core import private
from trading_checkpoints.desk import narrow, statcache, vouch
from trading_checkpoints.desk import scan as scans
from trading_checkpoints.desk import vouchprotocol as protocol
from trading_checkpoints.ops import toolcalls, vouched
from trading_checkpoints.ops.external import SEAL_REF
from trading_checkpoints.ops.session import open_reading
from trading_checkpoints.ops.toolcalls import ToolCall
from trading_checkpoints.store.metadata import Writer
from trading_checkpoints.store.repo import ShadowRepo

pytestmark = pytest.mark.skipif(not sys.platform.startswith('linux'), reason='inotify')

TRACKED = ('notes', 'Memory.md', 'skills/agent')
LIMIT = 64

# The watcher and the snapshot wait long enough for a loaded machine: these tests check what
# the narrowed walk finds, not how fast the watcher answers (no answer in time is a walk:
# tests/agent/test_watch_vouch.py::test_a_killed_or_stopped_watcher_costs_the_timeout_and_a_walk
# and tests/agent/test_vouchwatch.py::test_a_question_whose_cookie_was_not_read_is_never_answered).
PATIENCE = 10.0
WATCHER = f"""
import sys
from pathlib import Path
from trading_checkpoints import Checkpoints
from trading_checkpoints.agent import vouchwatch
from trading_checkpoints.agent.watch import watch
vouchwatch.COOKIE_WAIT = {PATIENCE}
checkpoints = Checkpoints(Path(sys.argv[1]), Path(sys.argv[2]), ('notes', 'Memory.md',
                          'skills/agent'), max_file_size=64)
watch(checkpoints, quiet=30, echo=lambda line: None, ready=lambda: print('ready', flush=True))
"""


@pytest.fixture
def runtime(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private runtime folder of the test's own for the watcher's socket."""
    folder = Path(tempfile.mkdtemp(prefix='narrow-', dir='/tmp'))
    monkeypatch.setenv('XDG_RUNTIME_DIR', str(folder))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def build(desk: Path) -> None:
    for day in range(3):
        for index in range(4):
            write(desk, f'notes/day{day}/n{index}.md', f'note {day} {index}\n')
    write(desk, 'notes/day0/deep/inner.md', 'inner\n')
    write(desk, 'notes/top.md', 'top\n')
    write(desk, 'notes/odd\\name.md', 'a name git cannot store\n')
    write(desk, 'notes/big.bin', b'x' * (LIMIT + 1))  # left out for its size, never stored
    (desk / 'notes/link').symlink_to('day0/n0.md')
    os.mkfifo(desk / 'notes/day1/pipe')
    (desk / 'notes/empty').mkdir()
    write(desk, 'Memory.md', 'memory\n')
    write(desk, 'skills/agent/skill.md', 'skill\n')
    write(desk, 'skills/other/untracked.md', 'untracked\n')
    write(desk, 'scratch/draft.md', 'untracked\n')
    write(desk, 'scratch/folder/inner.md', 'untracked\n')


@pytest.fixture
def checkpoints(tmp_path: Path, runtime: Path) -> Checkpoints:
    desk = tmp_path / 'desk'
    build(desk)
    cps = Checkpoints(tmp_path / 'repo.git', desk, TRACKED, max_file_size=LIMIT)
    assert cps.snapshot('start') is not None
    return cps


@pytest.fixture
def watcher(
    checkpoints: Checkpoints, monkeypatch: pytest.MonkeyPatch
) -> Iterator[subprocess.Popen[str]]:
    monkeypatch.setattr(vouch, 'TIMEOUT', PATIENCE)
    desk, repository = str(checkpoints.desk_directory), str(checkpoints.repository_directory)
    process = subprocess.Popen(
        [sys.executable, '-c', WATCHER, repository, desk],
        env=environment(),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stdout.readline() == 'ready\n'
    yield process
    process.kill()
    process.wait(15)


class Walks:
    """How this process walked the desk: ``full`` walks and ``narrowed`` ones."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.full = 0
        self.narrowed = 0
        full, narrowed = scans.walk, narrow.walk_since

        def walk(*args: object, **kwargs: object) -> object:
            self.full += 1
            return full(*args, **kwargs)  # type: ignore[arg-type]

        def walk_since(*args: object, **kwargs: object) -> object:
            self.narrowed += 1
            return narrowed(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(scans, 'walk', walk)
        monkeypatch.setattr(narrow, 'walk_since', walk_since)

    def count(self) -> tuple[int, int]:
        return self.full, self.narrowed


@pytest.fixture
def walks(monkeypatch: pytest.MonkeyPatch) -> Walks:
    return Walks(monkeypatch)


def until_vouched(cps: Checkpoints, walks: Walks) -> None:
    """Snapshots until one is answered by the watcher without any walk (a walk right after a
    write finds racy entries to read again, and a walk that changed the cache cannot vouch)."""
    for _ in range(200):
        before = walks.count()
        assert cps.snapshot('noop') is None
        if walks.count() == before:
            return
    raise AssertionError('the watcher never vouched')


def swap_symlink(desk: Path) -> None:
    fresh = desk / 'notes/link.new'
    fresh.symlink_to('day1/n1.md')
    fresh.rename(desk / 'notes/link')


def remove_folder(desk: Path) -> None:
    shutil.rmtree(desk / 'notes/day2')


def replace_folder(desk: Path) -> None:
    shutil.rmtree(desk / 'notes/day1')
    write(desk, 'notes/day1/n0.md', 'a new folder of the same name\n')


def folder_becomes_file(desk: Path) -> None:
    shutil.rmtree(desk / 'notes/day0/deep')
    write(desk, 'notes/day0/deep', 'now a file\n')


def file_becomes_folder(desk: Path) -> None:
    (desk / 'notes/top.md').unlink()
    write(desk, 'notes/top.md/inside.md', 'now a folder\n')


def entry_replaced(desk: Path) -> None:
    shutil.rmtree(desk / 'skills')
    write(desk, 'skills/agent/other.md', 'a new skills folder\n')


def folder_becomes_symlink(desk: Path) -> None:
    shutil.rmtree(desk / 'notes/day2')
    (desk / 'notes/day2').symlink_to('day0')


CHANGES: dict[str, Callable[[Path], object]] = {
    'write': lambda desk: (desk / 'notes/day0/n0.md').write_text('changed\n'),
    'write deep': lambda desk: (desk / 'notes/day0/deep/inner.md').write_text('changed\n'),
    'top file': lambda desk: (desk / 'Memory.md').write_text('memory 2\n'),
    'create': lambda desk: write(desk, 'notes/day1/new.md', 'new\n'),
    'create beside folders': lambda desk: write(desk, 'notes/new.md', 'new\n'),
    'delete': lambda desk: (desk / 'notes/day1/n1.md').unlink(),
    'delete the top file': lambda desk: (desk / 'Memory.md').unlink(),
    'rename in': lambda desk: (desk / 'scratch/draft.md').rename(desk / 'notes/draft.md'),
    'rename out': lambda desk: (desk / 'notes/day1/n3.md').rename(desk / 'scratch/n3.md'),
    'rename between folders': lambda desk: (desk / 'notes/day0/n1.md').rename(
        desk / 'notes/day2/n9.md'
    ),
    'folder renamed': lambda desk: (desk / 'notes/day0').rename(desk / 'notes/moved'),
    'folder renamed in': lambda desk: (desk / 'scratch/folder').rename(desk / 'notes/folder'),
    'mkdir and write': lambda desk: write(desk, 'notes/fresh/deeper/a.md', 'a\n'),
    'write into an empty folder': lambda desk: write(desk, 'notes/empty/a.md', 'a\n'),
    'chmod +x': lambda desk: (desk / 'notes/day0/n2.md').chmod(0o755),
    'symlink swap': swap_symlink,
    'grows past the limit': lambda desk: (desk / 'notes/day2/n0.md').write_bytes(
        b'y' * (LIMIT + 1)
    ),
    'shrinks under the limit': lambda desk: (desk / 'notes/big.bin').write_bytes(b'small\n'),
    'a name git cannot store': lambda desk: write(desk, 'notes/day2/bad\nname.md', 'odd\n'),
    'a fifo': lambda desk: os.mkfifo(desk / 'notes/day2/fifo'),
    'folder removed': remove_folder,
    'folder replaced': replace_folder,
    'folder becomes a file': folder_becomes_file,
    'file becomes a folder': file_becomes_folder,
    'folder becomes a symlink': folder_becomes_symlink,
    'a tracked folder replaced': entry_replaced,
    'a tracked folder removed': lambda desk: shutil.rmtree(desk / 'skills/agent'),
    'untracked only': lambda desk: write(desk, 'scratch/other.md', 'not tracked\n'),
}
# A folder moved makes the watcher start over: these snapshots walk everything.
WALKED = {'folder renamed', 'folder renamed in'}
# A file over the limit that a checkpoint holds keeps its entry: no walk finds the desk equal
# to the newest checkpoint then, and the watcher never vouches for it.
CARRIED = {'grows past the limit'}
# Nothing a checkpoint holds changes.
NO_COMMIT = {'untracked only', 'a fifo', 'a name git cannot store', 'grows past the limit'}


def head_tree(repository: Path, ref: bytes | None = None) -> bytes:
    """The root tree of the newest checkpoint, or of the commit ``ref`` names."""
    repo = ShadowRepo.open(repository)
    assert repo is not None
    try:
        sha = repo.head() if ref is None else repo.read_ref(ref)
        assert sha is not None
        return repo.commit_info(sha).tree
    finally:
        repo.close()


@pytest.mark.parametrize('change', sorted(CHANGES))
def test_a_narrowed_snapshot_commits_what_a_full_walk_commits(
    checkpoints: Checkpoints,
    watcher: subprocess.Popen[str],
    walks: Walks,
    tmp_path: Path,
    change: str,
) -> None:
    """The repository is copied before the change; the copy, which no watcher serves, takes
    the same snapshot by walking everything: the same tree, the same files left out."""
    desk = checkpoints.desk_directory
    for round_ in range(1 if change in CARRIED else 2):  # then after the snapshot's own record
        until_vouched(checkpoints, walks)
        other = tmp_path / f'other{round_}.git'
        shutil.copytree(checkpoints.repository_directory, other, symlinks=True)
        if round_:
            write(desk, 'notes/day0/n3.md', 'a second change\n')
        else:
            CHANGES[change](desk)
        before = walks.count()
        result = checkpoints.snapshot_with_result(f'{change} {round_}')
        full, narrowed = walks.count()
        if round_ == 0 and change in WALKED:
            assert full > before[0]
        elif round_ == 0 and change == 'untracked only':
            assert (full, narrowed) == before  # the watcher still vouches
        else:
            assert (full, narrowed) == (before[0], before[1] + 1)
        plain = Checkpoints(other, desk, TRACKED, max_file_size=LIMIT)
        walked = plain.snapshot_with_result(f'{change} {round_}, walked')
        assert head_tree(checkpoints.repository_directory) == head_tree(other)
        assert sorted(result.skipped) == sorted(walked.skipped)
        assert (result.checkpoint_id is None) == (walked.checkpoint_id is None)
        assert (result.checkpoint_id is None) == (change in NO_COMMIT and not round_)
    if change not in CARRIED:
        before = walks.count()
        assert checkpoints.snapshot('noop') is None
        assert walks.count() == before  # the snapshot left the watcher a record


def snapshot_unasked(
    checkpoints: Checkpoints, runtime: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A snapshot taken where the watcher is not asked (another runtime folder): it moves the
    branch and rewrites the stat cache, so the watcher's record no longer holds."""
    elsewhere = runtime / 'elsewhere'
    elsewhere.mkdir(mode=0o700)
    monkeypatch.setenv('XDG_RUNTIME_DIR', str(elsewhere))
    assert checkpoints.snapshot('elsewhere') is not None
    monkeypatch.setenv('XDG_RUNTIME_DIR', str(runtime))


def test_a_stale_record_costs_a_full_walk(
    checkpoints: Checkpoints,
    watcher: subprocess.Popen[str],
    walks: Walks,
    runtime: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A snapshot taken where the watcher is not asked (another runtime folder) moves the
    branch and rewrites the stat cache: the watcher's record no longer holds, and the next
    snapshot walks everything, then leaves a record again."""
    desk = checkpoints.desk_directory
    until_vouched(checkpoints, walks)
    write(desk, 'notes/day0/n0.md', 'unseen by the watcher\n')
    snapshot_unasked(checkpoints, runtime, monkeypatch)
    write(desk, 'notes/day1/n0.md', 'seen\n')
    before = walks.count()
    assert checkpoints.snapshot('after') is not None
    assert walks.count() == (before[0] + 1, before[1])
    # The report reaches the watcher after the snapshot returns: a write made at once could
    # come first, and the record would not be kept. The no-op is answered after the report.
    before = walks.count()
    assert checkpoints.snapshot('noop') is None
    assert walks.count() == before
    write(desk, 'notes/day2/n0.md', 'narrowed again\n')
    before = walks.count()
    assert checkpoints.snapshot('again') is not None
    assert walks.count() == (before[0], before[1] + 1)


def serve(path: str, answer: bytes) -> socket.socket:
    """A listener on the watcher's socket that answers every question with ``answer``."""
    listener, _ = private.listen(path, 4)
    listener.settimeout(0.2)

    def run() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with connection:
                try:
                    connection.recv(65536)
                    connection.sendall(answer + b'\n')
                except OSError:
                    continue  # a report: nothing is read back

    threading.Thread(target=run, daemon=True).start()
    return listener


def _without_record(reply: dict[str, Any]) -> None:
    del reply['changed']['record']


def _with_state(field: str, value: object) -> Callable[[dict[str, Any]], None]:
    def change(reply: dict[str, Any]) -> None:
        reply['changed']['record']['state'][field] = value

    return change


LIES: dict[str, Callable[[dict[str, Any]], None]] = {
    'another version': lambda reply: reply.update(version=protocol.VERSION + 1),
    'another type': lambda reply: reply.update(type='Report'),
    'changed not an object': lambda reply: reply.update(changed='not an object'),
    'no record': _without_record,
    'another head': _with_state('head', '0' * 40),
    'another stat cache': _with_state('cache', [0, 0, 0, 0, 0]),
    'no mount table': _with_state('mounts', None),
    'folders not a list': lambda reply: reply['changed'].update(folders='notes'),
    'a folder not a path': lambda reply: reply['changed'].update(folders=[['notes']]),
    'a field too many': lambda reply: reply['changed'].update(extra=1),
    'a token whose generation is no number': lambda reply: reply['token'].update(generation='1'),
}


def whole_reply(cps: Checkpoints) -> dict[str, Any]:
    """A reply a watcher could give now: the desk changed in ``notes/day0`` since the record,
    whose state is the state now."""
    with open_reading(cps.desk_config) as session:
        assert session is not None
        head = session.repo.head()
        assert head is not None
        state = vouched.state(session, head, ())
    record = protocol.Record(state, protocol.Answer((), 'unknown', ()))
    reply = protocol.Reply(
        protocol.Token('x', 1), (), changed=protocol.Changed(record, ('notes/day0',))
    )
    found: dict[str, Any] = json.loads(protocol.encode(reply))
    return found


@pytest.mark.parametrize('lie', sorted(LIES))
def test_an_answer_that_does_not_hold_costs_a_full_walk(
    checkpoints: Checkpoints, walks: Walks, lie: str
) -> None:
    """Whatever a listener on the watcher's socket answers that is not a whole reply of this
    version whose record is the state now, the snapshot walks everything and records the
    change. The same reply, whole, narrows the walk."""
    name = vouch.key(checkpoints.desk_directory, checkpoints.repository_directory)
    assert name is not None
    path = vouch.socket_path(name, create=True)
    assert path is not None
    for lying in (False, True):
        reply = whole_reply(checkpoints)
        if lying:
            LIES[lie](reply)
        listener = serve(path, json.dumps(reply).encode())
        try:
            write(checkpoints.desk_directory, 'notes/day0/n0.md', f'lying: {lying}\n')
            before = walks.count()
            assert checkpoints.snapshot(f'lying: {lying}') is not None
            assert walks.count() == (before[0] + lying, before[1] + (not lying))
        finally:
            listener.close()
            os.unlink(path)


def test_status_walks_only_what_changed(
    checkpoints: Checkpoints, watcher: subprocess.Popen[str], walks: Walks, tmp_path: Path
) -> None:
    """A status after a change walks only the touched folders and says what a full walk says
    (the same desk seen through a copy of the repository that no watcher serves)."""
    desk = checkpoints.desk_directory
    until_vouched(checkpoints, walks)
    other = tmp_path / 'other.git'
    shutil.copytree(checkpoints.repository_directory, other, symlinks=True)
    write(desk, 'notes/day0/n0.md', 'changed\n')
    write(desk, 'notes/day1/new.md', 'new\n')
    (desk / 'notes/day2/n1.md').unlink()
    before = walks.count()
    status = checkpoints.status()
    assert walks.count() == (before[0], before[1] + 1)
    walked = Checkpoints(other, desk, TRACKED, max_file_size=LIMIT).status()
    assert (status.changes, status.external, status.basis) == (
        walked.changes,
        walked.external,
        walked.basis,
    )
    assert sorted(status.skipped) == sorted(walked.skipped)
    assert [change.path for change in status.changes] == [
        'notes/day0/n0.md',
        'notes/day1/new.md',
        'notes/day2/n1.md',
    ]


def test_a_seal_and_the_snapshot_after_it_walk_only_what_changed(
    checkpoints: Checkpoints, watcher: subprocess.Popen[str], walks: Walks, tmp_path: Path
) -> None:
    """An agent's write sealed, then the next tool's snapshot: each walks only the folders
    changed since the watcher's record (the seal moved, which no scan reads), and each records
    what a walk of everything records, a person's edit elsewhere included. With nothing
    changed since, a seal walks nothing and holds the newest checkpoint's files."""
    desk = checkpoints.desk_directory
    until_vouched(checkpoints, walks)
    other = tmp_path / 'other.git'
    shutil.copytree(checkpoints.repository_directory, other, symlinks=True)
    plain = Checkpoints(other, desk, TRACKED, max_file_size=LIMIT)
    write(desk, 'notes/day0/by-the-agent.md', 'written by the agent\n')
    write(desk, 'notes/day2/n1.md', 'a person edited it meanwhile\n')
    before = walks.count()
    checkpoints.seal()
    assert walks.count() == (before[0], before[1] + 1)
    plain.seal()
    assert head_tree(checkpoints.repository_directory, SEAL_REF) == head_tree(other, SEAL_REF)
    before = walks.count()
    assert checkpoints.snapshot('before the next tool') is not None
    assert walks.count() == (before[0], before[1] + 1)
    assert plain.snapshot('before the next tool, walked') is not None
    assert head_tree(checkpoints.repository_directory) == head_tree(other)
    before = walks.count()
    checkpoints.seal()
    assert walks.count() == (before[0], before[1] + 1)
    assert head_tree(checkpoints.repository_directory, SEAL_REF) == head_tree(other)


def test_a_shell_commands_capture_walks_only_what_changed(
    checkpoints: Checkpoints, watcher: subprocess.Popen[str], walks: Walks, tmp_path: Path
) -> None:
    """A shell command's hooks (``ops/toolcalls.py``), a watcher running: the look before it
    walks only what changed (nothing), the capture after it only the folders the command
    changed, and it commits what a walk of everything commits."""
    desk = checkpoints.desk_directory
    until_vouched(checkpoints, walks)
    other = tmp_path / 'other.git'
    shutil.copytree(checkpoints.repository_directory, other, symlinks=True)
    call = ToolCall('call-1', 'claude:Bash', Writer('t-1', 'S'))
    before = walks.count()
    assert toolcalls.before_shell(checkpoints.desk_config, call, 'before echo') is None
    assert walks.count()[0] == before[0]
    write(desk, 'notes/day1/n2.md', 'written by the command\n')
    write(desk, 'notes/day0/deep/inner.md', 'and this\n')
    before = walks.count()
    done = toolcalls.after_shell(checkpoints.desk_config, call, 'after echo')
    assert done.paths == ('notes/day0/deep/inner.md', 'notes/day1/n2.md')
    assert walks.count() == (before[0], before[1] + 1)
    assert Checkpoints(other, desk, TRACKED, max_file_size=LIMIT).snapshot('walked') is not None
    assert head_tree(checkpoints.repository_directory) == head_tree(other)


def forge_stat_cache(cps: Checkpoints, path: str, other: str) -> None:
    """Replaces the stat cache (a new file at its name) by one for the same commit whose row for
    ``path`` names ``other``'s blob with stat numbers no file has: a walk reads such a file
    again."""
    with open_reading(cps.desk_config) as session:
        assert session is not None
        context = session.desk.context
    file = statcache.file_in(cps.repository_directory).path
    cache = statcache.load(file, context)
    assert cache.commit == head_of(cps.repository_directory).encode() and '' in cache.trees
    rows = cache.rows([path, other])
    row = rows[path]
    numbers = cache.numbers
    start = row * statcache.FIELDS
    size, mtime, ctime = numbers[start : start + 3]
    old = 10 * 1_000_000_000  # older than the cache: never read again as racy
    numbers[start : start + 3] = array('q', (size + 1, mtime - old, ctime - old))
    shas = bytearray(cache.shas)
    size_of = statcache.SHA_SIZE
    shas[row * size_of : (row + 1) * size_of] = cache.shas[
        rows[other] * size_of : (rows[other] + 1) * size_of
    ]
    cache.set_columns(cache.names, numbers, bytes(shas))
    forged = file.with_name('statcache.forged')
    statcache.save(forged, cache)
    os.replace(forged, file)


def test_a_stat_cache_replaced_after_the_record_is_not_trusted_beside_the_walk(
    checkpoints: Checkpoints, watcher: subprocess.Popen[str], walks: Walks, tmp_path: Path
) -> None:
    """The stat cache is untrusted: a row whose stat numbers match no file never decides what a
    snapshot records, as a full walk reads that file again. A narrowed walk takes the rows of
    the folders it does not walk without looking at their files, which only the cache the
    clean walk found the desk equal to may give. A cache replaced after the watcher's record
    (here: one for the same commit naming ``notes/top.md`` with another file's blob, a file the
    narrowed walk does not look at but whose folder's tree the commit builds again) makes the
    next snapshot walk everything and record the desk as it is."""
    desk = checkpoints.desk_directory
    until_vouched(checkpoints, walks)
    other = tmp_path / 'other.git'
    shutil.copytree(checkpoints.repository_directory, other, symlinks=True)
    forge_stat_cache(checkpoints, 'notes/top.md', 'notes/day1/n0.md')
    write(desk, 'notes/day0/n0.md', 'changed\n')
    before = walks.count()
    assert checkpoints.snapshot('after the cache was replaced') is not None
    after = walks.count()
    assert Checkpoints(other, desk, TRACKED, max_file_size=LIMIT).snapshot('walked') is not None
    assert head_tree(checkpoints.repository_directory) == head_tree(other)
    assert after == (before[0] + 1, before[1])


def test_a_turns_start_and_the_seal_after_it_walk_only_what_changed(
    checkpoints: Checkpoints, watcher: subprocess.Popen[str], walks: Walks
) -> None:
    """A write tool's hooks at a turn's start on an unchanged desk (``ops/toolcalls.py``), a
    watcher running: the mark of the turn's start walks nothing and leaves the watcher a record
    of the new checkpoint, so the seal after the write walks only the folder it wrote, and a
    no-op after that walks nothing. The tool writes as soon as the hook returns, as a
    harness's does: the hook returned only once the watcher had the record."""
    desk = checkpoints.desk_directory
    until_vouched(checkpoints, walks)
    call = ToolCall('call-1', 'claude:Write', Writer('t-1', 'S'))
    head = head_of(checkpoints.repository_directory)
    before = walks.count()
    started = toolcalls.before_write(checkpoints, call, 'before Write', ['notes/day1/new.md'])
    write(desk, 'notes/day1/new.md', 'written by the agent\n')
    assert started is not None and head_of(checkpoints.repository_directory) != head
    assert walks.count()[0] == before[0]
    before = walks.count()
    toolcalls.after_write(checkpoints.desk_config, call, ['notes/day1/new.md'])
    assert walks.count() == (before[0], before[1] + 1)
    assert head_tree(checkpoints.repository_directory, SEAL_REF) != head_tree(
        checkpoints.repository_directory
    )
    before = walks.count()
    assert checkpoints.snapshot('before the next tool') is not None
    assert walks.count() == (before[0], before[1] + 1)


def write_call(checkpoints: Checkpoints, number: int, path: str) -> None:
    """A write tool's two hooks around its write of ``path``, in turn ``t-1``."""
    call = ToolCall(f'call-{number}', 'claude:Write', Writer('t-1', 'S'))
    toolcalls.before_write(checkpoints, call, f'before Write {path}', [path])
    write(checkpoints.desk_directory, path, f'written by call {number}\n')
    toolcalls.after_write(checkpoints.desk_config, call, [path])


def newest(checkpoints: Checkpoints, path: str) -> bytes:
    return checkpoints.show(checkpoints.list(1)[0].checkpoint_id, path)


def test_a_later_write_walks_what_the_watcher_names_not_only_its_folders(
    checkpoints: Checkpoints, watcher: subprocess.Popen[str], walks: Walks
) -> None:
    """A write later in a turn, a watcher running that knows what changed: its checkpoint
    walks what the watcher names (a person's edit elsewhere included), not only the folders
    of the tool's paths (``ops/declared.py``), which serve only without such a watcher."""
    until_vouched(checkpoints, walks)
    write_call(checkpoints, 1, 'notes/day1/new.md')  # the turn's start
    write(checkpoints.desk_directory, 'notes/day2/n0.md', "a person's edit\n")
    call = ToolCall('call-2', 'claude:Write', Writer('t-1', 'S'))
    before = walks.count()
    toolcalls.before_write(checkpoints, call, 'before Write', ['notes/day1/other.md'])
    assert walks.count()[0] == before[0]  # no walk of the whole desk
    assert newest(checkpoints, 'notes/day2/n0.md') == b"a person's edit\n"


def test_a_later_write_that_walked_only_its_folders_tells_the_watcher_nothing(
    checkpoints: Checkpoints,
    watcher: subprocess.Popen[str],
    walks: Walks,
    runtime: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A watcher whose record no longer holds cannot say what changed: a later write's
    checkpoint walks the folders of its paths only, and must not leave the watcher a record of
    that checkpoint as the whole desk (the watcher would then vouch for a desk whose edit
    elsewhere no snapshot took): the next snapshot walks everything and takes the edit."""
    until_vouched(checkpoints, walks)
    write_call(checkpoints, 1, 'notes/day1/new.md')  # the turn's start
    write(checkpoints.desk_directory, 'notes/day0/n0.md', 'unseen by the watcher\n')
    snapshot_unasked(checkpoints, runtime, monkeypatch)  # the watcher's record goes stale
    write(checkpoints.desk_directory, 'notes/day2/n0.md', "a person's edit\n")
    call = ToolCall('call-2', 'claude:Write', Writer('t-1', 'S'))
    toolcalls.before_write(checkpoints, call, 'before Write', ['notes/day1/other.md'])
    assert newest(checkpoints, 'notes/day2/n0.md') == b'note 2 0\n'  # not walked
    time.sleep(0.5)  # a report, had one been sent, reaches the watcher
    assert checkpoints.snapshot('after') is not None
    assert newest(checkpoints, 'notes/day2/n0.md') == b"a person's edit\n"


def test_a_snapshot_that_only_refreshes_the_stat_cache_leaves_the_watcher_a_record(
    checkpoints: Checkpoints, watcher: subprocess.Popen[str], walks: Walks
) -> None:
    """A tracked file touched (its stat new, its content the same): the snapshot walks only its
    folder and commits nothing, but rewrites the stat cache, which the watcher's record names;
    it tells the watcher the new record, so the no-op after it walks nothing."""
    desk = checkpoints.desk_directory
    until_vouched(checkpoints, walks)
    head = head_of(checkpoints.repository_directory)
    cache = statcache.file_in(checkpoints.repository_directory).path
    saved = cache.stat().st_mtime_ns
    os.utime(desk / 'notes/day1/n2.md')
    time.sleep(0.2)  # past the racy window: the touched file is cached as settled
    before = walks.count()
    assert checkpoints.snapshot('touched') is None
    assert walks.count() == (before[0], before[1] + 1)
    assert cache.stat().st_mtime_ns != saved  # the cache was rewritten
    before = walks.count()
    assert checkpoints.snapshot('noop') is None
    assert walks.count() == before
    assert head_of(checkpoints.repository_directory) == head


def test_the_snapshot_after_a_shell_commands_capture_walks_nothing(
    checkpoints: Checkpoints, watcher: subprocess.Popen[str], walks: Walks
) -> None:
    """The capture after a shell command commits what the command changed and seals it, then
    tells the watcher what the desk now is: the next tool's snapshot walks nothing (it takes
    the lock all the same: after a seal it announces the next write)."""
    desk = checkpoints.desk_directory
    until_vouched(checkpoints, walks)
    call = ToolCall('call-1', 'claude:Bash', Writer('t-1', 'S'))
    assert toolcalls.before_shell(checkpoints.desk_config, call, 'before echo') is None
    write(desk, 'notes/day1/n2.md', 'written by the command\n')
    time.sleep(0.2)  # past the racy window: the capture caches the file as settled
    done = toolcalls.after_shell(checkpoints.desk_config, call, 'after echo')
    assert done.checkpoint_id is not None
    before = walks.count()
    assert checkpoints.snapshot('before the next tool') is None
    assert walks.count()[0] == before[0]


def test_a_seal_made_while_a_no_op_is_reported_is_not_overlooked(
    checkpoints: Checkpoints,
    watcher: subprocess.Popen[str],
    walks: Walks,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Another process seals the desk and then announces what this no-op declares, after the
    no-op's walk and before its report to the watcher. The report reads the seal again (and
    sends nothing, the state having moved); the no-op is then decided again under the lock, by
    the new seal: a person's revert of the agent's write, which the seal now holds, is no
    longer external. The walk's answer stood on the old seal."""
    desk, repository = checkpoints.desk_directory, checkpoints.repository_directory
    write(desk, 'notes/top.md', "the agent's\n")
    checkpoints.seal()
    write(desk, 'notes/top.md', 'top\n')  # a person puts the checkpoint's version back
    time.sleep(0.2)  # past the racy window: the no-op's walk finds the desk settled
    assert checkpoints.status().external == ('notes/top.md',)
    # The watcher's record does not serve (as after a change it saw): the no-op walks.
    monkeypatch.setattr(vouched.Asked, 'answer', lambda *args: None)
    real_report = vouched.Asked.report
    ran: list[ChildOutcome] = []

    def sealed_and_announced() -> None:
        other = Checkpoints(repository, desk, TRACKED, max_file_size=LIMIT)
        other.seal()
        assert other.snapshot('noop') is None  # announces the no-op's declaration

    def meanwhile(self: vouched.Asked, *args: Any) -> None:
        if not ran:
            ran.append(run_child(sealed_and_announced))
        real_report(self, *args)

    monkeypatch.setattr(vouched.Asked, 'report', meanwhile)
    result = checkpoints.snapshot_with_result('noop')
    assert ran and ran[0].error is None
    assert result.checkpoint_id is None
    assert result.external == ()
    now = checkpoints.status()  # what the seal and the announcement say, read after the race
    assert (result.external, result.basis) == (now.external, now.basis)
