"""A restore whose seal could not be written is refused before the desk changes.

The seal (``refs/checkpoints/sealed``) is written last, after the desk is restored. A torn
``packed-refs`` can hold a ref named ``refs/checkpoints`` (the seal's name cut short), and git
(and dulwich) cannot then create a ref below it: the restore must find that out before it
touches a file, and say so, rather than report a failure after having rewritten the desk.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.builders import checkpoints_in, desk_in, new_workspace, repository_in, write
from helpers.reading import ALLOW, files_of, tracked

from trading_checkpoints.errors import CorruptRepositoryError


def _torn_packed_refs(repository: Path, name: bytes) -> None:
    head = (repository / 'refs' / 'heads' / 'main').read_bytes().strip()
    (repository / 'packed-refs').write_bytes(
        b'# pack-refs with: peeled sorted\n' + head + b' ' + name + b'\n'
    )


@pytest.mark.parametrize('paths', [None, ['notes']])
def test_a_restore_that_cannot_seal_changes_nothing(tmp_path: Path, paths: list | None) -> None:
    workspace = new_workspace(tmp_path)
    desk, repository = desk_in(workspace), repository_in(workspace)
    cps = checkpoints_in(workspace)
    write(desk, 'notes/a.md', 'old\n')
    old = str(cps.snapshot('old'))
    write(desk, 'notes/a.md', 'new\n')
    write(desk, 'notes/b.md', 'created since\n')
    cps.snapshot('new')
    write(desk, 'notes/a.md', 'unsaved\n')
    _torn_packed_refs(repository, b'refs/checkpoints')
    before = tracked(files_of(desk), ALLOW)

    with pytest.raises(CorruptRepositoryError, match='refs/checkpoints is a ref'):
        cps.restore(old, paths=paths)

    assert tracked(files_of(desk), ALLOW) == before, 'the desk changed'
    (repository / 'packed-refs').unlink()  # repaired: the same restore then goes through
    cps.restore(old, paths=paths)
    assert (desk / 'notes' / 'a.md').read_text() == 'old\n'
    assert not (desk / 'notes' / 'b.md').exists()
