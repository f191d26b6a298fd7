"""The no-op snapshot's memos: the packed-commit memo on disk and the plain-config reader."""

from __future__ import annotations

from io import BytesIO
from pathlib import Path

import pytest
from dulwich.config import ConfigFile
from helpers.builders import write
from hypothesis import example, given, settings
from hypothesis import strategies as st

from trading_checkpoints import CheckpointError, Checkpoints
from trading_checkpoints.store import objectread
from trading_checkpoints.store import repo as repo_module
from trading_checkpoints.store.commitmemo import NAME
from trading_checkpoints.store.config import reader as configload
from trading_checkpoints.store.config import syntax as configsyntax


def _forget() -> None:
    repo_module._COMMITS.clear()


def test_packed_head_is_remembered_on_disk(repo_dir: Path, desk: Path, monkeypatch) -> None:
    for i in range(80):
        write(desk, f'memory/m{i}.md', f'n{i}')
    first = Checkpoints(repo_dir, desk).snapshot('many objects, one pack')
    assert first and list((repo_dir / 'objects' / 'pack').glob('*.pack'))
    memo = repo_dir / 'checkpoints' / NAME
    _forget()
    assert Checkpoints(repo_dir, desk).snapshot('no-op') is None
    assert memo.is_file()  # the packed newest commit was read once and kept
    _forget()
    opened = []
    original = objectread.ObjectReader.read
    monkeypatch.setattr(
        objectread.ObjectReader, 'read', lambda self, *a: opened.append(a) or original(self, *a)
    )
    assert Checkpoints(repo_dir, desk).snapshot('no-op again') is None
    assert opened == []  # a new process's no-op reads no git object
    assert [c.checkpoint_id for c in Checkpoints(repo_dir, desk).list()] == [first]


