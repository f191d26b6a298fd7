"""The watcher's side of the vouch: whether the desk changed since it was last known clean.

Run by ``checkpoints watch`` beside its capture (Linux only). One inotify queue
(``agent/inotify.py``) watches the folders the walk would enter and a cookie folder of the
watcher's own (beside its socket, never in the desk). Every event that concerns a tracked path
(a write, a metadata change, a name made, removed or moved, a folder's own removal or move)
moves the *generation* on. A walk that found the desk equal to the newest checkpoint reports
that (with what the snapshot answered) under the token it was handed before it began: this
process's random instance id and the generation then (``desk/vouchprotocol.py``); the watcher
keeps the record only when the token is its own and the generation did not move up to the
report's own cookie, and then answers whether it kept it (the caller waits for that answer, so
what it changes next comes after the cookie). A report made under another process's token (a
watcher that ran before) is never kept, whatever its generation. Later, a snapshot is answered
with that record only while the generation stays the same.

Why the answer is sound (git's fsmonitor is the anchor): the kernel queues an inotify
instance's events in the order the changes were made, the write's event before its system call
returns. A cookie made after the request arrived is therefore queued after every change made
before the request was sent; the answer is given only once the cookie's event was read, so all
those changes have moved the generation already.

Besides the generation, the watcher keeps the folders in which such an event happened since the
record (``touched``: the folder of an entry made, changed, removed or moved, a folder whose own
metadata changed, a folder removed and its parent); a snapshot whose state is still the
record's walks only those (``desk/narrow.py``). An event whose folder is not known, or more
than :data:`MAX_TOUCHED` folders, make it say nothing but the generation (the caller walks
everything); a folder moved makes it start over (no record).

The watcher also keeps the tracked files with more than one name (``st_nlink > 1``) that it
found when it listed their folder, or whose name it saw made: a write through a name outside
the desk reaches no watch of the desk, so the caller compares the stat numbers of each with the
record's (``ops/vouched.py``); beyond :data:`MAX_LINKED` of them it answers nothing.

A mount or an unmount in or above the desk raises no event, yet changes which folder lies at
a path: the watcher compares the mount table's entries for the desk before each answer with
those when it watched its folders, and starts over when they differ.

The watcher declines (the caller walks) when the queue overflowed, when a folder was moved or
a watched filesystem unmounted, when a folder could not be watched, until a new walk reports
again; and for good when the desk itself was removed or moved. A new folder is watched when its
event is read (before its listing, so nothing made in it is missed); its event moved the
generation, so the walk that follows sees what it holds.
"""

from __future__ import annotations

import os
import secrets
import select
import shutil
import socket
import threading
import time

from ..core import private
from ..core.paths import Allowlist
from ..desk import vouch
from ..desk import vouchprotocol as protocol
from ..desk.vouchprotocol import Ask, Changed, Kept, Record, Reply, Report, Token
from . import inotify
from .inotify import Folders, Queue, Unwatchable

COOKIE_WAIT = 0.04  # seconds a request waits for its cookie's event
# Touched folders beyond which a snapshot walks everything rather than each folder named.
MAX_TOUCHED = 256
# Multiply-linked tracked files beyond which the watcher answers nothing (the caller reads
# each one's stat numbers).
MAX_LINKED = 256
READ_TIMEOUT = 1.0  # seconds a connection may take to send its request
_COOKIE_MASK = inotify.CREATE | inotify.ONLYDIR | 0x02000000  # IN_DONT_FOLLOW


