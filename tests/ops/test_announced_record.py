"""The current announcement, kept beside the seal ref (``ops/announced.py``).

An announcement (nothing changed before a write tool: the paths it is about to write) is a
small file replaced without a flush: no pack, no ref, no fsync. It is the seal only while the
seal ref holds the value it stands on, and every move of the seal ref removes it. Anything odd
about the file means no announcement; git never sees one. The power-loss check covers it as
its own operation (``tests/product/test_power_loss.py``, ``announce``).
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import pytest
from helpers.builders import write
from helpers.flushes import FLUSH, recording
from helpers.gitcli import fsck, git, needs_git
from helpers.reading import head_of, seal_id_of, seal_of

from trading_checkpoints import Checkpoints
from trading_checkpoints.desk import vouchprotocol
from trading_checkpoints.errors import FileAccessError
from trading_checkpoints.ops import announced, external, toolcalls, vouched
from trading_checkpoints.ops.session import open_reading
from trading_checkpoints.ops.toolcalls import ToolCall
from trading_checkpoints.store import metadata
from trading_checkpoints.store.repo import ShadowRepo

RECORD = announced.NAME


def _settled(cps: Checkpoints, desk: Path) -> str:
    """A checkpoint, and a seal of it (the desk as the agent left it); returns the checkpoint."""
    write(desk, 'Memory.md', 'start\n')
    write(desk, 'notes/a.md', 'one\n')
    first = cps.snapshot('start', paths=['notes/a.md'], turn='t-1')  # the turn has begun
    assert first is not None
    cps.seal()
    return first


def _announce(cps: Checkpoints, path: str = 'notes/b.md') -> None:
    assert cps.snapshot(f'before Write {path}', tool='Write', paths=[path], turn='t-1') is None


def _announced_paths(repo_dir: Path) -> tuple[str, ...] | None:
    """The paths the current announcement declares; None when the seal is no announcement."""
    seal = seal_of(repo_dir)
    if seal is None or metadata.action_of(seal.message) != external.ANNOUNCE:
        return None
    return metadata.parse(seal.message).paths


def _packs(repo_dir: Path) -> list[str]:
    return sorted(os.listdir(repo_dir / 'objects' / 'pack'))


def test_an_announcement_writes_no_object_no_ref_and_flushes_nothing(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    _settled(cps, desk)
    packs, ref = _packs(repo_dir), (repo_dir / 'refs/checkpoints/sealed').read_bytes()
    with recording() as events:
        _announce(cps)
    assert [str(event) for event in events if event.kind == FLUSH] == []
    assert _packs(repo_dir) == packs and not list((repo_dir / 'objects').glob('??/*'))
    assert (repo_dir / 'refs/checkpoints/sealed').read_bytes() == ref
    assert (repo_dir / RECORD).is_file()
    assert _announced_paths(repo_dir) == ('notes/b.md',)
    seal = seal_of(repo_dir)
    assert seal is not None and seal.parents == (head_of(repo_dir).encode(),)
    assert metadata.writer_of(seal.message) == metadata.Writer('t-1')


@needs_git
def test_git_sees_the_seal_before_it_and_the_repository_stays_sound(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    _settled(cps, desk)
    sealed = git(repo_dir, 'rev-parse', 'refs/checkpoints/sealed').strip()
    _announce(cps)
    assert git(repo_dir, 'rev-parse', 'refs/checkpoints/sealed').strip() == sealed
    assert seal_id_of(repo_dir) != sealed.encode()
    fsck(repo_dir)
    write(desk, 'notes/b.md', 'the tool wrote this\n')
    assert cps.status().external == (), "the announced write is the agent's"
    cps.seal()
    assert not (repo_dir / RECORD).exists(), 'the seal removes the record'
    assert git(repo_dir, 'log', '-1', '--format=%B', 'refs/checkpoints/sealed').startswith(
        'sealed: the state the agent left\n\nCheckpoint-Turn: t-1\n'
    ), 'the seal keeps the announced turn'
    fsck(repo_dir)


def test_a_seal_naming_the_same_checkpoint_ends_the_announcement(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    """The seal ref names the newest checkpoint (a restore left it so); an announcement stands
    on that value; a seal of the unchanged desk names the same checkpoint again, which leaves
    the ref's value as it was: the announcement must end all the same."""
    first = _settled(cps, desk)
    write(desk, 'notes/a.md', 'two\n')
    assert cps.snapshot('two') is not None
    cps.restore(first)
    head = head_of(repo_dir).encode()
    assert seal_id_of(repo_dir) == head, 'a restore seals the newest checkpoint'
    _announce(cps)
    assert _announced_paths(repo_dir) == ('notes/b.md',)
    assert head.decode().startswith(cps.seal())
    assert _announced_paths(repo_dir) is None and seal_id_of(repo_dir) == head
    write(desk, 'notes/b.md', 'a person, after the seal\n')
    assert cps.status().external == ('notes/b.md',)


def _torn(data: bytes) -> bytes:
    return data[:-12]


