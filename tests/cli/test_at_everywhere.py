"""Every verb that takes a checkpoint id takes a time instead (``--at``), on the command line
and over MCP."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from helpers.mcpclient import Session, run_server

from trading_checkpoints.cli import cli


def verbs(command: click.Command, words: list[str]) -> Iterator[tuple[str, click.Command]]:
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            yield from verbs(sub, [*words, name])
    else:
        yield ' '.join(words), command


def test_every_verb_taking_a_checkpoint_id_takes_at() -> None:
    taking_ids = {
        name
        for name, command in verbs(cli, [])
        for param in command.params
        if isinstance(param, click.Argument) and re.search(r'\bID\b', param.human_readable_name)
    }
    assert taking_ids == {'restore', 'diff', 'show'}
    for name, command in verbs(cli, []):
        if name in taking_ids or name == 'blame':  # blame: --at takes an id or a time
            assert any('--at' in p.opts for p in command.params if isinstance(p, click.Option))


def test_every_tool_taking_a_checkpoint_id_takes_at(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path / 'cache'))  # the server's kept answers
    taking_ids = []

    async def script(client: Session) -> None:
        listed = await client.session.list_tools()
        for tool in listed.tools:
            schema = getattr(tool, 'inputSchema', None) or getattr(tool, 'input_schema', {})
            properties = set(schema.get('properties', {}))
            if properties & {'checkpoint_id', 'from_id'}:
                taking_ids.append(tool.name)
                assert 'at' in properties, tool.name

    run_server(workspace, script)
    assert {'restore', 'diff', 'show_file'} <= set(taking_ids)
