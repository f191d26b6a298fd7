"""Which targets a desk's protected paths cover (``ops/protectmatch.py``), on a real desk: a path,
never a prefix of a name; a folder and what is below it; ``..`` as the system applies it;
symlinks followed to where they lead; the same file (or folder) under another name. These are
the slips the mutation check of the matching looks for (``benchmarks/mutation.py
protectmatch``)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from helpers.builders import write

from trading_checkpoints.ops.policy import Policy, of_config
from trading_checkpoints.ops.protectmatch import Hit, denial, hits, spellings
from trading_checkpoints.store.config import parse

PROTECTED = ('notes/limits.md', 'notes/rules')


def policy(*entries: str) -> Policy:
    text = '[checkpoints]\n' + ''.join(f'\tprotected = {entry}\n' for entry in entries)
    return of_config(parse(text.encode(), Path('config')))


@pytest.fixture
def desk(tmp_path: Path) -> Path:
    desk = tmp_path / 'desks' / 'main'
    write(desk, 'notes/limits.md', 'limits\n')
    write(desk, 'notes/plan.md', 'plan\n')
    write(desk, 'notes/rules/sizes.md', 'sizes\n')
    write(desk, 'Memory.md', 'memory\n')
    return desk


def hit(desk: Path, target: str, *entries: str) -> Hit | None:
    found = hits(desk, policy(*(entries or PROTECTED)), [target])
    assert len(found) <= 1
    assert all(each.target == target for each in found), 'the target as given'
    return found[0] if found else None


def entry(desk: Path, target: str, *entries: str) -> str | None:
    found = hit(desk, target, *entries)
    return None if found is None else found.entry


@pytest.mark.parametrize(
    ('target', 'covered_by'),
    [
        ('notes/limits.md', 'notes/limits.md'),
        ('notes/limits.md.bak', None),  # a name beginning with a protected one
        ('notes/limits', None),
        ('notes/limits.md/x', 'notes/limits.md'),  # below it, were it a folder
        ('notes/rules', 'notes/rules'),
        ('notes/rules/sizes.md', 'notes/rules'),
        ('notes/rules/new/deeper.md', 'notes/rules'),  # a new file deep in the folder
        ('notes/rules_old/sizes.md', None),  # a neighbour whose name starts alike
        ('notes/rulesx', None),
        ('notes', None),  # the folder above a protected path is not protected
        ('notes/plan.md', None),
        ('Memory.md', None),
    ],
)
def test_a_path_or_a_folder_never_a_prefix(desk: Path, target: str, covered_by: str | None):
    assert entry(desk, target) == covered_by
    assert entry(desk, str(desk / target)) == covered_by, 'absolute, the same'


def test_nothing_is_protected_by_an_empty_policy(desk: Path):
    assert hits(desk, Policy(), ['notes/limits.md']) == []
    assert policy().covering('notes/limits.md') is None


def test_dots_are_applied(desk: Path):
    assert entry(desk, 'notes/plan/../limits.md') == 'notes/limits.md'
    assert entry(desk, 'notes/rules/../plan.md') is None
    assert entry(desk, './notes/./rules/x.md') == 'notes/rules'
    # Out of the desk and back in: the system's path is the protected file.
    assert entry(desk, '../main/notes/limits.md') == 'notes/limits.md'
    assert entry(desk, str(desk / '..' / 'main' / 'notes' / 'rules' / 'x')) == 'notes/rules'


def test_dots_after_a_symlink_apply_where_it_leads(desk: Path):
    (desk / 'notes' / 'rules' / 'sub').mkdir()
    os.symlink('rules/sub', desk / 'notes' / 'deep')
    found = hit(desk, 'notes/deep/../sizes.md')
    assert found is not None and found.path == 'notes/rules/sizes.md'
    assert spellings(desk, 'notes/deep/../sizes.md') == ['notes/sizes.md', 'notes/rules/sizes.md']


def test_a_symlink_to_a_protected_file_or_folder(desk: Path):
    os.symlink('limits.md', desk / 'notes' / 'link.md')
    found = hit(desk, 'notes/link.md')
    assert found is not None and (found.path, found.entry) == ('notes/limits.md', 'notes/limits.md')
    os.symlink('rules', desk / 'notes' / 'r')
    found = hit(desk, str(desk / 'notes' / 'r' / 'new.md'))  # a new file, through the link
    assert found is not None and found.path == 'notes/rules/new.md'
    # A link whose target does not exist yet: writing it creates the protected file.
    os.symlink('missing.md', desk / 'notes' / 'dangling.md')
    assert entry(desk, 'notes/dangling.md', 'notes/missing.md') == 'notes/missing.md'


def test_a_link_in_a_protected_folder_is_protected_by_its_name(desk: Path):
    os.symlink('../plan.md', desk / 'notes' / 'rules' / 'out.md')
    assert entry(desk, 'notes/rules/out.md') == 'notes/rules'


def test_a_link_out_of_the_desk_is_not_the_desk_s(desk: Path, tmp_path: Path):
    write(tmp_path, 'elsewhere/limits.md', 'not the desk\n')
    os.symlink(str(tmp_path / 'elsewhere'), desk / 'notes' / 'away')
    assert hit(desk, 'notes/away/limits.md') is None
    assert spellings(desk, str(tmp_path / 'elsewhere' / 'limits.md')) == []


def test_the_desk_reached_through_a_link(desk: Path, tmp_path: Path):
    os.symlink(str(tmp_path / 'desks'), tmp_path / 'linked')
    through = tmp_path / 'linked' / 'main'
    assert entry(through, str(desk / 'notes' / 'limits.md')) == 'notes/limits.md'
    assert entry(desk, str(through / 'notes' / 'rules' / 'x')) == 'notes/rules'


def test_another_case_is_another_file_here(desk: Path):
    """This file system tells cases apart: ``notes/LIMITS.md`` is a file of its own, whether
    it exists or not. (Where cases are one file, identity decides: below.)"""
    assert entry(desk, 'notes/LIMITS.md') is None
    write(desk, 'notes/LIMITS.md', 'another file\n')
    assert entry(desk, 'notes/LIMITS.md') is None
    assert entry(desk, 'Notes/Rules/x.md') is None


def test_the_same_file_under_another_name(desk: Path):
    """A hard link is the protected file, as ``Limits.md`` is ``limits.md`` on a
    case-insensitive file system: the same device and inode."""
    os.link(desk / 'notes' / 'limits.md', desk / 'notes' / 'Limits.md')
    found = hit(desk, 'notes/Limits.md')
    assert found is not None and (found.path, found.entry) == ('notes/Limits.md', 'notes/limits.md')
    assert denial([found]) == (
        'notes/Limits.md (the same file or folder as notes/limits.md) is protected on this '
        'desk: you may read it but not change it (a person may; `checkpoints protect` lists '
        'the protected paths).'
    )
    os.link(desk / 'notes' / 'plan.md', desk / 'notes' / 'plan2.md')
    assert hit(desk, 'notes/plan2.md') is None, 'the same file as an unprotected one'
    # A protected entry that does not exist does not hide the ones after it.
    assert entry(desk, 'notes/Limits.md', 'notes/gone.md', 'notes/limits.md') == 'notes/limits.md'
    # The same file at the top of the desk (the first folder level is looked at too).
    os.link(desk / 'Memory.md', desk / 'Memory2.md')
    assert entry(desk, 'Memory2.md', 'Memory.md') == 'Memory.md'


def test_a_protected_link_to_the_desk_protects_all_of_it(desk: Path):
    os.symlink('..', desk / 'notes' / 'all')
    assert entry(desk, 'Memory.md', 'notes/all') == 'notes/all'
    assert entry(desk, 'Memory.md', 'notes/plan.md') is None


def test_a_name_no_checkpoint_could_hold_is_still_in_its_folder(desk: Path):
    assert entry(desk, 'notes/rules/a\\b.md') == 'notes/rules'
    assert entry(desk, 'notes/rules/line\nbreak.md') == 'notes/rules'
    assert entry(desk, 'notes/rules/.git/config') == 'notes/rules'


def test_a_protected_link_protects_the_file_it_leads_to(desk: Path):
    write(desk, 'memory/main.md', 'the real memory\n')
    (desk / 'Memory.md').unlink()
    os.symlink('memory/main.md', desk / 'Memory.md')
    assert entry(desk, 'memory/main.md', 'Memory.md') == 'Memory.md'
    assert entry(desk, 'memory/other.md', 'Memory.md') is None


@contextmanager
def bind_mounted(source: Path, target: Path) -> Iterator[None]:
    target.mkdir()
    done = subprocess.run(
        ['mount', '--bind', str(source), str(target)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        pytest.skip(f'mount --bind is not allowed here: {done.stderr.strip()}')
    try:
        yield
    finally:
        subprocess.run(['umount', str(target)], check=True)


@pytest.mark.skipif(not hasattr(os, 'geteuid') or os.geteuid() != 0, reason='needs root')
def test_the_same_folder_under_another_name(desk: Path):
    """``notes/Rules`` mounted on ``notes/rules``: one folder, two names, as a case-insensitive
    file system has; a new file below either name is protected."""
    with bind_mounted(desk / 'notes' / 'rules', desk / 'notes' / 'Rules'):
        found = hit(desk, 'notes/Rules/new.md')
        assert found is not None and found.entry == 'notes/rules'
        assert hit(desk, 'notes/Rules') is not None


def test_several_targets_each_judged(desk: Path):
    found = hits(desk, policy(*PROTECTED), ['notes/plan.md', 'notes/limits.md', 'notes/rules/a'])
    assert [(h.target, h.entry) for h in found] == [
        ('notes/limits.md', 'notes/limits.md'),
        ('notes/rules/a', 'notes/rules'),
    ]
    assert denial(found, 'main').startswith(
        'notes/limits.md, notes/rules/a (in the protected folder notes/rules) is protected on '
        "desk 'main'"
    )
