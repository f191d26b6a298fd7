"""A snapshot looks at the desk without the lock first (``snapshot.look``).

A no-op answers without the lock only when no restore record existed before or after it looked
and the branch did not move (a restore or a pull by another process); anything else, and every
snapshot that writes, runs under the lock. A scan made without the lock is reused under it only
when what it depended on held.
Other writers are real processes (forked children), run at the moment under test.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from helpers.builders import write
from helpers.faults import run_child
from helpers.reading import (
    files_of,
    head_of,
    history,
    opened,
    seal_id_of,
    seal_of,
    tracked,
    version_of,
)

from trading_checkpoints import (
    CheckpointError,
    Checkpoints,
    CorruptRepositoryError,
    LockTimeoutError,
)
from trading_checkpoints.core.lock import exclusive
from trading_checkpoints.core.paths import Allowlist
from trading_checkpoints.desk import scan as scan_module
from trading_checkpoints.desk.scan import STREAM_THRESHOLD
from trading_checkpoints.ops import announced, external, snapshot, toolcalls
from trading_checkpoints.ops.journal import pending
from trading_checkpoints.ops.session import ReadSession as Session
from trading_checkpoints.ops.toolcalls import ToolCall
from trading_checkpoints.store import metadata
from trading_checkpoints.store.metadata import Writer
from trading_checkpoints.store.repo import ShadowRepo


def _restore_killed_after_its_record(repo: Path, desk: Path, target: str) -> None:
    """In a child: a restore killed right after writing its record, before touching the desk."""
    recorded = [False]

    def hook(event: str, args: tuple) -> None:
        if event in ('os.replace', 'os.rename') and str(args[1]).endswith('restore-journal'):
            recorded[0] = True
        elif recorded[0] and event in ('open', 'os.replace', 'os.rename', 'os.remove'):
            os.kill(os.getpid(), signal.SIGKILL)

    sys.addaudithook(hook)
    Checkpoints(repo, desk, lock_timeout=10).restore(target)


def _settle(cps: Checkpoints, paths: list[str] | None = None) -> None:
    """Lets the files just written age past the stat cache's racy window and has the cache
    saved again, so that the next no-op has nothing to write."""
    time.sleep(0.05)
    cps.snapshot('settle', paths=paths)


def _seal_message(repo: Path) -> str | None:
    """The newest seal's message (an announcement's, kept beside the seal ref, when current)."""
    seal = seal_of(repo)
    return None if seal is None else seal.message


@contextmanager
def _lock_held_elsewhere(repository: Path) -> Iterator[None]:
    """A real second process holds the repository's lock for the length of the block."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            with exclusive(repository / 'checkpoints' / 'lock', timeout=5):
                os.write(write_end, b'held')
                time.sleep(30)
        finally:
            os._exit(0)
    os.close(write_end)  # a child that fails before writing then reads as an empty answer
    try:
        assert os.read(read_end, 4) == b'held', 'the second process could not take the lock'
        yield
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(read_end)


def test_a_no_op_needs_no_lock_and_a_change_waits_for_it(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'notes/a.md', 'one')
    cps.snapshot('one')
    _settle(cps)
    with _lock_held_elsewhere(cps.repository_directory):
        quick = Checkpoints(cps.repository_directory, desk, lock_timeout=0)
        assert quick.snapshot('nothing changed') is None
        write(desk, 'notes/a.md', 'two')
        with pytest.raises(LockTimeoutError):
            quick.snapshot('a change')


def test_a_no_op_answered_without_the_lock_says_what_was_left_out_and_on_what_basis(
    cps: Checkpoints, desk: Path
) -> None:
    """The look's answer says what a snapshot under the lock says: the files left out of
    snapshots, and the attribution (the paths the agent declared, none changed outside)."""
    write(desk, 'Memory.md', 'start')
    write(desk, 'notes/line\nbreak.md', 'a name that cannot be snapshotted')
    first = cps.snapshot_with_result('first', paths=['notes/a.md'])
    assert first.checkpoint_id is not None
    assert [path for path, _ in first.skipped] == ['notes/line\nbreak.md']
    _settle(cps, ['notes/a.md'])
    with _lock_held_elsewhere(cps.repository_directory):
        quick = Checkpoints(cps.repository_directory, desk, lock_timeout=0)
        answer = quick.snapshot_with_result('nothing changed', paths=['notes/a.md'])
    assert answer.checkpoint_id is None
    assert (answer.external, answer.basis) == ((), external.DECLARED)
    assert answer.skipped == first.skipped


