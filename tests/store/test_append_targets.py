"""What a snapshot's new objects are appended to, and against what they are delta-compressed.

- A damaged pack found earlier in the process is passed over for the next pack (never the end
  of the search): the objects always land somewhere.
- A file's new version is a delta of its previous one when that version is in the pack being
  extended, also when the parent commit lives in another pack (a kept one here), whose tree is
  then read from the repository.

Each test pins a check found by ``benchmarks/mutation.py``, and runs in this process, where
mutation testing sees the calls.
"""

from __future__ import annotations

import random
from pathlib import Path

from helpers.builders import session_turns, write
from helpers.gitcli import fsck
from helpers.reading import files_of, tracked, version_of

from trading_checkpoints import Checkpoints
from trading_checkpoints.store.pack import folder as packfolder


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
