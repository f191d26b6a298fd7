"""The restore record (``ops/journal.py``): written and read back exactly, cut to size, and read
as untrusted input: a record that cannot be read, understood or trusted is refused saying why
in one short line, and a path in it is never followed out of the desk.

Each test pins a safety check: it fails when ``benchmarks/mutation.py`` breaks that check,
and it runs in this process, where mutation testing sees the calls.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers.builders import put
from helpers.reading import ALLOW, files_of, head_of

from trading_checkpoints import CheckpointError, Checkpoints
from trading_checkpoints.core.trees import FILE_MODE, SYMLINK_MODE
from trading_checkpoints.desk.checkout import Plan
from trading_checkpoints.errors import CorruptRepositoryError
from trading_checkpoints.ops import journal as journal_module

SHA_A, SHA_B, BLOB_SHA = 'a' * 40, 'b' * 40, 'c' * 40


def _record(**changes: object) -> dict:
    record = {
        'format': 2,
        'label': 'abc1234',
        'target': SHA_A,
        'before': SHA_B,
        'pids': [11, 12],
        'started_at': 1700000000.5,
        'changes': [
            ['notes/a.md', [0o100644, BLOB_SHA], [0o100755, BLOB_SHA]],
            ['notes/gone.md', [0o120000, BLOB_SHA], None],
            ['Memory.md', None, [0o100644, BLOB_SHA]],
        ],
        'message': 'restored abc1234\n\nAction: restore\n',
    }
    record.update(changes)
    return record


def _read_record(tmp_path: Path, data: object) -> journal_module.Record | None:
    repo_dir = tmp_path / 'repo.git'
    path = journal_module.record_path(repo_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return journal_module.read(repo_dir, ALLOW)


def test_a_record_reads_back_exactly(tmp_path: Path) -> None:
    record = _read_record(tmp_path, _record())
    assert record == journal_module.Record(
        label='abc1234',
        target=SHA_A,
        before=SHA_B,
        pids=(11, 12),
        started_at=1700000000.5,
        changes=(
            journal_module.Change(
                'notes/a.md', (0o100644, BLOB_SHA.encode()), (0o100755, BLOB_SHA.encode())
            ),
            journal_module.Change('notes/gone.md', (0o120000, BLOB_SHA.encode()), None),
            journal_module.Change('Memory.md', None, (0o100644, BLOB_SHA.encode())),
        ),
        message='restored abc1234\n\nAction: restore\n',
    )
    old = _record(format=1)
    del old['message']
    assert _read_record(tmp_path, old).message == 'restored abc1234\n'  # type: ignore[union-attr]
    assert journal_module.read(tmp_path / 'no-repo.git', ALLOW) is None


def test_what_a_record_holds_is_cut_to_size(tmp_path: Path) -> None:
    record = _read_record(
        tmp_path,
        _record(label='  many\n words\t' + 'x' * 200, pids=list(range(100)), message='m' * 70000),
    )
    assert record is not None
    assert record.label == ('many words ' + 'x' * 200)[:100]
    assert record.pids == tuple(range(64))
    assert record.message == 'm' * 65536


def test_begin_writes_what_read_gives_back(tmp_path: Path) -> None:
    repo_dir = tmp_path / 'repo.git'
    journal_module.record_path(repo_dir).parent.mkdir(parents=True)
    blob = BLOB_SHA.encode()
    plan = Plan(write=['notes/a.md', 'notes/new.md'], delete=['notes/gone.md'])
    current = {'notes/a.md': (FILE_MODE, blob), 'notes/gone.md': (FILE_MODE, blob)}
    target = {'notes/a.md': (SYMLINK_MODE, blob), 'notes/new.md': (FILE_MODE, blob)}
    empty = journal_module.begin(repo_dir, 'l', b'a' * 40, b'b' * 40, Plan([], []), {}, {}, 'm')
    assert empty is None and not journal_module.pending(repo_dir)
    written = journal_module.begin(
        repo_dir, 'label', SHA_A.encode(), SHA_B.encode(), plan, current, target, 'msg\n', (7,)
    )
    assert written is not None and written.pids == (7, os.getpid())
    assert journal_module.read(repo_dir, ALLOW) == written
    assert [c.path for c in written.changes] == ['notes/a.md', 'notes/gone.md', 'notes/new.md']
    journal_module.finish(repo_dir)
    journal_module.finish(repo_dir)  # already gone: fine
    assert not journal_module.pending(repo_dir)


def test_a_record_that_cannot_be_written_or_removed_is_an_error_naming_it(tmp_path: Path) -> None:
    repo_dir = tmp_path / 'repo.git'
    repo_dir.mkdir()
    (repo_dir / 'checkpoints').write_text('a file where the private folder should be')
    blob = BLOB_SHA.encode()
    plan = Plan(write=['notes/a.md'], delete=[])
    with pytest.raises(CheckpointError) as caught:
        journal_module.begin(
            repo_dir,
            'l',
            SHA_A.encode(),
            SHA_B.encode(),
            plan,
            {},
            {'notes/a.md': (FILE_MODE, blob)},
            'm',
        )
    assert str(caught.value).startswith(
        f'cannot write the restore record {journal_module.record_path(repo_dir)}: '
    )
    (repo_dir / 'checkpoints').unlink()
    record = journal_module.record_path(repo_dir)
    (record / 'in-the-way').mkdir(parents=True)  # a folder, not empty, where the record is
    with pytest.raises(CheckpointError) as removing:
        journal_module.finish(repo_dir)
    assert str(removing.value) == f'cannot remove the restore record {record}: Is a directory'


@pytest.mark.parametrize(
    ('record', 'why'),
    [
        ('{"format": 2, "label": ', 'Expecting value: line 1 column 24 (char 23)'),
        ('[1, 2]', 'unknown format'),
        ('{"format": "2"}', 'unknown format'),
        (_record(format=3), 'unknown format'),
        (_record(changes=[[7, None, None]]), 'a path is not a string'),
        (
            _record(changes=[['scratch.txt', None, None]]),
            "the checkpoint holds 'scratch.txt', which is outside the tracked paths "
            'Memory.md, memory, notes, skills/agent',
        ),
        (_record(changes=[['notes/a.md', None, [0o100664, BLOB_SHA]]]), 'bad mode 33204'),
        (_record(changes=[['notes/a.md', None, ['33188', BLOB_SHA]]]), "bad mode '33188'"),
        (
            _record(changes=[['notes/a.md', None, [0o100644, 'C' * 40]]]),
            f'bad object id {"C" * 40!r}',
        ),
        (_record(changes=[['notes/a.md', None, [True, BLOB_SHA]]]), 'bad mode True'),
        (_record(changes=[['notes/a.md', [0o100644, 7], None]]), 'bad object id 7'),
        (_record(label=7), 'a label or message is not a string'),
        (_record(message=None), 'a label or message is not a string'),
        (_record(target='A' * 40), 'bad checkpoint id'),
        (_record(before=SHA_B[:39]), 'bad checkpoint id'),
        (_record(pids=['x']), "invalid literal for int() with base 10: 'x'"),
        (_record(label='x', message=7), 'a label or message is not a string'),
    ],
)
def test_a_record_that_cannot_be_understood_is_refused_saying_why(
    tmp_path: Path, record: object, why: str
) -> None:
    with pytest.raises(CorruptRepositoryError) as caught:
        _read_record(tmp_path, record)
    message = str(caught.value)
    path = journal_module.record_path(tmp_path / 'repo.git')
    assert message == (
        f'the restore record {path} is unreadable or unsafe ({why}); the restore it describes '
        'cannot be completed'
    )


def test_a_record_that_cannot_be_read_is_refused_saying_why(tmp_path: Path) -> None:
    path = journal_module.record_path(tmp_path / 'repo.git')
    path.mkdir(parents=True)  # a folder where the record should be
    with pytest.raises(CorruptRepositoryError) as caught:
        journal_module.read(tmp_path / 'repo.git', ALLOW)
    assert str(caught.value) == f'cannot read the restore record {path}: it is not a regular file'


def test_a_hostile_record_is_reported_in_one_short_line(tmp_path: Path) -> None:
    hostile = _record(changes=[['notes/' + 'x\n' * 400 + 'end', None, None]])
    with pytest.raises(CorruptRepositoryError) as caught:
        _read_record(tmp_path, hostile)
    reason = str(caught.value).partition(' (')[2].rpartition('); ')[0]
    assert '\n' not in reason and len(reason) == 160 and reason.endswith('...')
    for length, shown in ((62, 160), (63, 160)):  # reasons of 160 and 161 characters
        with pytest.raises(CorruptRepositoryError) as caught:
            _read_record(tmp_path, _record(changes=[['z' * length, None, None]]))
        reason = str(caught.value).partition(' (')[2].rpartition('); ')[0]
        assert len(reason) == shown and reason.endswith('...') == (length == 63)


def test_a_record_naming_a_tracked_folder_then_dotdot_is_never_followed(tmp_path: Path) -> None:
    """``memory/../../outside.txt`` starts inside the allowlist: only the path check stops it."""
    desk = tmp_path / 'desk'
    repo_dir = tmp_path / 'repo.git'
    put(desk, 'memory/a.md', '-', b'v1')
    cps = Checkpoints(repo_dir, desk)
    assert cps.snapshot('v1') is not None
    head = head_of(repo_dir)
    blob = '0' * 40
    record = {
        'format': 2,
        'label': 'x',
        'target': head,
        'before': head,
        'pids': [1],
        'started_at': 0,
        'changes': [['memory/../../outside.txt', None, [33188, blob]]],
        'message': 'restored x\n',
    }
    journal_module.record_path(repo_dir).write_text(json.dumps(record))
    before = files_of(tmp_path)
    result = cps.snapshot_with_result('next')
    assert result.recovered and "unsafe path 'memory/../../outside.txt'" in result.recovered
    assert not (tmp_path / 'outside.txt').exists()
    assert {k: v for k, v in files_of(tmp_path).items() if not k.startswith('repo.git/')} == {
        k: v for k, v in before.items() if not k.startswith('repo.git/')
    }
    assert not journal_module.pending(repo_dir)
