"""``warm/watched.py``: the server's code watched by the kernel, in the test's process.

A watch over real files on the local disk: every kind of change to a module file or its folder
is seen (else a client would be served by code other than its own), and anything that keeps a
folder from being watched soundly leaves no watch and no descriptor behind (the manifest is
then a listed one).
"""

from __future__ import annotations

import os
import resource
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from trading_checkpoints.agent import inotify
from trading_checkpoints.warm import watched

pytestmark = pytest.mark.skipif(sys.platform != 'linux', reason='inotify (Linux)')


def open_descriptors() -> set[str]:
    return set(os.listdir('/proc/self/fd'))


@pytest.fixture
def code(tmp_path: Path) -> Iterator[Path]:
    """A package folder holding a module, on a local file system (the test's own)."""
    package = tmp_path / 'package'
    package.mkdir()
    (package / 'module.py').write_text('VALUE = 1\n')
    assert inotify.filesystem_type(os.open(tmp_path, os.O_RDONLY)) in inotify.LOCAL_FILESYSTEMS
    yield package


def watching(paths: list[str]) -> int:
    fd = watched.watch(paths)
    assert fd is not None, 'a local folder is watched'
    assert not watched.changed(fd), 'nothing changed yet'
    return fd


CHANGES: dict[str, Callable[[Path], object]] = {
    'its contents rewritten': lambda package: (package / 'module.py').write_text('VALUE = 2\n'),
    'its mode changed': lambda package: (package / 'module.py').chmod(0o600),
    'a module added': lambda package: (package / 'other.py').write_text(''),
    'the module removed': lambda package: (package / 'module.py').unlink(),
    'the module renamed away': lambda package: (package / 'module.py').rename(
        package.parent / 'away.py'
    ),
    'another module renamed over it': lambda package: (
        (package.parent / 'new.py').write_text('VALUE = 3\n'),
        (package.parent / 'new.py').rename(package / 'module.py'),
    ),
    'its folder renamed': lambda package: package.rename(package.parent / 'renamed'),
}


@pytest.mark.parametrize('change', list(CHANGES), ids=list(CHANGES))
def test_every_change_to_a_module_or_its_folder_is_seen(code: Path, change: str) -> None:
    fd = watching([str(code / 'module.py')])
    try:
        CHANGES[change](code)
        assert watched.changed(fd)
    finally:
        os.close(fd)


def test_a_write_to_a_module_held_open_is_seen_before_it_is_closed(code: Path) -> None:
    fd = watching([str(code / 'module.py')])
    try:
        with open(code / 'module.py', 'a') as file:
            file.write('VALUE = 2\n')
            file.flush()
            assert watched.changed(fd)
    finally:
        os.close(fd)


def test_a_folder_removed_is_seen(code: Path) -> None:
    empty = code / 'empty'
    empty.mkdir()
    fd = watching([str(empty)])
    try:
        empty.rmdir()
        assert watched.changed(fd)
    finally:
        os.close(fd)


def test_a_folder_on_the_import_path_is_watched_itself(code: Path) -> None:
    """An import path entry that is a folder: a module made inside it is seen, while a change
    beside it (in its parent) is not what is watched."""
    fd = watching([str(code)])
    try:
        (code.parent / 'beside.py').write_text('')
        assert not watched.changed(fd), 'the parent is not watched'
        (code / 'new.py').write_text('')
        assert watched.changed(fd)
    finally:
        os.close(fd)


def test_a_missing_import_path_entry_watches_the_folder_it_may_appear_in(code: Path) -> None:
    fd = watching([str(code / 'missing.zip')])
    try:
        (code / 'missing.zip').write_bytes(b'')
        assert watched.changed(fd)
    finally:
        os.close(fd)


def test_a_module_reached_through_a_symlink_is_watched_where_it_really_is(code: Path) -> None:
    """A module file that is a symlink into another folder: a change to the file it names is
    seen (that folder is watched too), and so is the symlink replaced."""
    real = code.parent / 'real'
    real.mkdir()
    (real / 'target.py').write_text('VALUE = 1\n')
    (code / 'linked.py').symlink_to(real / 'target.py')
    fd = watching([str(code / 'linked.py')])
    try:
        (real / 'target.py').write_text('VALUE = 2\n')
        assert watched.changed(fd)
    finally:
        os.close(fd)
    fd = watching([str(code / 'linked.py')])
    try:
        (code / 'linked.py').unlink()
        assert watched.changed(fd)
    finally:
        os.close(fd)


def test_each_folder_of_several_is_watched(code: Path) -> None:
    other = code.parent / 'other'
    other.mkdir()
    (other / 'two.py').write_text('')
    for changed in (code / 'module.py', other / 'two.py'):
        fd = watching([str(code / 'module.py'), str(other / 'two.py')])
        try:
            changed.write_text('VALUE = 5\n')
            assert watched.changed(fd)
        finally:
            os.close(fd)


@pytest.mark.parametrize(
    'where',
    ['/proc/self/status', '/nonexistent-folder-of-no-one/module.py'],
    ids=['another kind of file system', 'a folder that cannot be opened'],
)
def test_a_folder_that_cannot_be_watched_soundly_leaves_no_watch(code: Path, where: str) -> None:
    """A folder on a file system another process may write unseen (here ``/proc``), or one that
    cannot be opened, among local ones: no watch, and the queue made is closed again."""
    before = open_descriptors()
    assert watched.watch([str(code / 'module.py'), where]) is None
    assert open_descriptors() == before


def test_no_inotify_instance_left_leaves_no_watch(code: Path) -> None:
    """With no descriptor left for an inotify instance, nothing is watched (no error)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    lowest = os.open('/dev/null', os.O_RDONLY)
    os.close(lowest)
    resource.setrlimit(resource.RLIMIT_NOFILE, (lowest, hard))
    try:
        found = watched.watch([str(code / 'module.py')])
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert found is None
