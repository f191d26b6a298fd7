"""A roll-up copies only objects that are what their names say.

A pack may come from anywhere (another tool, a remote, a person): one whose record does not
hash to the name its index gives it is left exactly as it is, and nothing of it is copied into
the pack the roll-up writes (a copied object would carry the wrong content under a trusted
name into the repository's main pack, and the original would be removed).

Each test pins a safety check: it fails when ``benchmarks/mutation.py`` breaks that check,
and it runs in this process, where mutation testing sees the calls.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

from helpers import rawobjects
from helpers.builders import session_turns
from helpers.reading import history, version_of

from trading_checkpoints import Checkpoints
from trading_checkpoints.ops import engine
from trading_checkpoints.store import storage
from trading_checkpoints.store.pack import folder as packfolder
from trading_checkpoints.store.pack.packfile import PackView

BLOB = 3


def _roll_up(cps: Checkpoints) -> storage.StorageStats:
    with engine.locked(cps.desk_config) as session:  # as the hook after a commit runs it
        return storage.roll_up(session.repo)


def _packs(repo_dir: Path) -> set[str]:
    return {basename for _, basename in packfolder.packs(str(repo_dir / 'objects' / 'pack'))}


def test_a_pack_with_a_misnamed_object_is_left_alone(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    ids = session_turns(cps, desk, 4)
    known = {sha: version_of(repo_dir, sha) for sha in history(repo_dir)}
    pack_dir = repo_dir / 'objects' / 'pack'
    # A pack beside the real ones: a well-formed blob under its own name, and another blob
    # whose content is not what its name says.
    honest = rawobjects.object_id(b'blob', b'an honest blob\n')
    misnamed = rawobjects.object_id(b'blob', b'what the name promises\n')
    handmade = rawobjects.pack(
        pack_dir,
        [
            rawobjects.whole_record(BLOB, b'an honest blob\n'),
            rawobjects.whole_record(BLOB, b'something else entirely\n'),
        ],
        [honest, misnamed],
    )
    handmade_bytes = Path(handmade + '.pack').read_bytes(), Path(handmade + '.idx').read_bytes()
    # And a loose object and an honest small pack, tried after it (larger): the roll-up has
    # something to fold into the largest pack.
    loose = rawobjects.blob(repo_dir, b'a loose blob another tool wrote\n')
    other_data = random.Random(7).randbytes(600)
    other_name = rawobjects.object_id(b'blob', other_data)
    other = rawobjects.pack(pack_dir, [rawobjects.whole_record(BLOB, other_data)], [other_name])
    (real,) = _packs(repo_dir) - {handmade, other}
    sizes = [os.path.getsize(name + '.pack') for name in (handmade, other, real)]
    assert sizes == sorted(sizes), sizes
    _roll_up(cps)
    packfolder.wait_for_removals()
    assert other not in _packs(repo_dir), 'the honest pack tried after it was not folded'
    assert handmade in _packs(repo_dir), 'the pack holding a misnamed object was removed'
    assert (Path(handmade + '.pack').read_bytes(), Path(handmade + '.idx').read_bytes()) == (
        handmade_bytes
    ), 'the pack holding a misnamed object was rewritten'
    (rolled,) = _packs(repo_dir) - {handmade}
    with PackView(rolled) as view:
        assert loose.encode() in view and other_name.hex().encode() in view
        assert misnamed.hex().encode() not in view and honest.hex().encode() not in view, (
            'copied from the misnamed pack'
        )
    assert storage.loose_count(repo_dir) == 0
    for sha, content in known.items():
        assert version_of(repo_dir, sha) == content
    assert len(history(repo_dir)) == len(ids)


def test_a_roll_up_of_honest_packs_still_folds_them(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    """The control: the same handmade pack with only honest objects is folded in."""
    session_turns(cps, desk, 4)
    pack_dir = repo_dir / 'objects' / 'pack'
    names = [rawobjects.object_id(b'blob', b'one\n'), rawobjects.object_id(b'blob', b'two\n')]
    handmade = rawobjects.pack(
        pack_dir,
        [rawobjects.whole_record(BLOB, b'one\n'), rawobjects.whole_record(BLOB, b'two\n')],
        names,
    )
    _roll_up(cps)
    packfolder.wait_for_removals()
    assert not Path(handmade + '.pack').exists()
    (rolled,) = _packs(repo_dir)
    with PackView(rolled) as view:
        assert all(name.hex().encode() in view for name in names)