def _other_version(data: bytes) -> bytes:
    return data.replace(b'announced 1 ', b'announced 2 ', 1)


def _other_base(data: bytes) -> bytes:
    header, _, raw = data.partition(b'\n')
    version, _, rest = header.partition(b' 1 ')
    return version + b' 1 ' + b'-' + rest[rest.index(b' ') :] + b'\n' + raw


def _no_header(data: bytes) -> bytes:
    return data.partition(b'\n')[2]


def _renamed(data: bytes, change) -> bytes:
    """The record with its commit's bytes changed by ``change``, under their new id (as a
    hostile writer would make it)."""
    header, _, raw = data.partition(b'\n')
    raw = change(raw)
    sha = hashlib.sha1(b'commit %d\0' % len(raw) + raw).hexdigest().encode()
    return header.rsplit(b' ', 1)[0] + b' ' + sha + b'\n' + raw


def _a_seal(data: bytes) -> bytes:
    return _renamed(data, lambda raw: raw.replace(b'Checkpoint-Action: announce\n', b''))


def _two_parents(data: bytes) -> bytes:
    return _renamed(data, lambda raw: re.sub(rb'(parent [0-9a-f]{40}\n)', rb'\1\1', raw))


def _another_tree(data: bytes) -> bytes:
    return _renamed(data, lambda raw: re.sub(rb'^tree [0-9a-f]{40}', b'tree ' + b'1' * 40, raw))


@pytest.mark.parametrize(
    'spoil',
    [
        _torn,
        _other_version,
        _other_base,
        _no_header,
        lambda _: b'',
        lambda _: b'\n' * 9,
        _a_seal,
        _two_parents,
        _another_tree,
    ],
    ids=[
        'torn',
        'other-version',
        'other-base',
        'no-header',
        'empty',
        'blank-lines',
        'a-seal',
        'two-parents',
        'another-tree',
    ],
)
def test_an_odd_record_is_no_announcement(
    cps: Checkpoints, desk: Path, repo_dir: Path, spoil
) -> None:
    _settled(cps, desk)
    sealed = seal_id_of(repo_dir)
    _announce(cps)
    record = repo_dir / RECORD
    record.write_bytes(spoil(record.read_bytes()))
    assert seal_id_of(repo_dir) == sealed
    assert _announced_paths(repo_dir) is None
    write(desk, 'notes/b.md', 'written after the record was spoiled\n')
    assert cps.status().external == ('notes/b.md',), 'measured against the seal before'


@pytest.mark.parametrize('kind', ['link', 'fifo', 'folder', 'too-large'])
def test_a_record_that_is_not_a_small_regular_file_is_no_announcement(
    cps: Checkpoints, desk: Path, repo_dir: Path, tmp_path: Path, kind: str
) -> None:
    """A hostile repository: nothing is followed, opened to block, or read whole."""
    _settled(cps, desk)
    sealed = seal_id_of(repo_dir)
    _announce(cps)
    record = repo_dir / RECORD
    data = record.read_bytes()
    record.unlink()
    if kind == 'link':
        (tmp_path / 'elsewhere').write_bytes(data)
        record.symlink_to(tmp_path / 'elsewhere')
    elif kind == 'fifo':
        os.mkfifo(record)
    elif kind == 'folder':
        record.mkdir()
    else:
        record.write_bytes(data + b' ' * announced.MAX_BYTES)
    assert seal_id_of(repo_dir) == sealed and _announced_paths(repo_dir) is None
    assert cps.snapshot('nothing changed') is None
    assert _announced_paths(repo_dir) == (), 'announced again, the odd file replaced'
    assert not record.is_symlink() and (tmp_path / 'elsewhere').exists() == (kind == 'link')


