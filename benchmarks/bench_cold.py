"""Cold commands as users and harnesses run them: the console script of a fresh virtualenv.

Run by hand from the project root (never as a test):

    python benchmarks/bench_cold.py                  # a new virtualenv in a temp folder, 21 rounds
    python benchmarks/bench_cold.py --venv /tmp/cold  # reuse (or create) that virtualenv
    python benchmarks/bench_cold.py --rounds 11 --files 200 --json out.json

It installs this checkout (``pip install '.[mcp,watch]'``, not editable, so nothing is imported
from the source tree; ``installed.py``) into a virtualenv, builds two alike workspaces whose
desk ``main`` holds ``--files`` tracked 1 KB files (and one checkpoint of them; a person's verbs
run on the first, the hooks on the second: see ``main``), then times each command as a new process,
started the way a harness starts a hook: by its absolute path, stdin from a file, no terminal.
A person's verbs run the console script; the hook rows run the command ``checkpoints hook
install`` writes into a harness's settings for that installation (``hook_command``). Every
round runs every command once, in turn, so a load that comes and goes touches all of them
alike; the figures are medians over the rounds, in milliseconds, and the ratios are against
the same virtualenv's ``python -c pass`` measured in the same rounds (and, for
reference, against ``git status`` on a git repository holding the same files).

Each verb is timed twice: as the console script runs it (on the warm command server, started
by the first run; see ``trading_checkpoints/warm/``) and with ``CHECKPOINTS_SERVER=off`` (the
command imported and run in the new process itself).

The MCP rows are a client's first exchange: spawn ``checkpoints mcp``, send ``initialize``, the
``initialized`` notification and ``tools/list``, and stop the clock at the ``tools/list`` answer.
The server answers that exchange from the SDK's own answers kept by an earlier server of the same
installation (``trading_checkpoints/agent/mcpstart.py``): one row gives every run an empty cache
folder (the first start of an installation, the SDK imported first), another keeps one folder
(every later start), and a third gives a cache folder others may enter, which the server never
uses (the server without the kept answers at all: the SDK started at once). The folders are in
the scratch folder (``XDG_CACHE_HOME``).

``--before DIR`` also installs another checkout (e.g. ``git archive main | tar -x -C DIR``) into a
virtualenv of its own and times the same rows for it in the same rounds (``before:`` rows), so a
change's before/after ratios come from one run; ``--only TEXT`` keeps the rows whose name holds
TEXT (``python -c pass`` is always timed).
The Bash row is the two processes a shell command costs a Claude Code session (``PreToolUse``
then ``PostToolUse`` on ``Bash``, in a turn already started, a command that changed nothing):
their sum, against two ``python -c pass``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from installed import GIT, ROOT, build_workspace, git_env, git_repository, make_venv, timed_process

HOOK_FIXTURES = ROOT / 'tests' / 'helpers' / 'hook_events'

BASH_PAIR = 'hook Bash pair: Pre + PostToolUse (unchanged)'
TARGETS = {  # row -> upper bound of its ratio to `python -c pass`
    'hook PreToolUse Write (unchanged desk)': 3.0,
    BASH_PAIR: 6.0,  # two processes
    'snapshot (no-op)': 3.0,
    'status (clean)': 3.0,
    'list': 3.0,
}
MCP_TARGET_MS = 800.0
MCP_ROW = 'mcp: spawn, initialize, tools/list'


def hook_event(name: str, workspace: Path, folder: Path) -> Path:
    """A documented hook payload with its workspace filled in, as a file for stdin."""
    text = (HOOK_FIXTURES / name).read_text().replace('${WORKSPACE}', str(workspace))
    path = folder / name
    path.write_text(text)
    return path


def timed_mcp(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    """Spawn the MCP server and time initialize + tools/list."""
    messages = [
        {
            'jsonrpc': '2.0',
            'id': 1,
            'method': 'initialize',
            'params': {
                'protocolVersion': '2025-06-18',
                'capabilities': {},
                'clientInfo': {'name': 'bench', 'version': '0'},
            },
        },
        {'jsonrpc': '2.0', 'method': 'notifications/initialized'},
        {'jsonrpc': '2.0', 'id': 2, 'method': 'tools/list'},
    ]
    start = time.perf_counter()
    process = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(b''.join(json.dumps(m).encode() + b'\n' for m in messages))
    process.stdin.flush()
    tools = None
    for line in process.stdout:
        answer = json.loads(line)
        if answer.get('id') == 2:
            tools = answer['result']['tools']
            break
    elapsed = time.perf_counter() - start
    process.stdin.close()
    process.kill()
    process.wait()
    if not tools:
        raise SystemExit('the MCP server listed no tools')
    return elapsed


def hook_command(bin_dir: Path) -> list[str]:
    """The hook command ``checkpoints hook install`` writes for this installation (what a
    harness runs for every event), as words."""
    code = (
        'from trading_checkpoints.agent.hooks.install import command_line; '
        'print(command_line("claude"))'
    )
    done = subprocess.run(
        [str(bin_dir / 'python'), '-c', code], capture_output=True, text=True, check=True
    )
    return shlex.split(done.stdout)


def bash_pair(
    hook: list[str], workspace: Path, before: Path, after: Path, env: dict[str, str]
) -> float:
    """The two hook processes of one shell command, one after the other."""
    return timed_process(hook, workspace, before, env) + timed_process(hook, workspace, after, env)


def fresh_cache(base: Path) -> Path:
    """An empty private folder for the MCP server's kept answers."""
    return Path(tempfile.mkdtemp(prefix='cache-', dir=base))


