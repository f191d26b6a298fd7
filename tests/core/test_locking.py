"""Several writers on one desk at once: threads and real processes, no error, no lost checkpoint."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

from helpers import ROOT
from helpers.builders import write
from helpers.gitcli import GIT, git

from trading_checkpoints import Checkpoints
from trading_checkpoints.core.lock import exclusive
from trading_checkpoints.errors import LockTimeoutError

WORKER = """
import json, sys
from pathlib import Path
from trading_checkpoints import Checkpoints
repo, desk, name, rounds = sys.argv[1], Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
cps = Checkpoints(Path(repo), desk)
ids = []
for i in range(rounds):
    target = desk / 'notes' / f'{name}-{i}.md'
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(f'{name} {i}')
    ids.append(cps.snapshot(f'{name} {i}'))
    if i % 5 == 4:
        cps.list(5)
print(json.dumps(ids))
"""


def _linear(cps: Checkpoints) -> list[str]:
    repo = cps.repository_directory
    if GIT is None:
        return []
    parents = git(repo, 'log', '--format=%p').split('\n')
    assert all(len(line.split()) <= 1 for line in parents), 'history is not linear'
    return parents


def test_processes_snapshotting_one_desk_lose_nothing(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'start')
    cps.snapshot('start')
    workers = [
        subprocess.Popen(
            [sys.executable, '-c', WORKER, str(cps.repository_directory), str(desk), f'p{n}', '15'],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={'PYTHONPATH': str(ROOT), 'PATH': '/usr/bin:/bin'},
        )
        for n in range(4)
    ]
    returned: list[str] = []
    for worker in workers:
        out, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err
        returned += [i for i in json.loads(out) if i is not None]
    listed = {c.checkpoint_id for c in cps.list(limit=1000)}
    assert set(returned) <= listed, 'a returned checkpoint is missing from the history'
    # Every write is captured by some checkpoint: a final snapshot holds all 60 files.
    cps.snapshot('final')
    assert len(list((desk / 'notes').iterdir())) == 60
    assert cps.snapshot('again') is None
    _linear(cps)
    if GIT is not None:
        git(cps.repository_directory, 'fsck', '--strict', '--no-dangling')


def test_threads_sharing_one_object(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'start')
    errors: list[BaseException] = []
    results: list[str | None] = []

    def work(n: int) -> None:
        try:
            for i in range(10):
                write(desk, f'memory/t{n}-{i}.md', 'x')
                results.append(cps.snapshot(f't{n} {i}'))
                if i == 5:
                    results.append(cps.restore(cps.list(1)[0].checkpoint_id))
        except BaseException as error:  # noqa: BLE001
            errors.append(error)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    listed = {c.checkpoint_id for c in cps.list(limit=1000)}
    assert {r for r in results if r} <= listed
    _linear(cps)


def test_lock_timeout_names_the_lock_and_holder(tmp_path: Path) -> None:
    lock_path = tmp_path / 'repo.git' / 'checkpoints' / 'lock'
    holder = subprocess.Popen(
        [
            sys.executable,
            '-c',
            'import sys, time\n'
            'from pathlib import Path\n'
            'from trading_checkpoints.core.lock import exclusive\n'
            'with exclusive(Path(sys.argv[1])):\n'
            '    print("held", flush=True)\n'
            '    time.sleep(30)\n',
            str(lock_path),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={'PYTHONPATH': str(ROOT)},
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == 'held'
        try:
            with exclusive(lock_path, timeout=0.3):
                raise AssertionError('the lock should have been held by the other process')
        except LockTimeoutError as error:
            assert str(lock_path) in str(error)
            assert f'pid {holder.pid}' in str(error)
    finally:
        holder.kill()
        holder.wait()
    # The kernel released the dead holder's lock: no stale lock blocks the next writer.
    with exclusive(lock_path, timeout=5):
        pass


def test_stale_dulwich_lock_files_are_recovered(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'v1')
    cps.snapshot('v1')
    stale = cps.repository_directory / 'refs' / 'heads' / 'main.lock'
    stale.write_text('left by a killed writer\n')
    write(desk, 'Memory.md', 'v2')
    assert cps.snapshot('v2') is not None
    assert not stale.exists()
    assert Checkpoints(cps.repository_directory, desk).list()[0].reason == 'v2'
