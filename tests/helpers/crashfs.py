"""A folder as a file system model: names and inodes, and the operations a traced program made
on it (``helpers/fstrace.py``), replayed to know what each call did to which inode.

:class:`Disk` is what a folder holds: names (a folder's inode and a name) pointing at inodes,
and the inodes (a file's bytes, a folder, a symlink's target; permission bits). :class:`Replay`
walks a trace in the order its calls completed, keeps each thread's descriptor table (shared
by threads, copied by a fork) and each open file's position, and turns every call under the
folder into an :class:`Op`: a write at an offset, a truncation, a permission change, a name
linked, unlinked or renamed, a flush of one inode or of everything, or the program's report
that its operation returned. Each op is applied to the model as it is made, so a later call's
path or descriptor names the inode the kernel used. ``helpers/crashstates.py`` applies chosen
subsets of the ops to the model taken before the trace: the crash states.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from helpers.fstrace import Call, Trace, descriptor, string

ROOT = 0
FILE, FOLDER, LINK = 'file', 'folder', 'link'

WRITE, TRUNCATE, CHMOD = 'write', 'truncate', 'chmod'  # an inode's data and bits
NAME, UNNAME, RENAME = 'name', 'unname', 'rename'  # a folder's entries
FLUSH, FLUSH_ALL, REPORT = 'flush', 'flush-all', 'report'

Place = tuple[int, str]  # a folder's inode and a name in it
Image = dict[str, tuple[str, int, bytes]]  # path -> (kind, permission bits, bytes or target)


@dataclass(frozen=True)
class Node:
    kind: str
    mode: int
    data: bytes = b''  # a file's bytes, a symlink's target


@dataclass(frozen=True)
class Op:
    """One change the program made (or a flush, or its report), at the trace lines where its
    call began and completed. ``what`` names it for messages."""

    kind: str
    began: int
    done: int
    what: str
    ino: int = -1  # the inode written, truncated, chmod-ed, flushed, (un)named or moved
    offset: int = 0
    data: bytes = b''
    size: int = 0  # TRUNCATE
    mode: int = 0  # CHMOD
    place: Place | None = None  # NAME, UNNAME, a RENAME's old name
    target: Place | None = None  # a RENAME's new name
    new: Node | None = None  # NAME of an inode this op created


@dataclass
class Disk:
    entries: dict[Place, int] = field(default_factory=dict)
    nodes: dict[int, Node] = field(default_factory=dict)

    @classmethod
    def load(cls, folder: str) -> Disk:
        disk = cls(nodes={ROOT: Node(FOLDER, stat.S_IMODE(os.lstat(folder).st_mode))})
        inodes: dict[int, int] = {}

        def walk(path: str, ino: int) -> None:
            with os.scandir(path) as listing:
                for entry in sorted(listing, key=lambda e: e.name):
                    st = entry.stat(follow_symlinks=False)
                    known = inodes.get(st.st_ino)
                    if known is not None:  # a hard link
                        disk.entries[ino, entry.name] = known
                        continue
                    child = len(disk.nodes)
                    inodes[st.st_ino] = child
                    mode = stat.S_IMODE(st.st_mode)
                    if stat.S_ISDIR(st.st_mode):
                        disk.nodes[child] = Node(FOLDER, mode)
                        walk(entry.path, child)
                    elif stat.S_ISLNK(st.st_mode):
                        disk.nodes[child] = Node(LINK, mode, os.fsencode(os.readlink(entry.path)))
                    else:
                        with open(entry.path, 'rb') as handle:
                            disk.nodes[child] = Node(FILE, mode, handle.read())
                    disk.entries[ino, entry.name] = child

        walk(folder, ROOT)
        return disk

    def copy(self) -> Disk:
        return Disk(dict(self.entries), dict(self.nodes))

    def lookup(self, parts: list[str]) -> int | None:
        ino: int | None = ROOT
        for part in parts:
            ino = self.entries.get((ino, part)) if ino is not None else None
        return ino

    def size(self, ino: int) -> int:
        return len(self.nodes[ino].data)

    def apply(self, op: Op) -> None:
        """One change, as it reaches the disk (a write or a truncation of an inode, a name)."""
        if op.kind == WRITE:
            old = self.nodes[op.ino]
            data = old.data.ljust(op.offset, b'\0')
            data = data[: op.offset] + op.data + data[op.offset + len(op.data) :]
            self.nodes[op.ino] = replace(old, data=data)
        elif op.kind == TRUNCATE:
            old = self.nodes[op.ino]
            self.nodes[op.ino] = replace(old, data=old.data[: op.size].ljust(op.size, b'\0'))
        elif op.kind == CHMOD:
            self.nodes[op.ino] = replace(self.nodes[op.ino], mode=op.mode)
        elif op.kind == NAME:
            assert op.place is not None
            if op.new is not None:
                self.nodes.setdefault(op.ino, op.new)
            self.entries[op.place] = op.ino
        elif op.kind == UNNAME:
            assert op.place is not None
            self.entries.pop(op.place, None)
        elif op.kind == RENAME:
            assert op.place is not None and op.target is not None
            self.entries.pop(op.place, None)
            self.entries[op.target] = op.ino

    def image(self) -> Image:
        """Every file, folder and symlink reachable from the root, by path."""
        children: dict[int, list[tuple[str, int]]] = {}
        for (folder, name), ino in self.entries.items():
            children.setdefault(folder, []).append((name, ino))
        out: Image = {}

        def walk(prefix: str, ino: int) -> None:
            for name, child in sorted(children.get(ino, ())):
                node = self.nodes[child]
                path = prefix + name
                out[path] = (node.kind, node.mode, node.data)
                if node.kind == FOLDER:
                    walk(path + '/', child)

        walk('', ROOT)
        return out


def materialize(image: Image, folder: str) -> None:
    """Writes an image out as real files under ``folder`` (made anew)."""
    os.makedirs(folder)
    folders = []
    for path, (kind, mode, data) in sorted(image.items(), key=lambda item: item[0].split('/')):
        full = os.path.join(folder, path)
        if kind == FOLDER:
            os.mkdir(full)
            folders.append((full, mode))
        elif kind == LINK:
            os.symlink(os.fsdecode(data), full)
        else:
            fd = os.open(full, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                os.write(fd, data)
                os.fchmod(fd, mode)
            finally:
                os.close(fd)
    for full, mode in reversed(folders):
        os.chmod(full, mode)


# -- replaying a trace -------------------------------------------------------------------


@dataclass
class OpenFile:
    """An open file description: the inode (None: not under the folder) and its position."""

    ino: int | None
    position: int = 0
    append: bool = False


class Unsupported(Exception):
    """A call the model cannot replay (it would not know what reached the disk)."""


class Replay:
    """Turns a trace's calls under ``root`` into :class:`Op` (see the module notes)."""

    def __init__(self, disk: Disk, root: str, cwd: str, umask: int) -> None:
        self.disk = disk
        self.root = os.path.realpath(root)
        self.cwd = cwd
        self.umask = umask
        self.ops: list[Op] = []
        self.tables: dict[int, dict[int, OpenFile]] = {}
        self.parents: dict[int, tuple[int, bool]] = {}  # thread -> (parent, shares its table)
        self.report_words = (b'REPORTED',)

    def run(self, trace: Trace) -> list[Op]:
        for call in trace.calls:
            if call.name in ('clone', 'clone3', 'fork', 'vfork') and call.result > 0:
                shares = any('CLONE_FILES' in arg for arg in call.args)
                self.parents[call.result] = (call.thread, shares)
        for call in sorted(trace.calls, key=lambda c: c.done):
            if call.result >= 0:
                self.call(call)
        return self.ops

    # -- descriptors ----------------------------------------------------------------------

    def table(self, thread: int) -> dict[int, OpenFile]:
        table = self.tables.get(thread)
        if table is None:
            parent, shares = self.parents.get(thread, (None, False))
            if parent is None:
                table = {}
            else:
                table = self.table(parent) if shares else dict(self.table(parent))
            self.tables[thread] = table
        return table

    def open_file(self, call: Call, index: int = 0) -> OpenFile | None:
        number, _ = descriptor(call.args[index])
        return self.table(call.thread).get(number) if number is not None else None

    # -- paths ----------------------------------------------------------------------------

    def path(self, call: Call, folder: int | None, name: int) -> str:
        text = string(call.args[name])
        if not os.path.isabs(text):
            base = self.cwd
            if folder is not None:
                _, shown = descriptor(call.args[folder])
                base = shown if shown is not None else base
            text = os.path.join(base, text)
        return os.path.normpath(text)

    def parts(self, path: str) -> list[str] | None:
        if path == self.root:
            return []
        if not path.startswith(self.root + os.sep):
            return None
        return path[len(self.root) + 1 :].split(os.sep)

    def place(self, path: str) -> Place | None:
        parts = self.parts(path)
        if not parts:
            return None
        folder = self.disk.lookup(parts[:-1])
        if folder is None:
            raise Unsupported(f'{path}: its folder is not in the model')
        return folder, parts[-1]

    def name_of(self, place: Place | None) -> str:
        if place is None:
            return '?'
        for path, ino in self._paths():
            if ino == place[0]:
                return f'{path}/{place[1]}' if path else place[1]
        return f'<inode {place[0]}>/{place[1]}'

    def _paths(self) -> Iterator[tuple[str, int]]:
        yield '', ROOT
        children: dict[int, list[tuple[str, int]]] = {}
        for (folder, name), ino in self.disk.entries.items():
            children.setdefault(folder, []).append((name, ino))
        stack = [('', ROOT)]
        while stack:
            prefix, ino = stack.pop()
            for name, child in children.get(ino, ()):
                if self.disk.nodes[child].kind == FOLDER:
                    path = f'{prefix}/{name}' if prefix else name
                    yield path, child
                    stack.append((path, child))

    def inode_name(self, ino: int) -> str:
        for (folder, name), child in self.disk.entries.items():
            if child == ino:
                return self.name_of((folder, name))
        return f'<inode {ino}>'

    # -- ops --------------------------------------------------------------------------------

    def add(self, call: Call, kind: str, what: str, **fields: object) -> None:
        op = Op(kind, call.began, call.done, f'{call.name} {what}', **fields)  # type: ignore[arg-type]
        self.disk.apply(op)
        self.ops.append(op)

    def new_inode(self) -> int:
        return max(self.disk.nodes) + 1

    def call(self, call: Call) -> None:
        handler = getattr(self, f'on_{call.name}', None)
        if handler is not None:
            handler(call)

    def on_openat(self, call: Call, folder: int | None = 0, name: int = 1, flags: int = 2) -> None:
        table = self.table(call.thread)
        text = call.args[flags] if flags < len(call.args) else ''
        path = call.result_path or self.path(call, folder, name)
        parts = self.parts(os.path.normpath(path))
        if parts is None:
            table[call.result] = OpenFile(None)
            return
        ino = self.disk.lookup(parts)
        if ino is None:
            if 'O_CREAT' not in text:
                raise Unsupported(f'{call.name} {path}: opened, yet not in the model')
            mode = int(call.args[flags + 1], 8) if len(call.args) > flags + 1 else 0o666
            place = self.place(path)
            ino = self.new_inode()
            node = Node(FILE, mode & ~self.umask)
            self.add(call, NAME, self.name_of(place), ino=ino, place=place, new=node)
        elif 'O_TRUNC' in text and self.disk.nodes[ino].kind == FILE and self.disk.size(ino):
            self.add(call, TRUNCATE, self.inode_name(ino), ino=ino, size=0)
        table[call.result] = OpenFile(ino, 0, 'O_APPEND' in text)

    def on_open(self, call: Call) -> None:
        self.on_openat(call, None, 0, 1)

    def on_creat(self, call: Call) -> None:
        call.args = [call.args[0], 'O_CREAT|O_WRONLY|O_TRUNC', call.args[1]]
        self.on_openat(call, None, 0, 1)

    def on_openat2(self, call: Call) -> None:
        call.args = [call.args[0], call.args[1], call.args[2].replace('{flags=', '')]
        self.on_openat(call)

    def on_close(self, call: Call) -> None:
        number, _ = descriptor(call.args[0])
        self.table(call.thread).pop(number, None)  # type: ignore[arg-type]

    def on_close_range(self, call: Call) -> None:
        first, last = int(call.args[0]), int(call.args[1].split()[0])
        table = self.table(call.thread)
        for number in [n for n in table if first <= n <= last]:
            del table[number]

    def on_dup(self, call: Call) -> None:
        opened = self.open_file(call)
        if opened is not None:
            self.table(call.thread)[call.result] = opened

    on_dup2 = on_dup3 = on_dup

    def on_fcntl(self, call: Call) -> None:
        if call.args[1].startswith('F_DUPFD'):
            self.on_dup(call)

    def on_execve(self, call: Call) -> None:
        table = self.table(call.thread)
        kept = {n: table[n] for n in (0, 1, 2) if n in table}
        table.clear()
        table.update(kept)

    def on_read(self, call: Call) -> None:
        opened = self.open_file(call)
        if opened is not None:
            opened.position += call.result

    on_readv = on_read

    def on_lseek(self, call: Call) -> None:
        opened = self.open_file(call)
        if opened is not None:
            opened.position = call.result

    def on_write(self, call: Call, offset: int | None = None) -> None:
        opened = self.open_file(call)
        data = call.data[: call.result]
        if opened is None or opened.ino is None:
            number, _ = descriptor(call.args[0])
            if number == 1 and any(word in data for word in self.report_words):
                self.add(call, REPORT, data.decode(errors='replace').strip())
            return
        if offset is None:
            at = self.disk.size(opened.ino) if opened.append else opened.position
            opened.position = at + call.result
        else:
            at = offset
        what = f'{self.inode_name(opened.ino)} [{at}, {at + len(data)})'
        self.add(call, WRITE, what, ino=opened.ino, offset=at, data=data)

    on_writev = on_write

    def on_pwrite64(self, call: Call) -> None:
        self.on_write(call, int(call.args[3]))

    def on_pwritev(self, call: Call) -> None:
        self.on_write(call, int(call.args[3]))

    on_pwritev2 = on_pwritev

    def on_ftruncate(self, call: Call) -> None:
        opened = self.open_file(call)
        if opened is not None and opened.ino is not None:
            size = int(call.args[1])
            what = f'{self.inode_name(opened.ino)} to {size}'
            self.add(call, TRUNCATE, what, ino=opened.ino, size=size)

    def on_truncate(self, call: Call) -> None:
        parts = self.parts(self.path(call, None, 0))
        ino = self.disk.lookup(parts) if parts is not None else None
        if ino is not None:
            self.add(call, TRUNCATE, self.inode_name(ino), ino=ino, size=int(call.args[1]))

    def _unsupported_output(self, call: Call, index: int) -> None:
        opened = self.open_file(call, index)
        if opened is not None and opened.ino is not None:
            raise Unsupported(f'{call.name} into {self.inode_name(opened.ino)}')

    def on_fallocate(self, call: Call) -> None:
        self._unsupported_output(call, 0)

    def on_copy_file_range(self, call: Call) -> None:
        self._unsupported_output(call, 2)

    def on_sendfile(self, call: Call) -> None:
        self._unsupported_output(call, 0)

    def on_splice(self, call: Call) -> None:
        self._unsupported_output(call, 2)

    def on_mmap(self, call: Call) -> None:
        if 'MAP_SHARED' in call.args[3] and 'PROT_WRITE' in call.args[2]:
            self._unsupported_output(call, 4)

    def on_fsync(self, call: Call) -> None:
        opened = self.open_file(call)
        if opened is not None and opened.ino is not None:
            self.add(call, FLUSH, self.inode_name(opened.ino) or '.', ino=opened.ino)

    on_fdatasync = on_fsync

    def on_sync(self, call: Call) -> None:
        self.add(call, FLUSH_ALL, '')

    on_syncfs = on_sync

    def _chmod(self, call: Call, path: str, mode: str) -> None:
        parts = self.parts(path)
        ino = self.disk.lookup(parts) if parts is not None else None
        if ino is not None:
            what = f'{self.inode_name(ino)} {mode}'
            self.add(call, CHMOD, what, ino=ino, mode=int(mode, 8) & 0o7777)

    def on_chmod(self, call: Call) -> None:
        self._chmod(call, self.path(call, None, 0), call.args[1])

    def on_fchmodat(self, call: Call) -> None:
        self._chmod(call, self.path(call, 0, 1), call.args[2])

    def on_fchmod(self, call: Call) -> None:
        opened = self.open_file(call)
        if opened is not None and opened.ino is not None:
            what = f'{self.inode_name(opened.ino)} {call.args[1]}'
            self.add(call, CHMOD, what, ino=opened.ino, mode=int(call.args[1], 8) & 0o7777)

    def _make(self, call: Call, path: str, node: Node) -> None:
        place = self.place(path)
        if place is not None:
            ino = self.new_inode()
            self.add(call, NAME, self.name_of(place), ino=ino, place=place, new=node)

    def on_mkdir(self, call: Call) -> None:
        mode = int(call.args[1], 8) & ~self.umask
        self._make(call, self.path(call, None, 0), Node(FOLDER, mode))

    def on_mkdirat(self, call: Call) -> None:
        mode = int(call.args[2], 8) & ~self.umask
        self._make(call, self.path(call, 0, 1), Node(FOLDER, mode))

    def on_symlink(self, call: Call) -> None:
        target = os.fsencode(string(call.args[0]))
        self._make(call, self.path(call, None, 1), Node(LINK, 0o777, target))

    def on_symlinkat(self, call: Call) -> None:
        target = os.fsencode(string(call.args[0]))
        self._make(call, self.path(call, 1, 2), Node(LINK, 0o777, target))

    def _link(self, call: Call, old: str, new: str) -> None:
        old_parts = self.parts(old)
        place = self.place(new)
        if old_parts is None or place is None:
            if place is not None:
                raise Unsupported(f'{call.name} {new}: a link to a file outside the model')
            return
        ino = self.disk.lookup(old_parts)
        self.add(call, NAME, self.name_of(place), ino=ino, place=place)

    def on_link(self, call: Call) -> None:
        self._link(call, self.path(call, None, 0), self.path(call, None, 1))

    def on_linkat(self, call: Call) -> None:
        self._link(call, self.path(call, 0, 1), self.path(call, 2, 3))

    def _unlink(self, call: Call, path: str) -> None:
        place = self.place(path)
        if place is not None:
            ino = self.disk.entries.get(place, -1)
            self.add(call, UNNAME, self.name_of(place), ino=ino, place=place)

    def on_unlink(self, call: Call) -> None:
        self._unlink(call, self.path(call, None, 0))

    on_rmdir = on_unlink

    def on_unlinkat(self, call: Call) -> None:
        self._unlink(call, self.path(call, 0, 1))

    def _rename(self, call: Call, old: str, new: str) -> None:
        source, target = self.place(old), self.place(new)
        if source is None and target is None:
            return
        if source is None or target is None:
            raise Unsupported(f'{call.name} {old} -> {new}: across the model')
        ino = self.disk.entries[source]
        what = f'{self.name_of(source)} -> {self.name_of(target)}'
        self.add(call, RENAME, what, ino=ino, place=source, target=target)

    def on_rename(self, call: Call) -> None:
        self._rename(call, self.path(call, None, 0), self.path(call, None, 1))

    def on_renameat(self, call: Call) -> None:
        self._rename(call, self.path(call, 0, 1), self.path(call, 2, 3))

    def on_renameat2(self, call: Call) -> None:
        if len(call.args) > 4 and 'RENAME_EXCHANGE' in call.args[4]:
            raise Unsupported(f'{call.name} with RENAME_EXCHANGE')
        self.on_renameat(call)
