"""Every verb through the one pipeline: clone of a hostile tree, crafted journals, file names
that are not UTF-8, and memory that stays bounded by a constant while snapshotting big files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from dulwich.objects import Blob, Commit, Tree
from dulwich.repo import Repo
from helpers.builders import write
from helpers.processes import python
from helpers.reading import files_of, version_of

from trading_checkpoints import CheckpointError, Checkpoints
from trading_checkpoints.ops.journal import record_path


def _hostile_remote(path: Path, bad_at: int = 130) -> None:
    """A bare repository whose newest tree holds 200 notes and, at entry ``bad_at``, a
    symlink with an empty target (which no file system can hold)."""
    repo = Repo.init_bare(str(path), mkdir=True)
    store = repo.object_store
    notes = Tree()
    for i in range(200):
        blob = Blob.from_string(f'note {i}'.encode())
        store.add_object(blob)
        notes.add(f'f{i:03}.md'.encode(), 0o100644, blob.id)
    empty = Blob.from_string(b'')
    store.add_object(empty)
    notes.add(f'f{bad_at:03}.link'.encode(), 0o120000, empty.id)
    store.add_object(notes)
    root = Tree()
    root.add(b'notes', 0o040000, notes.id)
    store.add_object(root)
    commit = Commit()
    commit.tree = root.id
    commit.author = commit.committer = b'x <x@x>'
    commit.author_time = commit.commit_time = 1_700_000_000
    commit.author_timezone = commit.commit_timezone = 0
    commit.message = b'hostile\n'
    store.add_object(commit)
    repo.refs[b'refs/heads/main'] = commit.id
    repo.refs.set_symbolic_ref(b'HEAD', b'refs/heads/main')
    repo.close()


def test_clone_of_a_hostile_tree_writes_nothing_and_can_be_retried(tmp_path: Path) -> None:
    remote = tmp_path / 'remote.git'
    _hostile_remote(remote)
    desk = tmp_path / 'desks' / 'main'
    repository = tmp_path / '.checkpoints' / 'main.git'
    before = files_of(tmp_path)
    for _ in range(2):  # a second attempt meets the same refusal, not a leftover repository
        with pytest.raises(CheckpointError, match='symlink'):
            Checkpoints.clone(str(remote), repository, desk)
        assert not repository.exists()
        assert not desk.exists() or files_of(desk) == {}
        after = files_of(tmp_path)
        assert {p: v for p, v in after.items() if not p.startswith('desks/')} == before


def test_an_interrupted_clone_is_resumed_by_cloning_again(tmp_path: Path) -> None:
    source_desk = tmp_path / 'source'
    for i in range(30):
        write(source_desk, f'notes/{i}.md', f'note {i}')
    source = Checkpoints(tmp_path / 'source.git', source_desk)
    source.snapshot('source')
    desk = tmp_path / 'desks' / 'main'
    repository = tmp_path / '.checkpoints' / 'main.git'
    code = f"""
import os, signal, sys
from pathlib import Path
from trading_checkpoints import Checkpoints
from helpers.faults import lands_a_desk_file
renames = []
def hook(event, args):
    if lands_a_desk_file(event, args):
        renames.append(1)
        if len(renames) == 10:
            os.kill(os.getpid(), signal.SIGKILL)
