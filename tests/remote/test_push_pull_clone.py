"""Backups through git remotes: a real bare repository on disk and a real smart-HTTP server."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from helpers.builders import session_turns, write
from helpers.cli import checkpoints
from helpers.gitcli import GIT, git, needs_git
from helpers.httpremote import PASSWORD, USER, Gate, with_credentials
from helpers.reading import tree_of

from trading_checkpoints import CheckpointError, Checkpoints
from trading_checkpoints.remote import redact


def _history(repo: Path, desk: Path) -> list[str]:
    return [c.checkpoint_id for c in Checkpoints(repo, desk).list(10_000)]


# -- configuration ---------------------------------------------------------------------------


def test_remote_add_list_remove_live_in_the_repo_config(
    cps: Checkpoints, desk: Path, repo_dir: Path, tmp_path: Path
) -> None:
    session_turns(cps, desk, 1)
    cps.add_remote('backup', str(tmp_path / 'backup.git'))
    cps.add_remote('web', 'https://bot:hunter2@example.invalid/desk.git')
    assert [(r.name, r.display_url) for r in cps.remotes()] == [
        ('backup', str(tmp_path / 'backup.git')),
        ('web', 'https://example.invalid/desk.git'),
    ]
    assert 'example.invalid' in (repo_dir / 'config').read_text()
    assert 'hunter2' not in (repo_dir / 'config').read_text()  # kept in the credential file
    with pytest.raises(CheckpointError, match='already exists'):
        cps.add_remote('backup', '/elsewhere')
    with pytest.raises(CheckpointError, match='not a remote name'):
        cps.add_remote('bad name', '/x')
    cps.remove_remote('web')
    assert [r.name for r in cps.remotes()] == ['backup']
    with pytest.raises(CheckpointError, match="no remote named 'web'"):
        cps.remove_remote('web')


def test_redact_removes_the_user_info() -> None:
    assert redact('https://u:pw@host:8443/x.git') == 'https://host:8443/x.git'
    assert redact('https://host/x.git') == 'https://host/x.git'
    assert redact('/srv/x.git') == '/srv/x.git'


# -- a bare repository on a path and file:// ---------------------------------------------------


@pytest.mark.parametrize('scheme', ['path', 'file'])
def test_push_clone_restore_incremental_push_over_a_local_bare_repository(
    cps: Checkpoints, desk: Path, repo_dir: Path, workspace: Path, tmp_path: Path, scheme: str
) -> None:
    remote = tmp_path / 'backup.git'
    url = str(remote) if scheme == 'path' else remote.as_uri()
    ids = session_turns(cps, desk, 6)
    cps.add_remote('backup', url)
    result = cps.push('backup')
    assert (result.old, result.new, result.up_to_date) == (None, ids[-1], False)
    assert cps.push().up_to_date  # the only remote is the default

    desk2 = workspace / 'desks' / 'second'
    repo2 = workspace / '.checkpoints' / 'second.git'
    cps2, cloned, written = Checkpoints.clone(url, repo2, desk2)
    assert cloned.new == ids[-1]
    assert set(written or ()) == {'Memory.md', *(f'notes/turn-{n}.md' for n in range(5))}
    assert tree_of(desk2) == tree_of(desk)
    assert _history(repo2, desk2) == _history(repo_dir, desk)
    assert [r.name for r in cps2.remotes()] == ['origin']

    # Restore an older checkpoint on the second desk, then the first desk moves on and pushes
    # incrementally; the second desk pulls it (fast-forward).
    cps2.restore(ids[2])
    assert (desk2 / 'Memory.md').read_text().count('turn') == 3
    more = session_turns(cps, desk, 2, start=6)
    pushed = cps.push('backup')
    assert (pushed.old, pushed.new) == (ids[-1], more[-1])
    if GIT:
        git(remote, 'fsck', '--strict')
        assert git(remote, 'log', '--format=%s', 'main').splitlines()[0] == 'turn 7'
    with pytest.raises(CheckpointError, match='diverged'):
        cps2.pull()  # the second desk's restore made its own commits


def test_pull_fast_forwards_and_leaves_the_desk_alone(
    cps: Checkpoints, desk: Path, workspace: Path, tmp_path: Path
) -> None:
    remote = tmp_path / 'backup.git'
    session_turns(cps, desk, 3)
    cps.add_remote('backup', str(remote))
    cps.push()
    desk2, repo2 = workspace / 'desks' / 'two', workspace / '.checkpoints' / 'two.git'
    cps2, _, _ = Checkpoints.clone(str(remote), repo2, desk2)
    before = tree_of(desk2)
    newer = session_turns(cps, desk, 2, start=3)
    cps.push()
    pulled = cps2.pull()
    assert pulled.new == newer[-1] and not pulled.up_to_date
    assert cps2.list(1)[0].checkpoint_id == newer[-1]
    assert tree_of(desk2) == before
    assert cps2.pull().up_to_date
    cps2.restore(newer[-1])
    assert tree_of(desk2) == tree_of(desk)


def test_push_refuses_a_diverged_remote(
    cps: Checkpoints, desk: Path, workspace: Path, tmp_path: Path
) -> None:
    remote = tmp_path / 'backup.git'
    session_turns(cps, desk, 2)
    cps.add_remote('backup', str(remote))
    cps.push()
    desk2, repo2 = workspace / 'desks' / 'two', workspace / '.checkpoints' / 'two.git'
    cps2, _, _ = Checkpoints.clone(str(remote), repo2, desk2)
    session_turns(cps2, desk2, 1, start=10)
    cps2.push()
    session_turns(cps, desk, 1, start=20)
    with pytest.raises(CheckpointError, match='diverged.*nothing was pushed'):
        cps.push()
    with pytest.raises(CheckpointError, match='diverged'):
        cps.pull()


def test_clone_refuses_an_existing_repository_and_keeps_a_non_empty_desk(
    cps: Checkpoints, desk: Path, workspace: Path, tmp_path: Path
) -> None:
    remote = tmp_path / 'backup.git'
    session_turns(cps, desk, 2)
    cps.add_remote('backup', str(remote))
    cps.push()
    with pytest.raises(CheckpointError, match='already has a checkpoint repository'):
        Checkpoints.clone(str(remote), cps.repository_directory, desk)
    busy = workspace / 'desks' / 'busy'
    write(busy, 'Memory.md', 'local work')
    repo2 = workspace / '.checkpoints' / 'b.git'
    cps2, result, written = Checkpoints.clone(str(remote), repo2, busy)
    assert written is None and (busy / 'Memory.md').read_text() == 'local work'
    assert cps2.list(1)[0].checkpoint_id == result.new
    with pytest.raises(CheckpointError, match='no repository at'):
        Checkpoints.clone(str(tmp_path / 'nowhere.git'), tmp_path / 'x.git', tmp_path / 'x')
    assert not (tmp_path / 'x.git').exists()


# -- pruned history and empty remotes ----------------------------------------------------------


@needs_git
def test_prune_then_push_to_an_empty_local_remote_leaves_it_readable(
    cps: Checkpoints, desk: Path, repo_dir: Path, workspace: Path, tmp_path: Path
) -> None:
    ids = session_turns(cps, desk, 12)
    cps.prune(keep=4)
    remote = tmp_path / 'fresh.git'
    cps.add_remote('fresh', remote.as_uri())
    result = cps.push('fresh')
    assert result.marked_shallow == (ids[-4],)
    git(remote, 'fsck', '--strict')
    assert git(remote, 'log', '--format=%h', '--abbrev=7', 'main').split() == ids[-4:][::-1]
    clone = tmp_path / 'by-git'
    subprocess.run([GIT, 'clone', '-q', '--bare', str(remote), str(clone)], check=True)
    git(clone, 'fsck', '--strict')
    # ...and our own clone of it is readable too (the missing parent becomes a boundary).
    desk2, repo2 = workspace / 'desks' / 'two', workspace / '.checkpoints' / 'two.git'
    Checkpoints.clone(remote.as_uri(), repo2, desk2)
    git(repo2, 'fsck', '--strict')
    assert _history(repo2, desk2) == ids[-4:][::-1]
    # Pushing more later is an ordinary incremental push.
    newer = session_turns(cps, desk, 2, start=12)
    assert cps.push('fresh').new == newer[-1]
    git(remote, 'fsck', '--strict')


@needs_git
def test_push_after_prune_to_a_remote_holding_the_old_history(
    cps: Checkpoints, desk: Path, tmp_path: Path
) -> None:
    remote = tmp_path / 'backup.git'
    ids = session_turns(cps, desk, 8)
    cps.add_remote('backup', str(remote))
    cps.push()
    cps.prune(keep=3)
    newer = session_turns(cps, desk, 2, start=8)
    assert cps.push().new == newer[-1]
    git(remote, 'fsck', '--strict')
    assert len(git(remote, 'log', '--format=%h', 'main').split()) == len(ids) + 2


# -- smart HTTP ----------------------------------------------------------------------------------


def test_http_push_clone_restore_incremental_push(
    http_remote: tuple[str, Path], cps: Checkpoints, desk: Path, workspace: Path
) -> None:
    url, served = http_remote
    ids = session_turns(cps, desk, 5)
    cps.add_remote('web', with_credentials(url))
    assert cps.push('web').new == ids[-1]
    desk2, repo2 = workspace / 'desks' / 'second', workspace / '.checkpoints' / 'second.git'
    cps2, cloned, written = Checkpoints.clone(with_credentials(url), repo2, desk2)
    assert cloned.new == ids[-1] and cloned.url == url
    assert tree_of(desk2) == tree_of(desk)
    cps2.restore(ids[1])
    assert (desk2 / 'Memory.md').read_text().count('turn') == 2
    newer = session_turns(cps, desk, 3, start=5)
    pushed = cps.push('web')
    assert (pushed.old, pushed.new) == (ids[-1], newer[-1])
    if GIT:
        git(served, 'fsck', '--strict')
        assert git(served, 'rev-parse', 'main').strip().startswith(newer[-1])


def test_http_credentials_from_the_environment(
    http_remote: tuple[str, Path], cps: Checkpoints, desk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _ = http_remote
    session_turns(cps, desk, 1)
    cps.add_remote('web', url)
    with pytest.raises(CheckpointError, match='refused the credentials'):
        cps.push('web')
    monkeypatch.setenv('CHECKPOINTS_REMOTE_USERNAME', USER)
    monkeypatch.setenv('CHECKPOINTS_REMOTE_PASSWORD', PASSWORD)
    assert not cps.push('web').up_to_date


def test_http_wrong_password_is_a_clear_error_that_never_shows_it(
    http_remote: tuple[str, Path], cps: Checkpoints, desk: Path, workspace: Path
) -> None:
    url, _ = http_remote
    session_turns(cps, desk, 1)
    cps.add_remote('web', with_credentials(url, password='wrong-guess'))
    with pytest.raises(CheckpointError, match='refused the credentials') as caught:
        cps.push('web')
    assert 'wrong-guess' not in str(caught.value)
    with pytest.raises(CheckpointError, match='refused the credentials') as caught:
        Checkpoints.clone(
            with_credentials(url, password='wrong-guess'),
            workspace / '.checkpoints' / 'x.git',
            workspace / 'desks' / 'x',
        )
    assert 'wrong-guess' not in str(caught.value)
    assert not (workspace / '.checkpoints' / 'x.git').exists()


def test_http_refuses_pushing_a_pruned_history_to_an_empty_remote(
    http_remote: tuple[str, Path], cps: Checkpoints, desk: Path
) -> None:
    url, served = http_remote
    session_turns(cps, desk, 6)
    cps.prune(keep=2)
    cps.add_remote('web', with_credentials(url))
    with pytest.raises(CheckpointError, match='pruned.*empty'):
        cps.push('web')
    assert not (served / 'refs' / 'heads' / 'main').exists()


# -- the command line --------------------------------------------------------------------------


def test_cli_remote_push_clone_pull(
    http_remote: tuple[str, Path], cps: Checkpoints, desk: Path, workspace: Path
) -> None:
    url, _ = http_remote
    ids = session_turns(cps, desk, 3)
    secret_url = with_credentials(url)
    added = checkpoints('remote', 'add', 'web', secret_url, workspace=workspace)
    assert added.returncode == 0, added.stderr
    listed = checkpoints('remote', 'list', '--json', workspace=workspace)
    assert PASSWORD not in listed.stdout and '"web"' in listed.stdout
    pushed = checkpoints('push', 'web', workspace=workspace)
    assert pushed.returncode == 0, pushed.stderr
    assert ids[-1] in pushed.stdout and PASSWORD not in pushed.stdout + pushed.stderr
    cloned = checkpoints('clone', secret_url, '--desk', 'copy', '--json', workspace=workspace)
    assert cloned.returncode == 0, cloned.stderr
    assert PASSWORD not in cloned.stdout + cloned.stderr
    assert tree_of(workspace / 'desks' / 'copy') == tree_of(desk)
    pulled = checkpoints('--desk', 'copy', 'pull', workspace=workspace)
    assert pulled.returncode == 0 and 'up to date' in pulled.stdout.lower()
    bad = checkpoints('push', 'nowhere', workspace=workspace)
    assert bad.returncode == 1 and bad.stderr.startswith('error: ')
    assert 'Traceback' not in bad.stderr
    wrong = checkpoints(
        'clone', with_credentials(url, password='nope'), '--desk', 'w', workspace=workspace
    )
    assert wrong.returncode == 1 and 'refused the credentials' in wrong.stderr
    assert 'nope' not in wrong.stderr


# -- ssh:// (through a stand-in for the ssh binary that runs the server side locally) ------------

# dulwich's own upload-pack serves fetches; for pushes the server side is git's receive-pack
# (dulwich's receive-pack reads the pack until end of input, which never comes over ssh).
_FAKE_SSH = """\
import os, shlex, subprocess, sys
command, path = shlex.split(sys.argv[-1])
if command == 'git-upload-pack':
    from dulwich.porcelain import upload_pack
    sys.exit(upload_pack(path))
