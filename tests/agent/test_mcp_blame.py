"""The MCP ``blame`` tool and the prompt in ``log``, over stdio, on a desk written by two turns,
a person and a process ``checkpoints watch`` saw."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.authors import four_writers

from trading_checkpoints import Checkpoints

pytest.importorskip('mcp', reason="the MCP SDK is not installed (pip install '.[mcp]')")

from helpers.mcpclient import Session, field, run_server  # noqa: E402 - after the importorskip


def test_blame_names_each_line_s_checkpoint_and_writer_and_log_the_prompt(
    workspace: Path, cps: Checkpoints, desk: Path
) -> None:
    ids = four_writers(cps, desk)

    async def script(client: Session) -> None:
        tools = {tool.name: tool for tool in (await client.session.list_tools()).tools}
        schema = field(tools['blame'], 'output_schema', 'outputSchema')
        assert {'desk', 'path', 'checkpoint', 'lines'} <= set(schema['properties'])
        blamed = await client.ok('blame', path='Memory.md')
        assert blamed['desk'] == 'main' and blamed['checkpoint'] is None
        rows = [(r['checkpoint'], r['who'], r['turn'], r['label']) for r in blamed['lines']]
        assert rows == [
            (ids['start'], 'unknown', None, None),
            (ids['t-1'], 'agent', 't-1', 'add AAPL to the watchlist'),
            (ids['t-2'], 'agent', 't-2', 'set the risk limit'),
            (ids['person'], 'outside', None, None),
            (ids['watch'], 'watch', None, None),
        ]
        older = await client.ok('blame', path='Memory.md', checkpoint_id=ids['t-2'])
        assert older['checkpoint'] == ids['t-2'] and len(older['lines']) == 3
        at_time = await client.ok('blame', path='Memory.md', at='2025-03-14T14:33:30Z')
        assert at_time['checkpoint'] == ids['t-2']
        missing = await client.error('blame', path='notes/plan.md')
        assert missing.endswith("blame: the desk holds no file 'notes/plan.md'")
        log = await client.ok('log', limit=5)
        labels = {entry['turn']: entry['turn_label'] for entry in log['entries']}
        assert labels == {
            None: None,
            't-1': 'add AAPL to the watchlist',
            't-2': 'set the risk limit',
        }

    run_server(workspace, script)