sys.addaudithook(hook)
Checkpoints.clone({str(tmp_path / 'source.git')!r}, Path({str(repository)!r}), Path({str(desk)!r}))
"""
    done = python(code, with_helpers=True, timeout=60)
    assert done.returncode == -9, 'the clone was not killed mid-checkout'
    landed = [path for path in files_of(desk) if '.checkpoint-' not in path]
    assert 0 < len(landed) < 30
    cps, _, written = Checkpoints.clone(str(tmp_path / 'source.git'), repository, desk)
    assert files_of(desk) == files_of(source_desk)  # temporary files removed too
    assert [c.reason for c in cps.list()][-1] == 'source'
    assert not record_path(repository).exists()
    assert written is None or len(written) <= 30


def test_a_crafted_journal_never_deletes_unsaved_work(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    write(desk, 'notes/kept.md', 'kept')
    first = cps.snapshot('first')
    write(desk, 'notes/unsaved.md', 'unsaved work no checkpoint holds')
    record = {
        'format': 2,
        'label': '1111111',
        'target': '1' * 40,
        'before': '1' * 40,
        'pids': [1],
        'started_at': 0,
        'changes': [['notes/unsaved.md', [33188, '2' * 40], None]],
        'message': 'restored 1111111\n',
    }
    record_path(repo_dir).write_text(json.dumps(record))
    listed = cps.list()
    assert (desk / 'notes' / 'unsaved.md').read_text() == 'unsaved work no checkpoint holds'
    assert cps.last_recovery is not None and 'does not hold' in cps.last_recovery.message
    assert not record_path(repo_dir).exists()
    assert 'notes/unsaved.md' in version_of(repo_dir, listed[0].checkpoint_id)
    # A record naming real commits but entries they do not hold is refused too.
    record.update(target=_full(repo_dir, first), before=_full(repo_dir, listed[0].checkpoint_id))
    record_path(repo_dir).write_text(json.dumps(record))
    cps.list()
    assert 'does not match' in cps.last_recovery.message
    assert (desk / 'notes' / 'unsaved.md').exists()


@pytest.mark.parametrize('field', ['message', 'label'])
def test_a_journal_with_a_lone_surrogate_is_refused_not_a_crash(
    cps: Checkpoints, desk: Path, repo_dir: Path, field: str
) -> None:
    """Found by tests/product/test_fuzz_repository_files.py: JSON allows a lone surrogate
    (``\\udc00``), which no commit message can hold; the completion raised UnicodeEncodeError from
    every verb."""
    write(desk, 'notes/a.md', 'one')
    first = cps.snapshot('first')
    write(desk, 'notes/a.md', 'two')
    second = cps.snapshot('second')
    assert first is not None and second is not None
    record = {
        'format': 2,
        'label': first,
        'target': _full(repo_dir, first),
        'before': _full(repo_dir, second),
        'pids': [1],
        'started_at': 0,
        # A record that would be completed: the pre-snapshot holds 'two', the target 'one'.
        'changes': [['notes/a.md', [33188, _blob(b'two')], [33188, _blob(b'one')]]],
        'message': f'restored {first}\n',
    }
    record[field] = 'odd \udc00 text'
    record_path(repo_dir).write_text(json.dumps(record))  # written as the escape \udc00
    assert '\\udc00' in record_path(repo_dir).read_text()
    cps.list()
    assert cps.last_recovery is not None
    assert not record_path(repo_dir).exists()
    assert (desk / 'notes' / 'a.md').read_text() == 'two'


def _blob(data: bytes) -> str:
    from dulwich.objects import Blob

    return Blob.from_string(data).id.decode()


def _full(repo_dir: Path, short: str) -> str:
    repo = Repo(str(repo_dir))
    try:
        return next(sha for sha in repo.object_store if sha.startswith(short.encode())).decode()
    finally:
        repo.close()


def test_names_that_are_not_utf8_are_left_out_reported_and_never_lost(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    write(desk, 'notes/plain.md', 'plain')
    odd = os.path.join(os.fsencode(desk), b'notes', b'caf\xe9.md')
    with open(odd, 'wb') as handle:
        handle.write(b'latin-1 name')
    result = cps.snapshot_with_result('with an odd name')
    assert ('notes/caf\udce9.md', 'its name is not valid UTF-8') in result.skipped
    assert list(version_of(repo_dir, result.checkpoint_id)) == ['notes/plain.md']
    write(desk, 'notes/plain.md', 'changed')
    restored = cps.restore_with_result(result.checkpoint_id)
    assert restored.deleted == ()
    assert open(odd, 'rb').read() == b'latin-1 name'
    cps.seal()
    assert cps.snapshot('again') is None
    assert cps.undo().written == ('notes/plain.md',)
    assert open(odd, 'rb').read() == b'latin-1 name'
    assert 'notes/caf\udce9.md' not in cps.status().to_dict()['changes']


def test_snapshot_memory_is_bounded_by_a_constant(tmp_path: Path) -> None:
    """Eight distinct 64 MiB files (sparse, so the test is cheap) in one snapshot: the peak
    memory must not grow with their total size (512 MiB)."""
    code = f"""
import os, resource, sys
from pathlib import Path
from trading_checkpoints import Checkpoints
desk = Path({str(tmp_path / 'desk')!r})
(desk / 'notes').mkdir(parents=True)
(desk / 'notes' / 'small.md').write_text('small')
cps = Checkpoints(Path({str(tmp_path / 'repo.git')!r}), desk, durable=False)
cps.snapshot('small')
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
for i in range(8):
    with open(desk / 'notes' / f'big{{i}}.bin', 'wb') as handle:
        handle.write(f'header {{i}}'.encode())
        handle.truncate(64 * 1024 * 1024)
result = cps.snapshot_with_result('big')
assert result.checkpoint_id and not result.skipped, result
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print((peak - base) // 1024)
"""
    done = python(code, timeout=300)
    assert done.returncode == 0, done.stderr
    grown_mib = int(done.stdout.strip())
    assert grown_mib < 128, f'memory grew by {grown_mib} MiB for 512 MiB of files'
    cps = Checkpoints(tmp_path / 'repo.git', tmp_path / 'desk')
    assert cps.show(cps.list()[0].checkpoint_id, 'notes/big3.bin')[:8] == b'header 3'


def test_names_with_a_carriage_return_are_left_out_and_reported(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    write(desk, 'notes/plain.md', 'plain')
    write(desk, 'notes/a\rb.md', 'carriage return in the name')
    result = cps.snapshot_with_result('with a CR name')
    assert [path for path, _ in result.skipped] == ['notes/a\rb.md']
    assert list(version_of(repo_dir, result.checkpoint_id)) == ['notes/plain.md']
    assert cps.restore_with_result(result.checkpoint_id).deleted == ()
