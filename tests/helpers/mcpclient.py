"""The MCP SDK's stdio client, playing a test's script against ``checkpoints mcp``.

Import it after ``pytest.importorskip('mcp')``: the SDK is an optional dependency.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from helpers.cli import command
from helpers.processes import environment


def field(result: Any, snake: str, camel: str) -> Any:
    """A result attribute under its mcp 2.x (snake_case) or 1.x (camelCase) name."""
    return getattr(result, snake) if hasattr(result, snake) else getattr(result, camel)


class Session:
    """A connected client session with helpers that unwrap tool results."""

    def __init__(self, session: Any) -> None:
        self.session = session

    async def ok(self, tool: str, **arguments: Any) -> dict[str, Any]:
        result = await self.session.call_tool(tool, arguments)
        text = ' '.join(getattr(c, 'text', '') for c in result.content)
        assert not field(result, 'is_error', 'isError'), f'{tool} failed: {text}'
        structured = field(result, 'structured_content', 'structuredContent')
        assert isinstance(structured, dict), f'{tool} returned no structured content'
        return structured

    async def error(self, tool: str, **arguments: Any) -> str:
        result = await self.session.call_tool(tool, arguments)
        assert field(result, 'is_error', 'isError'), f'{tool} unexpectedly succeeded'
        return ' '.join(getattr(c, 'text', '') for c in result.content)


def run_server(
    workspace: Path, script: Callable[[Session], Awaitable[None]], *options: str
) -> None:
    """Starts the server as a subprocess over stdio and plays ``script`` against it."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    executable, *args = command('--workspace', str(workspace), *options, 'mcp')
    params = StdioServerParameters(
        command=executable,
        args=args,
        env=environment(),
        cwd=str(workspace),
    )

    async def main() -> None:
        async with stdio_client(params) as (read, write_stream):
            async with ClientSession(read, write_stream) as session:
                await session.initialize()
                await script(Session(session))

    asyncio.run(asyncio.wait_for(main(), timeout=120))