def test_the_memo_answers_list_but_a_damaged_pack_is_still_found(
    repo_dir: Path, desk: Path
) -> None:
    """The memo holds commits checked against their ids, so listing needs no pack; everything
    that reads trees or blobs from a damaged pack still says it is damaged."""
    for i in range(80):
        write(desk, f'memory/m{i}.md', f'n{i}')
    first = Checkpoints(repo_dir, desk).snapshot('packed')
    write(desk, 'Memory.md', 'then one more')
    Checkpoints(repo_dir, desk).snapshot('loose')
    assert (repo_dir / 'checkpoints' / NAME).is_file()
    pack = next((repo_dir / 'objects' / 'pack').glob('*.pack'))
    pack.chmod(0o644)
    data = pack.read_bytes()
    pack.write_bytes(data[: len(data) // 3])
    _forget()
    assert [c.reason for c in Checkpoints(repo_dir, desk).list()] == ['loose', 'packed']
    with pytest.raises(CheckpointError):
        Checkpoints(repo_dir, desk).restore(first)


def test_list_in_a_new_process_imports_no_dulwich(repo_dir: Path, desk: Path) -> None:
    import subprocess
    import sys

    for i in range(80):
        write(desk, f'memory/m{i}.md', f'n{i}')
    Checkpoints(repo_dir, desk).snapshot('packed')
    for i in range(3):
        write(desk, 'Memory.md', f'v{i}')
        Checkpoints(repo_dir, desk).snapshot(f'loose {i}')
    root = Path(__file__).resolve().parent.parent
    code = (
        'import sys; from pathlib import Path\n'
        'from trading_checkpoints.ops.listing import list_checkpoints\n'
        f'print([c.reason for c in list_checkpoints(Path({str(repo_dir)!r}), 20)])\n'
        'print(any(m.startswith("dulwich") for m in sys.modules))'
    )
    out = subprocess.run(
        [sys.executable, '-c', code],
        capture_output=True,
        text=True,
        check=True,
        env={'PYTHONPATH': str(root), 'PATH': ''},
    ).stdout.splitlines()
    assert out == ["['loose 2', 'loose 1', 'loose 0', 'packed']", 'False']


def test_torn_memo_is_ignored(repo_dir: Path, desk: Path) -> None:
    for i in range(80):
        write(desk, f'memory/m{i}.md', f'n{i}')
    first = Checkpoints(repo_dir, desk).snapshot('packed')
    _forget()
    Checkpoints(repo_dir, desk).snapshot('no-op')
    memo = repo_dir / 'checkpoints' / NAME
    memo.write_bytes(memo.read_bytes().replace(b'packed', b'forged'))
    _forget()
    assert Checkpoints(repo_dir, desk).list()[0].reason == 'packed'
    assert Checkpoints(repo_dir, desk).list()[0].checkpoint_id == first


def test_a_forged_memo_entry_is_not_believed(repo_dir: Path, desk: Path) -> None:
    """Found by tests/product/test_fuzz_repository_files.py: the memo lives in the repository, so
    anyone may write it. An entry (well formed, filed under the real id) that gave the newest commit
    itself as its parent made list() repeat it and turns(), undo() and log() loop forever; one with
    another tree made restore() put back files the checkpoint never held."""
    from dulwich.object_store import DiskObjectStore

    from trading_checkpoints.store import commitmemo

    cps = Checkpoints(repo_dir, desk)
    write(desk, 'notes/a.md', 'one')
    first = cps.snapshot('first')
    write(desk, 'notes/a.md', 'two')
    second = cps.snapshot('second')
    cps.prune()  # one pack: both commits are packed
    _forget()
    assert Checkpoints(repo_dir, desk).snapshot('no-op') is None  # writes the memo
    assert (repo_dir / 'checkpoints' / NAME).is_file()
    head = (repo_dir / 'refs' / 'heads' / 'main').read_bytes().strip()
    store = DiskObjectStore(str(repo_dir / 'objects'))
    raw = store[head].as_raw_string()
    parent = store[head].parents[0]
    first_tree = store[parent].tree
    store.close()
    forged = raw.replace(b'parent ' + parent, b'parent ' + head)
    forged = forged.replace(raw.split(b'\n', 1)[0], b'tree ' + first_tree)
    commitmemo.append(repo_dir, [commitmemo.record(head, forged)])  # the last word on head
    _forget()
    cps = Checkpoints(repo_dir, desk)
    assert [c.checkpoint_id for c in cps.list(limit=10)] == [second, first]
    assert [e.checkpoint.checkpoint_id for e in cps.log(limit=10)] == [second, first]
    cps.turns()
    assert cps.show(second, 'notes/a.md') == b'two'
    assert not cps.diff(second).changes


def _reference(data: bytes) -> tuple[object, object]:
    config = ConfigFile.from_file(BytesIO(data))
    try:
        tracked = (
            tuple(
                v.decode('utf-8', 'surrogateescape')
                for v in config.get_multivar(b'checkpoints', b'tracked')
            )
            or None
        )
    except KeyError:
        tracked = None
    try:
        limit = config.get(b'checkpoints', b'maxFileSize').decode('utf-8', 'replace')
    except KeyError:
        limit = None
    return tracked, limit


_LINES = st.one_of(
    st.sampled_from(
        [
            b'[checkpoints]',
            b'[Checkpoints]',
            b'[core]',
            b'',
            b'  ',
            b'\tbare = true',
            b'\ttracked = a b',
            b'tracked=x',
            b'\tmaxFileSize = 10M',
            b'[remote "o"]',
        ]
    ),
    st.builds(
        lambda key, value: b'\t' + key + b' = ' + value,
        st.sampled_from([b'tracked', b'maxFileSize', b'TRACKED']),
        st.binary(max_size=8).filter(lambda b: b'\n' not in b),
    ),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_LINES, max_size=8))
def test_plain_config_reader_agrees_with_dulwich(lines: list[bytes]) -> None:
    data = b'\n'.join(lines) + b'\n'
    if configsyntax._simple_config(data) is None:
        return  # dulwich's parser reads it
    got = (
        configload._parse_tracked(data, Path('config')),
        configload._parse_value(data, b'checkpoints', b'maxFileSize', Path('config')),
    )
    assert got == _reference(data)


def test_our_own_config_takes_the_plain_reader(repo_dir: Path, desk: Path) -> None:
    write(desk, 'Memory.md', 'x')
    Checkpoints(repo_dir, desk).snapshot('first')
    assert configsyntax._simple_config((repo_dir / 'config').read_bytes()) is not None


_VALUE_BYTES = [b'a', b'B', b' ', b'  ', b'=', b'\xc3', b'#', b'"', b'\\', b'\t']
_PLAIN_LINES = st.one_of(
    _LINES,
    st.builds(
        lambda indent, key, gap, value, tail: indent + key + gap + b'=' + gap + value + tail,
        st.sampled_from([b'', b' ', b'\t', b' \t']),
        st.sampled_from([b'tracked', b'a-b', b'x1', b'1x', b'k_v']),
        st.sampled_from([b'', b' ', b'\t']),
        st.lists(st.sampled_from(list(_VALUE_BYTES)), max_size=6).map(b''.join),
        st.sampled_from([b'', b' ', b'\r']),
    ),
    st.sampled_from([b'[a-b]', b'[a b]', b'[a.b]', b' [core]', b'[core] ', b'[]', b'\r']),
)


@settings(max_examples=1000, deadline=None)
@example(b'[core]', [b'\ttracked = a '])
@example(b'', [b'tracked = a'])
@example(b'[core]', [b'tracked =\ta'])
@example(b'[core]', [b'[a b]', b'x = 1'])
@given(st.sampled_from([b'[core]', b'[Checkpoints]', b'']), st.lists(_PLAIN_LINES, max_size=6))
def test_plain_config_reader_agrees_with_the_full_parser(first: bytes, lines: list[bytes]) -> None:
    data = b'\n'.join([first, *lines]) + b'\n'
    plain = configsyntax.simple_entries(data)
    if plain is None:
        return  # the full parser reads it
    full, _ = configsyntax.full_parse(data, Path('config'))
    as_read = [(s.section, s.subsection, s.name, s.value, s.line) for s in plain]
    assert as_read == [(s.section, s.subsection, s.name, s.value, s.line) for s in full]


def test_tree_entries_are_kept_per_repository_within_a_budget(tmp_path: Path) -> None:
    desk = tmp_path / 'desk'
    for i in range(3):
        (desk / 'notes' / f'd{i}').mkdir(parents=True)
        (desk / 'notes' / f'd{i}' / 'a.md').write_text(f'{i}')
    cps = Checkpoints(tmp_path / 'repo.git', desk)
    sha = cps.snapshot('one')
    assert sha is not None
    memo = objectread._TREES
    memo.clear()
    repo = repo_module.ShadowRepo.open(tmp_path / 'repo.git')
    assert repo is not None
    try:
        root = repo.commit_info(repo.head()).tree
        first = repo.tree_entries(root)
        assert memo.held == len(first) and repo.tree_entries(root) is first  # read once
        old_limit = memo.limit
        memo.limit = len(first) + 1  # the next tree does not fit: all forgotten first
        try:
            notes = next(child for name, _, child in first if name == b'notes')
            listed = repo.tree_entries(notes)
            assert list(memo) == [(str(repo.path), notes)] and memo.held == len(listed)
        finally:
            memo.limit = old_limit
    finally:
        repo.close()
        memo.clear()
