"""The scan at its edges: a file vanishing between the walk and its reading, files above the
streaming threshold hashed without a store, names it must leave out or take, a file over
the size limit carried over while the stat cache is there, and a file replaced while it is
read keeping the entry (a symlink's too) the stat cache holds for it.

Files vanish at an exact moment through an audit hook in this process (``helpers.faults``),
where mutation testing sees the calls; each test pins a check found by
``benchmarks/mutation.py`` (scan).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers.builders import write
from helpers.faults import armed
from helpers.reading import files_of, tracked, version_of

from trading_checkpoints import Checkpoints
from trading_checkpoints.core.paths import TRACKED_PATHS, Allowlist
from trading_checkpoints.core.trees import EXECUTABLE_MODE, FILE_MODE, SYMLINK_MODE, blob_id
from trading_checkpoints.desk import statcache
from trading_checkpoints.desk.folders import DeskFolders
from trading_checkpoints.desk.scan import REPLACED, STREAM_THRESHOLD
from trading_checkpoints.desk.scan import scan as scan_desk
from trading_checkpoints.desk.statcache import StatCache
from trading_checkpoints.store.repo import PRIVATE_DIR


def _reads_a_desk_file(event: str, args: tuple) -> bool:
    """An open for reading of a desk file by its bare name (through its folder's descriptor)."""
    if event != 'open' or len(args) < 3 or not isinstance(args[0], str):
        return False
    flags = args[2]
    return (
        '/' not in args[0]
        and args[0].endswith('.md')
        and isinstance(flags, int)
        and not flags & (os.O_WRONLY | os.O_RDWR)
    )


@pytest.mark.parametrize('listing', ['same files', 'a file added'])
def test_a_file_vanishing_mid_scan_is_left_out_and_the_rest_kept_in_order(
    cps: Checkpoints, desk: Path, repo_dir: Path, listing: str
) -> None:
    """Every file changed, in two folders: the first one the scan opens to read vanishes just
    then; all the others are read, and each keeps its own row."""
    paths = [f'{folder}/{name}.md' for folder in ('notes', 'memory') for name in 'abcd']
    for path in paths:
        write(desk, path, f'{path}, first\n')
    assert cps.snapshot('first') is not None
    for path in paths:
        write(desk, path, f'{path}, second version\n')
    if listing == 'a file added':
        write(desk, 'notes/g.md', 'added\n')
    vanished: list[str] = []

    def remove_the_first_read(event: str, args: tuple) -> None:
        if not vanished and _reads_a_desk_file(event, args):
            found = [p for p in paths if p.endswith('/' + args[0])]
            vanished.extend(found[:1])
            os.unlink(desk / found[0])

    with armed(remove_the_first_read):
        result = cps.snapshot_with_result('a file vanishes while the desk is read')
    assert vanished and result.checkpoint_id is not None
    recorded = version_of(repo_dir, result.checkpoint_id)
    assert recorded == tracked(files_of(desk))
    assert vanished[0] not in recorded
    for path in paths:
        if path != vanished[0]:
            assert recorded[path] == ('-', f'{path}, second version\n'.encode())
    assert cps.snapshot('nothing more') is None
    assert cps.status().changes == ()


def test_large_files_are_hashed_in_chunks_alike_with_and_without_a_store(
    repo_dir: Path, desk: Path
) -> None:
    size = STREAM_THRESHOLD + 3 * (1 << 20) + 1  # whole chunks, and one byte
    large = os.urandom(size)
    write(desk, 'notes/large.bin', large)
    write(desk, 'Memory.md', 'a')
    cps = Checkpoints(repo_dir, desk, max_file_size=size)  # exactly at the limit: kept
    first = cps.snapshot('large')  # hashed while written to the store
    assert first is not None
    assert version_of(repo_dir, first)['notes/large.bin'] == ('-', large)
    (repo_dir / 'checkpoints' / 'statcache').unlink()
    status = cps.status()  # hashed again, without a store
    assert status.changes == () and status.skipped == ()
    with open(desk / 'notes' / 'large.bin', 'r+b') as handle:
        handle.seek(size - 1)
        handle.write(bytes([large[-1] ^ 1]))  # the last byte of the last chunk
    assert [c.path for c in cps.status().changes] == ['notes/large.bin']
    restored = cps.restore_with_result(first)  # re-reads the large file it overwrites
    assert restored.written == ('notes/large.bin',)
    assert (desk / 'notes' / 'large.bin').read_bytes() == large
    smaller = Checkpoints(repo_dir, desk, max_file_size=size - 1)
    assert [path for path, _ in smaller.status().skipped] == ['notes/large.bin']


def test_names_the_scan_takes_and_leaves(cps: Checkpoints, desk: Path, repo_dir: Path) -> None:
    taken = ['notes/.hidden.md', 'notes/café.md', 'notes/.gitX', 'notes/.gitignore']
    for path in taken:
        write(desk, path, path)
    unstorable = ['notes/back\\slash.md', 'notes/new\nline.md', 'notes/carriage\rreturn.md']
    for path in unstorable:
        write(desk, path, 'a name git cannot store')
    for nested in ('.git', '.GIT', '.git.', '.git '):
        write(desk, f'notes/sub/{nested}/config', 'a nested repository')
    result = cps.snapshot_with_result('names')
    assert result.checkpoint_id is not None
    assert sorted(version_of(repo_dir, result.checkpoint_id)) == sorted(taken)
    # The nested repositories are left out silently; the unstorable names are reported.
    assert sorted(path for path, _ in result.skipped) == sorted(unstorable)
    assert all(why.startswith('its name has ') for _, why in result.skipped)


@pytest.mark.parametrize('kind', ['-', 'x'])
def test_a_file_growing_past_the_limit_keeps_its_version_with_the_cache(
    repo_dir: Path, desk: Path, kind: str
) -> None:
    cps = Checkpoints(repo_dir, desk, max_file_size=1000)
    write(desk, 'notes/grows.md', 'small enough\n')
    if kind == 'x':
        (desk / 'notes' / 'grows.md').chmod(0o755)
    write(desk, 'notes/other.md', 'first\n')
    first = cps.snapshot('first')
    assert first is not None
    write(desk, 'notes/grows.md', 'y' * 5000)  # past the limit, the stat cache still there
    write(desk, 'notes/other.md', 'second\n')
    write(desk, 'notes/added.md', 'added\n')
    result = cps.snapshot_with_result('after the growth')
    assert result.checkpoint_id is not None, 'the other changes were not recorded'
    assert result.skipped == (
        ('notes/grows.md', 'it is larger than the maximum file size (1000 bytes)'),
    )
    held = version_of(repo_dir, result.checkpoint_id)
    assert held['notes/grows.md'] == (kind, b'small enough\n')
    assert held['notes/other.md'] == ('-', b'second\n') and 'notes/added.md' in held
    newest = cps.list()[0]  # other.md changed, added.md added: grows.md is not counted
    assert (newest.files_changed, newest.lines_added, newest.lines_removed) == (2, 2, 1)
    assert cps.snapshot('again') is None


@pytest.mark.parametrize('change', ['swapped', 'gone'])
def test_a_folder_swapped_or_gone_mid_walk_leaves_the_rest_walked(
    desk: Path, tmp_path: Path, change: str
) -> None:
    """The first of three sibling folders the walk opens is swapped for a new folder (reported
    as replaced) or moved out of the desk just then; its siblings are walked all the same."""
    for name in 'abc':
        write(desk, f'notes/{name}/inside.md', name)
    write(desk, 'notes/top.md', 'top')
    write(desk, 'Memory.md', 'memory')
    acted: list[str] = []

    def swap_the_first_subfolder(event: str, args: tuple) -> None:
        if acted or event != 'open' or args[0] not in ('a', 'b', 'c'):
            return
        if not isinstance(args[2], int) or not args[2] & os.O_DIRECTORY:
            return
        acted.append(args[0])
        os.rename(desk / 'notes' / args[0], tmp_path / f'moved-{args[0]}')
        if change == 'swapped':
            write(desk, f'notes/{args[0]}/new.md', 'a new folder in its place')

    with DeskFolders(desk) as folders, armed(swap_the_first_subfolder):
        result = scan_desk(folders, Allowlist(TRACKED_PATHS), StatCache())
    assert acted
    others = {f'notes/{name}/inside.md' for name in 'abc' if name != acted[0]}
    assert set(result.names) == {'Memory.md', 'notes/top.md', *others}
    if change == 'swapped':
        assert result.skipped == [(f'notes/{acted[0]}', REPLACED)]
    else:
        assert result.skipped == []


def _replace_when_read(desk: Path, tmp_path: Path, path: str):  # noqa: ANN202 - an audit action
    """An audit action: just before the scan opens ``path`` to read it, another file (a new
    inode) is renamed over it, so the file read is not the one the walk saw."""
    name = path.rpartition('/')[2]
    done: list[str] = []

    def act(event: str, args: tuple) -> None:
        if done or event != 'open' or args[0] != name or not isinstance(args[2], int):
            return
        if args[2] & (os.O_WRONLY | os.O_RDWR):
            return
        done.append(path)
        fresh = tmp_path / 'fresh.md'
        fresh.write_text('another file, put in its place just then\n')
        os.rename(fresh, desk / path)

    return act, done


@pytest.mark.parametrize('kind', ['link', 'x', '-'])
def test_a_file_replaced_while_read_keeps_its_cached_entry(
    cps: Checkpoints, desk: Path, repo_dir: Path, tmp_path: Path, kind: str
) -> None:
    """A person turned ``notes/kept.md`` (a symlink, an executable or a plain file in the
    newest checkpoint) into a file with new content; while the scan reads it, it is replaced
    again. The snapshot records the other change and keeps the checkpoint's entry, its kind
    included; the next snapshot, with no race, records the file as it is."""
    full = desk / 'notes' / 'kept.md'
    write(desk, 'notes/other.md', 'first\n')
    if kind == 'link':
        full.parent.mkdir(parents=True, exist_ok=True)
        os.symlink('elsewhere/target.md', full)
        held = ('link', b'elsewhere/target.md')
    else:
        write(desk, 'notes/kept.md', 'kept\n')
        full.chmod(0o755 if kind == 'x' else 0o644)
        held = (kind, b'kept\n')
    assert cps.snapshot('first') is not None
    full.unlink()
    write(desk, 'notes/kept.md', 'rewritten by a person\n')
    write(desk, 'notes/other.md', 'second\n')
    act, done = _replace_when_read(desk, tmp_path, 'notes/kept.md')
    with armed(act):
        result = cps.snapshot_with_result('while it is replaced')
    assert done and result.checkpoint_id is not None
    assert result.skipped == (('notes/kept.md', REPLACED),)
    recorded = version_of(repo_dir, result.checkpoint_id)
    assert recorded['notes/kept.md'] == held
    assert recorded['notes/other.md'] == ('-', b'second\n')
    after = cps.snapshot_with_result('no race now')
    assert after.checkpoint_id is not None and after.skipped == ()
    assert version_of(repo_dir, after.checkpoint_id)['notes/kept.md'] == (
        '-',
        b'another file, put in its place just then\n',
    )


@pytest.mark.parametrize('kind', ['link', 'x', '-'])
def test_the_scan_carries_a_replaced_file_once_with_its_mode(
    cps: Checkpoints, desk: Path, repo_dir: Path, tmp_path: Path, kind: str
) -> None:
    """The scan's own result for the race above: the file is carried (once, even when the
    session carries it again), with the cached entry's git mode, and is neither removed nor
    trusted by its stat."""
    full = desk / 'notes' / 'kept.md'
    if kind == 'link':
        full.parent.mkdir(parents=True, exist_ok=True)
        os.symlink('elsewhere/target.md', full)
        held = (SYMLINK_MODE, blob_id(b'elsewhere/target.md'))
    else:
        write(desk, 'notes/kept.md', 'kept\n')
        full.chmod(0o755 if kind == 'x' else 0o644)
        held = (EXECUTABLE_MODE if kind == 'x' else FILE_MODE, blob_id(b'kept\n'))
    write(desk, 'notes/other.md', 'first\n')
    assert cps.snapshot('first') is not None
    full.unlink()
    write(desk, 'notes/kept.md', 'rewritten by a person\n')
    cache = statcache.load(repo_dir / PRIVATE_DIR / 'statcache', b'')
    assert 'notes/kept.md' in cache.index
    act, done = _replace_when_read(desk, tmp_path, 'notes/kept.md')
    with DeskFolders(desk) as folders, armed(act):
        result = scan_desk(folders, Allowlist(TRACKED_PATHS), cache)
    assert done
    assert result.carried == {'notes/kept.md'} and 'notes/kept.md' not in result.removed
    assert result.files['notes/kept.md'] == held
    assert result.key('notes/kept.md') == (-1, -1, -1, -1, -1)
    result.carry('notes/kept.md', held)  # what the session does for a file not yet carried
    assert result.names.count('notes/kept.md') == 1
    assert len(result.numbers) == statcache.FIELDS * len(result.names)
    assert len(result.shas) == statcache.SHA_SIZE * len(result.names)


@pytest.mark.parametrize('listing', ['same files', 'a file added'])
def test_a_large_file_changed_is_stored_by_the_snapshot(
    cps: Checkpoints, desk: Path, repo_dir: Path, listing: str
) -> None:
    """A file above the streaming threshold is written to the store as it is hashed (it is
    never kept in memory), whichever way the scan compares the desk with the stat cache."""
    size = STREAM_THRESHOLD + 1
    write(desk, 'notes/large.bin', b'a' * size)
    write(desk, 'notes/other.md', 'first\n')
    assert cps.snapshot('first') is not None
    write(desk, 'notes/large.bin', b'b' * size)
    if listing == 'a file added':
        write(desk, 'notes/added.md', 'added\n')
    step = cps.snapshot('the large file changed')
    assert step is not None
    assert version_of(repo_dir, step)['notes/large.bin'] == ('-', b'b' * size)


def test_a_file_grown_past_the_streaming_threshold_is_not_read_back_for_line_counts(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    """The scan streams such a file into the store and says so (``stored``): the snapshot's
    line counts then leave its bytes unread (never held whole) and are unknown, rather than
    read back from the store."""
    write(desk, 'notes/grows.md', 'a short text\n')
    assert cps.snapshot('small') is not None
    line = b'a line of a text file that grows large\n'
    write(desk, 'notes/grows.md', line * (STREAM_THRESHOLD // len(line) + 1))
    step = cps.snapshot('large now')
    assert step is not None
    assert version_of(repo_dir, step)['notes/grows.md'][1].startswith(line)
    newest = cps.list()[0]
    assert (newest.files_changed, newest.lines_added, newest.lines_removed) == (1, None, None)


def _put(desk: Path, kind: str, text: str) -> None:
    """``notes/a.md``: a file holding ``text``, or a symlink to it."""
    path = desk / 'notes' / 'a.md'
    if kind == 'file':
        write(desk, 'notes/a.md', text)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    if os.path.lexists(path):
        path.unlink()
    os.symlink(text, path)


def _now(desk: Path, kind: str) -> str:
    path = desk / 'notes' / 'a.md'
    return path.read_text() if kind == 'file' else os.readlink(path)


@pytest.mark.parametrize('kind', ['file', 'symlink'])
def test_a_file_the_scan_read_and_that_changes_during_the_restore_is_stopped_by_its_guard(
    cps: Checkpoints, desk: Path, repo_dir: Path, kind: str
) -> None:
    """The restore trusts the scan's own reading of a file or link (the scan names it
    ``hashed``) and reads again only what the stat cache vouched for. One the scan read that
    another writer changes afterwards (here while the pre-snapshot moves the branch) is caught
    by the checkout's guard: the restore completes through its journal, saying so, and every
    version stays in a checkpoint (the unsaved edit in the pre-snapshot, the racing write in
    the save made before completing)."""
    _put(desk, kind, 'v1\n')
    v1 = cps.snapshot('v1')
    _put(desk, kind, 'v2\n')
    assert cps.snapshot('v2') is not None
    _put(desk, kind, 'unsaved edit\n')  # stale in the stat cache: the scan reads it
    done: list[str] = []
    branch = str(repo_dir / 'refs' / 'heads' / 'main')

    def race(event: str, args: tuple) -> None:
        if not done and event == 'os.rename' and os.fsdecode(args[1]) == branch:
            done.append('racing write')
            _put(desk, kind, 'racing write\n')

    assert v1 is not None
    with armed(race):
        result = cps.restore_with_result(v1)
    assert done, 'the pre-snapshot moved no branch'
    assert result.recovered is not None, 'the restore started over instead of being guarded'
    assert _now(desk, kind) == 'v1\n'
    kept = set()
    for checkpoint in cps.list(None):
        entry = version_of(repo_dir, checkpoint.checkpoint_id).get('notes/a.md')
        kept.add(None if entry is None else entry[1])
    assert {b'unsaved edit\n', b'racing write\n'} <= kept
