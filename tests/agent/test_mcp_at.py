"""``at`` on the MCP tools that take a checkpoint id (restore, diff, show_file) and on log, over
stdio, on checkpoints taken seconds apart."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest
from helpers.builders import checkpoints_in, seconds_apart

from trading_checkpoints import Checkpoint

pytest.importorskip('mcp', reason="the MCP SDK is not installed (pip install '.[mcp]')")

from helpers.mcpclient import Session, field, run_server  # noqa: E402 - after the importorskip


def moment(checkpoint: Checkpoint, seconds: float = 0) -> str:
    return (datetime.fromisoformat(checkpoint.created_at) + timedelta(seconds=seconds)).isoformat()


def test_tools_taking_an_id_take_a_time_instead(workspace: Path, desk: Path) -> None:
    first, middle, newest = seconds_apart(checkpoints_in(workspace), desk, 3)

    async def script(client: Session) -> None:
        tools = {tool.name: tool for tool in (await client.session.list_tools()).tools}
        for name in ('restore', 'diff', 'show_file', 'log'):
            schema = field(tools[name], 'input_schema', 'inputSchema')
            assert 'at' in schema['properties'], name
            assert 'at' not in schema.get('required', []), name

        shown = await client.ok('show_file', path='Memory.md', at=moment(middle, 0.5))
        assert (shown['checkpoint_id'], shown['content']) == (middle.checkpoint_id, 'v1\n')
        diff = await client.ok('diff', at=moment(first))
        assert (diff['from_id'], diff['to_id']) == (first.checkpoint_id, None)
        assert '-v0\n+v2\n' in diff['changes'][0]['patch']
        log = await client.ok('log', at=moment(middle))
        assert [entry['id'] for entry in log['entries']] == [
            middle.checkpoint_id,
            first.checkpoint_id,
        ]
        plan = await client.ok('restore', at=moment(first, 0.9), dry_run=True)
        assert plan['target_id'] == first.checkpoint_id and plan['dry_run'] is True

        early = await client.error('show_file', path='Memory.md', at=moment(first, -30))
        assert f'the oldest, {first.checkpoint_id}, was taken at {first.created_at}' in early
        both = await client.error('restore', checkpoint_id=newest.checkpoint_id, at='0s')
        assert 'give a checkpoint id or a time, not both' in both
        assert 'is not a time' in await client.error('diff', at='last tuesday')
        far = await client.error('show_file', path='Memory.md', at='1000000d')
        assert far.endswith("'1000000d' reaches back past the year 1; give a shorter period, or a "
                            'time (ISO 8601 with an offset (2025-03-14T14:30:00+01:00, or Z for '
                            'UTC), or a period before now (90m, 2h, 3d))')  # fmt: skip
        assert '\n' not in far and 'Overflow' not in far
        assert "missing argument 'checkpoint_id' (or 'at', a time)" in await client.error('restore')

    run_server(workspace, script)
    assert (desk / 'Memory.md').read_text() == 'v2\n'  # only dry runs
