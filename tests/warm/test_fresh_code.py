"""A client is served only by a server running the code the client would run itself: every
module file the server imported (its dependencies' too, and those only its preload imports)
is part of the server's name, read afresh by each client."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import ROOT
from helpers.warm import PROBE, client_env, copied, gone, workspace_with_history

from trading_checkpoints.warm import address

pytestmark = pytest.mark.skipif(sys.platform != 'linux', reason='the warm server is Linux-only')


def listed(runtime: Path, desk: Path, site: Path, probe: Path) -> tuple[str, str]:
    """``checkpoints list`` with ``site`` first on the import path: its output, and where it
    ran."""
    probe.unlink(missing_ok=True)
    env = client_env(
        runtime, PYTHONPATH=os.pathsep.join([str(site), str(ROOT)]), TC_WARM_PROBE=str(probe)
    )
    done = subprocess.run(
        [*PROBE, 'list'], cwd=desk, env=env, input=b'', capture_output=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.decode(), probe.read_text().strip()


def served_by(runtime: Path, desk: Path, site: Path, probe: Path) -> tuple[str, int]:
    """Runs ``list`` until a server serves it: the output, and that server's pid."""
    deadline = time.monotonic() + 90
    while True:
        out, where = listed(runtime, desk, site, probe)
        if where == 'served':
            return out, server_of(runtime)
        assert time.monotonic() < deadline, 'no server served it'
        time.sleep(0.2)


def server_of(runtime: Path) -> int:
    """The pid of the newest server listening in ``runtime``."""
    folder = runtime / address.FOLDER_NAME
    sockets = sorted(folder.glob('server-*.sock'), key=lambda path: path.lstat().st_mtime_ns)
    return int(Path(f'{sockets[-1]}.lock').read_text())


def rewrite(path: Path, old: str, new: str) -> None:
    """Replaces ``old`` with ``new`` (of the same length) in a module written long ago, keeping
    its size; its modification time moves one second on (a later edit, as far as its status
    says, yet long ago)."""
    assert len(old) == len(new)
    size, when = path.stat().st_size, path.stat().st_mtime
    path.write_text(path.read_text().replace(old, new, 1))
    os.utime(path, (when + 1, when + 1))
    assert path.stat().st_size == size


def test_a_dependency_changed_in_place_is_served_by_a_new_server(
    tmp_path: Path, runtime: Path
) -> None:
    """A copy of click on the import path, served; then one of its modules is edited in place,
    keeping its size: the next commands print through the new code, served by a new server."""
    desk = workspace_with_history(tmp_path)
    site = copied(tmp_path / 'site', 'click')
    probe = tmp_path / 'probe'
    out, first = served_by(runtime, desk, site, probe)
    assert out.startswith('[copy] ')
    rewrite(site / 'click' / 'utils.py', "'[copy] '", "'[COPY] '")
    out, where = listed(runtime, desk, site, probe)
    assert out.startswith('[COPY] '), (out, where)
    out, second = served_by(runtime, desk, site, probe)
    assert out.startswith('[COPY] ')
    assert second != first


def test_a_module_only_the_preload_imports_is_part_of_the_servers_name(
    tmp_path: Path, runtime: Path
) -> None:
    """dulwich is imported by the server's preload (a command imports it only where it writes):
    a module of a copy of dulwich on the import path, edited in place keeping its size, makes
    the next command's server a new one."""
    desk = workspace_with_history(tmp_path)
    site = copied(tmp_path / 'site', 'click', 'dulwich')
    probe = tmp_path / 'probe'
    _, first = served_by(runtime, desk, site, probe)
    rewrite(site / 'dulwich' / 'reflog.py', '# reflog.py', '# REFLOG.PY')
    _, second = served_by(runtime, desk, site, probe)
    assert second != first


def manifest_kind(runtime: Path) -> set[str]:
    folder = runtime / address.FOLDER_NAME
    return {path.read_text().splitlines()[1] for path in folder.glob('server-*.files')}


def test_a_watched_server_refuses_a_client_of_changed_code_before_it_notices(
    tmp_path: Path, runtime: Path
) -> None:
    """The server's code is on a local file system: the server watches it, and the manifest
    names its socket. The server held still (SIGSTOP) as a module changes: its waiting child
    still takes the next client, sees the change queued, and refuses it (the command runs
    in-process, through the new code); let go, the server stops."""
    desk = workspace_with_history(tmp_path)
    site = copied(tmp_path / 'site', 'click')
    probe = tmp_path / 'probe'
    _, server = served_by(runtime, desk, site, probe)
    assert manifest_kind(runtime) == {address.WATCHED}
    os.kill(server, signal.SIGSTOP)
    try:
        rewrite(site / 'click' / 'utils.py', "'[copy] '", "'[COPY] '")
        out, where = listed(runtime, desk, site, probe)
        assert (out[:7], where) == ('[COPY] ', 'in-process')
    finally:
        os.kill(server, signal.SIGCONT)
    assert gone(server), 'it stopped once it saw the change'


def test_code_off_the_local_file_systems_is_listed_for_every_client_to_check(
    tmp_path: Path, runtime: Path
) -> None:
    """An import path entry on a file system inotify cannot vouch for (here /sys): the
    server lists its files, and every client fingerprints them; a module then changed in
    place, keeping its size, is served by a new server."""
    desk = workspace_with_history(tmp_path)
    site = copied(tmp_path / 'site', 'click')
    path = Path(os.pathsep.join(['/sys/kernel', str(site)]))
    probe = tmp_path / 'probe'
    out, first = served_by(runtime, desk, path, probe)
    assert out.startswith('[copy] ')
    assert manifest_kind(runtime) == {address.LISTED}
    rewrite(site / 'click' / 'utils.py', "'[copy] '", "'[COPY] '")
    out, second = served_by(runtime, desk, path, probe)
    assert out.startswith('[COPY] ') and second != first
