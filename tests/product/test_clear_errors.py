"""Clear errors everywhere: each failure is a CheckpointError naming the problem, never a traceback.

Corrupt repositories (truncated objects and packs, a garbage branch or HEAD, a file where the
repository should be), a desk that vanished or is unreadable, a corrupt stat cache, stale and
held locks, the size limit, the desk that must never be / or the home folder. Where a repair
is safe it is silent; otherwise nothing is committed and the message says what is wrong. The
command line shows each as one ``error:`` line with exit status 1.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.builders import put
from helpers.faults import run_child
from helpers.gitcli import fsck
from helpers.reading import files_of, history, version_of

from trading_checkpoints import (
    CheckpointError,
    Checkpoints,
    CorruptRepositoryError,
    LockTimeoutError,
)
from trading_checkpoints.cli import cli
from trading_checkpoints.core import lock as lock_module
from trading_checkpoints.store import repo as repo_module
from trading_checkpoints.store.pack import packfile


@pytest.fixture
def ws(tmp_path: Path):
    desk = tmp_path / 'desks' / 'main'
    repo = tmp_path / '.checkpoints' / 'main.git'
    put(desk, 'Memory.md', '-', b'v1')
    put(desk, 'notes/a.md', '-', b'a1')
    cps = Checkpoints(repo, desk)
    first = cps.snapshot('v1')
    return tmp_path, desk, repo, cps, first


def cli_error(workspace: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, ['--workspace', str(workspace), *args])
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert lines[0].startswith('error: '), result.output
    assert len(lines) == 1 or (len(lines) == 2 and lines[1].startswith('hint: ')), result.output
    assert 'Traceback' not in result.output and 'unexpected' not in result.output, result.output
    return lines[0]


def object_count(repo: Path) -> int:
    """Objects in the repository: loose, and in the packs (snapshots write packs)."""
    loose = [f for d in (repo / 'objects').iterdir() if len(d.name) == 2 for f in d.iterdir()]
    packed = 0
    for idx in (repo / 'objects' / 'pack').glob('*.idx'):
        with packfile.PackView(str(idx)[: -len('.idx')]) as view:
            packed += view.count
    return len(loose) + packed


def loose_head_from_another_tool(repo: Path) -> Path:
    """A new newest commit written loose (as git or an older version would), and its file: this
    library itself only ever appends objects to packs."""
    from dulwich.objects import Commit
    from dulwich.repo import Repo

    with Repo(str(repo)) as dulwich_repo:
        head = dulwich_repo.refs[b'refs/heads/main']
        commit = Commit()
        commit.tree = dulwich_repo[head].tree
        commit.parents = [head]
        commit.author = commit.committer = b'someone <someone@example.com>'
        commit.author_time = commit.commit_time = 1_700_000_000
        commit.author_timezone = commit.commit_timezone = 0
        commit.message = b'written by another tool\n'
        dulwich_repo.object_store.add_object(commit)
        dulwich_repo.refs[b'refs/heads/main'] = commit.id
    path = repo / 'objects' / commit.id.decode()[:2] / commit.id.decode()[2:]
    assert path.is_file()
    return path


def damage_object(repo: Path, sha: str) -> None:
    """Garbles one object where it is stored: a loose file is cut in half; a packed one gets its
    compressed data overwritten (the rest of the pack stays readable)."""
    loose = repo / 'objects' / sha[:2] / sha[2:]
    if loose.exists():
        data = loose.read_bytes()
        loose.chmod(0o644)
        loose.write_bytes(data[: len(data) // 2])
        return
    for idx in (repo / 'objects' / 'pack').glob('*.idx'):
        with packfile.PackView(str(idx)[: -len('.idx')]) as view:
            offset = view.offset_of(bytes.fromhex(sha))
        if offset is not None:
            pack = idx.with_suffix('.pack')
            pack.chmod(0o644)
            with open(pack, 'r+b') as handle:
                handle.seek(offset + 4)  # past the record's header and the zlib header
                handle.write(b'\xff\xfe\xfd\xfc')
            return
    raise AssertionError(f'no object {sha}')


def test_truncated_head_commit(ws) -> None:
    tmp_path, desk, repo, cps, first = ws
    damage_object(repo, (repo / 'refs' / 'heads' / 'main').read_text().strip())
    # Listing answers from the commit memo, whose copies are checked against their ids.
    assert [c.checkpoint_id for c in cps.list()] == [first]
    repo_module._COMMITS.clear()
    (repo / 'checkpoints' / 'commits').unlink()
    with pytest.raises(CorruptRepositoryError, match='unreadable'):
        cps.list()  # without the memo, the damaged object itself is read
    with pytest.raises(CorruptRepositoryError, match=str(repo)):
        cps.restore(first)
    put(desk, 'Memory.md', '-', b'v2')
    with pytest.raises(CorruptRepositoryError, match=first):
        cps.snapshot('on top of a broken commit')
    assert 'unreadable' in cli_error(tmp_path, 'list')
    assert 'unreadable' in cli_error(tmp_path, 'snapshot')


def test_every_truncation_of_the_head_commit_is_a_clear_error(ws) -> None:
    """dulwich parses some truncated loose commits without complaint, with the committer line
    (and so the time) missing: list, log and status then raised TypeError. This made
    test_truncated_head_commit fail now and then (found while running the disk fuzz test)."""
    from trading_checkpoints.store import repo as repo_module

    tmp_path, desk, repo, cps, first = ws
    path = loose_head_from_another_tool(repo)
    data = path.read_bytes()
    path.chmod(0o644)
    for length in range(1, len(data)):
        path.write_bytes(data[:length])
        repo_module._COMMITS.clear()
        (repo / 'checkpoints' / 'commits').unlink(missing_ok=True)  # read the object itself
        for verb in (cps.list, cps.log, cps.status):
            try:
                verb()
            except CheckpointError:
                pass


def test_truncated_blob_refuses_restore_before_any_write(ws) -> None:
    tmp_path, desk, repo, cps, first = ws
    put(desk, 'Memory.md', '-', b'v2 unsaved')
    put(desk, 'notes/a.md', '-', b'a2 unsaved')
    before = files_of(desk)
    from dulwich.objects import Blob

    damage_object(repo, Blob.from_string(b'a1').id.decode())
    with pytest.raises(CorruptRepositoryError, match='unreadable'):
        cps.restore(first)
    assert files_of(desk) == before, 'nothing written: the blobs are vetted first'
    assert 'unreadable' in cli_error(tmp_path, 'restore', first)


def test_truncated_pack(ws) -> None:
    tmp_path, desk, repo, cps, first = ws
    for i in range(100):
        put(desk, f'memory/m{i}.md', '-', b'many %d' % i)
    packed = cps.snapshot('many objects, one pack')
    packs = list((repo / 'objects' / 'pack').glob('*.pack'))
    assert len(packs) == 1
    packs[0].chmod(0o644)
    data = packs[0].read_bytes()
    packs[0].write_bytes(data[: len(data) // 3])
    # The history answers from the checked commit memo; whatever reads the pack says it is
    # damaged, and nothing is written on top of it.
    assert [c.checkpoint_id for c in cps.list()][0] == packed
    for action in (lambda: cps.restore(first), lambda: cps.restore(packed)):
        with pytest.raises(CheckpointError):
            action()
    put(desk, 'Memory.md', '-', b'v3')
    with pytest.raises(CheckpointError):
        cps.snapshot('on top of a damaged pack')
    cli_error(tmp_path, 'restore', first)


@pytest.mark.parametrize('content', [b'garbage\n', b'', b'0' * 39 + b'\n', b'ref: refs/heads/x\n'])
def test_garbage_branch(ws, content: bytes) -> None:
    tmp_path, desk, repo, cps, first = ws
    (repo / 'refs' / 'heads' / 'main').write_bytes(content)
    put(desk, 'Memory.md', '-', b'v2')
    objects_before = object_count(repo)
    with pytest.raises(CheckpointError):
        cps.snapshot('x')
    with pytest.raises(CheckpointError):
        cps.list()
    assert object_count(repo) <= objects_before + 3  # no commit was made
    cli_error(tmp_path, 'list')
    cli_error(tmp_path, 'snapshot')


def test_branch_naming_a_missing_commit(ws) -> None:
    tmp_path, desk, repo, cps, first = ws
    (repo / 'refs' / 'heads' / 'main').write_text('ab' * 20 + '\n')
    with pytest.raises(CorruptRepositoryError, match='missing'):
        cps.list()
    assert 'missing' in cli_error(tmp_path, 'list')


@pytest.mark.parametrize('content', [b'garbage', b'', b'ref: refs/heads/../../../etc\n'])
def test_garbage_head_is_repaired(ws, content: bytes) -> None:
    tmp_path, desk, repo, cps, first = ws
    (repo / 'HEAD').write_bytes(content)
    put(desk, 'Memory.md', '-', b'v2')
    assert cps.snapshot('v2') is not None
    assert (repo / 'HEAD').read_bytes() == b'ref: refs/heads/main\n'
    assert len(cps.list()) == 2
    fsck(repo)


def test_repository_path_is_a_file(tmp_path: Path) -> None:
    desk = tmp_path / 'desks' / 'main'
    put(desk, 'Memory.md', '-', b'v1')
    repo = tmp_path / '.checkpoints' / 'main.git'
    repo.parent.mkdir(parents=True)
    repo.write_text('not a repository')
    cps = Checkpoints(repo, desk)
    for action in (lambda: cps.snapshot('x'), lambda: cps.list(), lambda: cps.restore('abcdef1')):
        with pytest.raises(CorruptRepositoryError, match='not a folder'):
            action()
    for args in (['snapshot'], ['list'], ['restore', 'abcdef1']):
        assert 'not a folder' in cli_error(tmp_path, *args)
    assert repo.read_text() == 'not a repository'


def test_repository_path_is_a_foreign_folder(tmp_path: Path) -> None:
    desk = tmp_path / 'desk'
    put(desk, 'Memory.md', '-', b'v1')
    repo = tmp_path / 'repo'
    put(repo, 'precious.txt', '-', b'not ours')
    with pytest.raises(CorruptRepositoryError, match='not a checkpoint repository'):
        Checkpoints(repo, desk).snapshot('x')
    assert files_of(repo) == {'precious.txt': ('-', b'not ours')}


def test_desk_vanished(ws) -> None:
    tmp_path, desk, repo, cps, first = ws
    desk.rename(tmp_path / 'moved')
    with pytest.raises(CheckpointError, match='does not exist'):
        cps.snapshot('x')
    assert 'no desk' in cli_error(tmp_path, 'snapshot')
    assert len(cps.list()) == 1


def test_desk_vanishing_mid_scan_commits_nothing(ws) -> None:
    """The desk is moved away by a real rename while the scan walks it (in a child process)."""
    tmp_path, desk, repo, cps, first = ws
    for i in range(20):
        put(desk, f'notes/n{i}.md', '-', b'new')

    def action() -> None:
        def hook(event: str, args: tuple) -> None:
            # The walk opens each folder (``open``) and lists it through the descriptor.
            listing = event in ('os.scandir', 'open')
            if listing and str(args[0]).endswith('notes') and desk.exists():
                os.rename(desk, tmp_path / 'moved')

        sys.addaudithook(hook)
        Checkpoints(repo, desk).snapshot('during the move')

    outcome = run_child(action)
    assert outcome.error is not None and 'ConcurrentChangeError' in outcome.error
    assert 'vanished' in outcome.error
    assert len(history(repo)) == 1, 'nothing was committed'


def test_file_disappearing_mid_scan_is_simply_absent(ws) -> None:
    tmp_path, desk, repo, cps, first = ws
    put(desk, 'notes/b.md', '-', b'b')

    def action() -> None:
        def hook(event: str, args: tuple) -> None:
            # Files are opened by name, relative to their folder's descriptor.
            if event == 'open' and str(args[0]) == 'b.md' and (desk / 'notes/b.md').exists():
                os.unlink(desk / 'notes/b.md')

        sys.addaudithook(hook)
        Checkpoints(repo, desk).snapshot('b vanishes while read')

    assert run_child(action).error is None
    assert 'notes/b.md' not in version_of(repo, history(repo)[0])
    fsck(repo)


def _as_nobody(action) -> str | None:
    """Runs an action in a child process with an unprivileged uid (root reads everything)."""

    def wrapped() -> None:
        if os.getuid() == 0:
            os.setgid(65534)
            os.setuid(65534)
        action()

    return run_child(wrapped).error


@pytest.fixture
def shared():
    """A folder every user can reach (pytest's own temporary folders are private to root)."""
    base = Path(tempfile.mkdtemp(prefix='checkpoints-shared-'))
    base.chmod(0o777)
    yield base
    for root, folders, _ in os.walk(base):
        for name in folders:
            os.chmod(os.path.join(root, name), 0o755)
    shutil.rmtree(base)


def test_unreadable_file_is_a_clear_error_and_commits_nothing(shared: Path) -> None:
    base = shared
    desk = base / 'desk'
    repo = base / 'repo.git'
    put(desk, 'Memory.md', '-', b'v1')
    put(desk, 'notes/secret.md', '-', b'no read permission')
    (desk / 'notes' / 'secret.md').chmod(0o000)
    for root, folders, _ in os.walk(base):
        for name in folders:
            os.chmod(os.path.join(root, name), 0o777)
    error = _as_nobody(lambda: Checkpoints(repo, desk).snapshot('x'))
    assert error is not None and 'FileAccessError' in error, error
    assert 'secret.md' in error and 'Permission denied' in error
    assert history(repo) == []


def test_unreadable_desk_folder(shared: Path) -> None:
    base = shared
    desk = base / 'desk'
    put(desk, 'notes/a.md', '-', b'a')
    for root, folders, _ in os.walk(base):
        for name in folders:
            os.chmod(os.path.join(root, name), 0o777)
    (desk / 'notes').chmod(0o000)
    error = _as_nobody(lambda: Checkpoints(base / 'repo.git', desk).snapshot('x'))
    (desk / 'notes').chmod(0o755)
    assert error is not None and 'FileAccessError' in error and 'cannot list' in error, error


def test_corrupt_cache_is_rebuilt_silently(ws) -> None:
    tmp_path, desk, repo, cps, first = ws
    cache = repo / 'checkpoints' / 'statcache'
    cache.write_bytes(b'TCSTAT1\n' + os.urandom(200))
    put(desk, 'notes/a.md', '-', b'a2')
    second = cps.snapshot('after a corrupt cache')
    assert second is not None
    assert version_of(repo, second)['notes/a.md'][1] == b'a2'
    cache.write_bytes(b'')
    assert cps.snapshot('unchanged') is None


@pytest.mark.parametrize('bad', ['zzzz', '', 'deadbeef', 'ab', '1' * 41])
def test_wrong_id(ws, bad: str) -> None:
    tmp_path, desk, repo, cps, first = ws
    with pytest.raises(CheckpointError, match='checkpoint'):
        cps.restore(bad)
    cli_error(tmp_path, 'restore', bad)


@pytest.mark.parametrize('where', ['/', 'home'])
def test_root_or_home_is_never_a_desk(tmp_path: Path, where: str) -> None:
    desk = Path('/') if where == '/' else Path.home()
    cps = Checkpoints(tmp_path / 'repo.git', desk)
    for action in (lambda: cps.snapshot('x'), lambda: cps.restore('abcdef1')):
        with pytest.raises(CheckpointError, match='root or home'):
            action()
    assert not (tmp_path / 'repo.git').exists()


def test_desk_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / 'desk').write_text('file')
    with pytest.raises(CheckpointError, match='not a folder'):
        Checkpoints(tmp_path / 'repo.git', tmp_path / 'desk').snapshot('x')


