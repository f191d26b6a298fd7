"""A damaged pack or index: ``prune`` (and every read) says which file, in a ``CheckpointError``.

Before, a prune over a truncated pack printed ``error: unexpected ChecksumMismatch``, over a
pack with a broken header ``unexpected AssertionError``, over zeroed bytes a zlib error, over a
truncated index a ``struct`` error: dulwich's words, and no file. Each damage here is made to
the largest pack (or its index) of a real repository; the error must be a
``CorruptRepositoryError`` whose ``path`` is that file, and the command line prints it as one
``error:`` line naming it.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.builders import checkpoints_in, desk_in, new_workspace, repository_in, write
from helpers.cli import checkpoints

from trading_checkpoints import Checkpoints, CorruptRepositoryError


def _truncate(data: bytes) -> bytes:
    return data[: len(data) // 2]


def _break_header(data: bytes) -> bytes:
    return b'XXXX' + data[4:]


def _zero_middle(data: bytes) -> bytes:
    third = len(data) // 3
    return data[:third] + bytes(third) + data[2 * third :]


def _empty(data: bytes) -> bytes:
    return b''


DAMAGE: dict[str, tuple[str, Callable[[bytes], bytes]]] = {
    'truncated pack': ('.pack', _truncate),
    'pack header': ('.pack', _break_header),
    'zeroed pack': ('.pack', _zero_middle),
    'truncated index': ('.idx', _truncate),
    'empty index': ('.idx', _empty),
}
WORDS_OF_DULWICH = ('ChecksumMismatch', 'AssertionError', 'Error -3', 'unpack requires', 'zlib')


def _damaged(tmp_path: Path, case: str) -> tuple[Path, Checkpoints, Path]:
    workspace = new_workspace(tmp_path / 'ws')
    desk = desk_in(workspace)
    cps = checkpoints_in(workspace)
    rng = random.Random(7)
    for turn in range(4):
        write(desk, 'Memory.md', f'memory {turn}\n' * 200 + rng.randbytes(3000).hex())
        write(desk, f'notes/n{turn}.md', 'x' * turn * 100)
        cps.snapshot(f'turn {turn}')
    repository = repository_in(workspace)
    packs = sorted((repository / 'objects' / 'pack').glob('pack-*.pack'), key=_size)
    suffix, damage = DAMAGE[case]
    target = packs[-1].with_suffix(suffix)
    target.chmod(0o644)
    target.write_bytes(damage(target.read_bytes()))
    return workspace, cps, target


def _size(path: Path) -> int:
    return path.stat().st_size


@pytest.mark.parametrize('case', list(DAMAGE))
@pytest.mark.parametrize('keep', [1, None], ids=['prune', 'compact'])
def test_prune_over_a_damaged_pack_names_the_file(
    tmp_path: Path, case: str, keep: int | None
) -> None:
    workspace, cps, target = _damaged(tmp_path, case)
    with pytest.raises(CorruptRepositoryError) as caught:
        cps.prune(keep=keep)
    assert caught.value.path == str(target)
    assert str(caught.value).startswith(f'cannot compact the storage: {target} is damaged (')
    assert str(caught.value).endswith(
        '); restore it from a backup, or remove it and lose the checkpoints only it held'
    )
    assert not any(words in str(caught.value) for words in WORDS_OF_DULWICH)
    assert target.exists(), 'the damaged file is left for the person to look at'


@pytest.mark.parametrize('case', ['truncated pack', 'empty index'])
def test_the_command_line_prints_one_line_naming_the_file(tmp_path: Path, case: str) -> None:
    workspace, cps, target = _damaged(tmp_path, case)
    for verb in (['prune', '--keep', '1'], ['prune'], ['restore', '--dry-run']):
        done = checkpoints(*verb, workspace=workspace)
        assert done.returncode == 1, done
        assert done.stderr.startswith('error: ') and done.stderr.count('\n') == 1, done.stderr
        assert str(target) in done.stderr
        assert 'unexpected' not in done.stderr
        assert not any(words in done.stderr for words in WORDS_OF_DULWICH), done.stderr
