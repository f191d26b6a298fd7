"""The commit memo's lookup: a record is found by its header, newest first, and used only when
its bytes hash to the id asked for (``store/commitmemo.py``)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from trading_checkpoints.store import commitmemo
from trading_checkpoints.store.commitmemo import CommitReader, lookup, record


def _commit(message: bytes) -> tuple[bytes, bytes]:
    raw = (
        b'tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n'
        b'author a <a@b> 1 +0000\ncommitter a <a@b> 1 +0000\n\n' + message
    )
    sha = hashlib.sha1(b'commit %d\0' % len(raw) + raw).hexdigest().encode()
    return sha, raw


def test_a_forged_newer_record_is_passed_over_for_the_genuine_older_one() -> None:
    sha, raw = _commit(b'genuine\n')
    forged = raw.replace(b'genuine', b'forged!')
    data = record(sha, raw) + record(sha, forged)
    assert lookup(data, sha) == raw
    assert lookup(record(sha, forged), sha) is None


def test_records_after_a_torn_one_are_found_and_the_torn_one_is_not() -> None:
    torn_sha, torn_raw = _commit(b'torn\n')
    sha, raw = _commit(b'after\n')
    data = record(torn_sha, torn_raw)[:-5] + record(sha, raw)
    assert lookup(data, sha) == raw
    assert lookup(data, torn_sha) is None  # its bytes run into the next record's: no match


def test_a_header_inside_another_commit_frames_only_bytes_that_hash_to_the_id() -> None:
    """A commit message may hold anything, a record's header included: what such a header
    frames is used only if it is the commit asked for (it hashes to the id)."""
    sha, raw = _commit(b'inner\n')
    carrier_sha, carrier_raw = _commit(b'look: ' + record(sha, raw))
    data = record(carrier_sha, carrier_raw)
    assert lookup(data, sha) == raw  # the very bytes of that commit: as good as its own record
    fake_sha, _ = _commit(b'never stored\n')
    lying = record(fake_sha, raw)  # a header naming another id over the same bytes
    _, carrier_raw = _commit(b'look: ' + lying)
    assert lookup(record(carrier_sha, carrier_raw) + lying, fake_sha) is None


def test_a_run_of_forged_records_gives_the_memo_up_after_a_bounded_number_of_tries() -> None:
    sha, raw = _commit(b'genuine\n')
    forged = [record(sha, raw.replace(b'genuine', b'forge%02d' % n)) for n in range(8)]
    assert lookup(record(sha, raw) + b''.join(forged[:7]), sha) == raw
    assert lookup(record(sha, raw) + b''.join(forged), sha) is None  # 8 failed: no more tries


def test_malformed_sizes_are_skipped(tmp_path: Path) -> None:
    sha, raw = _commit(b'genuine\n')
    header = record(sha, b'')[: -len(b'0\n')]  # the record's header up to its size
    assert lookup(header + b'x1\n' + raw, sha) is None
    assert lookup(header + b'\n' + raw, sha) is None
    assert lookup(header + str(len(raw) + 1).encode() + b'\n' + raw, sha) is None
    assert lookup(record(sha, raw) + header + b'12', sha) == raw  # a newer header, cut short


def test_a_reader_finds_from_the_memo_and_remembers_only_what_it_lacks(tmp_path: Path) -> None:
    (tmp_path / 'checkpoints').mkdir()
    sha, raw = _commit(b'kept\n')
    other_sha, other_raw = _commit(b'new\n')
    commitmemo.append(tmp_path, [record(sha, raw)])
    reader = CommitReader(tmp_path)
    found = reader.find(sha)
    assert found is not None and found.message == 'kept\n'
    reader.remember(sha, raw)  # already on record: not appended again
    reader.remember(other_sha, other_raw)
    reader.flush()
    assert (tmp_path / 'checkpoints' / commitmemo.NAME).read_bytes() == record(sha, raw) + record(
        other_sha, other_raw
    )
    again = CommitReader(tmp_path).find(other_sha)
    assert again is not None and again.message == 'new\n'
    assert CommitReader(tmp_path).find(_commit(b'absent\n')[0]) is None