@needs_git
def test_an_announcement_too_large_for_its_file_is_stored_as_a_commit(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    _settled(cps, desk)
    paths = [f'notes/{index:05d}-{"x" * 80}.md' for index in range(3000)]
    assert cps.snapshot('before a large write', tool='Write', paths=paths) is None
    assert not (repo_dir / RECORD).exists()
    message = git(repo_dir, 'log', '-1', '--format=%B', 'refs/checkpoints/sealed')
    assert metadata.action_of(message) == external.ANNOUNCE
    assert _announced_paths(repo_dir) == tuple(paths)
    _announce(cps)  # a small one again: the file, standing on the stored one
    assert _announced_paths(repo_dir) == ('notes/b.md',)
    fsck(repo_dir)


def test_a_record_that_cannot_be_removed_stops_the_seal(
    cps: Checkpoints, desk: Path, repo_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A seal that could not end the announcement it stands on is not written: the
    announcement would otherwise outlive it (the same ref value, the record still on it)."""
    first = _settled(cps, desk)
    write(desk, 'notes/a.md', 'two\n')
    cps.snapshot('two')
    cps.restore(first)
    _announce(cps)
    sealed = seal_id_of(repo_dir)
    real = ShadowRepo.write_private

    def refused(repo: ShadowRepo, name: str, data: bytes | None) -> None:
        if data is None:
            raise FileAccessError('refused', path=str(repo.path / name), action='delete')
        real(repo, name, data)

    monkeypatch.setattr(ShadowRepo, 'write_private', refused)
    with pytest.raises(FileAccessError):
        cps.seal()
    monkeypatch.undo()
    assert seal_id_of(repo_dir) == sealed and _announced_paths(repo_dir) == ('notes/b.md',)


def test_what_a_watchers_answer_depends_on_changes_with_an_announcement(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    """The watcher's kept no-op answer holds only for the seal it was made under: an
    announcement (the seal ref unmoved) is a new seal."""
    _settled(cps, desk)

    def now() -> vouchprotocol.State:
        with open_reading(cps.desk_config) as session:
            assert session is not None
            head = session.repo.head()
            assert head is not None
            return vouched.state(session, head, ())

    before = now()
    _announce(cps)
    after = now()
    assert before.head == after.head and before.seal != after.seal
    assert after.seal == (seal_id_of(repo_dir) or b'').decode()


def test_a_shell_command_that_changed_nothing_ends_an_announcement_on_the_sealed_checkpoint(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    """A restore left the seal ref on the newest checkpoint; a write tool announced; then a
    shell command of the turn changed nothing: its end seals the desk, so the announcement
    ends (what changes later is no longer the tool's)."""
    first = _settled(cps, desk)
    write(desk, 'notes/a.md', 'two\n')
    cps.snapshot('two')
    cps.restore(first)
    _announce(cps)
    call = ToolCall('toolu_9', 'Bash', metadata.Writer('t-1'))
    assert toolcalls.before_shell(cps.desk_config, call, 'before Bash: ls') is None
    assert toolcalls.after_shell(cps.desk_config, call, 'after Bash: ls').checkpoint_id is None
    assert _announced_paths(repo_dir) is None
    assert seal_id_of(repo_dir) == head_of(repo_dir).encode()


def test_a_seal_a_later_checkpoint_superseded_is_blamed_as_it_was(
    cps: Checkpoints, desk: Path
) -> None:
    """Blame at a seal's id: the file as the seal holds it, even once a later checkpoint
    (with a person's line) superseded the seal and the seal ref still names it."""
    write(desk, 'notes/a.md', 'one\n')
    cps.snapshot('start', paths=['notes/a.md'], turn='t-1')
    write(desk, 'notes/a.md', 'one\ntwo by the agent\n')
    seal = cps.seal()
    write(desk, 'notes/a.md', 'one\ntwo by the agent\nthree by a person\n')
    assert cps.snapshot('later') is not None
    for announce in (False, True):
        if announce:
            _announce(cps)
        lines = cps.blame('notes/a.md', seal).lines
        assert [line.text for line in lines] == ['one', 'two by the agent'], announce


def _raw_commit(tree: bytes, parent: bytes, size: int) -> bytes:
    """An announcement's raw bytes, exactly ``size`` of them (its subject padded)."""
    head = (
        b'tree ' + tree + b'\nparent ' + parent + b'\n'
        b'author A <a@example.com> 0 +0000\ncommitter A <a@example.com> 0 +0000\n\n'
    )
    tail = b'\n\nCheckpoint-Action: announce\n'
    return head + b'x' * (size - len(head) - len(tail)) + tail


@pytest.mark.parametrize('over', [0, 1])
def test_a_record_of_the_largest_size_is_kept_and_one_byte_more_is_not(
    cps: Checkpoints, desk: Path, repo_dir: Path, over: int
) -> None:
    """The record is read back whole up to its size limit; a larger announcement is refused
    before anything is written (the caller stores it as a commit)."""
    _settled(cps, desk)
    repo = ShadowRepo.open(repo_dir)
    assert repo is not None
    try:
        head = repo.head()
        assert head is not None
        tree = repo.commit_info(head).tree
        seal = repo.read_ref(external.SEAL_REF)
        header = len(b'announced 1  ') + len(seal or b'-') + 40 + 1  # the first line, its newline
        raw = _raw_commit(tree, head, announced.MAX_BYTES - header + over)
        assert announced.write(repo, seal, raw) is (over == 0)
        _, found = announced.read(repo, external.SEAL_REF, again=True)
    finally:
        repo.close()
    if over:
        assert found is None and not (repo_dir / RECORD).exists()
    else:
        assert (repo_dir / RECORD).stat().st_size == announced.MAX_BYTES
        assert found is not None and found.parents == (head,)


@needs_git
def test_an_announcements_id_is_the_one_git_gives_its_bytes(
    cps: Checkpoints, desk: Path, repo_dir: Path, tmp_path: Path
) -> None:
    _settled(cps, desk)
    _announce(cps)
    raw = (repo_dir / RECORD).read_bytes().partition(b'\n')[2]
    (tmp_path / 'commit').write_bytes(raw)
    named = git(repo_dir, 'hash-object', '-t', 'commit', str(tmp_path / 'commit')).strip()
    assert seal_id_of(repo_dir) == named.encode()