sys.exit(subprocess.call([os.environ['FAKE_SSH_GIT'], 'receive-pack', path]))
"""


def test_ssh_push_and_clone_through_the_ssh_transport(
    cps: Checkpoints, desk: Path, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dulwich.repo import Repo

    fake = tmp_path / 'fake_ssh.py'
    fake.write_text(_FAKE_SSH)
    monkeypatch.setenv('CHECKPOINTS_SSH_COMMAND', f'{sys.executable} {fake}')
    monkeypatch.setenv('FAKE_SSH_GIT', GIT or 'git')
    served = tmp_path / 'served.git'
    url = f'ssh://desk-bot@backup.invalid{served}'
    ids = session_turns(cps, desk, 3)
    if GIT:
        served.mkdir()
        Repo.init_bare(str(served)).close()
        cps.add_remote('nas', url)
        assert cps.push('nas').new == ids[-1]
        more = session_turns(cps, desk, 1, start=3)
        assert cps.push('nas').old == ids[-1]
        git(served, 'fsck', '--strict')
    else:  # no server for pushes: seed the served repository through a path remote instead
        more = session_turns(cps, desk, 1, start=3)
        cps.add_remote('disk', str(served))
        cps.push('disk')
    desk2, repo2 = workspace / 'desks' / 'two', workspace / '.checkpoints' / 'two.git'
    _, cloned, _ = Checkpoints.clone(url, repo2, desk2)
    assert cloned.new == more[-1] and tree_of(desk2) == tree_of(desk)


def test_http_pull_into_a_pruned_desk_and_push_it_further(
    http_remote: tuple[str, Path], cps: Checkpoints, desk: Path, repo_dir: Path, workspace: Path
) -> None:
    url, served = http_remote
    session_turns(cps, desk, 6)
    cps.add_remote('web', with_credentials(url))
    cps.push('web')
    desk2, repo2 = workspace / 'desks' / 'second', workspace / '.checkpoints' / 'second.git'
    cps2, _, _ = Checkpoints.clone(with_credentials(url), repo2, desk2)
    cps.prune(keep=2)
    newer = session_turns(cps2, desk2, 2, start=6)
    cps2.push()
    pulled = cps.pull('web')
    assert (pulled.new, pulled.up_to_date) == (newer[-1], False)
    assert len(cps.list(100)) == 4  # the two kept, then the two pulled
    cps.restore(newer[-1])
    assert tree_of(desk) == tree_of(desk2)
    later = session_turns(cps, desk, 1, start=8)
    assert cps.push('web').new == later[-1]
    if GIT:
        git(repo_dir, 'fsck', '--strict')
        git(served, 'fsck', '--strict')


@pytest.mark.skipif(sys.platform == 'win32', reason='needs a pseudo-terminal')
def test_cli_shows_progress_on_a_terminal_only(
    cps: Checkpoints, desk: Path, workspace: Path, tmp_path: Path
) -> None:
    import pty

    session_turns(cps, desk, 2)
    assert (
        checkpoints(
            'remote', 'add', 'disk', str(tmp_path / 'a.git'), workspace=workspace
        ).returncode
        == 0
    )
    assert (
        checkpoints(
            'remote', 'add', 'disk2', str(tmp_path / 'b.git'), workspace=workspace
        ).returncode
        == 0
    )
    quiet = checkpoints('push', 'disk', workspace=workspace)
    assert quiet.returncode == 0 and 'compressing' not in quiet.stderr
    leader, follower = pty.openpty()
    try:
        done = checkpoints('push', 'disk2', workspace=workspace, stderr=follower)
        os.close(follower)
        follower = -1
        shown = b''
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
    finally:
        if follower != -1:
            os.close(follower)
        os.close(leader)
    assert (
        done.returncode == 0
        and "Pushed desk 'main' of workspace" in done.stdout
        and 'to disk2' in done.stdout
    )
    assert b'compressing objects' in shown and b'\r' in shown


def test_clone_of_a_desk_with_its_own_tracked_paths(workspace: Path, tmp_path: Path) -> None:
    desk = workspace / 'desks' / 'custom'
    write(desk, 'Memory.md', 'memory\n')
    write(desk, 'research/idea.md', 'idea\n')
    tracked = ('Memory.md', 'research')
    cps = Checkpoints(workspace / '.checkpoints' / 'custom.git', desk, tracked)
    cps.snapshot('custom')
    cps.add_remote('disk', str(tmp_path / 'custom.git'))
    cps.push()
    with pytest.raises(CheckpointError, match='research'):
        Checkpoints.clone(str(tmp_path / 'custom.git'), tmp_path / 'a.git', tmp_path / 'a')
    assert not (tmp_path / 'a.git').exists()
    _, _, written = Checkpoints.clone(
        str(tmp_path / 'custom.git'), tmp_path / 'b.git', tmp_path / 'b', tracked_paths=tracked
    )
    assert set(written or ()) == {'Memory.md', 'research/idea.md'}
    assert tree_of(tmp_path / 'b') == tree_of(desk)


def test_snapshots_go_on_while_a_push_uploads(
    http_remote: tuple[str, Path], gate: Gate, cps: Checkpoints, desk: Path
) -> None:
    url, _ = http_remote
    ids = session_turns(cps, desk, 3)
    cps.add_remote('web', with_credentials(url))
    gate.opened.clear()
    outcome: list[object] = []
    pusher = threading.Thread(target=lambda: outcome.append(cps.push('web')))
    pusher.start()
    try:
        assert gate.reached.wait(30), 'the push never reached the server'
        during: list[str] = []
        writer = threading.Thread(
            target=lambda: during.extend(session_turns(cps, desk, 1, start=3))
        )
        writer.start()
        writer.join(15)
        assert not writer.is_alive() and during, 'a snapshot waited for the push to finish'
    finally:
        gate.opened.set()
        pusher.join(30)
    [result] = outcome
    assert result.new == ids[-1]  # what was checked and packed is what got pushed
    assert cps.push('web').new == during[-1]
