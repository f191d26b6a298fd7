"""What a snapshot's new objects are appended to, and against what they are delta-compressed.

- A damaged pack found earlier in the process is passed over for the next pack (never the end
  of the search): the objects always land somewhere. A tail whose write the system refused
  (an ``OSError``, not damage) is not remembered as damaged: the next snapshot extends it.
- A pack of exactly ``TAIL_MAX`` bytes is still a tail.
- A file's new version is a delta of its previous one when that version is in the pack being
  extended, also when the parent commit lives in another pack (a kept one here), whose tree is
  then read from the repository.

Each test pins a check found by ``benchmarks/mutation.py``, and runs in this process, where
mutation testing sees the calls.
"""

from __future__ import annotations

import errno
import os
import random
from pathlib import Path

from helpers import rawobjects
from helpers.builders import session_turns, write
from helpers.faults import armed
from helpers.gitcli import fsck
from helpers.reading import files_of, history, tracked, version_of

from trading_checkpoints import Checkpoints
from trading_checkpoints.store.pack import append
from trading_checkpoints.store.pack import folder as packfolder
from trading_checkpoints.store.pack.packfile import PackView


def _packs(repo_dir: Path) -> list[Path]:
    return sorted((repo_dir / 'objects' / 'pack').glob('pack-*.pack'))


def test_a_damaged_pack_known_to_the_process_is_passed_over(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    session_turns(cps, desk, 2)
    (damaged,) = _packs(repo_dir)
    damaged.chmod(0o644)
    data = bytearray(damaged.read_bytes())
    data[len(data) // 2] ^= 0xFF  # inside a record: the index and the trailer still agree
    damaged.write_bytes(bytes(data))
    # A larger pack of its own holds the next snapshot's objects: the damaged one stays the
    # smallest, the first one tried, and this process now knows it is damaged.
    write(desk, 'notes/large.bin', random.Random(3).randbytes(60_000))
    assert cps.snapshot('found the damage') is not None
    assert len(_packs(repo_dir)) == 2
    assert damaged.stat().st_size < min(p.stat().st_size for p in _packs(repo_dir) if p != damaged)
    write(desk, 'notes/after.md', 'written after the damage was found\n')
    after = cps.snapshot('passed over')
    assert after is not None
    assert version_of(repo_dir, after) == tracked(files_of(desk))
    assert damaged.read_bytes() == bytes(data)
    packfolder.wait_for_removals()
    assert len(_packs(repo_dir)) == 2


def test_a_parent_in_another_pack_still_gives_delta_bases(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    """A restore's commit names an existing tree; written while the pack holding that tree
    was kept, it lands in a pack of its own. The next snapshot extends the pack holding the
    tree and the long note's previous version: the parent commit is elsewhere, its tree is
    read from the repository, and the note's new version is a delta of the old one."""
    rng = random.Random(4)
    lines = [rng.randbytes(30).hex() + '\n' for _ in range(1000)]  # ~60 KB, not compressible
    write(desk, 'notes/long.md', ''.join(lines))
    write(desk, 'notes/small.md', 'first\n')
    first = cps.snapshot('the long note')
    assert first is not None
    write(desk, 'notes/small.md', 'second\n')
    assert cps.snapshot('a small change') is not None
    (shared,) = _packs(repo_dir)
    shared.with_suffix('.keep').write_text('kept for a while\n')
    cps.restore(first)  # its commit: a pack of its own
    (elsewhere,) = [p for p in _packs(repo_dir) if p != shared]
    shared.with_suffix('.keep').unlink()
    elsewhere.with_suffix('.keep').write_text('kept now\n')
    before = shared.stat().st_size
    lines[500] = 'one line changed\n'
    write(desk, 'notes/long.md', ''.join(lines))
    newest = cps.snapshot('one line of the long note')
    assert newest is not None
    packfolder.wait_for_removals()
    (extended,) = [p for p in _packs(repo_dir) if p != elsewhere]
    assert extended.stat().st_size - before < 2000, 'the new version is stored whole'
    assert version_of(repo_dir, newest)['notes/long.md'] == ('-', ''.join(lines).encode())
    fsck(repo_dir)


def _largest_first(cps: Checkpoints, desk: Path) -> Path:
    """A first checkpoint of 1.5 MB: every pack of a few hundred KB beside it stays below the
    roll-up's limit, so the packs a test makes stay as the appends leave them."""
    write(desk, 'notes/large.bin', random.Random(6).randbytes(1_500_000))
    assert cps.snapshot('the large first checkpoint') is not None
    (largest,) = _packs(cps.repository_directory)
    return largest


def test_a_pack_of_exactly_the_tail_limit_is_extended(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    """A pack of exactly ``TAIL_MAX`` bytes is still the tail: the next snapshot's objects
    are appended to it (a new pack holding both replaces it), not put in a pack of their own."""
    largest = _largest_first(cps, desk)
    tail, blob = rawobjects.pack_of_size(repo_dir / 'objects' / 'pack', append.TAIL_MAX, 5)
    write(desk, 'notes/after.md', 'appended to the tail\n')
    newest = cps.snapshot('onto the tail')
    assert newest is not None
    packfolder.wait_for_removals()
    assert not Path(tail + '.pack').exists(), 'the tail was not extended'
    (extended,) = [p for p in _packs(repo_dir) if p != largest]
    with PackView(str(extended)[: -len('.pack')]) as view:
        assert blob in view and history(repo_dir)[0].encode() in view
    assert version_of(repo_dir, newest) == tracked(files_of(desk))
    fsck(repo_dir)


def test_a_tail_whose_write_the_system_refused_is_tried_again(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    """The system refuses the write of the tail's new pack once (an ``OSError``, not damage):
    the snapshot's objects go into a pack of their own, and the tail, still whole, is the one
    the next snapshot extends (it is not remembered as damaged)."""
    session_turns(cps, desk, 2)
    (tail,) = _packs(repo_dir)
    prefix = os.fspath(repo_dir / 'objects' / 'pack') + os.sep
    refused: list[str] = []

    def refuse_once(event: str, args: tuple) -> None:
        if refused or event != 'open' or not isinstance(args[0], (str, bytes)):
            return
        path, flags = os.fsdecode(args[0]), args[2]
        if path.startswith(prefix) and isinstance(flags, int) and flags & os.O_CREAT:
            refused.append(path)
            raise OSError(errno.EIO, 'injected write error', path)

    write(desk, 'notes/large.bin', random.Random(8).randbytes(40_000))  # its own pack: larger
    with armed(refuse_once):
        assert cps.snapshot('the tail refused once') is not None
    assert refused, 'no pack was written'
    packfolder.wait_for_removals()
    (own,) = [p for p in _packs(repo_dir) if p != tail]
    assert tail.stat().st_size < own.stat().st_size
    write(desk, 'notes/after.md', 'the tail is tried again\n')
    newest = cps.snapshot('onto the tail again')
    assert newest is not None
    packfolder.wait_for_removals()
    assert not tail.exists(), 'the tail was passed over'
    assert own.exists()
    assert version_of(repo_dir, newest) == tracked(files_of(desk))
    fsck(repo_dir)
