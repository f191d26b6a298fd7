"""The context's steps the waiting child and the slot take, in this process: the signal handling
of a new Python process restored (``test_context.py`` adopts a real client's afterwards), and
the shared facts a slot is named after."""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator

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