class Vouch:
    """The record of the desk's last clean state and the events since (see the module notes).

    ``start`` puts the watch and the socket in place (raising :class:`Unwatchable` when the
    desk cannot be watched soundly); ``close`` removes them.
    """

    def __init__(self, desk: str, repository: str, entries: tuple[str, ...]) -> None:
        name = vouch.key(desk, repository)
        if name is None:
            raise Unwatchable  # not a folder
        self.name = name
        self.desk = os.path.realpath(desk)
        self.entries = sorted(entries)
        self.allowlist = Allowlist(entries)
        self.changed = threading.Condition()
        self.instance = secrets.token_hex(16)  # this process's own: see Token
        self.generation = 0
        self.record: tuple[int, Record] | None = None
        # The folders in which a tracked entry changed since the record (None: not known,
        # the next snapshot walks everything).
        self.touched: set[str] | None = set()
        self.lost = False
        self.waiting: set[int] = set()  # cookies a request waits for
        self.seen: set[int] = set()  # of those, the ones whose event was read
        self.cookies = 0
        self.stopping = threading.Event()
        self.threads: list[threading.Thread] = []
        self.queue: Queue | None = None
        self.folders: Folders | None = None
        self.cookie_wd = -1
        self.listener: socket.socket | None = None
        self.socket_path = ''
        self.socket_identity: tuple[int, int] | None = None
        self.cookie_folder = ''
        # The mount table's entries for the desk when the folders were watched: a mount or
        # unmount in or above the desk raises no event, and changes which folders lie there.
        self.mounts: list[tuple[str, str]] | None = None

    # -- set-up ----------------------------------------------------------------------------

    def start(self) -> None:
        path = vouch.socket_path(self.name, create=True)
        if path is None:
            raise Unwatchable  # no private folder for the socket
        self.socket_path = path
        stem = path[: -len('.sock')]
        _remove_abandoned(stem)
        self.cookie_folder = f'{stem}.{os.getpid()}.cookies'  # its own: another may be running
        shutil.rmtree(self.cookie_folder, ignore_errors=True)
        os.mkdir(self.cookie_folder, 0o700)
        with self.changed:
            self._watch()
        if self.lost:
            self.close()
            raise Unwatchable
        self.listener = self._listen(path)
        for target in (self._read_events, self._serve):
            thread = threading.Thread(target=target, name=f'vouch-{target.__name__}', daemon=True)
            thread.start()
            self.threads.append(thread)

    def close(self) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(5)
        if self.listener is not None:
            self.listener.close()
            try:
                info = os.lstat(self.socket_path)
                if (info.st_dev, info.st_ino) == self.socket_identity:
                    os.unlink(self.socket_path)  # a newer watcher's socket stays
            except OSError:
                pass
        if self.queue is not None:
            self.queue.close()
            self.queue = None
        shutil.rmtree(self.cookie_folder, ignore_errors=True)

    def _listen(self, path: str) -> socket.socket:
        # A stale socket, or an older watcher's, is replaced.
        listener, self.socket_identity = private.listen(path, 16)
        listener.settimeout(0.2)
        return listener

    def _watch(self) -> None:
        """A new queue over the cookie folder and every wanted folder (under ``changed``); the
        generation moves on, so nothing recorded before counts."""
        if self.queue is not None:
            self.queue.close()
            self.queue = None
        self.generation += 1
        self._forget()
        self.mounts = vouch.desk_mounts(self.desk)
        try:
            queue = Queue()
            self.queue = queue
            self.cookie_wd = queue.add(self.cookie_folder, _COOKIE_MASK)
            self.folders = Folders(queue, self.desk, self._wanted, self.allowlist.covers)
        except (Unwatchable, OSError, RecursionError):
            self.lost = True

    def _wanted(self, path: str) -> bool:
        return self.allowlist.covers(path) or self.allowlist.is_ancestor(path)

    def _forget(self) -> None:
        """No record, and nothing changed since one (under ``changed``)."""
        self.record = None
        self.touched = set()

    def _touch(self, *folders: str) -> None:
        """Notes folders in which something changed since the record (under ``changed``)."""
        touched = self.touched
        if touched is None:
            return
        touched.update(folders)
        if len(touched) > MAX_TOUCHED:
            self.touched = None

    # -- events ----------------------------------------------------------------------------

    def _read_events(self) -> None:
        while not self.stopping.is_set() and not self.lost:
            # Under the lock, never while ``_watch`` replaces the queue (a request that finds
            # the mounts changed starts the watch over): only a closed or lost watch has none.
            with self.changed:
                queue = self.queue
            if queue is None:
                return
            try:
                ready, _, _ = select.select([queue.fd], [], [], 0.2)
            except (OSError, ValueError):
                ready = []  # the queue was replaced meanwhile
            if not ready:
                continue
            with self.changed:
                if queue is not self.queue:
                    continue
                self._take(queue.read())
                self.changed.notify_all()

    def _take(self, events: list[inotify.Event]) -> None:
        """Moves the generation on for each event that concerns a tracked path; watches new
        folders; starts over when the queue overflowed or a folder moved."""
        folders = self.folders
        assert folders is not None
        again = False
        for wd, mask, name in events:
            if mask & inotify.Q_OVERFLOW:
                again = True
                continue
            if wd == self.cookie_wd:
                # ASCII digits only: '²' is a digit to isdigit() and not to int()
                if name.isascii() and name.isdigit() and int(name) in self.waiting:
                    self.seen.add(int(name))
                continue
            folder = folders.paths.get(wd)
            if folder is None:
                self.generation += 1  # a watch this queue no longer maps: assume a change
                self.touched = None  # somewhere
                continue
            if mask & (inotify.IGNORED | inotify.DELETE_SELF | inotify.MOVE_SELF | inotify.UNMOUNT):
                self.generation += 1
                self._touch(folder, folder.rpartition('/')[0])
                if folder == '':
                    self.lost = True  # the desk itself was removed or moved
                if mask & inotify.IGNORED:
                    del folders.paths[wd]
                if mask & (inotify.MOVE_SELF | inotify.UNMOUNT):
                    again = True  # the folders below it are known under old names
                continue
            if not name:
                self.generation += 1  # the folder's own metadata
                self._touch(folder)
                continue
            if inotify.is_git(name):
                continue  # the walk never reads a folder named .git
            path = f'{folder}/{name}' if folder else name
            if not self._wanted(path):
                continue
            self.generation += 1
            self._touch(folder)
            if not mask & inotify.ISDIR:
                self._relink(folders, path, mask)
            elif mask & (inotify.MOVED_FROM | inotify.MOVED_TO):
                again = True
            elif mask & inotify.CREATE:
                try:
                    folders.add(path)
                except (Unwatchable, OSError, RecursionError):
                    again = True
        if again and not self.lost:
            self._watch()

    def _relink(self, folders: Folders, path: str, mask: int) -> None:
        """Keeps ``folders.linked`` up to date for a file named by an event: a name made (a
        hard link made in the desk, or a file with other names moved in) is looked at, a name
        removed or moved away is forgotten."""
        if mask & (inotify.DELETE | inotify.MOVED_FROM):
            folders.linked.discard(path)
        elif mask & (inotify.CREATE | inotify.MOVED_TO):
            if self.allowlist.covers(path) and inotify.names(os.path.join(self.desk, path)) > 1:
                folders.linked.add(path)
            else:
                folders.linked.discard(path)

    # -- requests --------------------------------------------------------------------------

    def _serve(self) -> None:
        listener = self.listener
        assert listener is not None
        while not self.stopping.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                self._answer(connection)
            except (OSError, ValueError):
                pass
            finally:
                connection.close()

    def _answer(self, connection: socket.socket) -> None:
        if private.peer_uid(connection) != os.getuid():
            return  # only this user's processes are answered
        line = protocol.read_line(connection, time.monotonic() + READ_TIMEOUT)
        request = protocol.decode(line)
        if isinstance(request, Ask):
            reply = self._ask(request)
            if reply is not None:  # else the connection closes unanswered: the caller walks
                connection.sendall(protocol.encode(reply))
        elif isinstance(request, Report):
            connection.sendall(protocol.encode(Kept(self._clean(request))))

    def _ask(self, request: Ask) -> Reply | None:
        if self.lost or sorted(request.entries) != self.entries or not self._synced():
            return None
        with self.changed:
            self._remounted()
            folders = self.folders
            if self.lost or folders is None or len(folders.linked) > MAX_LINKED:
                return None
            token = Token(self.instance, self.generation)
            linked = tuple(sorted(folders.linked))
            record = self.record
            if record is not None and record[0] == self.generation:
                return Reply(token, linked, clean=record[1])  # the caller checks it still holds
            if record is not None and self.touched is not None:
                return Reply(token, linked, changed=Changed(record[1], tuple(sorted(self.touched))))
            return Reply(token, linked)

    def _clean(self, report: Report) -> bool:
        """Keeps the report's record when no change arrived since its token; whether it did."""
        if not self._synced():
            return False
        with self.changed:
            self._remounted()
            if not self.lost and report.token == Token(self.instance, self.generation):
                self._forget()
                self.record = (self.generation, report.record)
                return True
            return False

    def _remounted(self) -> None:
        """Starts over when the mount table's entries for the desk changed since the folders
        were watched (under ``changed``): a folder may lie where another was watched."""
        if not self.lost and vouch.desk_mounts(self.desk) != self.mounts:
            self._watch()

    def _synced(self) -> bool:
        """Makes a cookie and waits until its event was read: every change made before is
        then counted in the generation."""
        with self.changed:
            self.cookies += 1
            number = self.cookies
            self.waiting.add(number)
        path = os.path.join(self.cookie_folder, str(number))
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
            with self.changed:
                seen = self.changed.wait_for(lambda: number in self.seen, COOKIE_WAIT)
                return bool(seen) and not self.lost
        except OSError:
            return False
        finally:
            with self.changed:
                self.waiting.discard(number)
                self.seen.discard(number)
            try:
                os.unlink(path)
            except OSError:
                pass


def _remove_abandoned(stem: str) -> None:
    """Removes the cookie folders of watchers of this desk that are no longer running."""
    folder, prefix = os.path.split(stem)
    for name in os.listdir(folder):
        pid = name[len(prefix) + 1 : -len('.cookies')]
        if (
            name.startswith(prefix + '.')
            and name.endswith('.cookies')
            and pid.isascii()
            and pid.isdigit()
        ):
            try:
                os.kill(int(pid), 0)
            except ProcessLookupError:
                shutil.rmtree(os.path.join(folder, name), ignore_errors=True)
            except OSError:
                continue
