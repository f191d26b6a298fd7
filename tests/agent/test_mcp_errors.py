"""What a model is told when a tool call fails, through the official SDK client: one rule for an
unknown desk in every tool, one line for a bad argument (and an unknown one refused), texts that
name MCP tools rather than command-line verbs, and the package's version in the handshake."""

from __future__ import annotations

import re
import shutil
from importlib.metadata import version
from pathlib import Path

import pytest
from helpers import ROOT
from helpers.builders import checkpoints_in, write
from helpers.processes import python

mcp = pytest.importorskip('mcp', reason="the MCP SDK is not installed (pip install '.[mcp]')")

from helpers.mcpclient import Session, field, run_server  # noqa: E402 - after the importorskip

# Each tool with a desk argument, and arguments that would make it succeed on a real desk.
CALLS: dict[str, dict[str, object]] = {
    'list_checkpoints': {},
    'list_turns': {},
    'snapshot': {'reason': 'x'},
    'seal': {},
    'restore': {'checkpoint_id': 'abcdef1'},
    'restore_turn': {'turn_id': 't1'},
    'undo': {},
    'redo': {},
    'status': {},
    'log': {},
    'diff': {},
    'show_file': {'checkpoint_id': 'abcdef1', 'path': 'Memory.md'},
    'blame': {'path': 'Memory.md'},
    'prune': {},
    'list_protected': {},
}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """Desks main (two checkpoints) and research (one), and a desk folder with no checkpoints."""
    root = tmp_path / 'workspace'
    for name in ('main', 'research'):
        cps = checkpoints_in(root, name)
        write(cps.desk_directory, 'Memory.md', f'{name} v1\n')
        cps.snapshot('first')
    main = checkpoints_in(root)
    write(main.desk_directory, 'Memory.md', 'main v2\n')
    main.snapshot('second')
    return root


def test_an_unknown_desk_is_one_error_listing_the_desks_in_every_tool(workspace: Path) -> None:
    async def script(client: Session) -> None:
        listed = await client.session.list_tools()
        with_desk = {
            tool.name
            for tool in listed.tools
            if 'desk' in field(tool, 'input_schema', 'inputSchema')['properties']
        }
        assert with_desk == set(CALLS)
        for tool, arguments in CALLS.items():
            text = await client.error(tool, desk='mian', **arguments)
            assert text.endswith(
                f"no desk 'mian' in workspace {workspace} (its desks: main, research; "
                'list_desks lists them)'
            ), (tool, text)
            assert '\n' not in text

    run_server(workspace, script)
    assert not (workspace / 'desks' / 'mian').exists()
    assert not (workspace / '.checkpoints' / 'mian.git').exists()


def test_bad_arguments_are_one_line_naming_the_argument(workspace: Path) -> None:
    async def script(client: Session) -> None:
        cases = {
            ('list_checkpoints', (('limit', -1),)): (
                "list_checkpoints: invalid argument 'limit': input should be greater than or "
                'equal to 0 (got -1)'
            ),
            ('restore', ()): "restore: missing argument 'checkpoint_id' (or 'at', a time)",
            ('restore', (('checkpoint_id', 5),)): (
                "restore: invalid argument 'checkpoint_id': input should be a valid string (got 5)"
            ),
            ('restore', (('checkpoint_id', 'abcd'), ('on_external', 'never'))): (
                "restore: invalid argument 'on_external': input should be 'overwrite', 'keep' or "
                "'refuse' (got 'never')"
            ),
        }
        for (tool, arguments), expected in cases.items():
            text = await client.error(tool, **dict(arguments))
            # A check the tool makes itself (an id or a time) comes as the SDK words it.
            text = text.replace(f'Error executing tool {tool}: ', f'{tool}: ')
            assert text == expected
            assert 'pydantic' not in text and 'http' not in text

    run_server(workspace, script)