def test_a_desk_error_met_while_looking_is_raised_without_waiting_for_the_lock(
    cps: Checkpoints, desk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The desk folder is replaced while the look scans it: that error is the desk's, which a
    scan under the lock would meet as well, so it is raised at once, not after the lock."""
    write(desk, 'notes/a.md', 'one')
    cps.snapshot('one')
    _settle(cps)
    real = scan_module.scan

    def then_replaced(*args, **kwargs):
        found = real(*args, **kwargs)
        desk.rename(desk.with_name('moved-away'))
        desk.mkdir()
        return found

    monkeypatch.setattr(scan_module, 'scan', then_replaced)
    with _lock_held_elsewhere(cps.repository_directory):
        quick = Checkpoints(cps.repository_directory, desk, lock_timeout=0)
        with pytest.raises(CheckpointError, match='vanished or was replaced') as raised:
            quick.snapshot('nothing changed')
    assert not isinstance(raised.value, LockTimeoutError)


def test_a_repository_error_met_while_looking_is_met_again_under_the_lock(
    cps: Checkpoints, desk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A repository read failing while the look scans (a file being replaced by another
    writer) gives no answer: the snapshot starts again under the lock, where it passes."""
    write(desk, 'notes/a.md', 'one')
    cps.snapshot('one')
    write(desk, 'notes/a.md', 'two')
    real = Session.scan
    failed = []

    def fails_once(self, *args, **kwargs):
        if not failed:
            failed.append(1)
            raise CorruptRepositoryError('the stat cache was being replaced')
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Session, 'scan', fails_once)
    sha = cps.snapshot('two')
    assert failed and sha is not None
    assert version_of(cps.repository_directory, sha)['notes/a.md'] == ('-', b'two')


def test_a_no_op_repairs_a_damaged_head_under_the_lock(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'notes/a.md', 'one')
    cps.snapshot('one')
    _settle(cps)
    head_file = cps.repository_directory / 'HEAD'
    head_file.write_bytes(b'ref: refs/heads/elsewhere\n')
    assert cps.snapshot('nothing changed') is None
    assert head_file.read_bytes() == b'ref: refs/heads/main\n'


def test_a_pending_record_is_completed_even_when_the_desk_looks_unchanged(
    cps: Checkpoints, desk: Path
) -> None:
    write(desk, 'notes/a.md', 'one')
    first = cps.snapshot('one')
    write(desk, 'notes/a.md', 'two')
    cps.snapshot('two')
    _settle(cps)
    repo = cps.repository_directory
    assert run_child(lambda: _restore_killed_after_its_record(repo, desk, first)).killed
    assert pending(repo), 'the record was written'
    assert (desk / 'notes/a.md').read_text() == 'two', 'the desk was not touched'
    result = Checkpoints(repo, desk).snapshot_with_result('nothing changed, as it seems')
    assert result.recovered is not None
    assert not pending(repo)
    assert (desk / 'notes/a.md').read_text() == 'one'


def _while_it_looks(monkeypatch: pytest.MonkeyPatch, action) -> list:
    """Runs ``action`` once in a child process while the next snapshot looks (after its scan,
    before its final checks); the list receives the child's outcome."""
    real = external.announcement
    ran: list = []

    def meanwhile(*args, **kwargs):
        if not ran:
            ran.append(run_child(action))
        return real(*args, **kwargs)

    monkeypatch.setattr(external, 'announcement', meanwhile)
    return ran


