"""The allowlist and path vetting: each unsafe path is refused saying why, names that only look
unsafe are accepted, allowlists are normalized, and a tree path is refused for what it is.

Each test pins a safety check: it fails when ``benchmarks/mutation.py`` breaks that check,
and it runs in this process, where mutation testing sees the calls.
"""

from __future__ import annotations

import pytest
from helpers.reading import ALLOW

from trading_checkpoints import CheckpointError
from trading_checkpoints.core.paths import (
    Allowlist,
    check_tree_path,
    component_problem,
    path_problem,
)
from trading_checkpoints.errors import CorruptRepositoryError


@pytest.mark.parametrize(
    ('path', 'reason'),
    [
        ('', 'an empty path'),
        ('/etc/passwd', 'an absolute path'),
        ('C:/Windows/evil', 'an absolute path'),
        ('C:', 'an absolute path'),
        ('d:evil', 'an absolute path'),
        ('notes//a.md', 'an empty component'),
        ('notes/', 'an empty component'),
        ('notes/./a.md', "a '.' component"),
        ('notes/../../outside', "a '..' component"),
        ('notes/.git/config', 'a .git component'),
        ('notes/.GIT./config', 'a .git component'),
        ('notes/.Git . ./hooks', 'a .git component'),
        ('notes/a\0b.md', 'a NUL or newline character'),
        ('notes/a\nb.md', 'a NUL or newline character'),
        ('notes/a\rb.md', 'a NUL or newline character'),
        ('notes/..\\..\\evil', 'a backslash'),
    ],
)
def test_each_unsafe_path_is_refused_with_its_reason(path: str, reason: str) -> None:
    assert path_problem(path) == reason


@pytest.mark.parametrize(
    'path',
    ['a', 'Memory.md', 'notes/.gitignore', 'notes/.github/x', 'notes/x.git', 'notes/.gitX', 'xy:'],
)
def test_names_that_only_look_like_unsafe_ones_are_accepted(path: str) -> None:
    assert path_problem(path) is None
    assert component_problem(path.rpartition('/')[2]) is None


def test_a_name_is_vetted_on_its_own() -> None:
    assert component_problem('') == 'an empty component'
    assert component_problem('..') == "a '..' component"
    assert component_problem('.git ') == 'a .git component'
    assert component_problem('a\\b') == 'a backslash'


def test_allowlist_entries_are_normalized_and_deduplicated() -> None:
    allow = Allowlist(['notes\\daily', 'INBOX/', 'notes/daily/', 'memory', 'memory/deep', 'a'])
    assert allow.entries == ('notes/daily', 'INBOX', 'memory', 'a')
    assert allow.covers('notes/daily/x.md') and not allow.covers('notes/x.md')
    assert allow.covers('a/b') and not allow.covers('ab')
    assert allow.covers('INBOX/x') and not allow.covers('INBO/x')


def test_allowlists_compare_and_hash_by_their_entries() -> None:
    first, second = Allowlist(['notes', 'memory']), Allowlist(['memory', 'notes/', 'notes'])
    assert first == second and hash(first) == hash(second)
    assert first != Allowlist(['notes']) and first != ('memory', 'notes')
    assert repr(Allowlist(['memory'])) == "Allowlist(['memory'])"


@pytest.mark.parametrize(
    ('entries', 'message'),
    [
        ([3], 'tracked path 3 is not a string'),
        ([b'notes'], "tracked path b'notes' is not a string"),
        ([], 'the list of tracked paths is empty'),
        (['C:/Users'], "tracked path 'C:/Users' is not usable: it has an absolute path"),
        (
            ['notes/a\0b'],
            "tracked path 'notes/a\\x00b' is not usable: it has a NUL or newline character",
        ),
    ],
)
def test_unusable_allowlists_are_refused_saying_why(entries: list, message: str) -> None:
    with pytest.raises(CheckpointError) as caught:
        Allowlist(entries)
    assert str(caught.value) == message


def test_a_tree_path_is_refused_for_what_it_is() -> None:
    with pytest.raises(CorruptRepositoryError) as unsafe:
        check_tree_path('memory/../../outside.txt', ALLOW)  # covered by 'memory', yet unsafe
    assert str(unsafe.value) == (
        "the checkpoint holds an unsafe path 'memory/../../outside.txt': a '..' component"
    )
    with pytest.raises(CorruptRepositoryError) as outside:
        check_tree_path('scratch.txt', ALLOW)
    assert str(outside.value) == (
        "the checkpoint holds 'scratch.txt', which is outside the tracked paths "
        'Memory.md, memory, notes, skills/agent'
    )
    check_tree_path('memory/deep/a.md', ALLOW)
