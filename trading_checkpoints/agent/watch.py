"""``checkpoints watch``: record every change to a desk as it happens, whoever makes it.

A foreground process that waits on the kernel's file events for the desk folder (inotify,
FSEvents or ReadDirectoryChangesW, through the notifier of ``watchfiles``; never polling) and,
once writes to its tracked paths settle (no new event for ``quiet`` seconds), takes a
checkpoint of what changed (tool ``watch``, the changed paths, ``Checkpoint-Action:
captured``; see ``ops.snapshot.capture``). So the changes of processes no hook sees (a cron
job, a script, a person's editor) are recorded when they happen, and an agent's next
checkpoint holds only the agent's change.

- It takes the desk's lock like every writer: a restore in progress is waited for, never
  recorded half done, and its own writes leave nothing to record.
- One runs per desk: it holds a lock file of its own in the repository while it runs, and a
  second watch of the desk is refused, naming the first one's pid.
- At its start it records what changed since the newest checkpoint; it never makes a first
  checkpoint of a desk that holds no tracked file.
- Folders made later inside the desk are followed (the watch is recursive).
- While nothing happens it sleeps in the kernel, waking every :data:`STEP` to see whether it
  was asked to stop; the debounce is timed here, not by the notifier, so it never delays that.
- While it runs, a no-op snapshot and a clean ``status`` of the desk are answered from its
  record of what changed, without walking the desk (Linux; see ``agent/vouchwatch.py``).
- SIGINT and SIGTERM stop it within a second, after the checkpoint it may be taking (changes
  still waiting out the debounce are left for the next snapshot); it exits 0.

Needs the optional extra: ``pip install 'trading-checkpoints[watch]'``.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core import lock
from ..core.repofiles import RepoFile
from ..errors import CheckpointError, LockTimeoutError, MissingDeskError
from ..ops import engine, snapshot
from ..store.repo import PRIVATE_DIR

if TYPE_CHECKING:
    from ..checkpoints import Checkpoints

INSTALL_HINT = (
    "checkpoints watch needs the optional 'watch' extra: pip install 'trading-checkpoints[watch]'"
)
SUBJECT = 'changes seen by checkpoints watch'
TOOL = 'watch'
STEP = 0.2  # seconds between two looks at whether the watch was asked to stop
WATCH_LOCK = 'watch'  # held by the desk's running watch, in its repository's private folder


def _notifier() -> Any:
    """watchfiles' kernel watcher (the class its ``watch()`` drives), used directly so the watch
    is known to be in place before the first checkpoint and the ready line."""
    try:
        import watchfiles
    except ImportError as error:
        raise CheckpointError(INSTALL_HINT) from error
    try:
        from watchfiles._rust_notify import RustNotify
    except ImportError as error:
        raise CheckpointError(
            f'watchfiles {watchfiles.VERSION} has no kernel notifier this version can use; '
            "pip install 'trading-checkpoints[watch]' installs one that has"
        ) from error
    return RustNotify


def capture(checkpoints: Checkpoints) -> snapshot.Capture:
    """One checkpoint of what changed in the desk (none when nothing did), under the lock."""
    if snapshot.settled(checkpoints.desk_config):
        return snapshot.Capture(None)
    with engine.locked(checkpoints.desk_config, light=True, report_to=checkpoints) as session:
        if session.repo.head() is None and not session.scan()[0].names:
            return snapshot.Capture(None)  # no first checkpoint of a desk holding nothing
        return snapshot.capture(session, SUBJECT, TOOL, None)


def watch(
    checkpoints: Checkpoints,
    *,
    quiet: float = 1.0,
    echo: Callable[[str], None] = print,
    ready: Callable[[], None] = lambda: None,
    stop: threading.Event | None = None,
) -> None:
    """Watches the desk until ``stop`` is set, or SIGINT or SIGTERM arrives (see the module
    notes). ``ready`` is called once the kernel watch is in place and what changed before it
    is recorded; ``echo`` is told of each checkpoint.

    Raises:
        LockTimeoutError: Another ``checkpoints watch`` runs on the desk (the message names
            its pid).
    """
    notifier = _notifier()
    desk = checkpoints.desk_directory
    if not desk.is_dir():
        raise MissingDeskError(f'no desk folder {desk} to watch', desk=desk)
    tracked = _tracked(checkpoints, desk)
    stop = stop or threading.Event()
    # The kernel watch is looked at each STEP (so a stop is seen within it); changes are
    # taken once ``quiet`` passed without a new one, or ten quiet periods after the first.
    step = min(STEP, quiet)
    # debug off, never polling, 300 ms (unused: no polling), recursive, permission errors ignored
    with (
        _alone(checkpoints),
        _stopped_by_signals(stop),
        notifier([str(desk)], False, False, 300, True, True) as kernel,
        _vouching(checkpoints),
    ):
        _report(capture(checkpoints), echo)  # what changed before the watch began
        ready()
        # When the changes seen are to be taken (None: none seen), and at the latest.
        due: float | None = None
        latest: float | None = None
        while not stop.is_set():
            left: float | None = None if due is None else due - time.monotonic()
            if left is not None and left <= 0:
                due = latest = None
                _report(capture(checkpoints), echo)
                continue
            # Sleeps in the kernel, waking each ``step`` to see whether ``stop`` was set;
            # returns the changes once they pause for a step, or at the timeout.
            timeout = 0 if left is None else _ms(left)
            found = kernel.watch(_ms(step), _ms(step), timeout, stop)
            if found in ('stop', 'signal'):
                break
            if found != 'timeout' and any(tracked(path) for _, path in found):
                now = time.monotonic()
                latest = now + 10 * quiet if latest is None else latest
                due = min(now + quiet, latest)


def _ms(seconds: float) -> int:
    return max(1, round(seconds * 1000))


@contextmanager
def _alone(checkpoints: Checkpoints) -> Iterator[None]:
    """Holds the desk's watch lock (a file lock in its repository, created first if need be)
    while the watch runs: a second ``watch`` of the desk is refused, naming the first's pid."""
    config = checkpoints.desk_config
    with engine.locked(config, light=True, verb='watch'):
        pass  # the repository exists, and is sound, from here on
    held = RepoFile(config.repository, f'{PRIVATE_DIR}/{WATCH_LOCK}')
    try:
        with lock.exclusive(held, 0, verb='watch'):
            yield
    except LockTimeoutError as error:
        if error.lock != str(held.path):
            raise
        raise LockTimeoutError(
            f'checkpoints watch already runs on the desk {checkpoints.desk_directory} '
            f'({error.holder}); stop it first',
            lock=error.lock,
            timeout=0,
            holder=error.holder,
        ) from None


