"""Cost of the agent integration: guard and turn overhead per write, turn listing, MCP calls.

Run from the project root: ``python benchmarks/bench_agent_integration.py [--mcp] [--policy]``.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from trading_checkpoints import Workspace  # noqa: E402


def per_call(function, count: int) -> float:
    start = time.perf_counter()
    for n in range(count):
        function(n)
    return (time.perf_counter() - start) / count * 1e3


def library(root: Path, files: int = 200, writes: int = 200) -> None:
    cps = Workspace(root).desk('main', create=True)
    desk = cps.desk_directory
    (desk / 'notes').mkdir()
    for n in range(files):
        (desk / 'notes' / f'f{n}.md').write_text('x' * 100)
    cps.snapshot('base')
    memory = desk / 'Memory.md'

    def plain(n: int) -> None:
        cps.snapshot(f'plain {n}')
        memory.write_text(f'p{n}')

    def guarded(n: int) -> None:
        with cps.guard('write_file Memory.md'):
            memory.write_text(f'g{n}')

    def in_turn(n: int) -> None:
        with cps.turn(f'turn {n}'):
            with cps.guard('write_file Memory.md'):
                memory.write_text(f't{n}')

    print(f'{files} tracked files, {writes} writes each:')
    print(f'  snapshot() then write   {per_call(plain, writes):6.2f} ms per write')
    print(f'  guard() around write    {per_call(guarded, writes):6.2f} ms per write')
    print(f'  turn() + guard()        {per_call(in_turn, writes):6.2f} ms per write')
    total = len(cps.list(limit=100_000))
    start = time.perf_counter()
    listed = cps.turns(limit=20)
    listing = (time.perf_counter() - start) * 1e3
    start = time.perf_counter()
    cps.restore_turn(listed[-1].turn_id)
    rewind = (time.perf_counter() - start) * 1e3
    print(
        f'  history of {total} checkpoints: turns(20) {listing:.0f} ms, '
        f'restore_turn {rewind:.0f} ms'
    )


def mcp_calls(root: Path, calls: int = 50) -> None:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    desk = root / 'desks' / 'main'
    desk.mkdir(parents=True, exist_ok=True)
    project = str(Path(__file__).resolve().parents[1])
    params = StdioServerParameters(
        command=sys.executable,
        args=['-m', 'trading_checkpoints', '--workspace', str(root), 'mcp'],
        env={**os.environ, 'PYTHONPATH': project},
    )

    async def main() -> None:
        start = time.perf_counter()
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                ready = time.perf_counter()
                for n in range(calls):
                    (desk / 'Memory.md').write_text(str(n))
                    await session.call_tool('snapshot', {'reason': f'r{n}'})
                snapped = time.perf_counter()
                for _ in range(calls):
                    await session.call_tool('list_checkpoints', {'limit': 20})
                listed = time.perf_counter()
        print(
            f'MCP over stdio: start + initialize {ready - start:.2f} s, '
            f'snapshot {(snapped - ready) / calls * 1e3:.1f} ms/call, '
            f'list_checkpoints {(listed - snapped) / calls * 1e3:.1f} ms/call'
        )

    asyncio.run(main())


def policy_cost(root: Path, rounds: int = 40) -> None:
    """The hook events of a write tool and of a shell command (in-process ``hooks.run``) on a
    desk with a policy (two protected paths, a budget) against the same on one without: the
    medians, and their ratio (measured in turns, so load falls on both alike)."""
    import json
    import statistics

    from trading_checkpoints.agent.hooks import Options, run

    desks = {}
    for name, policy in (('plain', False), ('policy', True)):
        workspace = root / name
        cps = Workspace(workspace).desk('main', create=True)
        for n in range(50):
            (cps.desk_directory / 'notes').mkdir(exist_ok=True)
            (cps.desk_directory / 'notes' / f'f{n}.md').write_text('x' * 100)
        (cps.desk_directory / 'Memory.md').write_text('# Memory\n')
        cps.snapshot('base')
        if policy:
            cps.protect(['notes/f0.md', 'notes/f1.md'])
            cps.budget('Memory.md', 1 << 20)
        desks[name] = workspace

    def events(workspace: Path, n: int) -> float:
        desk = workspace / 'desks' / 'main'
        base = {'session_id': 's1', 'cwd': str(workspace), 'tool_use_id': f't{n}'}
        write = {'tool_name': 'Write', 'tool_input': {'file_path': str(desk / 'Memory.md')}}
        shell = {'tool_name': 'Bash', 'tool_input': {'command': 'echo x >> desks/main/Memory.md'}}
        start = time.perf_counter()
        for tool in (write, shell):
            for name in ('PreToolUse', 'PostToolUse'):
                if name == 'PostToolUse':
                    (desk / 'Memory.md').write_text(f'# Memory {n} {tool["tool_name"]}\n')
                raw = json.dumps({**base, **tool, 'hook_event_name': name}).encode()
                assert run(raw, Options(workspace=workspace)).code == 0
        return (time.perf_counter() - start) * 1e3

    times: dict[str, list[float]] = {name: [] for name in desks}
    for n in range(rounds):
        for name, workspace in desks.items():
            times[name].append(events(workspace, n))
    plain, policy = (statistics.median(times[name]) for name in ('plain', 'policy'))
    print(
        f'hook events of a Write and a Bash command (4 events), median of {rounds}: '
        f'{plain:.1f} ms without a policy, {policy:.1f} ms with one ({policy / plain:.2f}x)'
    )


if __name__ == '__main__':
    with tempfile.TemporaryDirectory() as folder:
        library(Path(folder) / 'lib')
        if '--mcp' in sys.argv:
            mcp_calls(Path(folder) / 'mcp')
        if '--policy' in sys.argv:
            policy_cost(Path(folder) / 'policy')
