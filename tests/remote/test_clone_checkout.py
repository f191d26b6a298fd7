"""A clone whose first checkout fails part way keeps its repository and its restore record.

A clone that fails before it writes the desk removes the repository it created (nothing of it
is anyone's work); once the first checkout has begun, the restore record in that repository is
what lets the same clone, run again, finish writing the desk, so the repository must stay
(every other command refuses it as an unfinished clone meanwhile). The failure
here is a real error of the file system call that creates the second file (raised by an audit
hook in this process, where mutation testing sees the calls).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from helpers.builders import write
from helpers.faults import armed, lands_a_desk_file
from helpers.reading import files_of

from trading_checkpoints import CheckpointError, Checkpoints
from trading_checkpoints.errors import UnfinishedCloneError
from trading_checkpoints.ops import journal


def _source(tmp_path: Path, files: int = 12) -> tuple[Path, Path]:
    source_desk = tmp_path / 'source'
    for i in range(files):
        write(source_desk, f'notes/{i:02}.md', f'note {i}\n')
    write(source_desk, 'Memory.md', '# memory\n')
    source = tmp_path / 'source.git'
    assert Checkpoints(source, source_desk).snapshot('source') is not None
    return source, source_desk


def _failing_at(count: int):
    """An audit action raising EIO when the ``count``-th desk file is about to be written."""
    seen: list[str] = []

    def action(event: str, args: tuple) -> None:
        if lands_a_desk_file(event, args):
            seen.append(os.fsdecode(args[0]))
            if len(seen) == count:
                raise OSError(errno.EIO, 'injected write error', os.fsdecode(args[0]))

    return action, seen


def test_a_clone_failing_in_its_first_checkout_keeps_its_record(tmp_path: Path) -> None:
    source, source_desk = _source(tmp_path)
    desk = tmp_path / 'desks' / 'main'
    repository = tmp_path / '.checkpoints' / 'main.git'
    action, seen = _failing_at(2)
    with armed(action), pytest.raises(CheckpointError, match='injected write error'):
        Checkpoints.clone(str(source), repository, desk)
    assert len(seen) == 2, 'the first checkout was not under way'
    assert repository.is_dir(), 'the repository holding the restore record was removed'
    assert journal.pending(repository)
    assert 0 < len(files_of(desk)) < len(files_of(source_desk))
    # Any other command refuses the unfinished clone and leaves the record to the clone.
    with pytest.raises(UnfinishedCloneError):
        Checkpoints(repository, desk).list()
    assert journal.pending(repository)
    assert 0 < len(files_of(desk)) < len(files_of(source_desk))


def test_a_clone_failing_in_its_first_checkout_is_resumed_by_cloning_again(
    tmp_path: Path,
) -> None:
    source, source_desk = _source(tmp_path)
    desk = tmp_path / 'desks' / 'main'
    repository = tmp_path / '.checkpoints' / 'main.git'
    action, _ = _failing_at(2)
    with armed(action), pytest.raises(CheckpointError):
        Checkpoints.clone(str(source), repository, desk)
    cps, result, _ = Checkpoints.clone(str(source), repository, desk)
    assert files_of(desk) == files_of(source_desk)
    assert [c.reason for c in cps.list()] == ['source']
    assert result.remote == 'origin' and not journal.pending(repository)
