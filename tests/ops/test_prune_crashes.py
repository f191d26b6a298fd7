"""A prune killed at any step leaves a repository that ``git fsck --strict`` accepts, after the
next prune or compaction too.

A prune writes the reflogs, the shallow boundary and the pruned record, then rewrites the
storage. Before, it wrote ``shallow`` first: killed after that and before the reflogs were
rewritten, the next compaction dropped commits the reflog still named (``invalid reflog
entry``, ``broken link``), every time. Here a real prune runs in a forked child killed with
SIGKILL just before its Nth file-system mutation, for every N it makes, each on a fresh copy
of the same repository; after each kill the next prune and a compaction must succeed, keep
every checkpoint the limit keeps, and leave ``git fsck --strict`` clean.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from helpers.builders import desk_in, new_workspace, repository_in, session_turns
from helpers.faults import run_child
from helpers.gitcli import fsck, needs_git

from trading_checkpoints import Checkpoints
from trading_checkpoints.store.pack.folder import wait_for_removals


@needs_git
def test_a_prune_killed_at_every_step_leaves_git_fsck_clean(tmp_path: Path) -> None:
    workspace = new_workspace(tmp_path / 'ws')
    desk, repository = desk_in(workspace), repository_in(workspace)
    cps = Checkpoints(repository, desk)
    ids = session_turns(cps, desk, 12)
    pristine = tmp_path / 'pristine.git'
    shutil.copytree(repository, pristine)

    def prune() -> None:
        Checkpoints(repository, desk).prune(keep=4)

    steps = run_child(prune).mutations
    assert steps > 5, 'the prune made its writes'
    killed = 0
    for step in range(1, steps + 1):
        wait_for_removals()  # the packs this process's last prune removed are gone
        shutil.rmtree(repository)
        shutil.copytree(pristine, repository)
        outcome = run_child(prune, kill_at=step)
        assert outcome.error is None, f'step {step}: {outcome.error}'
        killed += outcome.killed
        fsck(repository, strict_clean=False)
        Checkpoints(repository, desk).prune()  # a compaction: rewrites the storage
        fsck(repository)
        result = Checkpoints(repository, desk).prune(keep=4)
        assert result.checkpoints_after == 4
        assert [c.checkpoint_id for c in Checkpoints(repository, desk).list()] == ids[:-5:-1]
        fsck(repository)
    assert killed == steps, f'every one of the {steps} steps was a kill point'


def test_a_prune_removes_an_index_lock_a_power_cut_left_at_its_pack(tmp_path: Path) -> None:
    """A power cut can keep the ``.idx.lock`` a prune was writing and lose the holder's record
    in the lock file (never flushed), so the next holder sees no crash to sweep up after: the
    prune that writes the same pack again must still succeed (dulwich refuses a locked index)."""
    workspace = new_workspace(tmp_path / 'ws')
    desk, repository = desk_in(workspace), repository_in(workspace)
    cps = Checkpoints(repository, desk)
    ids = session_turns(cps, desk, 8)
    trial = tmp_path / 'trial.git'
    shutil.copytree(repository, trial)
    Checkpoints(trial, desk).prune(keep=4)
    wait_for_removals()
    written = [p.name for p in (trial / 'objects' / 'pack').glob('pack-*.idx')]
    assert len(written) == 1, written
    assert not (repository / 'objects' / 'pack' / written[0]).exists(), 'a pack of its own'
    stale = repository / 'objects' / 'pack' / f'{written[0]}.lock'
    stale.write_bytes(b'\0' * 100)
    assert (repository / 'checkpoints' / 'lock').read_bytes() == b'', 'no crash on record'
    Checkpoints(repository, desk).prune(keep=4)
    wait_for_removals()
    assert not stale.exists()
    assert [p.name for p in (repository / 'objects' / 'pack').glob('pack-*.idx')] == written
    assert [c.checkpoint_id for c in Checkpoints(repository, desk).list(None)] == ids[:-5:-1]
    fsck(repository)
