"""``snapshot.settled``: whether a capture would do nothing, read without the lock. The hook
after a shell command not on record, and the watch, skip the locked session when it says so,
so it says so only for a desk equal to its newest checkpoint, sealed as such, with nothing
pending: anything else is no (the capture then looks under the lock)."""

from __future__ import annotations

import time
from functools import partial
from pathlib import Path

from helpers.builders import old_then_new, write
from helpers.faults import kill_until_pending
from helpers.reading import opened

from trading_checkpoints import Checkpoints
from trading_checkpoints.ops import external, journal, snapshot
from trading_checkpoints.store import metadata


def settle(cps: Checkpoints) -> None:
    """Past the second of the last change, the stat cache refreshed and the desk sealed."""
    time.sleep(1.05 - time.time() % 1)
    assert cps.snapshot('refresh the stat cache') is None
    cps.seal()


def checkpointed(cps: Checkpoints, desk: Path) -> None:
    """A file written and checkpointed, then the desk settled."""
    write(desk, 'notes/a.md', 'a\n')
    cps.snapshot('a')
    settle(cps)


def test_a_desk_equal_to_its_sealed_checkpoint_is_settled(cps: Checkpoints, desk: Path) -> None:
    checkpointed(cps, desk)
    assert snapshot.settled(cps.desk_config)
    write(desk, 'notes/a.md', 'changed\n')
    assert not snapshot.settled(cps.desk_config), 'a change'


def test_no_repository_or_no_checkpoint_is_not_settled(workspace: Path, desk: Path) -> None:
    cps = Checkpoints.open(workspace / '.checkpoints' / 'main.git', desk)
    assert not snapshot.settled(cps.desk_config)
    assert not cps.repository_directory.exists(), 'looked at only'
    cps.seal()  # the repository made, with no checkpoint
    assert cps.repository_directory.is_dir() and cps.list(None) == []
    assert not snapshot.settled(cps.desk_config)


def test_a_write_announced_and_not_sealed_is_not_settled(cps: Checkpoints, desk: Path) -> None:
    """The seal ref still names the newest checkpoint (an announcement is kept beside it)."""
    checkpointed(cps, desk)
    assert cps.snapshot('before Write', tool='Write', paths=['notes/b.md']) is None
    assert metadata.parse(in_flight_message(cps)).paths == ('notes/b.md',), 'announced'
    assert not snapshot.settled(cps.desk_config)


def in_flight_message(cps: Checkpoints) -> str:
    """The announced write's message."""
    with opened(cps.repository_directory) as repo:
        message = external.in_flight(repo)
    assert message is not None
    return message


def test_an_interrupted_restore_is_not_settled(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    old = old_then_new(cps, desk)
    settle(cps)
    kill_until_pending(repo_dir, partial(cps.restore, old))
    assert journal.pending(repo_dir)
    assert not snapshot.settled(cps.desk_config)


def test_a_head_that_needs_repair_is_not_settled(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    checkpointed(cps, desk)
    (repo_dir / 'HEAD').write_text('ref: refs/heads/other\n')
    assert not snapshot.settled(cps.desk_config)


def test_a_repository_that_cannot_be_read_is_not_settled(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    checkpointed(cps, desk)
    (repo_dir / 'config').write_bytes(b'[core\n\x00 not a config\n')
    assert not snapshot.settled(cps.desk_config)
