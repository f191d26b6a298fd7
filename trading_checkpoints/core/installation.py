"""Which code a process runs: one fingerprint of an installation, for everything that must not
outlive a change of it (the warm server's socket, the MCP server's kept answers, the watcher's
record).

A fingerprint is a short hash of

- the interpreter (:func:`interpreter`): its executable and that file's status, its version, the
  options it was started with (``sys.flags``, ``-W``, ``-X``), the hash seed asked for and the
  file system encoding;
- the import path (``sys.path``);
- the paths given, each with its status: the files of the modules a process imported, the
  folders holding them and the folders of the import path (:func:`loaded_files`).

A status is a file's size, modification and change times in nanoseconds, inode and device. A
module written in place changes its modification time (an edit that keeps the size included)
and its change time (which no one can set back: a tool that restores an older modification
time afterwards, ``tar -x`` or ``cp -p``, still moves it); one replaced (an upgrade) its inode;
a module added, removed or renamed changes its folder's times, and so does a file put on an
earlier entry of the import path that would shadow one of them (``click.py`` dropped into the
script's folder).

The paths are the ones a process's imports depend on (:func:`loaded_files`, read after its
imports). A process that has not imported them checks a fingerprint for the list another
process kept: the MCP server keeps its list with its answers; the warm server's clients check
the list their server wrote beside its socket, one ``stat`` per path (~390 for a served
command: 0.7-0.9 ms on the 2-core test machine), where fingerprinting the contents would read
~10 MB. No cheaper stamp is sound: a write in place changes nothing but the file's own status
(no folder's, no other file's), so a check must look at every file, or be told of every
change, which the warm server arranges where it can (``warm/watched.py``: inotify on local
file systems, and then its clients check nothing).

A status misses one change: a write within the same tick of the file system's clock as the
write before it, keeping the size, leaves the status as it was. A file last changed moments
before it was read, and so before a process's imports were fingerprinted, may be such a file;
:func:`settled` tells whether every file of a list last changed long enough ago (by its change
time: a modification time may have been set back), and the users keep a fingerprint only
then.
"""

from __future__ import annotations

import os
import sys
import time
import zlib

TYPE_CHECKING = False  # as ``typing``'s, without importing it (the warm client imports this)
if TYPE_CHECKING:
    from collections.abc import Iterable

# How long before it was read a file must have been last written for its status to stand for
# its contents: the coarsest file system clocks tick every 2 s (FAT), most every few ms.
RACY_SECONDS = 2.0


def interpreter() -> str:
    """The interpreter and the options it runs with (not the files it may import)."""
    return '\0'.join(
        [
            sys.executable,
            _status(sys.executable),
            sys.version,
            repr(tuple(sys.flags)),
            repr(sys.warnoptions),
            repr(sorted(getattr(sys, '_xoptions', {}).items())),
            os.environ.get('PYTHONHASHSEED', ''),
            sys.getfilesystemencoding(),
            sys.getfilesystemencodeerrors(),
        ]
    )


def loaded_files() -> list[str]:
    """What this process's imports depend on, to fingerprint: every module file it has
    imported, the folders holding them and the folders of its import path; sorted. Built-in
    and frozen modules are left out: their code is in the interpreter's executable (whose
    status :func:`interpreter` covers), not in the file a frozen module names."""
    paths = set(sys.path)
    for module in list(sys.modules.values()):
        path = getattr(module, '__file__', None)
        if getattr(getattr(module, '__spec__', None), 'origin', None) == 'frozen':
            continue
        if isinstance(path, str) and os.path.isabs(path):
            paths.add(path)
            paths.add(path.rpartition('/')[0] if os.sep == '/' else os.path.dirname(path))
    return sorted(path for path in paths if path)


def fingerprint(paths: Iterable[str], context: str = '') -> str:
    """The fingerprint of this interpreter and import path, of the files and folders
    ``paths`` (:func:`loaded_files`) as they are now, and of ``context`` (any text its user
    adds: what else the fingerprinted thing depends on)."""
    listed = list(paths)
    statuses: list[tuple[int, int, int, int, int] | None] = []
    add = statuses.append
    for path in listed:
        try:
            info = os.stat(path)
        except (OSError, ValueError):
            add(None)
            continue
        add((info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, info.st_dev))
    return digest('\0'.join([interpreter(), context, *sys.path, '', *listed, repr(statuses)]))


def settled(files: Iterable[str], now: float | None = None) -> bool:
    """Whether each of ``files`` last changed more than :data:`RACY_SECONDS` before ``now`` (so
    that a later write changes its status)."""
    limit = int(((time.time() if now is None else now) - RACY_SECONDS) * 1e9)
    for path in files:
        try:
            info = os.stat(path)
            if max(info.st_mtime_ns, info.st_ctime_ns) >= limit:
                return False
        except OSError:
            continue  # gone: its fingerprint says so
    return True


def digest(text: str) -> str:
    """A short name for ``text`` (16 hex digits)."""
    data = text.encode('utf-8', 'surrogateescape')
    return f'{zlib.crc32(data):08x}{zlib.adler32(data):08x}'


def _status(path: str) -> str:
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return '-'
    return f'{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}:{info.st_ino}:{info.st_dev}'
