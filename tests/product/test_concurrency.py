"""Concurrency stress: several processes snapshot, restore and list one desk at the same time.

Four real processes (``tests/helpers/scripts/stress_driver.py``) each run random operations.
Afterwards: zero errors, every id any process was given is in the history, the history is
linear and holds every commit object in the repository (none was orphaned by a lost race),
every checkpoint reads back, and ``git fsck --strict`` is clean. The default run does 4 x 25
operations; ``python -m pytest -m slow tests/product/test_concurrency.py -s`` does 4 x 100.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import SCRIPTS
from helpers.builders import put
from helpers.gitcli import fsck
from helpers.processes import environment
from helpers.reading import history, version_of

from trading_checkpoints import Checkpoints
from trading_checkpoints.store.repo import ShadowRepo

DRIVER = SCRIPTS / 'stress_driver.py'


def _stress(tmp_path: Path, workers: int, ops: int) -> dict:
    desk = tmp_path / 'desks' / 'main'
    repo = tmp_path / '.checkpoints' / 'main.git'
    for worker in range(workers):
        put(desk, f'notes/p{worker}.md', '-', b'start\n')
        put(desk, f'memory/w{worker}.md', '-', b'start\n')
    put(desk, 'scratch.txt', '-', b'untracked')
    Checkpoints(repo, desk).snapshot('start')
    log = tmp_path / 'log.jsonl'
    children = [
        subprocess.Popen(
            [sys.executable, str(DRIVER), str(repo), str(desk), str(w), str(ops), str(w), str(log)],
            env=environment(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for w in range(workers)
    ]
    for child in children:
        _, stderr = child.communicate(timeout=600)
        assert child.returncode == 0, stderr.decode()
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(records) == workers * ops
    errors = [r for r in records if 'error' in r]
    assert errors == [], errors[:5]

    full = history(repo)  # asserts linear: no commit with two parents
    short = {sha[:7] for sha in full}
    given = set()
    for r in records:
        given.update(x for x in (r.get('id'), r.get('before'), r.get('restored')) if x)
        given.update(r.get('listed', []))
    lost = sorted(given - short)
    assert lost == [], f'checkpoints handed out but missing from the history: {lost}'
    shadow = ShadowRepo.open(repo)
    assert shadow is not None
    try:
        store = shadow._repo.object_store
        commits = {sha for sha in store if store[sha].type_name == b'commit'}
        # Seals and announcements (external.py) are documented side commits off the branch,
        # referenced by refs/checkpoints/sealed; every other commit must be on the branch.
        side = {
            sha
            for sha in commits
            if store[sha].message.startswith(b'sealed: ')
            or b'Checkpoint-Action: announce' in store[sha].message
        }
    finally:
        shadow.close()
    assert commits - side == {sha.encode() for sha in full}, 'a commit is not on the branch'
    kept: set[bytes] = set()
    for sha in full:
        content = version_of(repo, sha)
        kept.update(data for path, (_, data) in content.items() if path.startswith('notes/p'))
    # Every write a worker made before its snapshot is in some checkpoint, even when another
    # worker's restore ran over that file meanwhile (the restore saves it first).
    written = {
        f'worker {r["worker"]} op {r["i"]}\n'.encode() for r in records if r['op'] == 'snapshot'
    }
    assert sorted(written - kept) == [], 'a write was lost'
    fsck(repo)
    assert (desk / 'scratch.txt').read_bytes() == b'untracked'
    return {
        'operations': len(records),
        'snapshots': sum(1 for r in records if r['op'] == 'snapshot'),
        'restores': sum(1 for r in records if r['op'] == 'restore'),
        'lists': sum(1 for r in records if r['op'] == 'list'),
        'commits': len(full),
        'errors': len(errors),
        'slowest_op_s': max(r['seconds'] for r in records),
    }


def test_four_processes_share_a_desk(tmp_path: Path) -> None:
    figures = _stress(tmp_path, workers=4, ops=25)
    print(f'\nstress: {figures}')


@pytest.mark.slow
def test_four_processes_share_a_desk_long(tmp_path: Path) -> None:
    figures = _stress(tmp_path, workers=4, ops=100)
    print(f'\nstress: {figures}')


def test_threads_share_a_desk(tmp_path: Path) -> None:
    """The same inside one process: 4 threads, some sharing one Checkpoints object."""
    import random
    import threading

    desk = tmp_path / 'desk'
    repo = tmp_path / 'repo.git'
    for worker in range(4):
        put(desk, f'notes/t{worker}.md', '-', b'start')
    shared = Checkpoints(repo, desk)
    shared.snapshot('start')
    given: list[str] = []
    errors: list[str] = []

    def work(worker: int) -> None:
        rng = random.Random(worker)
        mine: list[str] = []
        for i in range(15):
            cps = shared if worker % 2 else Checkpoints(repo, desk)
            try:
                if rng.random() < 0.6 or not mine:
                    (desk / 'notes' / f't{worker}.md').write_text(f'{worker} {i}')
                    checkpoint_id = cps.snapshot(f'thread {worker} op {i}')
                    if checkpoint_id:
                        mine.append(checkpoint_id)
                else:
                    mine.append(cps.restore(rng.choice(mine)))
            except Exception as error:  # noqa: BLE001 - collected, none expected
                errors.append(f'{type(error).__name__}: {error}')
        given.extend(mine)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    full = {sha[:7] for sha in history(repo)}
    assert set(given) <= full
    fsck(repo)
