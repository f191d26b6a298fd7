"""The desk's policy through the MCP server: ``list_protected`` reads it (no tool changes it),
and the server's restores, undo and turn rewinds refuse to change a protected path."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.builders import checkpoints_in, write

pytest.importorskip('mcp', reason="the MCP SDK is not installed (pip install '.[mcp]')")

from helpers.mcpclient import Session, field, run_server  # noqa: E402 - after the importorskip


def test_the_policy_is_read_only_and_binds_the_server_s_restores(workspace: Path, desk: Path):
    cps = checkpoints_in(workspace)
    write(desk, 'Memory.md', '# Memory\n')
    write(desk, 'notes/limits.md', 'max position 5\n')
    write(desk, 'notes/plan.md', 'plan\n')
    first = cps.snapshot('start')
    cps.protect('notes/limits.md')
    cps.budget('Memory.md', 4)
    write(desk, 'notes/limits.md', 'max position 7\n')
    write(desk, 'notes/plan.md', 'plan 2\n')
    cps.snapshot('the person raises the limit')

    async def script(client: Session) -> None:
        tools = {tool.name: tool for tool in (await client.session.list_tools()).tools}
        hints = field(tools['list_protected'], 'annotations', 'annotations')
        assert field(hints, 'read_only_hint', 'readOnlyHint') is True
        assert not {'protect', 'unprotect', 'budget', 'set_budget'} & set(tools)
        listed = await client.ok('list_protected')
        assert listed == {
            'desk': 'main',
            'protected': ['notes/limits.md'],
            'budgets': [{'path': 'Memory.md', 'bytes': 4, 'tokens': None, 'size': 9, 'over': True}],
        }
        for tool, arguments in (
            ('restore', {'checkpoint_id': first}),
            ('restore', {'checkpoint_id': first, 'paths': ['notes/limits.md']}),
            ('restore', {'checkpoint_id': first, 'dry_run': True}),
            ('undo', {}),
        ):
            text = await client.error(tool, **arguments)
            assert 'refusing to' in text and 'notes/limits.md, protected on this desk' in text
        assert (desk / 'notes' / 'limits.md').read_text() == 'max position 7\n'
        done = await client.ok('restore', checkpoint_id=first, paths=['notes/plan.md'])
        assert done['written'] == ['notes/plan.md']

    run_server(workspace, script)
    assert (desk / 'notes' / 'plan.md').read_text() == 'plan\n'
