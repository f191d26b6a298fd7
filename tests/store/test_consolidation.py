"""Consolidation keeps everything a ref reaches, not only the branch: the seal's commit, its
tree and the blobs the agent wrote after the newest checkpoint live only behind
``refs/checkpoints/sealed``, and a prune that rewrote the storage must keep them.

Each test pins a safety check: it fails when ``benchmarks/mutation.py`` breaks that check,
and it runs in this process, where mutation testing sees the calls.
"""

from __future__ import annotations

from pathlib import Path

from helpers.builders import session_turns, write
from helpers.gitcli import fsck, git, needs_git

from trading_checkpoints import Checkpoints
from trading_checkpoints.store import storage


def _sealed_after_a_write(cps: Checkpoints, desk: Path) -> str:
    """Three checkpoints, then an agent write no checkpoint holds, sealed; returns the seal."""
    session_turns(cps, desk, 3)
    write(desk, 'notes/agent.md', 'written by the agent after the newest checkpoint\n')
    return cps.seal()


@needs_git
def test_a_prune_keeps_the_seal_and_what_only_it_holds(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    seal = _sealed_after_a_write(cps, desk)
    result = cps.prune(keep=2)
    assert result.checkpoints_after == 2 and result.pruned
    assert storage.loose_count(repo_dir) == 0
    fsck(repo_dir)  # no ref names a missing object
    assert git(repo_dir, 'rev-parse', '--short=7', 'refs/checkpoints/sealed').strip() == seal
    assert git(repo_dir, 'show', 'refs/checkpoints/sealed:notes/agent.md') == (
        'written by the agent after the newest checkpoint\n'
    )
    # The seal still holds: the agent's write is its own, a person's later edit is external.
    status = cps.status()
    assert (status.basis, status.external) == ('sealed', ())
    write(desk, 'Memory.md', 'edited by a person after the seal\n')
    status = cps.status()
    assert status.basis == 'sealed' and status.external == ('Memory.md',)
    result = cps.snapshot_with_result('after the prune')
    assert result.external == ('Memory.md',)


def test_compacting_alone_keeps_the_seal(cps: Checkpoints, desk: Path, repo_dir: Path) -> None:
    _sealed_after_a_write(cps, desk)
    stats = cps.prune()  # no limit: the storage is rewritten into one pack
    assert stats.checkpoints_after == 3
    write(desk, 'Memory.md', 'edited by a person after the seal\n')
    assert cps.status().external == ('Memory.md',)
    fsck(repo_dir)
