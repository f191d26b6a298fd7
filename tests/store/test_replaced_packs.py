"""Readers and a writer replacing packs: a read that finds a pack it had listed gone lists the
packs again and reads once more; nothing but a ``CheckpointError`` ever escapes.

A snapshot appends to the tail pack by writing a new pack and removing the old one, without
waiting for readers (they take no lock). Before, ``show()`` and ``diff()`` raised dulwich's
``PackFileDisappeared`` 20 to 40 times per 10 seconds while another process snapshotted.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from helpers.builders import write
from helpers.processes import environment, python
from helpers.reading import ALLOW

from trading_checkpoints import CheckpointError, Checkpoints
from trading_checkpoints.store.repo import ShadowRepo

SNAPSHOT = (
    'import sys\n'
    'from pathlib import Path\n'
    'from trading_checkpoints import Checkpoints\n'
    'cps = Checkpoints(Path(sys.argv[1]), Path(sys.argv[2]))\n'
    'Path(sys.argv[2], "notes", "n3.md").write_text(sys.argv[3])\n'
    'cps.snapshot(sys.argv[3])\n'
)

WRITER = (
    'import sys, itertools\n'
    'from pathlib import Path\n'
    'from trading_checkpoints import Checkpoints\n'
    'cps = Checkpoints(Path(sys.argv[1]), Path(sys.argv[2]))\n'
    'for turn in itertools.count():\n'
    '    Path(sys.argv[2], "notes", f"n{turn % 20}.md").write_text(f"turn {turn} " * 300)\n'
    '    cps.snapshot(f"turn {turn}")\n'
)


def _desk(tmp_path: Path) -> tuple[Path, Path, str]:
    desk, repository = tmp_path / 'desk', tmp_path / 'repo.git'
    for i in range(20):
        write(desk, f'notes/n{i}.md', f'{i} ' * 300)
    cps = Checkpoints(repository, desk)
    first = cps.snapshot('first')
    write(desk, 'Memory.md', 'memory')
    cps.snapshot('second')
    assert first is not None
    return desk, repository, first


def test_a_pack_replaced_after_it_was_listed_is_read_from_its_successor(tmp_path: Path) -> None:
    desk, repository, first = _desk(tmp_path)
    repo = ShadowRepo.open(repository)
    assert repo is not None
    try:
        full = repo.resolve(first)  # dulwich lists the packs now
        before = sorted(p.name for p in (repository / 'objects' / 'pack').glob('*.pack'))
        done = python(SNAPSHOT, str(repository), str(desk), 'a third, in another process')
        assert done.returncode == 0, done.stderr
        after = sorted(p.name for p in (repository / 'objects' / 'pack').glob('*.pack'))
        assert set(before) - set(after), 'the snapshot replaced a pack this reader had listed'
        assert repo.resolve(first) == full
        tree = repo.commit_info(full).tree
        files, _ = repo.flatten_tree(tree, ALLOW)
        assert repo.read_blob(files['notes/n3.md'][1]) == ('3 ' * 300).encode()
    finally:
        repo.close()


def test_show_and_diff_while_another_process_snapshots_in_a_loop(tmp_path: Path) -> None:
    desk, repository, first = _desk(tmp_path)
    writer = subprocess.Popen(
        [sys.executable, '-c', WRITER, str(repository), str(desk)],
        env=environment(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    reads = 0
    refused: list[str] = []
    try:
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline:
            cps = Checkpoints(repository, desk)
            try:
                assert cps.show(first, 'notes/n3.md') == ('3 ' * 300).encode()
                cps.diff(first)
                reads += 1
            except CheckpointError as error:  # allowed, but it must be rare
                refused.append(type(error).__name__)
    finally:
        writer.kill()
        writer.wait()
    assert reads > 20, 'the reader ran'
    assert len(refused) <= reads // 20, refused