# -- locks ---------------------------------------------------------------------------------


def test_held_lock_times_out_naming_the_lock_and_its_holder(ws) -> None:
    tmp_path, desk, repo, cps, first = ws
    lock_path = repo / 'checkpoints' / 'lock'
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            with lock_module.exclusive(lock_path):
                os.write(ready_w, b'1')
                time.sleep(30)
        finally:
            os._exit(0)
    try:
        assert os.read(ready_r, 1) == b'1'
        # A change, so the snapshot must take the lock (with nothing changed it may answer
        # without it, see ops/snapshot.py:look).
        put(desk, 'Memory.md', '-', b'changed while the lock is held')
        started = time.monotonic()
        with pytest.raises(LockTimeoutError) as caught:
            Checkpoints(repo, desk, lock_timeout=0.3).snapshot('x')
        assert time.monotonic() - started < 5
        assert str(lock_path) in str(caught.value)
        assert f'pid {pid}' in str(caught.value)
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(ready_r)
        os.close(ready_w)
    # The kernel released the killed holder's lock: the next snapshot goes through at once.
    put(desk, 'Memory.md', '-', b'v2')
    assert Checkpoints(repo, desk, lock_timeout=1).snapshot('after') is not None


def test_leftovers_of_a_writer_killed_holding_the_lock_are_removed(ws) -> None:
    tmp_path, desk, repo, cps, first = ws
    lock_path = repo / 'checkpoints' / 'lock'
    fanout = repo / 'objects' / 'ab'  # where a loose object was being written
    fanout.mkdir(exist_ok=True)
    leftovers = [
        repo / 'refs' / 'heads' / 'main.lock',
        repo / 'HEAD.lock',
        repo / 'config.lock',
        fanout / ('0' * 38 + '.lock'),
        repo / 'objects' / 'pack' / 'tmpabc123.pack',
        repo / 'objects' / 'pack' / ('pack-' + '1' * 40 + '.pack'),
        repo / 'objects' / 'pack' / ('pack-' + '2' * 40 + '.idx.lock'),
        repo / 'objects' / 'tmp_pack_xyz',
        repo / 'checkpoints' / '.statcache.999.tmp',
        repo / '.config.999.tmp',
    ]

    def die_holding_the_lock() -> None:
        with lock_module.exclusive(lock_path):
            for path in leftovers:
                path.write_bytes(b'half written')
            os.kill(os.getpid(), signal.SIGKILL)

    assert run_child(die_holding_the_lock).killed
    assert lock_path.read_text().split()[0].isdigit(), 'the dead holder left its name'
    put(desk, 'Memory.md', '-', b'v2')
    assert cps.snapshot('after the crash') is not None
    assert [p for p in leftovers if p.exists()] == []
    assert lock_path.read_text() == '', 'a clean release empties the lock file'
    fsck(repo)


