"""One JSON form per result: the command line prints a value's ``to_dict()`` and the MCP server
builds its answer around the same form, so the two agree wherever they show the same thing.

Also: neither the command line nor the MCP server ever tells failures apart by their message;
the command line's error output is keyed by the error's class.
"""

from __future__ import annotations

import ast
import asyncio
import json
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

import trading_checkpoints
from trading_checkpoints import Checkpoints
from trading_checkpoints.cli import cli
from trading_checkpoints.cli.options import JSON_KEY, reports_errors
from trading_checkpoints.errors import InvalidArgumentError, UnknownCheckpointError

PACKAGE = Path(trading_checkpoints.__file__).parent


@pytest.fixture
def scene(tmp_path: Path) -> dict[str, Any]:
    """A desk with a turn of two checkpoints, a binary file, a seal and a change since."""
    desk = tmp_path / 'desks' / 'main'
    (desk / 'notes').mkdir(parents=True)
    (desk / 'Memory.md').write_text('v1\n')
    (desk / 'notes' / 'a.md').write_text('a1\nline\n')
    cps = Checkpoints(tmp_path / '.checkpoints' / 'main.git', desk)
    first = cps.snapshot('first')
    with cps.turn('rewrite the notes', message_id='msg_1') as turn:
        turn.snapshot('before a', tool='write_file', paths=['notes/a.md'])
        (desk / 'notes' / 'a.md').write_text('a2\nline\nmore\n')
        (desk / 'memory').mkdir()
        (desk / 'memory' / 'chart.png').write_bytes(b'\x89PNG\x00\xff')
        turn.snapshot('after a')
    cps.seal()
    (desk / 'Memory.md').write_text('v2 by a person\n')
    return {'workspace': tmp_path, 'cps': cps, 'first': first}


def cli_json(workspace: Path, *args: str) -> Any:
    result = CliRunner().invoke(cli, ['--workspace', str(workspace), *args, '--json'])
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return json.loads(result.stdout)


