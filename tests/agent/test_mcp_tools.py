"""MCP tools end to end over stdio: status, seal, undo and redo, log and diff by path, prune."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.builders import checkpoints_in, write

from trading_checkpoints.ops.retention import Limits, write_limits

pytest.importorskip('mcp', reason="the MCP SDK is not installed (pip install '.[mcp]')")

from helpers.mcpclient import Session, field, run_server  # noqa: E402 - after the importorskip


def test_tools_declare_input_schemas_typed_results_and_hints(workspace: Path) -> None:
    async def script(client: Session) -> None:
        tools = {tool.name: tool for tool in (await client.session.list_tools()).tools}
        prune = field(tools['prune'], 'input_schema', 'inputSchema')['properties']
        assert prune['dry_run']['default'] is True, 'prune is a dry run unless asked otherwise'
        assert prune['keep']['anyOf'][0]['minimum'] == 1
        assert {'older_than', 'max_size', 'desk'} <= set(prune)
        log = field(tools['log'], 'input_schema', 'inputSchema')['properties']
        assert set(log) == {'desk', 'path', 'limit', 'at'}
        diff = field(tools['diff'], 'input_schema', 'inputSchema')['properties']
        assert diff['paths']['anyOf'][0] == {'items': {'type': 'string'}, 'type': 'array'}
        assert diff['patches']['default'] is True
        outputs = {
            'status': {'desk', 'newest_id', 'clean', 'changes', 'external', 'basis'},
            'log': {'desk', 'path', 'entries'},
            'seal': {'desk', 'seal_id'},
            'redo': {'desk', 'action', 'dry_run', 'target_id', 'before_id', 'restored_id'},
            'undo': {'written', 'created', 'deleted', 'external', 'undo_hint'},
            'prune': {'dry_run', 'limits', 'pruned', 'pruned_count', 'oldest_kept', 'note'},
            'diff': {'from_id', 'to_id', 'paths', 'files_changed', 'changes'},
            'blame': {'desk', 'path', 'checkpoint', 'lines'},
        }
        for name, expected in outputs.items():
            schema = field(tools[name], 'output_schema', 'outputSchema')
            assert expected <= set(schema['properties']), name
        for name in ('status', 'log', 'diff', 'blame'):
            hints = field(tools[name], 'annotations', 'annotations')
            assert field(hints, 'read_only_hint', 'readOnlyHint') is True, name
        hints = field(tools['prune'], 'annotations', 'annotations')
        assert field(hints, 'destructive_hint', 'destructiveHint') is True

    run_server(workspace, script)


def test_status_seal_undo_redo(workspace: Path, desk: Path) -> None:
    write(desk, 'Memory.md', 'v0')
    write(desk, 'notes/a.md', 'a0')
    cps = checkpoints_in(workspace)
    base = cps.snapshot('base')

    async def script(client: Session) -> None:
        clean = await client.ok('status')
        assert clean['clean'] and clean['newest_id'] == base and clean['changes'] == []

        # The agent announces its write, writes, and seals what it left.
        before = await client.ok('snapshot', reason='before write Memory.md')
        assert before['checkpoint_id'] is None, 'nothing changed since the base'
        write(desk, 'Memory.md', 'v1 by the agent')
        sealed = await client.ok('seal')
        assert sealed['desk'] == 'main' and len(sealed['seal_id']) >= 7
        write(desk, 'notes/a.md', 'a1 by a person')  # afterwards, outside the agent

        status = await client.ok('status')
        assert not status['clean'] and status['basis'] == 'sealed'
        assert status['changes'] == [
            {'path': 'Memory.md', 'kind': 'modified'},
            {'path': 'notes/a.md', 'kind': 'modified'},
        ]
        assert status['external'] == ['notes/a.md']

        # Undo reverts the agent's step and keeps the person's unrelated edit.
        planned = await client.ok('undo', dry_run=True)
        assert planned['written'] == ['Memory.md']
        assert planned['kept'] == [{'path': 'notes/a.md', 'reason': 'changed outside the agent'}]
        assert (desk / 'Memory.md').read_text() == 'v1 by the agent', 'a dry run writes nothing'
        undone = await client.ok('undo', force=True)
        assert undone['action'] == 'undo' and undone['target_id'] == base
        assert sorted(undone['written']) == ['Memory.md', 'notes/a.md']
        assert undone['external'] == ['notes/a.md'] and undone['attribution'] == 'sealed'
        assert (desk / 'Memory.md').read_text() == 'v0'
        listed = (await client.ok('list_checkpoints', limit=2))['checkpoints']
        assert [c['action'] for c in listed] == ['undo', 'before-undo']
        assert listed[1]['id'] == undone['before_id']

        preview = await client.ok('redo', dry_run=True)
        assert preview['dry_run'] and preview['action'] == 'redo'
        assert (desk / 'Memory.md').read_text() == 'v0', 'a dry run writes nothing'
        redone = await client.ok('redo')
        assert (
            redone['action'] == 'redo' and redone['undo_hint'] == f'restore {redone["before_id"]}'
        )
        assert (desk / 'Memory.md').read_text() == 'v1 by the agent'
        assert (desk / 'notes/a.md').read_text() == 'a1 by a person', 'nothing was lost'
        assert 'nothing to redo' in await client.error('redo')
        assert (await client.ok('status'))['clean']

    run_server(workspace, script)


def test_log_and_diff_limited_to_paths(workspace: Path, desk: Path) -> None:
    cps = checkpoints_in(workspace)
    write(desk, 'Memory.md', 'm0\n')
    first = cps.snapshot('first')
    write(desk, 'notes/a.md', 'a0\n')
    second = cps.snapshot('second', tool='write_file', paths=['notes/a.md'], turn='t-1')
    write(desk, 'Memory.md', 'm1\nmore\n')
    third = cps.snapshot('third')
    write(desk, 'notes/a.md', 'a1\n')
    write(desk, 'Memory.md', 'm2\n')

    async def script(client: Session) -> None:
        log = await client.ok('log')
        assert [e['id'] for e in log['entries']] == [third, second, first]
        assert log['entries'][1] == {
            'id': second,
            'created_at': log['entries'][1]['created_at'],
            'reason': 'second',
            'tool': 'write_file',
            'paths': ['notes/a.md'],
            'turn': 't-1',
            'turn_label': None,  # the turn was opened without one
            'action': None,
            'changed': ['notes/a.md'],
        }
        only_notes = await client.ok('log', path='notes')
        assert only_notes['path'] == 'notes' and [e['id'] for e in only_notes['entries']] == [
            second
        ]
        assert len((await client.ok('log', limit=1))['entries']) == 1
        assert (await client.ok('log', path='memory/never.md'))['entries'] == []

        everything = await client.ok('diff', from_id=first)
        assert [c['path'] for c in everything['changes']] == ['Memory.md', 'notes/a.md']
        limited = await client.ok('diff', from_id=first, paths=['notes'])
        assert limited['paths'] == ['notes'] and limited['files_changed'] == 1
        [change] = limited['changes']
        assert change['path'] == 'notes/a.md' and change['kind'] == 'added'
        assert change['patch'] is not None and '+a1' in change['patch']
        between = await client.ok('diff', from_id=first, to_id=third, paths=['Memory.md'])
        assert between['to_id'] == third and between['added_lines'] == 2
        assert between['removed_lines'] == 1
        names = await client.ok('diff', paths=['Memory.md'], patches=False)
        assert names['from_id'] == third, 'the newest checkpoint by default'
        assert names['changes'][0]['patch'] is None and names['changes'][0]['kind'] == 'modified'
        assert 'is not tracked' in await client.error('diff', from_id=first, paths=['scratch.txt'])
        assert 'no checkpoint' in await client.error('diff', from_id='abcdef1')

    run_server(workspace, script)


def test_prune_is_a_dry_run_unless_asked(workspace: Path, desk: Path) -> None:
    cps = checkpoints_in(workspace)
    ids = []
    for n in range(5):
        write(desk, 'Memory.md', f'v{n}')
        ids.append(cps.snapshot(f'v{n}'))
    ids.reverse()  # newest first, like list

    async def script(client: Session) -> None:
        nothing = await client.ok('prune')
        assert nothing['limits'] == {'keep': None, 'older_than': None, 'max_size': None}
        assert nothing['pruned'] == [] and nothing['dry_run']
        assert 'no limits' in nothing['note']

        preview = await client.ok('prune', keep=2)
        assert preview['dry_run'] and preview['pruned_count'] == 3
        assert preview['checkpoints_before'] == 5 and preview['checkpoints_after'] == 2
        assert preview['oldest_kept'] == ids[1] and 'dry_run=false' in preview['note']
        listed = await client.ok('list_checkpoints')
        assert [c['id'] for c in listed['checkpoints']] == ids, 'a dry run drops nothing'

        done = await client.ok('prune', keep=2, dry_run=False)
        assert not done['dry_run'] and done['pruned_count'] == 3
        listed = await client.ok('list_checkpoints')
        assert [c['id'] for c in listed['checkpoints']] == ids[:2], 'kept ids do not change'

        assert 'not a period' in await client.error('prune', older_than='soon')
        assert await client.error('prune', keep=0)  # schema-validated: at least 1
        assert 'no desk' in await client.error('prune', desk='missing')

    run_server(workspace, script)

    # Limits stored with `checkpoints prune --save` apply when none are given.
    write_limits(workspace / '.checkpoints' / 'main.git', Limits(keep=1))

    async def stored(client: Session) -> None:
        preview = await client.ok('prune')
        assert preview['limits']['keep'] == 1 and preview['pruned_count'] == 1
        assert preview['dry_run']

    run_server(workspace, stored)
    assert len(cps.list()) == 2


def test_missing_desk_and_empty_desk(workspace: Path) -> None:
    async def script(client: Session) -> None:
        for tool in ('status', 'log', 'seal', 'redo', 'undo', 'diff'):
            text = await client.error(tool, desk='missing')
            assert "no desk 'missing'" in text, (tool, text)
        assert 'not a desk name' in await client.error('status', desk='../x')
        empty = await client.ok('status')
        assert empty['newest_id'] is None and empty['basis'] == 'none' and empty['clean']
        assert (await client.ok('log'))['entries'] == []
        assert 'no checkpoints yet' in await client.error('diff')
        assert 'no checkpoints yet' in await client.error('undo')
        pruned = await client.ok('prune', keep=1, dry_run=False)
        assert pruned['checkpoints_before'] == 0 and pruned['pruned'] == []

    run_server(workspace, script)


def test_restore_turn_refuses_a_conflict_unless_forced_or_kept(workspace: Path, desk: Path) -> None:
    write(desk, 'Memory.md', 'v0')
    cps = checkpoints_in(workspace)
    for turn, text in (('msg_1', 'v1'), ('msg_2', 'v2')):
        with cps.turn(turn, message_id=turn):
            with cps.guard('write_file Memory.md'):
                write(desk, 'Memory.md', text)
            with cps.guard(f'write_file notes/{turn}.md'):
                write(desk, f'notes/{turn}.md', turn)

    async def script(client: Session) -> None:
        refused = await client.error('restore_turn', turn_id='msg_1')
        assert 'refusing to rewind turn msg_1' in refused and 'Memory.md' in refused
        assert refused.endswith(
            "(on_external='keep' leaves them as they are; force=true puts them back as before "
            'the turn, keeping what it overwrites in the pre-snapshot)'
        )
        planned = await client.error('restore_turn', turn_id='msg_1', dry_run=True)
        assert planned == refused.replace('refusing to', 'would refuse to'), 'as the run decides'
        assert (desk / 'notes/msg_1.md').exists(), 'nothing was changed'
        kept = await client.ok('restore_turn', turn_id='msg_1', on_external='keep')
        assert kept['deleted'] == ['notes/msg_1.md'] and kept['written'] == []
        assert kept['kept'] == [{'path': 'Memory.md', 'reason': 'changed outside the agent'}]
        await client.ok('restore', checkpoint_id=kept['before_id'])
        forced = await client.ok('restore_turn', turn_id='msg_1', force=True)
        assert forced['written'] == ['Memory.md'] and forced['external'] == ['Memory.md']
        assert forced['undo_hint'] == f'restore {forced["before_id"]}'

    run_server(workspace, script)
    assert (desk / 'Memory.md').read_text() == 'v0' and (desk / 'notes/msg_2.md').exists()