def test_a_record_written_while_the_snapshot_looks_is_completed(
    cps: Checkpoints, desk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(desk, 'notes/a.md', 'one')
    first = cps.snapshot('one')
    write(desk, 'notes/a.md', 'two')
    cps.snapshot('two')
    _settle(cps)
    repo = cps.repository_directory
    # After the scan, before the final checks: another process's restore.
    ran = _while_it_looks(monkeypatch, lambda: _restore_killed_after_its_record(repo, desk, first))
    result = Checkpoints(repo, desk).snapshot_with_result('nothing changed, as it seemed')
    assert ran and ran[0].killed
    assert result.recovered is not None, 'the record was completed, not ignored'
    assert not pending(repo)
    assert (desk / 'notes/a.md').read_text() == 'one'


def test_a_restore_finished_while_the_snapshot_looks_is_not_overlooked(
    cps: Checkpoints, desk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The branch moved meanwhile: the no-op is decided again under the lock, where it
    announces the declared paths on the restored checkpoint (the restore's seal no longer
    holds for the write that follows)."""
    write(desk, 'notes/a.md', 'one')
    first = cps.snapshot('one')
    write(desk, 'notes/a.md', 'two')
    cps.snapshot('two', paths=['notes/a.md'])
    _settle(cps, ['notes/a.md'])
    repo = cps.repository_directory
    ran = _while_it_looks(
        monkeypatch, lambda: Checkpoints(repo, desk, lock_timeout=10).restore(first)
    )
    assert Checkpoints(repo, desk).snapshot('again', paths=['notes/a.md']) is None
    assert ran and ran[0].error is None and not ran[0].killed
    message = _seal_message(repo)
    assert message is not None
    assert metadata.action_of(message) == external.ANNOUNCE
    assert metadata.parse(message).paths == ('notes/a.md',)


def test_an_announcement_made_while_the_snapshot_looks_is_not_overlooked(
    cps: Checkpoints, desk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process announces other paths while the snapshot looks (the record beside the
    seal ref, which does not move): the snapshot finds the seal changed and is decided again
    under the lock, where its own declaration is announced again over the other's."""
    write(desk, 'notes/a.md', 'one')
    cps.snapshot('one', paths=['notes/a.md'])
    _settle(cps, ['notes/a.md'])
    repo = cps.repository_directory
    ran = _while_it_looks(
        monkeypatch,
        lambda: Checkpoints(repo, desk, lock_timeout=10).snapshot('b', paths=['notes/b.md']),
    )
    assert Checkpoints(repo, desk).snapshot('again', paths=['notes/a.md']) is None
    assert ran and ran[0].error is None
    message = _seal_message(repo)
    assert message is not None and metadata.action_of(message) == external.ANNOUNCE
    assert metadata.parse(message).paths == ('notes/a.md',), 'the other announcement was kept'


def test_a_pull_finished_while_the_snapshot_looks_is_not_overlooked(
    cps: Checkpoints, desk: Path, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process fast-forwards the branch while the snapshot looks (a pull, which leaves
    the desk, the seal and the config alone): the desk is no longer the newest checkpoint, so
    the snapshot records it under the lock instead of answering that nothing changed."""
    write(desk, 'notes/a.md', 'one')
    cps.snapshot('one')
    cps.add_remote('backup', str(tmp_path / 'backup.git'))
    cps.push()
    desk2, repo2 = workspace / 'desks' / 'two', workspace / '.checkpoints' / 'two.git'
    Checkpoints.clone(str(tmp_path / 'backup.git'), repo2, desk2)
    _settle(Checkpoints(repo2, desk2))
    write(desk, 'notes/a.md', 'newer')
    cps.snapshot('newer')
    cps.push()
    ran = _while_it_looks(monkeypatch, lambda: Checkpoints(repo2, desk2, lock_timeout=10).pull())
    sha = Checkpoints(repo2, desk2).snapshot('the desk as it is')
    assert ran and ran[0].error is None and not ran[0].killed
    assert sha is not None, 'the desk differs from the checkpoint pulled meanwhile'
    assert version_of(repo2, sha)['notes/a.md'] == ('-', b'one')
    assert (desk2 / 'notes/a.md').read_text() == 'one'


def _between_the_look_and_the_lock(monkeypatch: pytest.MonkeyPatch, action) -> list:
    """Runs ``action`` once in a child process after the next snapshot's look saw a change and
    before it takes the lock; the list receives the child's outcome."""
    real = snapshot.look
    ran: list = []

    def then_the_action(*args, **kwargs):
        found = real(*args, **kwargs)
        assert found is not None and found.answer is None, 'the scan saw the change'
        ran.append(run_child(action))
        return found

    monkeypatch.setattr(snapshot, 'look', then_the_action)
    return ran


def test_a_scan_made_before_a_restore_is_not_committed_after_it(
    cps: Checkpoints, desk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between the look and the lock, another process restores (saving 'two' first)."""
    write(desk, 'notes/a.md', 'one')
    first = cps.snapshot('one')
    write(desk, 'notes/a.md', 'two')
    repo = cps.repository_directory
    ran = _between_the_look_and_the_lock(
        monkeypatch, lambda: Checkpoints(repo, desk, lock_timeout=10).restore(first)
    )
    assert Checkpoints(repo, desk).snapshot('two, as it was') is None
    assert ran and ran[0].error is None
    newest = Checkpoints(repo, desk).list(1)[0].checkpoint_id
    assert version_of(repo, newest) == tracked(files_of(desk))
    assert (desk / 'notes/a.md').read_text() == 'one'


def test_a_scan_made_before_an_interrupted_restore_is_not_committed_after_its_completion(
    cps: Checkpoints, desk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between the look and the lock, another process's restore is killed after its record;
    the lock completes it first, and the snapshot then records the desk as the completion left
    it, never the look's scan of the desk before it."""
    write(desk, 'notes/a.md', 'one')
    first = cps.snapshot('one')
    write(desk, 'notes/a.md', 'two')
    cps.snapshot('two')
    write(desk, 'notes/a.md', 'three')
    repo = cps.repository_directory
    ran = _between_the_look_and_the_lock(
        monkeypatch, lambda: _restore_killed_after_its_record(repo, desk, first)
    )
    result = Checkpoints(repo, desk).snapshot_with_result('three, as it was')
    assert ran and ran[0].killed
    assert result.recovered is not None
    newest = Checkpoints(repo, desk).list(1)[0].checkpoint_id
    assert version_of(repo, newest) == tracked(files_of(desk))
    assert (desk / 'notes/a.md').read_text() == 'one'


def test_a_write_that_ended_after_the_look_is_credited_with_what_it_left(
    cps: Checkpoints, desk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two sessions' writes of one file are at work; S writes and ends. A snapshot looks (and
    sees S's version); before it takes the lock, U writes and ends. The look's scan no longer
    serves (the credit would take U's call, ended after it, as seen by it): the snapshot walks
    again and records U's version as U's, changed after by no one, so rewinding U's turn is
    no conflict."""
    write(desk, 'notes/p.md', 'p0\n')
    cps.snapshot('p0')
    config = cps.desk_config
    u = ToolCall('U/toolu_u', 'claude:Write', Writer('t-u', 'U'))
    s = ToolCall('S/toolu_s', 'claude:Write', Writer('t-s', 'S'))
    toolcalls.before_write(cps, u, 'before Write notes/p.md', ['notes/p.md'])
    toolcalls.before_write(cps, s, 'before Write notes/p.md', ['notes/p.md'])
    write(desk, 'notes/p.md', 'X by session S\n')
    toolcalls.after_write(config, s, ['notes/p.md'])

    def u_writes() -> None:
        write(desk, 'notes/p.md', 'Y by session U\n')
        toolcalls.after_write(config, u, ['notes/p.md'])

    ran = _between_the_look_and_the_lock(monkeypatch, u_writes)
    sha = cps.snapshot('a third writer')
    monkeypatch.undo()
    assert ran and ran[0].error is None
    assert sha is not None
    assert files_of(desk)['notes/p.md'] == version_of(cps.repository_directory, sha)['notes/p.md']
    with opened(cps.repository_directory) as repo:
        [group] = metadata.written_groups(repo.commit_info(repo.head()).message)
    assert (group.writer, set(group.paths), group.changed_after) == (
        Writer('t-u', 'U'),
        {'notes/p.md'},
        frozenset(),
    )
    cps.restore_turn('t-u')
    assert (desk / 'notes/p.md').read_text() == 'p0\n'


def test_a_large_file_hashed_without_the_lock_is_stored_under_it(
    cps: Checkpoints, desk: Path
) -> None:
    """The look hashes a large file without keeping it: the commit reads it again."""
    write(desk, 'notes/a.md', 'one')
    cps.snapshot('one')
    big = os.urandom(64) * ((STREAM_THRESHOLD + 4096) // 64)
    write(desk, 'notes/big.bin', big)
    sha = cps.snapshot('a large file')
    assert sha is not None
    assert version_of(cps.repository_directory, sha)['notes/big.bin'] == ('-', big)


def test_a_change_is_scanned_once(
    cps: Checkpoints, desk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trading_checkpoints.desk.state import DeskState

    write(desk, 'notes/a.md', 'one')
    cps.snapshot('one')
    write(desk, 'notes/a.md', 'two')
    scans = []
    real = DeskState.scan
    monkeypatch.setattr(
        DeskState, 'scan', lambda self, *a, **k: scans.append(1) or real(self, *a, **k)
    )
    sha = cps.snapshot('two')
    assert sha is not None and len(scans) == 1
    assert version_of(cps.repository_directory, sha)['notes/a.md'] == ('-', b'two')


@pytest.mark.parametrize('stale', ['refs/checkpoints/sealed.lock', 'config.lock'])
def test_a_no_op_that_writes_clears_stale_lock_files_first(
    cps: Checkpoints, desk: Path, stale: str
) -> None:
    """Under the lock a snapshot sweeps stale lock files only before its first write of a ref
    or the config: here the announcement, and the tracked paths remembered."""
    write(desk, 'notes/a.md', 'one')
    cps.snapshot('one')
    _settle(cps)
    leftover = cps.repository_directory / stale
    leftover.parent.mkdir(exist_ok=True)
    leftover.write_text('left by a killed writer\n')
    if stale == 'config.lock':
        explicit = Checkpoints(cps.repository_directory, desk, tracked_paths=['notes'])
        assert explicit.snapshot('nothing changed, new tracked paths') is None
        assert Checkpoints(cps.repository_directory, desk).effective_tracked_paths() == ('notes',)
    else:
        # An announcement writes no ref (it is kept beside the seal ref); a seal of the
        # unchanged desk writes the seal ref.
        assert cps.snapshot('nothing changed', paths=['notes/a.md']) is None
        message = _seal_message(cps.repository_directory)
        assert message is not None and metadata.action_of(message) == external.ANNOUNCE
        assert leftover.exists()
        cps.seal()
        assert seal_id_of(cps.repository_directory) == head_of(cps.repository_directory).encode()
    assert not leftover.exists()


def test_a_seal_or_config_written_while_the_snapshot_looks_is_not_overlooked(
    cps: Checkpoints, desk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process seals, then remembers new tracked paths, while the snapshot looks: the
    snapshot is decided again under the lock, with the seal and the tracked paths as they are
    then (so it announces on the new seal, and records the newly tracked file)."""
    write(desk, 'notes/a.md', 'one')
    write(desk, 'plans/p.md', 'not tracked yet')
    cps.snapshot('one', paths=['notes/a.md'])
    _settle(cps, ['notes/a.md'])
    repo = cps.repository_directory
    ran = _while_it_looks(monkeypatch, lambda: Checkpoints(repo, desk, lock_timeout=10).seal())
    assert Checkpoints(repo, desk).snapshot('again', paths=['notes/a.md']) is None
    assert ran and ran[0].error is None
    message = _seal_message(repo)
    assert message is not None and metadata.action_of(message) == external.ANNOUNCE

    monkeypatch.undo()
    ran = _while_it_looks(
        monkeypatch, lambda: Checkpoints(repo, desk).set_tracked_paths(['notes', 'plans'])
    )
    sha = Checkpoints(repo, desk).snapshot('again', paths=['notes/a.md'])
    assert ran and ran[0].error is None
    assert sha is not None
    assert 'plans/p.md' in version_of(repo, sha, Allowlist(('notes', 'plans')))


def test_a_seal_and_an_announcement_between_the_final_checks_two_reads_are_not_overlooked(
    cps: Checkpoints, desk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The look's final check reads the seal as two files, the announcement's record and the
    seal ref. Another session seals and then announces another path between those two reads:
    the pair read must be one that was on the disk, so the snapshot sees the seal moved and
    announces its own path under the lock; the agent's write of that path is then its own."""
    write(desk, 'notes/a.md', 'one')
    cps.snapshot('one', paths=['notes/a.md'])
    _settle(cps, ['notes/a.md'])
    repo = cps.repository_directory
    assert seal_id_of(repo) is None  # the look's answer must announce nothing

    def other_session() -> None:
        racing = Checkpoints(repo, desk, lock_timeout=10)
        racing.seal()
        assert racing.snapshot('b', paths=['notes/b.md']) is None  # announces notes/b.md

    ran: list = []
    read_ref_again, read_private = ShadowRepo.read_ref_again, ShadowRepo.read_private

    def between(value: object) -> object:
        """After the first of the final check's two reads, the other session runs."""
        if not ran:
            ran.append(run_child(other_session))
        return value

    def ref_then(self: ShadowRepo, name: bytes) -> bytes | None:
        value = read_ref_again(self, name)
        return between(value) if name == external.SEAL_REF else value  # type: ignore[return-value]

    def record_then(self: ShadowRepo, name: str, limit: int, *, again: bool = False) -> object:
        value = read_private(self, name, limit, again=again)
        return between(value) if again and name == announced.NAME else value

    monkeypatch.setattr(ShadowRepo, 'read_ref_again', ref_then)
    monkeypatch.setattr(ShadowRepo, 'read_private', record_then)
    assert Checkpoints(repo, desk).snapshot('again', paths=['notes/a.md']) is None
    monkeypatch.undo()
    assert ran and ran[0].error is None
    seal = seal_of(repo)
    assert seal is not None and metadata.action_of(seal.message) == external.ANNOUNCE
    assert metadata.parse(seal.message).paths == ('notes/a.md',)
    write(desk, 'notes/a.md', 'the agent wrote this')
    assert Checkpoints(repo, desk).snapshot_with_result('next').external == ()


def test_snapshots_racing_restores_never_record_a_half_restored_desk(
    cps: Checkpoints, desk: Path
) -> None:
    """A second process restores back and forth between two checkpoints while this one takes
    snapshots: the desk changes only through those restores, so no snapshot records anything,
    and every checkpoint holds one of the two states whole."""
    for i in range(40):
        write(desk, f'notes/n{i:02d}.md', f'one {i}')
    first = cps.snapshot('one')
    for i in range(40):
        write(desk, f'notes/n{i:02d}.md', f'two {i}')
    second = cps.snapshot('two')
    assert first and second
    _settle(cps)
    repo = cps.repository_directory
    states = [version_of(repo, first), version_of(repo, second)]

    def restorer() -> None:
        racing = Checkpoints(repo, desk, lock_timeout=30)
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            for target in (first, second):
                racing.restore(target)
                time.sleep(0.004)  # lets the other process take the lock now and then

    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            restorer()
            code = 0
        finally:
            os._exit(code)
    recorded = []
    snapshots = 0
    done, status = 0, 0
    while not done:
        snapshots += 1
        sha = Checkpoints(repo, desk, lock_timeout=30).snapshot('racing')
        if sha is not None:
            recorded.append(sha)
        done, status = os.waitpid(pid, os.WNOHANG)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, 'the restores all ran'
    assert snapshots > 10
    assert recorded == [], 'a snapshot recorded a state no restore left whole'
    ids = history(repo)
    assert len(ids) > 4, 'the restores ran'
    for sha in ids:
        assert version_of(repo, sha) in states