def mcp_results(workspace: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """The structured results of some MCP tool calls, made in this process."""
    pytest.importorskip('mcp', reason="the MCP SDK is not installed (pip install '.[mcp]')")
    from trading_checkpoints.agent.mcp import build_server

    server = build_server(workspace)

    async def run() -> list[Any]:
        out = []
        for name, arguments in calls:
            result = await server.call_tool(name, arguments)
            structured = getattr(result, 'structured_content', None)
            if structured is None:  # mcp 1.x: (content, structured)
                structured = result[1] if isinstance(result, tuple) else result.structuredContent
            out.append(structured)
        return out

    return asyncio.run(run())


def test_the_command_line_prints_each_values_form(scene: dict[str, Any]) -> None:
    ws, cps, first = scene['workspace'], scene['cps'], scene['first']
    assert cli_json(ws, 'list', '-n', '0') == [c.to_dict() for c in cps.list(100)]
    assert cli_json(ws, 'log') == [e.to_dict() for e in cps.log(None, 20)]
    policy = {'protected': list(cps.protected()), 'budgets': [u.to_dict() for u in cps.budgets()]}
    assert cli_json(ws, 'status') == {**cps.status().to_dict(), **policy}  # and the policy
    assert cli_json(ws, 'diff', first) == cps.diff(first).to_dict()
    assert cli_json(ws, 'turns') == [t.to_dict() for t in cps.turns()]
    plan = cps.restore_with_result(first, dry_run=True)
    assert cli_json(ws, 'restore', first, '--dry-run') == plan.to_dict()
    prune = cps.prune(keep=1, dry_run=True)
    assert cli_json(ws, 'prune', '--keep', '1', '--dry-run') == prune.to_dict()


def test_the_mcp_server_and_the_command_line_agree(scene: dict[str, Any]) -> None:
    ws, first = scene['workspace'], scene['first']
    listed, turns, status, log, diff, restore, shown, prune = mcp_results(
        ws,
        [
            ('list_checkpoints', {'limit': 100}),
            ('list_turns', {}),
            ('status', {}),
            ('log', {}),
            ('diff', {'from_id': first}),
            ('restore', {'checkpoint_id': first, 'dry_run': True}),
            ('show_file', {'checkpoint_id': first, 'path': 'Memory.md'}),
            ('prune', {'keep': 1}),
        ],
    )
    cli_list = cli_json(ws, 'list', '-n', '100')
    assert listed['checkpoints'] == cli_list, 'the same checkpoint rows'

    # The command line lists a turn's checkpoints in brief: the first fields of the MCP's rows.
    cli_turns = cli_json(ws, 'turns')
    assert [{k: v for k, v in t.items() if k != 'checkpoints'} for t in turns['turns']] == [
        {k: v for k, v in t.items() if k != 'checkpoints'} for t in cli_turns
    ]
    for mcp_turn, cli_turn in zip(turns['turns'], cli_turns, strict=True):
        brief = [{k: row[k] for k in cli_turn['checkpoints'][0]} for row in mcp_turn['checkpoints']]
        assert brief == cli_turn['checkpoints']

    cli_status = cli_json(ws, 'status')
    assert {k: status[k] for k in ('newest_id', 'changes', 'external', 'basis')} == {
        k: cli_status[k] for k in ('newest_id', 'changes', 'external', 'basis')
    }
    assert status['clean'] is (cli_status['changes'] == [])

    cli_log = cli_json(ws, 'log')
    assert log['entries'] == [{k: v for k, v in e.items() if k != 'changes'} for e in cli_log]

    cli_diff = cli_json(ws, 'diff', first)
    assert (diff['from_id'], diff['to_id'], diff['changes']) == (
        cli_diff['from'],
        cli_diff['to'],
        cli_diff['changes'],
    )

    cli_restore = cli_json(ws, 'restore', first, '--dry-run')
    assert {k: restore[k] for k in cli_restore} == cli_restore

    cli_show = cli_json(ws, 'show', first, 'Memory.md')
    assert (shown['content'], shown['encoding']) == (cli_show['content'], cli_show['encoding'])

    cli_prune = cli_json(ws, 'prune', '--keep', '1', '--dry-run')
    assert {k: prune[k] for k in cli_prune} == cli_prune


def test_binary_content_has_one_form(scene: dict[str, Any]) -> None:
    ws, cps = scene['workspace'], scene['cps']
    newest = cps.list(1)[0].checkpoint_id
    (shown,) = mcp_results(
        ws, [('show_file', {'checkpoint_id': newest, 'path': 'memory/chart.png'})]
    )
    cli_show = cli_json(ws, 'show', newest, 'memory/chart.png')
    assert shown['encoding'] == cli_show['encoding'] == 'base64'
    assert shown['content'] == cli_show['content']


# -- errors are told apart by kind, never by message ------------------------------------------


def test_the_command_lines_error_output_is_keyed_by_the_class() -> None:
    """A message that reads like another kind's changes nothing: the class decides."""

    @click.command()
    @click.option('--json', 'as_json', is_flag=True)
    @reports_errors
    def verb(as_json: bool) -> None:
        click.get_current_context().meta[JSON_KEY] = as_json
        raise InvalidArgumentError("no checkpoint 'abcdef1' in here", name='keep', value=0)

    result = CliRunner().invoke(verb, ['--json'])
    assert result.exit_code == 1
    body = json.loads(result.stderr)
    assert body == {
        'error': "no checkpoint 'abcdef1' in here",
        'type': 'InvalidArgumentError',
        'fields': {'name': 'keep', 'value': 0},
    }

    @click.command()
    @reports_errors
    def other() -> None:
        raise UnknownCheckpointError('limit must be a whole number', checkpoint='x')

    result = CliRunner().invoke(other, [])
    assert result.exit_code == 1 and result.stderr == 'error: limit must be a whole number\n'


def _error_names(tree: ast.AST) -> set[str]:
    return {
        handler.name
        for handler in ast.walk(tree)
        if isinstance(handler, ast.ExceptHandler) and handler.name
    }


def _reads_message(node: ast.AST, names: set[str]) -> bool:
    """``str(error)``, ``error.args`` or ``error`` itself, for a caught error ``error``."""
    if isinstance(node, ast.Name):
        return node.id in names
    if isinstance(node, ast.Attribute):
        return node.attr in ('args', 'message') and _reads_message(node.value, names)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id in ('str', 'repr', 'format') and any(
            _reads_message(arg, names) for arg in node.args
        )
    if isinstance(node, ast.JoinedStr):
        return any(
            isinstance(part, ast.FormattedValue) and _reads_message(part.value, names)
            for part in node.values
        )
    return False


def inspections_of_messages(source: str) -> list[str]:
    """Where code compares, searches or parses the text of an error it caught."""
    tree = ast.parse(source)
    names = _error_names(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            if any(_reads_message(side, names) for side in (node.left, *node.comparators)):
                if not all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
                    found.append(f'line {node.lineno}: compares an error message')
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            method = node.func.attr
            if _reads_message(node.func.value, names) and method in (
                'startswith',
                'endswith',
                'find',
                'index',
                'split',
                'partition',
                'count',
                'lower',
            ):
                found.append(f'line {node.lineno}: parses an error message ({method})')
            if method in ('match', 'search', 'fullmatch', 'findall') and any(
                _reads_message(arg, names) for arg in node.args
            ):
                found.append(f'line {node.lineno}: searches an error message')
        elif isinstance(node, ast.Subscript) and _reads_message(node.value, names):
            found.append(f'line {node.lineno}: indexes an error message')
    return found


def test_the_check_finds_what_it_looks_for() -> None:
    bad = (
        'try:\n    pass\nexcept Exception as error:\n'
        "    if 'no checkpoint' in str(error): pass\n"
        "    if error.args[0] == 'x': pass\n"
        "    if str(error).startswith('no'): pass\n"
        '    re.match(r"x", f"{error}")\n'
    )
    assert len(inspections_of_messages(bad)) == 4


def test_the_command_line_and_the_mcp_server_never_read_an_error_message() -> None:
    files = sorted((PACKAGE / 'cli').glob('*.py')) + [
        PACKAGE / 'agent' / 'mcp.py',
        PACKAGE / 'agent' / 'mcpresults.py',
    ]
    found = {
        str(path.relative_to(PACKAGE)): inspections_of_messages(path.read_text()) for path in files
    }
    assert {path: where for path, where in found.items() if where} == {}
