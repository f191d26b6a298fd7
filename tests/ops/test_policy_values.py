"""The policy's values, exactly: what a config says and how it reads back, every error with its
whole message and its fields, the bounds of a budget, names that are not UTF-8. (The slips the
mutation check of ``ops/policy.py`` found unpinned: ``benchmarks/mutation.py policy``.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.builders import write

from trading_checkpoints import Checkpoints
from trading_checkpoints.errors import (
    BadPathError,
    CorruptRepositoryError,
    InvalidArgumentError,
    ProtectedPathError,
)
from trading_checkpoints.ops.policy import MAX_BUDGET, Budget, BudgetUse, Policy, uses

TRACKED = 'Memory.md, memory, notes, skills/agent'


@pytest.fixture
def started(cps: Checkpoints, desk: Path) -> Checkpoints:
    write(desk, 'Memory.md', '# Memory\n')
    write(desk, 'notes/plan.md', 'plan\n')
    cps.snapshot('start')
    return cps


def config_with(cps: Checkpoints, text: str) -> Path:
    config = cps.repository_directory / 'config'
    config.write_bytes(config.read_bytes() + text.encode('utf-8', 'surrogateescape'))
    return config


def test_no_repository_no_policy(cps: Checkpoints):
    assert cps.protected() == () and cps.budgets() == []
    assert not cps.repository_directory.exists()


def test_the_config_read_back(started: Checkpoints):
    config_with(
        started,
        '[checkpoints]\n\tprotected = notes/rules/\n\tprotected = notes/\udcff.md\n'
        '[budget "Memory.md"]\n\tnote = no budget here\n'
        '[budget "notes"]\n\ttokens = 3\n'
        '[budget "memory"]\n\tbytes = 1\n'
        f'[budget "skills/agent"]\n\tbytes = {MAX_BUDGET}\n',
    )
    assert started.protected() == ('notes/rules', 'notes/\udcff.md')
    assert [use.budget for use in started.budgets()] == [
        Budget('notes', 12, 3),  # a section without a value sets nothing, and hides nothing
        Budget('memory', 1),
        Budget('skills/agent', MAX_BUDGET),
    ]


@pytest.mark.parametrize(
    ('text', 'message'),
    [
        (
            '[checkpoints]\n\tprotected = ../x\n',
            "checkpoints.protected in {config} (line 14) is not a usable desk path: it has a '..' "
            'component',
        ),
        (
            '[checkpoints]\n\tprotected\n',
            'checkpoints.protected in {config} (line 14) is not a usable desk path: it has no '
            'value',
        ),
        (
            '[budget "/etc"]\n\tbytes = 5\n',
            'a [budget "PATH"] section in {config} is not a usable desk path: it has an absolute '
            'path',
        ),
        (
            '[budget "Memory.md"]\n\tbytes = 0\n',
            "{config} (line 14): the budget of 'Memory.md' is not a whole number of at least 1",
        ),
        (
            '[budget "Memory.md"]\n\tbytes\n',
            "{config} (line 14): the budget of 'Memory.md' is not a whole number of at least 1",
        ),
        (
            f'[budget "Memory.md"]\n\tbytes = {MAX_BUDGET + 1}\n',
            "{config} (line 14): the budget of 'Memory.md' is not a whole number of at least 1",
        ),
        (
            '[budget "Memory.md"]\n\ttokens = ' + '9' * 5000 + '\n',
            "{config} (line 14): the budget of 'Memory.md' is not a whole number of at least 1",
        ),
    ],
)
def test_a_damaged_policy_says_where(started: Checkpoints, text: str, message: str):
    config = config_with(started, text)
    with pytest.raises(CorruptRepositoryError) as refused:
        started.protected()
    assert str(refused.value) == message.format(config=config)
    assert refused.value.path == str(config)


def test_a_name_that_is_not_utf8_is_kept_as_it_is(started: Checkpoints, desk: Path):
    name = 'notes/\udcff.md'
    assert started.protect(name) == (name,)
    assert started.budget(name, 5) == Budget(name, 5)
    config = (started.repository_directory / 'config').read_bytes()
    assert b'protected = notes/\xff.md' in config and b'[budget "notes/\xff.md"]' in config
    started.remove_budget(name)
    assert started.budgets() == []
    assert started.unprotect(name) == ()


@pytest.mark.parametrize(
    ('given', 'kind', 'message', 'fields'),
    [
        (
            [3],
            InvalidArgumentError,
            'a protected path must be a string, not int',
            {'name': 'paths', 'value': 3},
        ),
        (
            'notes/../../x',
            BadPathError,
            "'notes/../../x' is not a usable desk path: it has a '..' component",
            {'path': 'notes/../../x'},
        ),
        (
            './other.txt',
            BadPathError,
            f"'other.txt' is not tracked (tracked paths: {TRACKED}); a protected path must be, so "
            'a change to it can be told and put back',
            {'path': './other.txt'},
        ),
    ],
)
def test_a_path_refused_says_why(started: Checkpoints, given, kind, message, fields):
    with pytest.raises(kind) as refused:
        started.protect(given)
    assert str(refused.value) == message and refused.value.details() == fields


def test_entries_as_people_type_them(started: Checkpoints, desk: Path):
    write(desk, 'notes/MAX/a.md', 'a\n')
    assert started.protect(['notes\\MAX/', './Memory.md']) == ('notes/MAX', 'Memory.md')
    started.budget('notes/', 10)
    started.remove_budget('./notes/')
    assert started.budgets() == []


def test_unprotecting_an_untracked_path_says_why(started: Checkpoints):
    with pytest.raises(BadPathError) as refused:
        started.unprotect('other.txt')
    assert str(refused.value) == (
        f"'other.txt' is not tracked (tracked paths: {TRACKED}); a protected path must be, so a "
        'change to it can be told and put back'
    )


def test_unprotecting_says_what_is_protected(started: Checkpoints):
    with pytest.raises(BadPathError) as refused:
        started.unprotect('notes/plan.md')
    assert str(refused.value) == "'notes/plan.md' is not one of the protected paths (none)"
    assert refused.value.path == 'notes/plan.md'
    started.protect(['notes/plan.md', 'Memory.md'])
    with pytest.raises(BadPathError, match=r'\(notes/plan.md, Memory.md\)$'):
        started.unprotect('notes')


def test_a_covered_path_is_skipped_and_the_next_one_added(started: Checkpoints):
    started.protect('notes')
    assert started.protect(['notes/plan.md', 'Memory.md']) == ('notes', 'Memory.md')


@pytest.mark.parametrize(
    ('size', 'tokens', 'message', 'name', 'value'),
    [
        (None, None, 'give a budget in bytes or in tokens (one of them)', 'size', None),
        (5, 5, 'give a budget in bytes or in tokens (one of them)', 'size', 5),
        (0, None, 'a budget must be a whole number of at least 1, not 0', 'size', 0),
        (None, 0, 'a budget must be a whole number of at least 1, not 0', 'tokens', 0),
        (
            MAX_BUDGET + 1,
            None,
            f'a budget must be a whole number of at least 1, not {MAX_BUDGET + 1}',
            'size',
            MAX_BUDGET + 1,
        ),
        (True, None, 'a budget must be a whole number of at least 1, not True', 'size', True),
        ('5', None, "a budget must be a whole number of at least 1, not '5'", 'size', '5'),
    ],
)
def test_a_budget_refused_says_why(started: Checkpoints, size, tokens, message, name, value):
    with pytest.raises(InvalidArgumentError) as refused:
        started.budget('Memory.md', size, tokens=tokens)
    assert str(refused.value) == message
    assert (refused.value.name, refused.value.value) == (name, value)


def test_the_bounds_of_a_budget(started: Checkpoints):
    assert started.budget('Memory.md', 1) == Budget('Memory.md', 1)
    assert started.budget('notes', tokens=MAX_BUDGET) == Budget('notes', 4 * MAX_BUDGET, MAX_BUDGET)
    assert started.budget('notes', MAX_BUDGET) == Budget('notes', MAX_BUDGET)
    with pytest.raises(BadPathError) as refused:
        started.budget('other.txt', 5)
    assert str(refused.value).endswith(
        'a budget path must be, so a change to it can be told and put back'
    )


def test_removing_a_budget_that_is_not_there(started: Checkpoints):
    with pytest.raises(BadPathError) as refused:
        started.remove_budget('Memory.md')
    assert str(refused.value) == "'Memory.md' has no budget (budgets: none)"
    assert refused.value.path == 'Memory.md'
    started.budget('notes', 5)
    started.budget('Memory.md', 5)
    with pytest.raises(BadPathError) as refused:
        started.remove_budget('/Memory.md')
    assert str(refused.value) == "'/Memory.md' has no budget (budgets: notes, Memory.md)"


def test_budget_values_as_shown(started: Checkpoints):
    one = BudgetUse(Budget('Memory.md', 4, 1), 9)
    assert one.describe() == 'about 2 tokens (9 B) of 1 token'
    assert one.to_dict() == {'path': 'Memory.md', 'bytes': 4, 'tokens': 1, 'size': 9, 'over': True}
    assert BudgetUse(Budget('Memory.md', 9), 9).over is False
    # The policy given is the one measured (the hooks pass the one they read).
    given = Policy(budgets=(Budget('Memory.md', 1),))
    assert [use.size for use in uses(started.desk_config, given)] == [len('# Memory\n')]


def test_a_refused_restore_names_every_path_and_entry(started: Checkpoints, desk: Path):
    first = started.list(1)[0].checkpoint_id
    for n in range(6):
        write(desk, f'notes/rules/r{n}.md', f'{n}\n')
    started.snapshot('rules')
    started.protect(['notes/rules', 'notes/plan.md'])
    write(desk, 'notes/plan.md', 'plan 2\n')
    started.snapshot('plan 2')
    with pytest.raises(ProtectedPathError) as refused:
        started.for_agent().restore(first)
    assert refused.value.protected == ('notes/plan.md', 'notes/rules')
    assert len(refused.value.paths) == 7
    assert str(refused.value) == (
        'refusing to restore: it would change notes/plan.md, notes/rules/r0.md, '
        'notes/rules/r1.md, notes/rules/r2.md, notes/rules/r3.md ..., protected on this desk '
        '(notes/plan.md, notes/rules); a person may change it (checkpoints protect lists them)'
    )
    started.unprotect('notes/rules')
    (desk / 'notes' / 'rules' / 'r0.md').unlink()
    started.snapshot('six left')
    started.protect('notes/rules')
    with pytest.raises(ProtectedPathError, match=r'r4\.md \.\.\., protected'):
        started.for_agent().restore(first)  # six paths: five named, and more
    (desk / 'notes' / 'plan.md').write_text('plan\n')
    started.snapshot('five left')
    with pytest.raises(ProtectedPathError, match=r'r5\.md, protected'):
        started.for_agent().restore(first)  # five paths: all named
    started.unprotect('notes/rules')
    for n in range(1, 4):
        (desk / 'notes' / 'rules' / f'r{n}.md').unlink()
    started.snapshot('fewer rules')
    started.protect('notes/rules')
    with pytest.raises(ProtectedPathError) as refused:
        started.for_agent().restore(first, paths=['notes/rules'])
    assert str(refused.value).startswith(
        'refusing to restore: it would change notes/rules/r4.md, notes/rules/r5.md, protected'
    )
