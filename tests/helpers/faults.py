"""Fault injection: children killed with SIGKILL at a chosen moment, and audit-hook actions.

Nothing here is a mock: children are real processes (``os.fork`` of the test process) killed
with a real SIGKILL; an armed action runs in the test's own process at a real file-system
event (``sys.addaudithook``), to make another writer act at an exact moment.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

_MUTATING = {
    'os.rename',
    'os.remove',
    'os.rmdir',
    'os.mkdir',
    'os.symlink',
    'os.chmod',
    'os.truncate',
    'os.link',
}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _is_mutation(event: str, args: tuple) -> bool:
    if event in _MUTATING:
        return True
    if event == 'open' and len(args) >= 3:
        mode, flags = args[1], args[2]
        if isinstance(mode, str):
            return any(c in mode for c in 'wax+')
        return isinstance(flags, int) and bool(flags & _WRITE_FLAGS)
    return False


def lands_a_desk_file(event: str, args: tuple, suffix: str = '.md') -> bool:
    """Whether an audit event is a restore putting a file (named ``*<suffix>``) at its name:
    a temporary file renamed into place, or the file opened to be rewritten or created in
    place (by its bare name, through its folder's descriptor)."""
    if event == 'os.rename':
        return '.checkpoint-' in os.fsdecode(args[0])
    if event != 'open' or len(args) < 3 or not isinstance(args[0], (str, bytes)):
        return False
    name, flags = os.fsdecode(args[0]), args[2]
    return (
        isinstance(flags, int)
        and bool(flags & (os.O_WRONLY | os.O_RDWR))
        and '/' not in name
        and '.checkpoint-' not in name
        and name.endswith(suffix)
    )


# Audit hooks cannot be removed, and mutation testing only sees calls made in the test's own
# process: one hook, installed on first use, runs the actions armed by the running test.
_ARMED: list[Callable[[str, tuple], None]] = []
_INSTALLED: list[bool] = []


def _dispatch(event: str, args: tuple) -> None:
    for action in list(_ARMED):
        action(event, args)


@contextlib.contextmanager
def armed(action: Callable[[str, tuple], None]) -> Iterator[None]:
    """Runs ``action(event, args)`` at every audit event of this process while inside."""
    if not _INSTALLED:
        sys.addaudithook(_dispatch)
        _INSTALLED.append(True)
    _ARMED.append(action)
    try:
        yield
    finally:
        _ARMED.remove(action)


def opened_for_reading(name: str, event: str, args: tuple) -> bool:
    """Whether an audit event is the opening of file ``name`` (by its bare name, as the desk's
    reads open it through its folder's descriptor) for reading only."""
    if event != 'open' or len(args) < 3 or args[0] != name or not isinstance(args[2], int):
        return False
    return not args[2] & (os.O_WRONLY | os.O_RDWR)


@contextlib.contextmanager
def at_first_read(name: str, action: Callable[[], None]) -> Iterator[list[str]]:
    """Runs ``action`` once, at the first ``os.read`` after file ``name`` is opened for reading
    (between a reader's opening and its reading); yields a list naming it once run. A profile
    hook (``sys.setprofile``) sees the call, in this process."""
    opened: list[bool] = []
    done: list[str] = []

    def on_open(event: str, args: tuple) -> None:
        if not opened and opened_for_reading(name, event, args):
            opened.append(True)

    def profile(frame, event: str, arg) -> None:  # noqa: ANN001 - sys.setprofile's signature
        if opened and not done and event == 'c_call' and arg is os.read:
            done.append(name)
            action()

    sys.setprofile(profile)
    try:
        with armed(on_open):
            yield done
    finally:
        sys.setprofile(None)


def kill_self_at(event_number: int) -> None:
    """In a child: SIGKILL this process just before its Nth file-system mutation."""
    seen = [0]

    def hook(event: str, args: tuple) -> None:
        if _is_mutation(event, args):
            seen[0] += 1
            if seen[0] >= event_number:
                os.kill(os.getpid(), signal.SIGKILL)

    sys.addaudithook(hook)


def count_mutations() -> list[int]:
    seen = [0]

    def hook(event: str, args: tuple) -> None:
        if _is_mutation(event, args):
            seen[0] += 1

    sys.addaudithook(hook)
    return seen


@dataclass
class ChildOutcome:
    killed: bool
    error: str | None
    mutations: int = 0
    seconds: float = 0.0


def run_child(
    action, *, kill_at: int | None = None, kill_after: float | None = None
) -> ChildOutcome:
    """Runs ``action()`` in a forked child, killing it with SIGKILL at a chosen moment."""
    read_end, write_end = os.pipe()
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 0
        try:
            os.close(read_end)
            counter = count_mutations() if kill_at is None else None
            if kill_at is not None:
                kill_self_at(kill_at)
            action()
            report = f'ok {counter[0] if counter else 0}'
        except BaseException as error:  # noqa: BLE001 - reported to the parent
            report = f'error {type(error).__name__}: {error}'
            code = 1
        try:
            os.write(write_end, report.encode()[:4000])
        finally:
            os._exit(code)
    os.close(write_end)
    if kill_after is not None:
        deadline = started + kill_after
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.perf_counter() >= deadline:
                os.kill(pid, signal.SIGKILL)
                _, status = os.waitpid(pid, 0)
                break
            time.sleep(0.0005)
    else:
        _, status = os.waitpid(pid, 0)
    seconds = time.perf_counter() - started
    with os.fdopen(read_end, 'rb') as pipe:
        report = pipe.read().decode(errors='replace')
    if os.WIFSIGNALED(status):
        assert os.WTERMSIG(status) == signal.SIGKILL
        return ChildOutcome(killed=True, error=None, seconds=seconds)
    if report.startswith('ok'):
        return ChildOutcome(
            killed=False, error=None, mutations=int(report.split()[1]), seconds=seconds
        )
    return ChildOutcome(killed=False, error=report or f'exit status {status}', seconds=seconds)


@dataclass
class Tally:
    trials: int = 0
    killed: int = 0
    completed: int = 0
    recoveries: int = 0
    restores: int = 0
    snapshots: int = 0
    checked_versions: int = 0
    bytes_lost: int = 0
    notes: list[str] = field(default_factory=list)


def kill_until_pending(repo_dir: os.PathLike[str], action: Callable[[], object]) -> None:
    """Kills ``action`` (a restore, an undo) in a child at its 1st, 2nd, ... change of the desk
    until it leaves a restore record: an interrupted restore for the next writer to complete."""
    from trading_checkpoints.ops import journal

    for kill_at in range(1, 200):
        assert run_child(action, kill_at=kill_at).killed
        if journal.pending(repo_dir):
            return
    raise AssertionError('no kill left a restore record')


@contextlib.contextmanager
def readers_let_go(fifo: str | os.PathLike[str], after: float = 10) -> Iterator[list[bool]]:
    """While inside, from ``after`` seconds on: a reader waiting on ``fifo`` for a writer is
    let go (a writer opens it and closes it at once), so a test that waits there fails rather
    than hangs; yields a list holding ``True`` for each reader let go."""
    released: list[bool] = []
    done = threading.Event()

    def let_go() -> None:
        done.wait(after)
        while not done.wait(0.1):
            try:  # fails (ENXIO) while nobody has it open for reading
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                continue
            released.append(True)

    thread = threading.Thread(target=let_go, daemon=True)
    thread.start()
    try:
        yield released
    finally:
        done.set()
        thread.join()