def test_stale_ref_lock_never_blocks_writes(ws) -> None:
    tmp_path, desk, repo, cps, first = ws
    (repo / 'refs' / 'heads' / 'main.lock').write_text('stale')
    put(desk, 'Memory.md', '-', b'v2')
    assert cps.snapshot('x') is not None


# -- the size guard --------------------------------------------------------------------------


def test_files_above_the_size_limit_are_left_out_and_reported(ws) -> None:
    tmp_path, desk, repo, cps, first = ws
    put(desk, 'notes/big.bin', '-', b'x' * 2000)
    put(desk, 'notes/small.md', '-', b'small')
    limited = Checkpoints(repo, desk, max_file_size=1000)
    result = limited.snapshot_with_result('with a big file')
    assert [path for path, _ in result.skipped] == ['notes/big.bin']
    assert 'larger than the maximum file size' in result.skipped[0][1]
    content = version_of(repo, result.checkpoint_id)
    assert 'notes/big.bin' not in content and 'notes/small.md' in content
    # A restore reverts a file that grew past the limit when the checkpoint holds a version
    # of it, and keeps the bytes it overwrites in the pre-snapshot, over the limit or not.
    put(desk, 'notes/big.bin', '-', b'small enough')
    having = limited.snapshot('big.bin small')
    put(desk, 'notes/big.bin', '-', b'y' * 5000)
    result = limited.restore_with_result(having)
    assert result.written == ('notes/big.bin',)
    assert (desk / 'notes/big.bin').read_bytes() == b'small enough'
    assert version_of(repo, result.before_id)['notes/big.bin'] == ('-', b'y' * 5000)
    # A file over the limit that the target does not hold is left alone, and reported.
    put(desk, 'notes/other.bin', '-', b'z' * 3000)
    result = limited.restore_with_result(having)
    assert (desk / 'notes/other.bin').read_bytes() == b'z' * 3000
    assert [path for path, _ in result.kept] == ['notes/other.bin']
    assert 'maximum file size' in result.kept[0][1]


