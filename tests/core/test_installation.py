"""``core/installation.py``: the one fingerprint of the code a process runs (the warm server's
socket, the MCP server's kept answers, the watcher's record). Every change that would make a
process import other code changes it; a file's status is read afresh each time."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from helpers import ROOT
from helpers.processes import environment, python

from trading_checkpoints.core import installation

LONG_AGO = time.time() - 3600


def package(tmp_path: Path) -> tuple[Path, list[str]]:
    """A package of two modules written long ago, and the paths a process importing it would
    list (the files and their folders)."""
    root = tmp_path / 'site' / 'pkg'
    root.mkdir(parents=True)
    (root / 'a.py').write_text('x = 1\n')
    (root / 'b.py').write_text('y = 1\n')
    for path in (root / 'a.py', root / 'b.py', root, root.parent):
        os.utime(path, (LONG_AGO, LONG_AGO))
    return root, sorted([str(root / 'a.py'), str(root / 'b.py'), str(root)])


def test_the_fingerprint_stays_while_nothing_changes(tmp_path: Path) -> None:
    _, paths = package(tmp_path)
    assert installation.fingerprint(paths) == installation.fingerprint(paths)
    assert installation.fingerprint(paths, 'a') != installation.fingerprint(paths, 'b')


def test_a_module_written_in_place_keeping_its_size_changes_it(tmp_path: Path) -> None:
    """An edit that keeps the size (``x = 1`` to ``x = 2``) is a new modification time."""
    root, paths = package(tmp_path)
    before = installation.fingerprint(paths)
    (root / 'a.py').write_text('x = 2\n')
    os.utime(root / 'a.py', (LONG_AGO + 1, LONG_AGO + 1))
    assert (root / 'a.py').stat().st_size == len('x = 1\n')
    assert installation.fingerprint(paths) != before


def test_a_module_written_again_with_its_old_time_changes_it(tmp_path: Path) -> None:
    """A tool that writes a module and sets its old modification time back (``tar -x``,
    ``cp -p``) cannot set its change time back."""
    root, paths = package(tmp_path)
    before = installation.fingerprint(paths)
    time.sleep(0.01)
    (root / 'a.py').write_text('x = 2\n')
    os.utime(root / 'a.py', (LONG_AGO, LONG_AGO))
    assert installation.fingerprint(paths) != before


def test_a_module_replaced_by_one_of_the_same_size_and_time_changes_it(tmp_path: Path) -> None:
    """An upgrade that writes a new file of the same size and time in place of the old one (a
    package manager keeping the archive's times) is a new inode."""
    root, paths = package(tmp_path)
    before = installation.fingerprint(paths)
    (root / 'a.new').write_text('x = 2\n')
    os.utime(root / 'a.new', (LONG_AGO, LONG_AGO))
    os.replace(root / 'a.new', root / 'a.py')
    os.utime(root, (LONG_AGO, LONG_AGO))  # the folder as it was: only the inode tells
    assert installation.fingerprint(paths) != before


def test_a_module_added_beside_them_changes_it(tmp_path: Path) -> None:
    """A new module in a folder of the list (one that would shadow another, or that a lazy
    import would now find) changes the folder's modification time."""
    root, paths = package(tmp_path)
    before = installation.fingerprint(paths)
    (root / 'click.py').write_text('')
    assert installation.fingerprint(paths) != before


def test_a_module_removed_changes_it(tmp_path: Path) -> None:
    root, paths = package(tmp_path)
    before = installation.fingerprint(paths)
    (root / 'b.py').unlink()
    os.utime(root, (LONG_AGO, LONG_AGO))
    assert installation.fingerprint(paths) != before


def test_the_interpreter_and_its_options_are_part_of_it(tmp_path: Path) -> None:
    """The same files fingerprinted by interpreters started with other options (``-O``,
    ``-X utf8``, a hash seed) or another import path give other fingerprints."""
    _, paths = package(tmp_path)
    code = (
        'import json, sys\n'
        'from trading_checkpoints.core import installation\n'
        'print(installation.fingerprint(json.loads(sys.argv[1])))\n'
    )
    argument = json.dumps(paths)
    seen = set()
    for options, extra in (
        ([], {}),
        (['-O'], {}),
        (['-X', 'utf8'], {}),
        ([], {'PYTHONHASHSEED': '7'}),
        ([], {'PYTHONPATH': os.pathsep.join([str(tmp_path), str(ROOT)])}),
        (['-X', 'tc_option'], {}),  # in ``sys._xoptions`` alone
        (['-W', 'ignore'], {}),  # in ``sys.warnoptions`` alone
    ):
        done = subprocess.run(
            [sys.executable, *options, '-c', code, argument],
            env=environment(extra),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        seen.add(done.stdout)
    assert python(code, argument).stdout in seen, 'the same interpreter: the same fingerprint'
    assert len(seen) == 7


def test_a_path_missing_from_the_list_hides_no_change_after_it(tmp_path: Path) -> None:
    root, paths = package(tmp_path)
    listed = [str(tmp_path / 'gone.py'), *paths]
    before = installation.fingerprint(listed)
    (root / 'b.py').write_text('y = 2\n')
    os.utime(root / 'b.py', (LONG_AGO + 1, LONG_AGO + 1))
    os.utime(root, (LONG_AGO, LONG_AGO))
    assert installation.fingerprint(listed) != before


def test_paths_whose_names_are_not_utf8_are_fingerprinted(tmp_path: Path) -> None:
    odd = os.fsdecode(os.fsencode(str(tmp_path)) + b'/caf\xe9.py')
    Path(odd).write_text('x = 1\n')
    before = installation.fingerprint([odd])
    assert len(before) == 16 and before == installation.fingerprint([odd])
    Path(odd).unlink()
    assert installation.fingerprint([odd]) != before


def test_loaded_files_are_the_modules_their_folders_and_the_import_path() -> None:
    listed = set(installation.loaded_files())
    assert installation.__file__ in listed
    assert os.path.dirname(installation.__file__) in listed
    assert os.path.dirname(json.__file__) in listed
    assert {entry for entry in sys.path if entry} <= listed


def test_a_file_changed_moments_ago_is_not_settled(tmp_path: Path) -> None:
    """A write within the file system clock's tick of the previous one keeps the status: a
    fingerprint is only kept when every file changed long enough before, by its change time
    (its modification time may have been set back, as ``package`` does here)."""
    root, paths = package(tmp_path)
    later = time.time() + installation.RACY_SECONDS + 1
    assert not installation.settled(paths), 'just made, though dated an hour back'
    assert installation.settled(paths, now=later)
    (root / 'b.py').write_text('y = 2\n')
    os.utime(root / 'b.py', (LONG_AGO, LONG_AGO))
    assert not installation.settled(paths, now=later - 1)
    assert installation.settled(paths, now=time.time() + installation.RACY_SECONDS + 1)
    shutil.rmtree(root)
    assert installation.settled(paths), 'a file gone is told by the fingerprint, not here'


def test_a_file_gone_hides_no_unsettled_file_after_it(tmp_path: Path) -> None:
    root, paths = package(tmp_path)
    (root / 'b.py').write_text('y = 2\n')
    assert not installation.settled([str(tmp_path / 'gone.py'), *paths])


def test_a_file_changed_exactly_the_racy_time_before_is_not_settled_yet(tmp_path: Path) -> None:
    """The limit itself is racy: a write within the same tick may follow."""
    now = int(time.time()) + 1000  # whole seconds: the limit in nanoseconds is exact
    limit = (now - int(installation.RACY_SECONDS)) * 10**9
    path = tmp_path / 'a.py'
    path.write_text('x = 1\n')
    os.utime(path, ns=(limit, limit))  # later than its change time: the later one counts
    assert not installation.settled([str(path)], now=float(now))
    os.utime(path, ns=(limit - 1, limit - 1))
    assert installation.settled([str(path)], now=float(now))


def test_frozen_modules_are_the_interpreters_own() -> None:
    """A frozen module's code is in the executable: the file it names is not what runs."""
    import os as frozen

    if getattr(frozen.__spec__, 'origin', None) != 'frozen':
        import pytest

        pytest.skip('this interpreter does not freeze os')
    listed = set(installation.loaded_files())
    assert frozen.__file__ not in listed
    assert installation.__file__ in listed
