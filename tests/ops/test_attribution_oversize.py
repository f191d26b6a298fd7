"""Several files over the size limit in one seal: one that cannot be named does not stop the
others from being named, or believed.

A seal names each desk file over ``maxFileSize`` in a ``Checkpoint-Oversize`` trailer (in path
order); the agent's write to such a file is then told apart by its content. A file that
vanished before the seal read it is left out, and so is a value the seal holds that cannot be
parsed (the seal lives in the repository: untrusted); the files after it are still named and
believed. Every step runs in this process, where mutation testing sees the calls; the file
that vanishes is removed by an audit hook at the moment the seal opens it to read it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from dulwich.repo import Repo
from helpers.builders import write
from helpers.faults import armed

from trading_checkpoints import Checkpoints
from trading_checkpoints.core.trees import blob_id
from trading_checkpoints.store import metadata

LIMIT = 1000
OVERSIZE = 'Checkpoint-Oversize'
SEAL = b'refs/checkpoints/sealed'
FIRST, SECOND = 'notes/a.md', 'notes/log.md'  # named in this order
GROWN = {FIRST: b'first output\n' * 400, SECOND: b'second output\n' * 400}


def _grown(cps: Checkpoints, desk: Path, repo_dir: Path) -> None:
    """A checkpoint holding both files small, the limit set, the agent's declared write that
    grows both past it."""
    write(desk, 'Memory.md', 'memory\n')
    for path in GROWN:
        write(desk, path, 'small\n')
    assert cps.snapshot('first') is not None
    config = repo_dir / 'config'
    config.write_text(config.read_text() + f'[checkpoints]\n\tmaxFileSize = {LIMIT}\n')
    cps.snapshot('before write_file', tool='write_file', paths=list(GROWN))
    for path, data in GROWN.items():
        (desk / path).write_bytes(data)


def _values(repo_dir: Path) -> list[str]:
    with Repo(str(repo_dir)) as repo:
        message = repo[repo.refs[SEAL]].message.decode()
    return metadata.trailer_values(message).get(OVERSIZE, [])


def _named(repo_dir: Path) -> dict[str, str]:
    """The seal's oversize values by path: the blob each names."""
    return {value.split(' ')[3]: value.split(' ')[1] for value in _values(repo_dir)}


def test_a_file_vanishing_before_the_seal_reads_it_leaves_the_next_named(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    _grown(cps, desk, repo_dir)
    first = desk / FIRST
    removed: list[str] = []

    def action(event: str, args: tuple) -> None:
        # The seal opening the first file to read it (by its bare name, read-only): it is
        # removed just before.
        if event == 'open' and not removed and args[0] == 'a.md' and isinstance(args[2], int):
            if not args[2] & (os.O_WRONLY | os.O_RDWR):
                removed.append(args[0])
                first.unlink()

    with armed(action):
        cps.seal()
    assert removed == ['a.md'], 'the seal never opened the first file'
    assert _named(repo_dir) == {SECOND: blob_id(GROWN[SECOND]).decode()}
    # The second file is the agent's; the first, gone, differs from the state sealed.
    assert cps.status().external == (FIRST,)


@pytest.mark.parametrize(
    'broken',
    [
        '100644 abc - notes/a.md',  # not a blob id
        '40000 {blob} - notes/a.md',  # a folder's mode
    ],
)
def test_a_value_that_cannot_be_parsed_leaves_the_next_believed(
    cps: Checkpoints, desk: Path, repo_dir: Path, broken: str
) -> None:
    """The seal's first value replaced by one that cannot be parsed: the keeping restore
    reverts the second file as the agent's write, and keeps the first as someone else's."""
    _grown(cps, desk, repo_dir)
    cps.seal()
    assert list(_named(repo_dir)) == [FIRST, SECOND]
    with Repo(str(repo_dir)) as repo:
        sealed = repo[repo.refs[SEAL]]
        commit = sealed.copy()
        value = _values(repo_dir)[0]
        replacement = broken.format(blob=blob_id(GROWN[FIRST]).decode())
        commit.message = sealed.message.replace(value.encode(), replacement.encode())
        repo.object_store.add_object(commit)
        repo.refs[SEAL] = commit.id
    oldest = cps.list()[-1].checkpoint_id
    result = cps.restore_with_result(oldest, force=False)
    assert result.written == (SECOND,)
    assert [kept for kept, _ in result.kept] == [FIRST]
    assert (desk / SECOND).read_text() == 'small\n'
    assert (desk / FIRST).read_bytes() == GROWN[FIRST]