def test_size_limit_from_the_repository_config_and_the_cli(ws) -> None:
    tmp_path, desk, repo, cps, first = ws
    config = (repo / 'config').read_text()
    (repo / 'config').write_text(config + '[checkpoints]\n\tmaxFileSize = 1k\n')
    put(desk, 'notes/big.bin', '-', b'x' * 1025)
    put(desk, 'notes/ok.bin', '-', b'x' * 1024)
    result = CliRunner().invoke(cli, ['--workspace', str(tmp_path), 'snapshot', '--json'])
    assert result.exit_code == 0, result.output
    assert 'warning: left out notes/big.bin' in result.output
    assert json.loads(result.stdout)['skipped'][0]['path'] == 'notes/big.bin'
    assert 'notes/ok.bin' in version_of(repo, history(repo)[0])
    # The constructor wins over the config; 0 means no limit.
    assert Checkpoints(repo, desk, max_file_size=0).snapshot_with_result('all').skipped == ()
    (repo / 'config').write_text(config + '[checkpoints]\n\tmaxFileSize = lots\n')
    put(desk, 'notes/ok.bin', '-', b'changed')
    with pytest.raises(CheckpointError, match='maxFileSize'):
        Checkpoints(repo, desk).snapshot('x')


@pytest.mark.parametrize('bad', [-1, 1.5, '10', True])
def test_bad_max_file_size(tmp_path: Path, bad) -> None:
    with pytest.raises(CheckpointError, match='max_file_size'):
        Checkpoints(tmp_path / 'r', tmp_path / 'd', max_file_size=bad)


