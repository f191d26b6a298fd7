"""What the tests share, one module per job (imported as ``helpers.<module>``).

- ``processes``: the environment of a child process; Python code run in a fresh interpreter.
- ``cli``: the real ``checkpoints`` command in a subprocess, as a user's shell would run it.
- ``builders``: a workspace with its desk and repository, a ``Checkpoints`` on them, and the
  writers that put files, links and random edits on a desk.
- ``reading``: what a folder, a desk or a checkpoint holds, read back to be compared.
- ``faults``: forked children killed with SIGKILL at a chosen moment; audit-hook actions armed
  for the duration of one test; readers waiting on a FIFO let go (a test fails, never hangs).
- ``users``: work done in a forked child as user nobody when the tests run as root (whom
  the kernel lets signal every process and read every folder).
- ``gitcli``: the real git binary, isolated from the user's configuration, and ``git fsck``.
- ``flushes``: the flushes, renames, removals and writes a process makes, by path, in order
  (recorded in this process, or under ``strace``).
- ``killpoints``: a program's kill points (a call's N-th time in its thread, by strace) and a
  run killed at one; ``sweepworld``: the world the crash sweeps copy and the checks after a
  crash.
- ``fstrace``, ``crashfs``, ``crashstates``: the power-loss model: a program's file calls under
  strace, replayed on a model of a folder by inode, and the states a power cut can leave.
- ``rawobjects``: git objects written byte by byte with no validation (hostile repositories).
- ``httpremote``: a smart-HTTP git server on 127.0.0.1 behind basic auth.
- ``mcpclient``: the MCP SDK's stdio client playing a script against ``checkpoints mcp``.
- ``watcher``: a ``checkpoints watch`` of a desk run as its own process, and the walks counted.
- ``mounts``: bind mounts made for one test (root only).
- ``harness``: the real Claude Code and Gemini CLI, installed from npm and run against a
  scripted model on loopback (see ``tests/harness/README.md``).

``scripts/`` holds the programs tests start by path as second processes (``SCRIPTS``; and
``scripts/no_textual``, a folder whose ``sitecustomize`` hides Textual from a child put on its
PYTHONPATH: ``NO_TEXTUAL``), and
``hook_events/`` the agent-harness events the hook tests send (``HOOK_EVENTS``; those captured
from the real harnesses in ``hook_events/real/``).
The fixtures themselves live in the ``conftest.py`` files, which build on these modules.
"""

from __future__ import annotations

from pathlib import Path

HELPERS = Path(__file__).resolve().parent
ROOT = HELPERS.parents[1]  # the project's checkout: the package, examples/, README.md
TESTS = HELPERS.parent
SCRIPTS = HELPERS / 'scripts'
NO_TEXTUAL = SCRIPTS / 'no_textual'
HOOK_EVENTS = HELPERS / 'hook_events'
