"""Backups go on after a prune dropped the checkpoint a remote was at.

The remote holds the older history; the desk kept only its newest checkpoints. The remote's
head was on this desk's branch once (it was pushed from here), so it is an ancestor of the kept
history: a pull finds the remote behind and brings nothing back, and pushing on top is a
fast-forward. When the prune also dropped checkpoints never pushed, a path remote takes the
push (marked shallow, its older history kept reachable); over http, where the remote cannot
be marked shallow and would fail every clone, the push is a clear refusal. A remote that
really diverged is still refused.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.builders import session_turns
from helpers.gitcli import GIT, git
from helpers.httpremote import with_credentials
from helpers.reading import tree_of

from trading_checkpoints import CheckpointError, Checkpoints
from trading_checkpoints.store.storage import objects_size


def _history(cps: Checkpoints) -> list[str]:
    return [c.checkpoint_id for c in cps.list(10_000)]


def _pruned_after_a_push(cps: Checkpoints, desk: Path, url: str) -> tuple[list[str], list[str]]:
    pushed = session_turns(cps, desk, 5)
    cps.add_remote('backup', url)
    assert cps.push('backup').new == pushed[-1]
    later = session_turns(cps, desk, 6, start=5)
    result = cps.prune(keep=3)  # drops the remote's checkpoint and three never pushed
    assert pushed[-1] in result.pruned and _history(cps) == later[-3:][::-1]
    return pushed, later


def test_push_after_a_prune_to_a_path_remote(
    cps: Checkpoints, desk: Path, repo_dir: Path, workspace: Path, tmp_path: Path
) -> None:
    remote = tmp_path / 'backup.git'
    pushed, later = _pruned_after_a_push(cps, desk, str(remote))
    size = objects_size(repo_dir)
    result = cps.push()
    assert (result.old, result.new, result.up_to_date) == (pushed[-1], later[-1], False)
    assert cps.push().up_to_date
    pulled = cps.pull()
    assert pulled.up_to_date and pulled.new == later[-1]
    assert _history(cps) == later[-3:][::-1]
    assert objects_size(repo_dir) <= size  # the pruned history was not fetched back
    if GIT:
        git(remote, 'fsck', '--strict')
        on_main = git(remote, 'log', '--format=%h', '--abbrev=7', 'main').split()
        assert on_main == later[-3:][::-1]
        everything = git(remote, 'log', '--format=%h', '--abbrev=7', '--all').split()
        assert set(pushed) <= set(everything)  # the older history stays reachable there
    desk2, repo2 = workspace / 'desks' / 'two', workspace / '.checkpoints' / 'two.git'
    cps2, _, _ = Checkpoints.clone(str(remote), repo2, desk2)
    assert _history(cps2) == later[-3:][::-1] and tree_of(desk2) == tree_of(desk)
    more = session_turns(cps, desk, 2, start=11)
    assert cps.push().new == more[-1]
    assert cps2.pull().new == more[-1]


def test_pull_then_push_over_http_after_a_prune_that_kept_everything_unpushed(
    http_remote: tuple[str, Path],
    cps: Checkpoints,
    desk: Path,
    repo_dir: Path,
    workspace: Path,
) -> None:
    """The prune dropped the remote's checkpoint, but nothing that was not pushed."""
    url, served = http_remote
    pushed = session_turns(cps, desk, 5)
    cps.add_remote('web', with_credentials(url))
    cps.push('web')
    later = session_turns(cps, desk, 3, start=5)
    assert pushed[-1] in cps.prune(keep=3).pruned  # the remote's is the oldest kept's parent
    size = objects_size(repo_dir)
    pulled = cps.pull('web')
    assert pulled.up_to_date and pulled.new == later[-1]
    assert objects_size(repo_dir) <= size and _history(cps) == later[::-1]
    result = cps.push('web')
    assert (result.old, result.new, result.up_to_date) == (pushed[-1], later[-1], False)
    if GIT:
        git(served, 'fsck', '--strict')
        on_main = git(served, 'log', '--format=%h', '--abbrev=7', 'main').split()
        assert on_main == (pushed + later)[::-1]
    desk2, repo2 = workspace / 'desks' / 'two', workspace / '.checkpoints' / 'two.git'
    cps2, _, _ = Checkpoints.clone(with_credentials(url), repo2, desk2)
    assert _history(cps2) == (pushed + later)[::-1] and tree_of(desk2) == tree_of(desk)


def test_over_http_a_gap_of_unpushed_pruned_checkpoints_is_a_clear_refusal(
    http_remote: tuple[str, Path],
    cps: Checkpoints,
    desk: Path,
    repo_dir: Path,
) -> None:
    url, served = http_remote
    pushed, later = _pruned_after_a_push(cps, desk, with_credentials(url))
    size = objects_size(repo_dir)
    pulled = cps.pull()  # the remote is behind: nothing comes back, nothing diverged
    assert pulled.up_to_date and pulled.new == later[-1]
    assert objects_size(repo_dir) <= size and _history(cps) == later[-3:][::-1]
    with pytest.raises(CheckpointError, match='never pushed.*Nothing was pushed.*path or file'):
        cps.push()
    if GIT:
        assert git(served, 'rev-parse', 'main').startswith(pushed[-1])
        git(served, 'fsck', '--strict')


def test_a_diverged_remote_is_still_refused_after_a_prune(
    cps: Checkpoints, desk: Path, workspace: Path, tmp_path: Path
) -> None:
    remote = tmp_path / 'backup.git'
    pushed = session_turns(cps, desk, 3)
    cps.add_remote('backup', str(remote))
    cps.push()
    desk2, repo2 = workspace / 'desks' / 'two', workspace / '.checkpoints' / 'two.git'
    cps2, _, _ = Checkpoints.clone(str(remote), repo2, desk2)
    theirs = session_turns(cps2, desk2, 2, start=50)
    cps2.push()  # the remote moves on to checkpoints this desk never had
    session_turns(cps, desk, 5, start=3)
    cps.prune(keep=2)
    with pytest.raises(CheckpointError, match='nothing was pushed'):
        cps.push()
    assert git(remote, 'rev-parse', 'main').startswith(theirs[-1]) if GIT else True
    assert pushed  # the remote keeps its own history
