"""The MCP server end to end: the SDK's stdio client starts `python -m trading_checkpoints mcp`."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.builders import write
from helpers.processes import python
from helpers.reading import tree_of

from trading_checkpoints import Checkpoints
from trading_checkpoints.workspace import Workspace

mcp = pytest.importorskip('mcp', reason="the MCP SDK is not installed (pip install '.[mcp]')")

from helpers.mcpclient import Session, field, run_server  # noqa: E402 - after the importorskip


def test_tools_are_listed_with_json_schemas(workspace: Path) -> None:
    async def script(client: Session) -> None:
        listed = await client.session.list_tools()
        tools = {tool.name: tool for tool in listed.tools}
        assert set(tools) >= {
            'list_desks',
            'list_checkpoints',
            'list_turns',
            'snapshot',
            'restore',
            'restore_turn',
            'diff',
            'show_file',
            'undo',
            'redo',
            'status',
            'log',
            'seal',
            'prune',
        }
        restore = field(tools['restore'], 'input_schema', 'inputSchema')
        assert 'required' not in restore  # an id, or a time: one of them (the tool checks)
        assert {'checkpoint_id', 'at'} <= set(restore['properties'])
        assert restore['properties']['dry_run']['type'] == 'boolean'
        limit = field(tools['list_checkpoints'], 'input_schema', 'inputSchema')['properties']
        assert limit['limit']['minimum'] == 0
        output = field(tools['list_checkpoints'], 'output_schema', 'outputSchema')
        assert set(output['properties']) == {'desk', 'checkpoints'}
        assert field(tools['restore'], 'annotations', 'annotations') is not None

    run_server(workspace, script)


def test_snapshot_list_restore_and_errors(workspace: Path, desk: Path) -> None:
    write(desk, 'Memory.md', 'v1')
    write(desk, 'scratch.txt', 'untracked')

    async def script(client: Session) -> None:
        first = await client.ok('snapshot', reason='before the agent edits')
        assert first['changed'] and first['desk'] == 'main'
        again = await client.ok('snapshot', reason='nothing changed')
        assert again == {'desk': 'main', 'checkpoint_id': None, 'changed': False}

        write(desk, 'Memory.md', 'v2')
        write(desk, 'notes/new.md', 'new')
        listed = await client.ok('list_checkpoints')
        [row] = listed['checkpoints']
        assert row['id'] == first['checkpoint_id'] and row['reason'] == 'before the agent edits'
        assert row['tool'] == 'mcp:snapshot'

        restored = await client.ok('restore', checkpoint_id=first['checkpoint_id'])
        assert restored['written'] == ['Memory.md'] and restored['deleted'] == ['notes/new.md']
        assert restored['undo_hint'] == f'restore {restored["before_id"]}'
        assert (desk / 'Memory.md').read_text() == 'v1' and not (desk / 'notes').exists()
        assert (desk / 'scratch.txt').read_text() == 'untracked'
        await client.ok('restore', checkpoint_id=restored['before_id'])
        assert (desk / 'notes/new.md').read_text() == 'new', 'the restore was undoable'

        assert 'is not a checkpoint id' in await client.error('restore', checkpoint_id='zzz')
        assert 'no checkpoint' in await client.error('restore', checkpoint_id='abcdef1')
        assert 'not a desk name' in await client.error('list_checkpoints', desk='../etc')
        assert 'no desk' in await client.error('snapshot', reason='x', desk='missing')
        assert await client.error('list_checkpoints', limit=-1)  # schema-validated
        assert await client.error('snapshot')  # a required argument is missing
        # The server survived every error.
        assert len((await client.ok('list_checkpoints', limit=2))['checkpoints']) == 2

    run_server(workspace, script)
    assert (desk / 'notes/new.md').exists()


def test_turns_and_desks_over_mcp(workspace: Path) -> None:
    ws = Workspace(workspace)
    research = ws.desk('research', create=True)
    write(research.desk_directory, 'Memory.md', 'v0')
    with research.turn('update memory', message_id='msg_1'):
        with research.guard('write_file Memory.md'):
            write(research.desk_directory, 'Memory.md', 'v1')
        with research.guard('write_file notes/a.md'):
            write(research.desk_directory, 'notes/a.md', 'a')

    async def script(client: Session) -> None:
        desks = await client.ok('list_desks')
        assert desks['desks'] == ['main', 'research'] and desks['default_desk'] == 'research'
        assert (await client.ok('list_checkpoints', desk='main'))['checkpoints'] == []
        turns = (await client.ok('list_turns'))['turns']
        assert [t['turn_id'] for t in turns] == ['msg_1']
        assert turns[0]['label'] == 'update memory' and len(turns[0]['checkpoints']) == 2
        assert turns[0]['checkpoints'][0]['paths'] == ['notes/a.md']
        rewound = await client.ok('restore_turn', turn_id='msg_1')
        assert rewound['target_id'] == turns[0]['first_checkpoint']
        assert rewound['deleted'] == ['notes/a.md']
        assert "no turn 'msg_2'" in await client.error('restore_turn', turn_id='msg_2')

        # An MCP agent groups its own snapshots by passing its message id.
        memory = research.desk_directory / 'Memory.md'
        first = await client.ok(
            'snapshot', reason='before edit', turn_id='msg_3', turn_label='two edits'
        )
        assert first['changed'], "a turn's first snapshot is kept even when nothing changed"
        memory.write_text('v1 by mcp')
        await client.ok('snapshot', reason='before second edit', turn_id='msg_3')
        memory.write_text('v2 by mcp')
        [turn] = [t for t in (await client.ok('list_turns'))['turns'] if t['turn_id'] == 'msg_3']
        assert turn['label'] == 'two edits' and turn['first_checkpoint'] == first['checkpoint_id']
        await client.ok('restore_turn', turn_id='msg_3')
        assert memory.read_text() == 'v0'
        assert 'one word' in await client.error('snapshot', reason='x', turn_id='a b')

    run_server(workspace, script, '--desk', 'research')
    assert tree_of(research.desk_directory) == {'Memory.md': ('-', b'v0')}


def test_history_tools(workspace: Path, desk: Path) -> None:
    """show_file, diff, dry runs of restore and restore_turn, and undo, over the wire."""
    write(desk, 'Memory.md', 'v0')
    cps = Checkpoints(workspace / '.checkpoints' / 'main.git', desk)
    with cps.turn('edit', message_id='msg_1'):
        with cps.guard('write_file Memory.md'):
            write(desk, 'Memory.md', 'v1')
    first = cps.snapshot('v1')
    assert first is not None
    write(desk, 'Memory.md', 'v2')

    async def script(client: Session) -> None:
        shown = await client.ok('show_file', checkpoint_id=first, path='Memory.md')
        assert shown['content'] == 'v1' and shown['exists'] and shown['encoding'] == 'utf-8'
        changed = await client.ok('diff', from_id=first)
        assert [c['path'] for c in changed['changes']] == ['Memory.md']
        assert changed['from_id'] == first and changed['to_id'] is None
        preview = await client.ok('restore', checkpoint_id=first, dry_run=True)
        assert preview['dry_run'] and preview['written'] == ['Memory.md']
        assert preview['undo_hint'] is None
        # v2 came after the turn: the rewind refuses, and so does its dry run.
        refused = await client.error('restore_turn', turn_id='msg_1', dry_run=True)
        assert 'would refuse to rewind turn msg_1' in refused and 'force=true' in refused
        turn_preview = await client.ok('restore_turn', turn_id='msg_1', dry_run=True, force=True)
        assert turn_preview['dry_run'] and turn_preview['written'] == ['Memory.md']
        assert (desk / 'Memory.md').read_text() == 'v2', 'dry runs write nothing'
        undone = await client.ok('undo')
        assert undone['action'] == 'undo' and undone['written'] == ['Memory.md']
        assert (desk / 'Memory.md').read_text() == 'v1', 'undo discards the change since v1'

    run_server(workspace, script)


def test_missing_extra_gives_a_clear_message(workspace: Path) -> None:
    code = (
        'import sys; sys.modules["mcp"] = None\n'  # what an environment without the SDK sees
        'from trading_checkpoints.cli import main\n'
        f'sys.argv = ["checkpoints", "--workspace", {str(workspace)!r}, "mcp"]\n'
        'main()\n'
    )
    done = python(code, timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "error: the MCP server needs the optional 'mcp' extra: "
        "pip install 'trading-checkpoints[mcp]'"
    )