@contextmanager
def _vouching(checkpoints: Checkpoints) -> Iterator[None]:
    """Answers snapshots and ``status`` of this desk whether it changed, while the watch runs
    (``agent/vouchwatch.py``; Linux only). A desk it cannot watch soundly is simply walked."""
    if not sys.platform.startswith('linux'):
        yield
        return
    from .inotify import Unwatchable
    from .vouchwatch import Vouch

    try:
        vouch = Vouch(
            str(checkpoints.desk_directory),
            str(checkpoints.repository_directory),
            checkpoints.effective_tracked_paths(),
        )
        vouch.start()
    except (Unwatchable, OSError):
        yield
        return
    try:
        yield
    finally:
        vouch.close()


def _tracked(checkpoints: Checkpoints, desk: Path) -> Callable[[str], bool]:
    from ..core.paths import Allowlist

    allowlist = Allowlist(checkpoints.effective_tracked_paths())
    roots = {os.path.abspath(desk), os.path.realpath(desk)}

    def tracked(path: str) -> bool:
        for root in roots:
            if path.startswith(root + os.sep):
                return allowlist.covers(path[len(root) + 1 :].replace(os.sep, '/'))
        return False

    return tracked


def _report(done: snapshot.Capture, echo: Callable[[str], None]) -> None:
    if done.checkpoint_id is not None:
        shown = ', '.join(done.paths[:5]) + (' ...' if len(done.paths) > 5 else '')
        # No path: the newest checkpoint's tree differed only in shape (an empty folder a
        # tree written by another git tool held), every file as it was.
        echo(f'checkpoint {done.checkpoint_id}: {shown or "no file changed"}')


@contextmanager
def _stopped_by_signals(stop: threading.Event) -> Iterator[None]:
    """SIGINT and SIGTERM set ``stop`` (the watch ends after the checkpoint it may be taking)
    instead of killing the process mid-write; the old handlers come back afterwards."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