def test_an_argument_the_tool_does_not_take_is_refused_and_nothing_is_done(
    workspace: Path,
) -> None:
    cps = checkpoints_in(workspace)
    oldest = cps.list()[-1].checkpoint_id

    async def script(client: Session) -> None:
        text = await client.error('restore', checkpoint_id=oldest, dryrun=True)
        assert text == (
            "restore takes no argument 'dryrun' (did you mean 'dry_run'?); nothing was done "
            '(it takes: checkpoint_id, desk, dry_run, paths, on_external, at)'
        )
        assert (await client.ok('list_desks'))['desks'] == ['main', 'research']
        assert 'takes no argument' in await client.error('list_desks', desk='main')

    run_server(workspace, script)
    assert (cps.desk_directory / 'Memory.md').read_text() == 'main v2\n'
    assert len(cps.list()) == 2


def test_error_texts_name_the_mcp_tools_not_the_command_line(workspace: Path) -> None:
    cps = checkpoints_in(workspace)
    oldest = cps.list()[-1].checkpoint_id
    cps.prune(keep=1)

    async def script(client: Session) -> None:
        texts = {
            'turn': await client.error('restore_turn', turn_id='msg_9'),
            'not an id': await client.error('restore', checkpoint_id='HEAD~1'),
            'unknown': await client.error('show_file', checkpoint_id='abcdef1', path='Memory.md'),
            'pruned': await client.error('diff', from_id=oldest),
            'none yet': await client.error('undo', desk='research'),
        }
        assert texts['turn'].endswith("no turn 'msg_9' on desk 'main'; list_turns lists its turns")
        assert texts['not an id'].endswith(
            "'HEAD~1' is not a checkpoint id (4 to 40 hex digits, as list_checkpoints gives them)"
        )
        assert texts['unknown'].endswith("list_checkpoints lists the ids of desk 'main'")
        assert f'checkpoint {oldest} of desk ' in texts['pruned']
        assert texts['pruned'].endswith('list_checkpoints lists the ones kept')
        for what, text in texts.items():
            assert not re.search(r'(?<!\w)checkpoints [a-z]', text), (what, text)  # a verb

    run_server(workspace, script)


def test_a_refused_restore_names_the_arguments_that_choose(workspace: Path) -> None:
    cps = checkpoints_in(workspace)
    oldest = cps.list()[-1].checkpoint_id
    cps.seal()
    write(cps.desk_directory, 'Memory.md', 'a person wrote this\n')

    async def script(client: Session) -> None:
        text = await client.error('restore', checkpoint_id=oldest, on_external='refuse')
        assert 'refusing to restore' in text
        assert text.endswith(
            "(on_external='keep' keeps them and reverts only the agent's changes; "
            "on_external='overwrite' overwrites them, keeping them in the pre-snapshot)"
        )
        cps.snapshot('before write_file Memory.md', paths=['Memory.md'])
        write(cps.desk_directory, 'Memory.md', 'the agent wrote this\n')
        cps.seal()
        write(cps.desk_directory, 'Memory.md', 'and a person changed it\n')
        text = await client.error('undo')
        assert 'refusing to undo' in text and 'keep_external=true' in text and 'force=true' in text

    run_server(workspace, script)
    assert (cps.desk_directory / 'Memory.md').read_text() == 'and a person changed it\n'


def test_the_server_reports_the_package_version(workspace: Path) -> None:
    seen: list[str] = []

    async def script(client: Session) -> None:
        info = await client.session.initialize()
        seen.append(field(info, 'server_info', 'serverInfo').version)

    run_server(workspace, script)
    assert seen == [version('trading-checkpoints')]


def test_the_version_falls_back_when_the_package_is_not_installed(tmp_path: Path) -> None:
    """The package imported from a copy of its folder, with no installed metadata in sight."""
    copy = tmp_path / 'checkout'
    shutil.copytree(ROOT / 'trading_checkpoints', copy / 'trading_checkpoints')
    done = python(
        'import sys\n'
        'sys.path[:] = [sys.argv[1]] + [p for p in sys.path if p and not p.endswith("-packages")]\n'
        'from trading_checkpoints.agent.mcp import package_version\n'
        'print(package_version())',
        str(copy),
        env={'PYTHONPATH': None},
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == '0+unknown\n'
