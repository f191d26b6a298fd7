"""The warm server's preload: a served command imports nothing in its child.

Whatever a forked child imports it imports on every command, and that import is most of what
a served command costs beyond the client's own start (dulwich's ``Repo``, imported only where a
verb writes, is ~25 ms). Each verb below runs in a child forked from a fresh interpreter that ran
only ``preload()``, as the server's children are, and reports the modules it imported.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from helpers import HOOK_EVENTS
from helpers.builders import write
from helpers.processes import python

from trading_checkpoints import Checkpoints

# Forks one child per command after ``preload()``; each runs the command as the server's child
# does and prints the modules it imported that the preloaded parent had not.
RUN_AFTER_PRELOAD = r"""
import json, os, sys
from trading_checkpoints.warm.command import run
from trading_checkpoints.warm.preload import preload
preload()
report = []
for line in sys.stdin.read().splitlines():
    folder, stdin, *argv = json.loads(line)
    before = set(sys.modules)
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(reader)
        os.chdir(folder)
        os.dup2(os.open(stdin or os.devnull, os.O_RDONLY), 0)
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
        sys.stdin = open(0)
        status = run(argv)
        os.write(writer, json.dumps([status, sorted(set(sys.modules) - before)]).encode())
        os._exit(0)
    os.close(writer)
    data = b''
    while chunk := os.read(reader, 1 << 16):
        data += chunk
    os.waitpid(pid, 0)
    report.append([' '.join(argv), *json.loads(data)])
print(json.dumps(report))
"""


def hook_event(name: str, workspace: Path, folder: Path) -> str:
    path = folder / name
    path.write_text((HOOK_EVENTS / name).read_text().replace('${WORKSPACE}', str(workspace)))
    return str(path)


@pytest.mark.skipif(sys.platform != 'linux', reason='the server forks (Linux is where it runs)')
def test_served_verbs_import_nothing_in_the_child(tmp_path: Path) -> None:
    workspace = tmp_path / 'ws'
    desk = workspace / 'desks' / 'main'
    checkpoints = Checkpoints(workspace / '.checkpoints' / 'main.git', desk)
    write(desk, 'Memory.md', '# Memory\n')
    write(desk, 'notes/plan.md', '# Plan\n')
    first = checkpoints.snapshot('first')
    assert first is not None
    write(desk, 'notes/plan.md', '# Plan\n\n- buy\n')  # the first snapshot below writes
    pre_write = hook_event('claude_pre_tool_use_write.json', workspace, tmp_path)
    pre_bash = hook_event('claude_pre_tool_use_bash.json', workspace, tmp_path)
    post_bash = hook_event('claude_post_tool_use_bash.json', workspace, tmp_path)
    here, top = str(desk), str(workspace)
    commands = [
        (here, None, 'list'),
        (here, None, 'status'),
        (here, None, 'snapshot', '-m', 'a change'),
        (here, None, 'snapshot'),  # nothing changed
        (top, pre_write, 'hook', '--harness', 'claude'),  # an announced write
        (here, None, 'snapshot'),
        (top, pre_bash, 'hook', '--harness', 'claude'),
        (top, post_bash, 'hook', '--harness', 'claude'),
        (here, None, 'log', 'notes/plan.md'),
        (here, None, 'diff', '--stat'),
        (here, None, 'restore', first),
        (here, None, 'undo'),
    ]
    lines = [json.dumps([folder, stdin, *argv]) for folder, stdin, *argv in commands]
    done = python(RUN_AFTER_PRELOAD, stdin='\n'.join(lines), check=False, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert len(report) == len(commands)
    imported = [(command, modules) for command, _, modules in report if modules]
    assert imported == [], 'imported by a served command, on every run: preload them'
    assert [status for _, status, _ in report] == [0] * len(commands), report