def unusable_cache(base: Path) -> Path:
    """A cache folder whose ``trading-checkpoints`` folder others may enter: the MCP server
    keeps and reads no answers there."""
    folder = fresh_cache(base)
    (folder / 'trading-checkpoints').mkdir(mode=0o755)
    (folder / 'trading-checkpoints').chmod(0o755)
    return folder


def command_rows(
    label: str,
    bin_dir: Path,
    base: Path,
    workspaces: tuple[Path, Path],
    env: dict[str, str],
) -> dict[str, Callable[[], float]]:
    """The timed commands of one installation (their names prefixed with ``label``): a
    person's verbs on the first workspace's desk, the hooks on the second workspace."""
    command = str(bin_dir / 'checkpoints')
    workspace, hooked = workspaces
    desk = workspace / 'desks' / 'main'
    write_event = hook_event('claude_pre_tool_use_write.json', hooked, base)
    bash_before = hook_event('claude_pre_tool_use_bash.json', hooked, base)
    bash_after = hook_event('claude_post_tool_use_bash.json', hooked, base)
    hook = hook_command(bin_dir)
    off = {**env, 'CHECKPOINTS_SERVER': 'off'}
    verbs: dict[str, tuple[list[str], Path, Path | None]] = {
        'checkpoints --help': ([command, '--help'], desk, None),
        'list': ([command, 'list'], desk, None),
        'status (clean)': ([command, 'status'], desk, None),
        'snapshot (no-op)': ([command, 'snapshot'], desk, None),
        'hook PreToolUse Write (unchanged desk)': (hook, hooked, write_event),
    }
    rows: dict[str, Callable[[], float]] = {}
    for name, (argv, cwd, stdin) in verbs.items():
        rows[name] = partial(timed_process, argv, cwd, stdin, env)
        rows[f'{name}, no server'] = partial(timed_process, argv, cwd, stdin, off)
    for row, environment in ((BASH_PAIR, env), (f'{BASH_PAIR}, no server', off)):
        rows[row] = partial(bash_pair, hook, hooked, bash_before, bash_after, environment)
    mcp = [command, '--workspace', str(workspace), 'mcp']
    kept = {**env, 'XDG_CACHE_HOME': str(fresh_cache(base))}
    rows[f'{MCP_ROW} (first start: nothing kept)'] = lambda: timed_mcp(
        mcp, workspace, {**env, 'XDG_CACHE_HOME': str(fresh_cache(base))}
    )
    rows[f'{MCP_ROW} (answers kept)'] = partial(timed_mcp, mcp, workspace, kept)
    unkept = {**env, 'XDG_CACHE_HOME': str(unusable_cache(base))}
    rows[f'{MCP_ROW} (no kept answers at all)'] = partial(timed_mcp, mcp, workspace, unkept)
    return {f'{label}{name}': run for name, run in rows.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--venv', type=Path, help='virtualenv to use (created if missing)')
    parser.add_argument('--before', type=Path, help='another checkout to time alongside')
    parser.add_argument('--only', help='time only the rows whose name holds this text')
    parser.add_argument('--rounds', type=int, default=21)
    parser.add_argument('--files', type=int, default=200)
    parser.add_argument('--json', type=Path, help='also write the medians here')
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix='bench-cold-') as scratch:
        base = Path(scratch)
        bin_dir = make_venv(args.venv or base / 'venv')
        python, command = str(bin_dir / 'python'), str(bin_dir / 'checkpoints')
        env = {k: v for k, v in os.environ.items() if not k.startswith(('CHECKPOINTS_', 'PYTHON'))}
        env['NO_COLOR'] = '1'
        env['XDG_CACHE_HOME'] = str(fresh_cache(base))
        # Two alike workspaces: the hooks declare each write they announce (a seal, written
        # when the declaration changes), so a person's `snapshot` on their desk would find a
        # new declaration to record every round, and be no no-op.
        workspaces = (base / 'workspace', base / 'hooked')
        for root in workspaces:
            desk = build_workspace(root, args.files, bin_dir)
            # The written file exists and is unchanged: the hook's snapshot finds nothing to
            # record.
            (desk / 'notes').mkdir()
            (desk / 'notes' / 'plan.md').write_text('# Plan\n')
            subprocess.run([command, '--workspace', str(root), 'snapshot'], check=True, env=env)
        desk = workspaces[0] / 'desks' / 'main'

        rows: dict[str, Callable[[], float]] = {
            'python -c pass': lambda: timed_process([python, '-c', 'pass'], desk, None, env),
        }
        rows.update(command_rows('', bin_dir, base, workspaces, env))
        if args.before is not None:
            before = make_venv(base / 'venv-before', args.before.resolve())
            rows.update(command_rows('before: ', before, base, workspaces, env))
        if GIT is not None:
            tree = git_repository(desk, base / 'git')
            genv = git_env(base)
            rows['git status (same files)'] = lambda: timed_process(
                [GIT, 'status', '--porcelain'], tree, None, genv
            )

        if args.only:
            rows = {k: v for k, v in rows.items() if k == 'python -c pass' or args.only in k}
        samples: dict[str, list[float]] = {name: [] for name in rows}
        for run in rows.values():
            run()  # warm the page cache once
        for _ in range(args.rounds):
            for name, run in rows.items():
                samples[name].append(run() * 1000)

    medians = {name: statistics.median(values) for name, values in samples.items()}
    floor = medians['python -c pass']
    version = sys.version.split()[0]
    print(f'{args.files} tracked files, {args.rounds} rounds, medians (ms); python {version}')
    print(f'load average at the end: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores')
    print(f'{"command":76} {"ms":>8} {"x python -c pass":>17} {"target":>8}')
    for name, value in medians.items():
        target = TARGETS.get(name.removeprefix('before: '))
        if MCP_ROW in name:
            mark = f'<= {MCP_TARGET_MS:.0f} ms' if value <= MCP_TARGET_MS else 'MISSED'
            print(f'{name:76} {value:8.1f} {value / floor:17.2f} {mark:>8}')
            continue
        verdict = '' if target is None else ('met' if value / floor <= target else 'MISSED')
        print(f'{name:76} {value:8.1f} {value / floor:17.2f} {verdict:>8}')
    pair, single = medians.get(BASH_PAIR), medians.get('hook PreToolUse Write (unchanged desk)')
    if pair is not None and single is not None:
        print(f'Bash pair beyond two bare Python starts: {pair - 2 * floor:.1f} ms; ', end='')
        print(f'beyond two Write hooks: {pair - 2 * single:.1f} ms')
    if args.json:
        args.json.write_text(json.dumps({'files': args.files, 'medians_ms': medians}, indent=2))


if __name__ == '__main__':
    main()