def test_folder_of_empty_folders_becoming_a_file(tmp_path: Path) -> None:
    """Found by the fault injection: a tracked folder holding only empty folders could not be
    replaced by a file, and the restore failed half-way."""
    desk = tmp_path / 'desk'
    put(desk, 'skills/agent', '-', b'a file')
    cps = Checkpoints(tmp_path / 'repo.git', desk)
    as_file = cps.snapshot('file')
    (desk / 'skills' / 'agent').unlink()
    (desk / 'skills' / 'agent' / 'sub' / 'empty').mkdir(parents=True)
    put(desk, 'skills/agent/x.md', '-', b'x')
    cps.snapshot('folder')
    cps.restore(as_file)
    assert (desk / 'skills' / 'agent').read_bytes() == b'a file'


def test_restore_through_a_parent_that_became_a_file(tmp_path: Path) -> None:
    """Found by the fault injection: a folder above a target path that became a tracked file
    raised a bare NotADirectoryError."""
    desk = tmp_path / 'desk'
    put(desk, 'notes/deep/er/f1.md', '-', b'deep')
    cps = Checkpoints(tmp_path / 'repo.git', desk)
    deep = cps.snapshot('deep')
    put(desk, 'notes/deep', '-', b'now a file')
    cps.snapshot('file')
    cps.restore(deep)
    assert (desk / 'notes/deep/er/f1.md').read_bytes() == b'deep'


