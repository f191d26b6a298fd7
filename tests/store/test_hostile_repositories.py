"""Hostile repositories: objects written byte by byte, bypassing every check a writer would make.

A shadow repository is data someone else may have written (a copied desk, a tampered folder,
a bug in another tool). Restoring from one must never write outside the desk's tracked paths:
each hostile tree is refused with a CheckpointError naming the problem, before anything is
written, and the same through the command line, as one line without a traceback. Entries
outside the tracked paths are vetted like the rest (an unsafe one is refused), then left out
and reported (``tests/ops/test_removed_tracked_paths.py``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.rawobjects import BLOB, LINK, TREE, blob, commit, in_notes, tree, write_object
from helpers.reading import files_of, version_of

from trading_checkpoints import CheckpointError, Checkpoints
from trading_checkpoints.cli import cli
from trading_checkpoints.store.pack.folder import wait_for_removals


@pytest.fixture
def setup(tmp_path: Path):
    desk = tmp_path / 'desks' / 'main'
    repo = tmp_path / '.checkpoints' / 'main.git'
    (desk / 'notes').mkdir(parents=True)
    (desk / 'notes' / 'mine.md').write_text('mine')
    (desk / 'Memory.md').write_text('memory')
    (desk / 'scratch.txt').write_text('untracked')
    outside = tmp_path / 'outside'
    outside.mkdir()
    (outside / 'precious.txt').write_text('never touched')
    cps = Checkpoints(repo, desk)
    cps.snapshot('honest start')
    (desk / 'notes' / 'mine.md').write_text('unsaved work')
    return tmp_path, desk, repo, cps


def _hostile_trees(repo: Path) -> dict[str, str]:
    ok = blob(repo, b'payload')
    sub = tree(repo, (BLOB, b'evil.md', ok))
    return {
        'dotdot-root': tree(repo, (BLOB, b'..', ok)),
        'dotdot-nested': in_notes(repo, (TREE, b'..', tree(repo, (TREE, b'..', sub)))),
        'dot': in_notes(repo, (TREE, b'.', sub)),
        'dotgit': in_notes(repo, (TREE, b'.git', tree(repo, (BLOB, b'config', ok)))),
        'dotgit-upper': in_notes(repo, (TREE, b'.GIT', sub)),
        'dotgit-trailing-dot': in_notes(repo, (TREE, b'.git.', sub)),
        'dotgit-trailing-space': in_notes(repo, (BLOB, b'.git ', ok)),
        'dotgit-file': tree(repo, (BLOB, b'.git', ok)),
        'absolute': tree(repo, (BLOB, b'/etc/evil', ok)),
        'absolute-in-folder': in_notes(repo, (BLOB, b'/tmp/evil', ok)),
        'slash': in_notes(repo, (BLOB, b'a/../../b', ok)),
        'backslash': in_notes(repo, (BLOB, b'..\\..\\evil', ok)),
        'empty-name': in_notes(repo, (BLOB, b'', ok)),
        'newline': in_notes(repo, (BLOB, b'a\nb', ok)),
        'carriage-return': in_notes(repo, (BLOB, b'a\rb', ok)),
        'nul': in_notes(repo, (BLOB, b'a\0b', ok)),
        'not-utf8': in_notes(repo, (BLOB, b'\xff\xfe', ok)),
        'outside-holding-dotgit': tree(
            repo, (TREE, b'memory_extra', tree(repo, (TREE, b'.git', sub)))
        ),
        'outside-holding-dotdot': tree(repo, (TREE, b'elsewhere', tree(repo, (TREE, b'..', sub)))),
        'beside-tracked-holding-gitlink': tree(
            repo, (TREE, b'skills', tree(repo, (TREE, b'other', tree(repo, (b'160000', b's', ok)))))
        ),
        'symlink-above-allowlist': tree(repo, (LINK, b'skills', blob(repo, b'/tmp'))),
        'duplicate-names': in_notes(repo, (BLOB, b'a.md', ok), (BLOB, b'a.md', ok)),
        'duplicate-link-and-folder': in_notes(
            repo, (LINK, b'link', blob(repo, b'../../outside')), (TREE, b'link', sub)
        ),
        'gitlink': in_notes(repo, (b'160000', b'sub', ok)),
        'mode-100664': in_notes(repo, (b'100664', b'a.md', ok)),
        'mode-zero': in_notes(repo, (b'0', b'a.md', ok)),
        'mode-garbage': in_notes(repo, (b'99999', b'a.md', ok)),
        'mode-not-octal': in_notes(repo, (b'10x644', b'a.md', ok)),
        'mode-tree-as-blob': in_notes(repo, (BLOB, b'a.md', sub)),
        'mode-blob-as-tree': in_notes(repo, (TREE, b'a', ok)),
        'missing-blob': in_notes(repo, (BLOB, b'a.md', 'ab' * 20)),
        'missing-tree': in_notes(repo, (TREE, b'a', 'cd' * 20)),
        'symlink-nul-target': in_notes(repo, (LINK, b'l', blob(repo, b'a\0b'))),
        'symlink-empty-target': in_notes(repo, (LINK, b'l', blob(repo, b''))),
        'name-too-long': in_notes(repo, (BLOB, b'n' * 300, ok)),
        'truncated-tree': write_object(repo, b'tree', b'100644 a.md\0' + b'\x01' * 7),
        'tree-is-a-blob': ok,
    }


HOSTILE = [
    'dotdot-root',
    'dotdot-nested',
    'dot',
    'dotgit',
    'dotgit-upper',
    'dotgit-trailing-dot',
    'dotgit-trailing-space',
    'dotgit-file',
    'absolute',
    'absolute-in-folder',
    'slash',
    'backslash',
    'empty-name',
    'newline',
    'carriage-return',
    'nul',
    'outside-holding-dotgit',
    'outside-holding-dotdot',
    'beside-tracked-holding-gitlink',
    'symlink-above-allowlist',
    'duplicate-names',
    'duplicate-link-and-folder',
    'gitlink',
    'mode-100664',
    'mode-zero',
    'mode-garbage',
    'mode-not-octal',
    'mode-tree-as-blob',
    'mode-blob-as-tree',
    'missing-blob',
    'missing-tree',
    'symlink-nul-target',
    'symlink-empty-target',
    'name-too-long',
    'truncated-tree',
    'tree-is-a-blob',
]


@pytest.mark.parametrize('case', HOSTILE)
def test_hostile_tree_is_refused_before_any_write(setup, case: str) -> None:
    tmp_path, desk, repo, cps = setup
    target = commit(repo, _hostile_trees(repo)[case])
    before = files_of(tmp_path)
    desk_before = files_of(desk)
    with pytest.raises(CheckpointError) as caught:
        cps.restore(target)
    message = str(caught.value)
    assert message and 'Traceback' not in message
    after = files_of(tmp_path)
    # The only changes anywhere are inside the repository (the snapshot of unsaved work).
    changed = {p for p in set(before) | set(after) if before.get(p) != after.get(p)}
    assert all(p.startswith('.checkpoints/') for p in changed), sorted(changed)
    assert files_of(desk) == desk_before
    assert (tmp_path / 'outside' / 'precious.txt').read_text() == 'never touched'
    # The same through the command line: one line, no traceback, non-zero exit.
    result = CliRunner().invoke(cli, ['--workspace', str(tmp_path), 'restore', target])
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith('error: '), result.output
    assert 'Traceback' not in result.output and 'unexpected' not in result.output
    assert files_of(desk) == desk_before
    # And the repository still works.
    cps.snapshot('after the hostile restore')
    assert version_of(repo, cps.list()[0].checkpoint_id)['notes/mine.md'][1] == b'unsaved work'


def test_symlink_then_a_path_through_it_writes_inside_the_desk(setup) -> None:
    tmp_path, desk, repo, cps = setup
    outside = tmp_path / 'outside'
    link_target = blob(repo, os.fsencode(outside))
    first = commit(repo, in_notes(repo, (LINK, b'link', link_target)))
    (repo / 'refs' / 'heads' / 'main').write_text(first + '\n')
    cps.restore(first)  # a symlink is written as a symlink, never followed
    assert os.readlink(desk / 'notes' / 'link') == str(outside)
    evil = tree(repo, (BLOB, b'precious.txt', blob(repo, b'overwritten!')))
    second = commit(repo, in_notes(repo, (TREE, b'link', evil)))
    cps.restore(second)
    assert (outside / 'precious.txt').read_text() == 'never touched'
    assert not (desk / 'notes' / 'link').is_symlink()
    assert (desk / 'notes' / 'link' / 'precious.txt').read_bytes() == b'overwritten!'
    assert sorted(p.name for p in outside.iterdir()) == ['precious.txt']


def test_untracked_symlink_in_the_way_is_refused(setup) -> None:
    tmp_path, desk, repo, cps = setup
    outside = tmp_path / 'outside'
    os.symlink(outside, desk / 'skills')  # untracked: only skills/agent is tracked
    target = commit(
        repo,
        tree(
            repo,
            (
                TREE,
                b'skills',
                tree(
                    repo,
                    (TREE, b'agent', tree(repo, (BLOB, b'precious.txt', blob(repo, b'x')))),
                ),
            ),
        ),
    )
    with pytest.raises(CheckpointError, match='in the way'):
        cps.restore(target)
    assert sorted(p.name for p in outside.iterdir()) == ['precious.txt']
    assert (outside / 'precious.txt').read_text() == 'never touched'


def test_planted_temporary_symlink_is_not_written_through(setup) -> None:
    tmp_path, desk, repo, cps = setup
    outside = tmp_path / 'outside' / 'precious.txt'
    target = commit(repo, in_notes(repo, (BLOB, b'mine.md', blob(repo, b'restored'))))
    for pid in range(os.getpid() - 2, os.getpid() + 3):
        try:
            os.symlink(outside, desk / 'notes' / f'.mine.md.checkpoint-{pid}.tmp')
        except FileExistsError:
            pass
    cps.restore(target)
    assert (desk / 'notes' / 'mine.md').read_bytes() == b'restored'
    assert outside.read_text() == 'never touched'


@pytest.mark.parametrize('tracked', ['..', '../..', '/', 'notes/./x', '.git', 'notes/../..', ''])
def test_hostile_tracked_paths_in_the_config_are_refused(setup, tracked: str) -> None:
    tmp_path, desk, repo, cps = setup
    config = (repo / 'config').read_text()
    (repo / 'config').write_text(config + f'[checkpoints]\n\ttracked = "{tracked}"\n')
    before = files_of(tmp_path)
    with pytest.raises(CheckpointError):
        Checkpoints(repo, desk).snapshot('x')
    assert files_of(tmp_path) == before


def test_hostile_inputs_count() -> None:
    """The number of distinct hostile inputs tried here (reported in the closing note)."""
    assert len(HOSTILE) == len(set(HOSTILE)) >= 35


def test_a_name_that_is_not_utf8_is_skipped_and_reported(setup) -> None:
    """One rule for names git holds but we cannot write back under their own name: the entry
    is left out of the restore and reported; the rest of the checkpoint is restored."""
    tmp_path, desk, repo, cps = setup
    ok = blob(repo, b'restored')
    target = commit(repo, in_notes(repo, (BLOB, b'\xff\xfe', ok), (BLOB, b'fine.md', ok)))
    before = files_of(tmp_path)
    result = cps.restore_with_result(target)
    assert ('notes/\\xff\\xfe', 'its name is not valid UTF-8') in result.kept
    assert (desk / 'notes' / 'fine.md').read_bytes() == b'restored'
    names = set(os.listdir(os.fsencode(desk / 'notes')))
    assert b'\xff\xfe' not in names
    after = files_of(tmp_path)
    changed = {p for p in set(before) | set(after) if before.get(p) != after.get(p)}
    tracked = ('.checkpoints/', 'desks/main/notes/', 'desks/main/Memory.md')
    assert all(p.startswith(tracked) for p in changed), sorted(changed)
    # Listing, showing, diffing and snapshotting go on working.
    assert cps.list()
    assert cps.show(target, 'notes/fine.md') == b'restored'
    assert 'notes/fine.md' not in cps.diff(target).paths


@pytest.mark.parametrize(
    'when', [b'4611686018427387904 +0000', b'1700000000 +9900', b'-99999999999999 -3000']
)
def test_a_commit_dated_out_of_range_lists_with_a_date(setup, when: bytes) -> None:
    """Found by tests/product/test_fuzz_repository_files.py: a head commit dated in the year 146
    billion, or with a 99-hour offset, made list, log, status, turns and undo raise OSError or
    ValueError."""
    from datetime import datetime

    tmp_path, desk, repo, cps = setup
    honest = cps.list()[0].checkpoint_id
    head = (repo / 'refs' / 'heads' / 'main').read_text().strip()
    tree_sha = commit_tree_of(repo, head)
    body = (
        b'tree ' + tree_sha.encode() + b'\nparent ' + head.encode() + b'\n'
        b'author x <x@x> ' + when + b'\ncommitter x <x@x> ' + when + b'\n\nodd date\n'
    )
    odd = write_object(repo, b'commit', body)
    (repo / 'refs' / 'heads' / 'main').write_text(odd + '\n')
    listed = cps.list()
    assert [c.checkpoint_id for c in listed] == [odd[:7], honest]
    datetime.fromisoformat(listed[0].created_at).timestamp()  # a date retention can compare
    assert cps.log()[0].checkpoint.checkpoint_id == odd[:7]
    assert cps.status().newest_id == odd[:7]
    cps.turns()
    cps.prune(keep=5, dry_run=True)
    assert cps.undo(force=True).before_id
    result = CliRunner().invoke(cli, ['--workspace', str(tmp_path), 'list'])
    assert result.exit_code == 0 and odd[:7] in result.output, result.output


def commit_tree_of(repo: Path, sha: str) -> str:
    from dulwich.object_store import DiskObjectStore

    store = DiskObjectStore(str(repo / 'objects'))
    try:
        return store[sha.encode()].tree.decode()  # packed: the library appends to packs
    finally:
        store.close()


@pytest.mark.parametrize(
    ('name', 'content'),
    [
        ('packed-refs', b''),  # dulwich: StopIteration (RuntimeError inside a generator)
        ('packed-refs', b'^{head}\n'),  # a peeled line first
        ('packed-refs', b'{head} refs/heads/main\n^{head}\n'),  # peeled without the header
        ('packed-refs', b'{head}\n'),  # no ref name
        ('packed-refs', b'\x8b\n'),
        ('packed-refs', b'# pack-refs with: peeled fully-peeled sorted \n{head}` refs/x\n'),
        ('refs/checkpoints/sealed', b'ref: ../../../outside/precious.txt\n'),
        ('refs/heads/main', b'ref: ../../../outside/precious.txt\n'),
    ],
)
def test_damaged_refs_are_a_clear_error(setup, name: str, content: bytes) -> None:
    """Found by tests/product/test_fuzz_repository_files.py: a damaged packed-refs file (with the
    branch only there) or a symbolic ref leaving refs/ made every verb raise dulwich's
    PackedRefsException, RefFormatError, StopIteration or RuntimeError."""
    tmp_path, desk, repo, cps = setup
    branch = repo / 'refs' / 'heads' / 'main'
    head = branch.read_text().strip()
    if name == 'packed-refs':
        branch.unlink()
    (repo / name).parent.mkdir(parents=True, exist_ok=True)
    (repo / name).write_bytes(content.replace(b'{head}', head.encode()))
    outside = files_of(tmp_path / 'outside')
    desk_before = files_of(desk)
    for verb in (
        lambda: cps.list(),
        lambda: cps.status(),
        lambda: cps.log(),
        lambda: cps.turns(),
        lambda: cps.prune(keep=1, dry_run=True),
        lambda: cps.snapshot('x'),
        lambda: cps.undo(force=True),
        lambda: cps.seal(),
    ):
        try:
            verb()
        except CheckpointError:
            assert files_of(desk) == desk_before
    assert files_of(tmp_path / 'outside') == outside
    if name == 'refs/checkpoints/sealed':  # ours, never symbolic: replaced, not followed
        assert re.fullmatch('[0-9a-f]{40}\n', (repo / name).read_text())
    result = CliRunner().invoke(cli, ['--workspace', str(tmp_path), 'list'])
    assert result.exit_code in (0, 1), result.output
    assert 'unexpected' not in result.output and 'Traceback' not in result.output


@pytest.mark.parametrize(
    'content',
    [b'X\n', b'{head}\n\x1d\n', b'{head}x\n', b'\xc2\xb3' * 500, b'\r'],
    ids=['letter', 'control', 'long-id', 'long-line', 'only-whitespace'],
)
def test_a_damaged_shallow_file_is_a_clear_error(setup, content: bytes) -> None:
    """Found by tests/product/test_fuzz_repository_files.py: dulwich parses ``shallow`` when it
    opens the repository, and a line that is not an object id made snapshot, undo and restore raise
    its ObjectFormatException."""
    tmp_path, desk, repo, cps = setup
    head = (repo / 'refs' / 'heads' / 'main').read_text().strip()
    (repo / 'shallow').write_bytes(content.replace(b'{head}', head.encode()))
    (desk / 'notes' / 'mine.md').write_text('more unsaved work')
    desk_before = files_of(desk)
    for verb in (
        lambda: cps.snapshot('x'),
        lambda: cps.undo(force=True),
        lambda: cps.restore(head[:7]),
    ):
        with pytest.raises(CheckpointError, match='cannot open the repository') as caught:
            verb()
        assert len(str(caught.value)) < 400
        assert files_of(desk) == desk_before
    result = CliRunner().invoke(cli, ['--workspace', str(tmp_path), 'snapshot', '-m', 'x'])
    assert result.exit_code == 1 and result.output.startswith('error: cannot open'), result.output
    assert 'unexpected' not in result.output


@pytest.mark.parametrize('tree_sha', ['0' * 40, 'f' * 40])
def test_prune_of_a_commit_naming_a_missing_tree_is_a_clear_error(setup, tree_sha: str) -> None:
    """Found by tests/product/test_fuzz_repository_files.py: prune (even a dry run) walked a commit
    whose tree the store lacks and raised dulwich's KeyError."""
    tmp_path, desk, repo, cps = setup
    (desk / 'notes' / 'mine.md').write_text('saved')
    cps.snapshot('second')
    wait_for_removals()  # the tail pack the snapshot replaced is gone before the listing
    (repo / 'refs' / 'heads' / 'main').write_text(commit(repo, tree_sha) + '\n')
    before = files_of(tmp_path)
    with pytest.raises(CheckpointError, match='missing'):
        cps.prune(keep=1, dry_run=True)
    assert files_of(tmp_path) == before
    with pytest.raises(CheckpointError, match='missing'):
        cps.prune(keep=1)
    after = files_of(tmp_path)
    changed = {p for p in set(before) | set(after) if before.get(p) != after.get(p)}
    assert all(p.startswith('.checkpoints/') for p in changed), sorted(changed)
    assert cps.list()[0].reason == 'hostile'
