"""Declared paths cover a file or a folder by whole path components, never by string prefix:
declaring ``notes/a.md`` says nothing about ``notes/a.md.bak``, and declaring ``notes/a`` says
nothing about ``notes/ab.md``; a person's edit there is external, and kept by a restore that
keeps external changes.

Each test pins a safety check: it fails when ``benchmarks/mutation.py`` breaks that check,
and it runs in this process, where mutation testing sees the calls.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.builders import write
from helpers.reading import files_of

from trading_checkpoints import Checkpoints


@pytest.mark.parametrize(
    ('declared', 'agent_writes', 'person_edits'),
    [
        ('notes/a.md', 'notes/a.md', 'notes/a.md.bak'),
        ('notes/a', 'notes/a/inside.md', 'notes/ab.md'),
        ('./notes/a/', 'notes/a/inside.md', 'notes/a.md'),
    ],
)
def test_an_edit_beside_a_declared_path_is_external(
    cps: Checkpoints, desk: Path, declared: str, agent_writes: str, person_edits: str
) -> None:
    write(desk, agent_writes, 'before the agent\n')
    write(desk, person_edits, 'before the person\n')
    first = cps.snapshot('before write_file', tool='write_file', paths=[declared])
    assert first is not None
    write(desk, agent_writes, 'written by the agent\n')
    write(desk, person_edits, 'edited by a person\n')
    status = cps.status()
    assert (status.basis, status.external) == ('declared', (person_edits,))
    result = cps.restore_with_result(first, force=False)  # undo the agent's write only
    assert [path for path, _ in result.kept] == [person_edits]
    assert (desk / agent_writes).read_text() == 'before the agent\n'
    assert (desk / person_edits).read_text() == 'edited by a person\n'


def test_an_edit_inside_a_declared_folder_is_the_agents(cps: Checkpoints, desk: Path) -> None:
    """The control: a path below the declared folder is covered."""
    write(desk, 'notes/a/inside.md', 'before\n')
    first = cps.snapshot('before write_file', tool='write_file', paths=['notes/a'])
    assert first is not None
    write(desk, 'notes/a/inside.md', 'agent\n')
    write(desk, 'notes/a/deeper/new.md', 'agent too\n')
    assert cps.status().external == ()
    cps.restore(first, force=False)
    assert files_of(desk) == {'notes/a/inside.md': ('-', b'before\n')}