def test_status_diff_and_dry_run_share_the_size_limit_with_snapshot(ws) -> None:
    """One rule: a file over the limit keeps what the newest checkpoint holds for it, so
    snapshot, status, diff and a dry run agree, and status never reads it."""
    tmp_path, desk, repo, cps, first = ws
    put(desk, 'notes/grows.bin', '-', b'small')
    limited = Checkpoints(repo, desk, max_file_size=1000)
    small = limited.snapshot('small')
    put(desk, 'notes/grows.bin', '-', b'x' * 5000)
    put(desk, 'notes/new-big.bin', '-', b'y' * 5000)
    status = limited.status()
    assert status.clean, status
    assert sorted(path for path, _ in status.skipped) == ['notes/grows.bin', 'notes/new-big.bin']
    assert limited.snapshot('nothing to record') is None
    assert limited.diff(small).changes == ()
    # The target holds neither file: both are left alone, and the dry run says so exactly.
    plan = limited.restore(first, dry_run=True)
    assert sorted(path for path, _ in plan.kept) == ['notes/grows.bin', 'notes/new-big.bin']
    done = limited.restore_with_result(first)
    assert (done.written, done.deleted, done.kept) == (plan.written, plan.deleted, plan.kept)
    assert (desk / 'notes/grows.bin').read_bytes() == b'x' * 5000
    # The checkpoint that holds the small version reverts it; the dry run predicts that too.
    plan = limited.restore(small, dry_run=True)
    assert plan.written == ('notes/grows.bin',)
    assert limited.restore_with_result(small).written == plan.written
    assert (desk / 'notes/grows.bin').read_bytes() == b'small'
