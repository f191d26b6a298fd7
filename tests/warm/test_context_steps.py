"""The context's steps the waiting child and the slot take, in this process: the signal handling
of a new Python process restored (``test_context.py`` adopts a real client's afterwards), and
the shared facts a slot is named after."""

from __future__ import annotations

import os
import shutil
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from trading_checkpoints.warm import context

pytestmark = pytest.mark.skipif(sys.platform != 'linux', reason='reads /proc (Linux)')


@pytest.fixture
def signals_kept() -> Iterator[None]:
    """This process's signal handlers and mask, put back after the test."""
    handlers = {number: signal.getsignal(number) for number in signal.valid_signals()}
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    yield
    for number, handler in handlers.items():
        if handler is not None:  # None: set outside Python, never changed by the test
            try:
                signal.signal(number, handler)
            except (OSError, ValueError):
                continue
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def test_the_waiting_child_starts_from_a_new_pythons_signals(signals_kept: None) -> None:
    """Whatever the server's parent set (signals ignored, handled, blocked), the child has
    what a new Python process has: SIGPIPE and SIGXFSZ ignored, SIGINT ``KeyboardInterrupt``,
    every other signal at its default, none blocked."""
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    signal.signal(signal.SIGUSR1, lambda number, frame: None)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR2, signal.SIGCHLD])
    context.fresh_signals()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    for number in (signal.SIGPIPE, signal.SIGXFSZ):
        assert signal.getsignal(number) == signal.SIG_IGN
    for number in (signal.SIGHUP, signal.SIGUSR1, signal.SIGTERM, signal.SIGCHLD, signal.SIGRTMAX):
        assert signal.getsignal(number) == signal.SIG_DFL, signal.Signals(number).name
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == set()


def test_the_shared_facts_alone_name_the_slot() -> None:
    own = context.facts()
    assert own is not None
    text = context.shared(own)
    for name in context.SHARED:
        assert f'{name}={own[name]}' in text
        other = {**own, name: own[name] + 'x'}
        assert context.shared(other) != text, name
    assert context.shared({**own, 'Umask': '0777'}) == text, 'not a shared fact'


def proc_entry(folder: Path, status: bytes) -> str:
    """A process's ``/proc`` entries as a kernel without time namespaces shows them, written in
    ``folder``: what ``facts`` reads, given as a pid (a path relative to ``/proc``)."""
    (folder / 'ns').mkdir()
    for name in context.NAMESPACES:
        if name != 'time':
            os.symlink(f'{name}:[4026531840]', folder / 'ns' / name)
    os.symlink('/', folder / 'root')
    os.symlink(sys.executable, folder / 'exe')
    (folder / 'cgroup').write_bytes(b'0::/user.slice\n')
    (folder / 'status').write_bytes(status)
    return os.path.relpath(folder, '/proc')


def test_the_facts_of_a_process_as_proc_shows_them(tmp_path: Path) -> None:
    """A namespace the kernel lacks, a status field missing, a name that is not UTF-8 and
    holds a colon, fields separated by tabs: each read as the rule expects."""
    status = b'Name:\tcaf\xe9:x\nUmask:\t0022\nUid:\t1000\t1000\t1000\t1000\n'
    found = context.facts(proc_entry(tmp_path, status))
    assert found is not None
    assert found['ns/time'] == context.ABSENT and found['ns/mnt'] == 'mnt:[4026531840]'
    assert found['Name'] == 'caf\ufffd:x'
    assert found['Uid'] == '1000 1000 1000 1000'
    assert found['Umask'] == '0022'
    assert found['cgroup'] == '0::/user.slice\n'
    for name in context.SHARED_STATUS:
        if name != 'Uid':
            assert found[name] == context.ABSENT, name


def test_no_facts_without_the_namespaces_folder(tmp_path: Path) -> None:
    pid = proc_entry(tmp_path, b'Name:\tx\n')
    shutil.rmtree(tmp_path / 'ns')
    assert context.facts(pid) is None
