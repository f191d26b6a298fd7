"""The desk's policy through the library: ``Checkpoints.protect``, ``unprotect``, ``protected``,
``budget``, ``budgets``, kept in the repository's config (real git reads it), read as untrusted;
the guards raise ``ProtectedPathError``; restores made for the agent (``for_agent``, the MCP
server's) refuse to change a protected path, a person's do not."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers.builders import write
from helpers.gitcli import git
from helpers.reading import files_of

from trading_checkpoints import Checkpoints
from trading_checkpoints.errors import (
    BadPathError,
    CorruptRepositoryError,
    InvalidArgumentError,
    ProtectedPathError,
)
from trading_checkpoints.ops.policy import Budget

LIMITS = 'max position 5\n'


@pytest.fixture
def started(cps: Checkpoints, desk: Path) -> Checkpoints:
    write(desk, 'Memory.md', '# Memory\n')
    write(desk, 'notes/limits.md', LIMITS)
    write(desk, 'notes/plan.md', 'plan\n')
    write(desk, 'notes/rules/sizes.md', 'sizes\n')
    cps.snapshot('start')
    return cps


def test_protect_unprotect_and_list(started: Checkpoints, desk: Path):
    before = files_of(desk)
    assert started.protected() == ()
    assert started.protect('notes/limits.md') == ('notes/limits.md',)
    assert started.protect(['notes/rules/', './Memory.md']) == (
        'notes/limits.md',
        'notes/rules',
        'Memory.md',
    )
    assert started.protect('notes/rules/sizes.md') == started.protected(), 'already covered'
    assert started.protect('notes') == ('Memory.md', 'notes'), 'a folder takes in what it covers'
    assert started.unprotect('notes') == ('Memory.md',)
    assert files_of(desk) == before, 'the policy is never kept in the desk'


def test_the_policy_is_in_the_config_as_git_reads_it(started: Checkpoints):
    started.protect(['notes/limits.md', 'notes/rules'])
    started.budget('Memory.md', 20480)
    started.budget('notes', tokens=5000)
    repo = started.repository_directory
    assert git(repo, 'config', '--get-all', 'checkpoints.protected').split() == [
        'notes/limits.md',
        'notes/rules',
    ]
    assert git(repo, 'config', 'budget.Memory.md.bytes').strip() == '20480'
    assert git(repo, 'config', 'budget.notes.tokens').strip() == '5000'
    assert git(repo, 'config', '--get-all', 'checkpoints.tracked').split()[0] == 'Memory.md'


@pytest.mark.parametrize(
    ('paths', 'kind'),
    [
        ('../other/notes/x.md', BadPathError),
        ('/etc/passwd', BadPathError),
        ('notes/../../x', BadPathError),
        ('.git/config', BadPathError),
        ('other.txt', BadPathError),  # not tracked
        ('', BadPathError),
        ([3], InvalidArgumentError),
    ],
)
def test_a_path_that_cannot_be_protected(started: Checkpoints, paths, kind):
    with pytest.raises(kind):
        started.protect(paths)
    assert started.protected() == ()


def test_unprotecting_what_is_not_protected(started: Checkpoints):
    started.protect('notes/rules')
    with pytest.raises(BadPathError, match=r"'notes/rules/sizes.md' is not one of the protected"):
        started.unprotect('notes/rules/sizes.md')
    assert started.protected() == ('notes/rules',)


def test_protecting_before_the_first_checkpoint_creates_the_repository(cps: Checkpoints, desk):
    write(desk, 'notes/limits.md', LIMITS)
    assert cps.protect('notes/limits.md') == ('notes/limits.md',)
    assert cps.list() == []


def test_budgets_and_what_their_paths_hold(started: Checkpoints, desk: Path):
    assert started.budget('Memory.md', 5) == Budget('Memory.md', 5)
    assert started.budget('notes', tokens=3) == Budget('notes', 12, 3)
    os.symlink('plan.md', desk / 'notes' / 'link.md')  # 7 bytes of link, never followed
    write(desk, 'notes/big.bin', 'x' * 100)
    uses = {use.budget.path: use for use in started.budgets()}
    assert uses['Memory.md'].size == len('# Memory\n') and uses['Memory.md'].over
    assert uses['notes'].size == len(LIMITS) + len('plan\n') + len('sizes\n') + 7 + 100
    assert uses['notes'].notice() == (
        'notes is about 33 tokens (133 B), its budget is 3 tokens: condense it'
    )
    started.budget('notes', 4096)  # in bytes now: the tokens setting goes
    assert git(started.repository_directory, 'config', '--get-regexp', 'budget').split() == [
        'budget.Memory.md.bytes',
        '5',
        'budget.notes.bytes',
        '4096',
    ]
    assert not {use.budget.path: use for use in started.budgets()}['notes'].over
    started.remove_budget('Memory.md')
    assert [use.budget.path for use in started.budgets()] == ['notes']
    with pytest.raises(BadPathError, match='has no budget'):
        started.remove_budget('Memory.md')


def test_a_budget_for_a_path_not_there_yet_holds_nothing(started: Checkpoints):
    started.budget('memory', 10)
    [use] = started.budgets()
    assert use.size == 0 and not use.over


@pytest.mark.parametrize(
    ('size', 'tokens'), [(0, None), (-1, None), (None, 0), (5, 5), (None, None), (True, None)]
)
def test_a_budget_that_is_not_one(started: Checkpoints, size, tokens):
    with pytest.raises(InvalidArgumentError):
        started.budget('Memory.md', size, tokens=tokens)
    assert started.budgets() == []


@pytest.mark.parametrize(
    'lines',
    [
        b'[checkpoints]\n\tprotected = ../outside\n',
        b'[checkpoints]\n\tprotected = /etc\n',
        b'[checkpoints]\n\tprotected\n',
        b'[budget "../x"]\n\tbytes = 5\n',
        b'[budget "Memory.md"]\n\tbytes = lots\n',
        b'[budget "Memory.md"]\n\tbytes = 0\n',
        b'[budget "Memory.md"]\n\ttokens = 99999999999999999999\n',
    ],
)
def test_a_hostile_policy_is_refused_never_half_read(started: Checkpoints, lines: bytes):
    config = started.repository_directory / 'config'
    config.write_bytes(config.read_bytes() + lines)
    with pytest.raises(CorruptRepositoryError) as refused:
        started.protected()
    assert str(config) in str(refused.value)
    with pytest.raises(CorruptRepositoryError):
        with started.guard('write_file notes/plan.md', strict=True):
            pass


def test_a_config_that_is_a_link_is_not_followed(started: Checkpoints, tmp_path: Path):
    elsewhere = tmp_path / 'elsewhere-config'
    elsewhere.write_text('[checkpoints]\n\tprotected = notes/plan.md\n')
    config = started.repository_directory / 'config'
    config.unlink()
    os.symlink(elsewhere, config)
    with pytest.raises(CorruptRepositoryError, match='symbolic link'):
        started.protected()


# -- the agent's writes: guards ---------------------------------------------------------------


@pytest.mark.parametrize('strict', [False, True])
def test_a_guard_refuses_a_protected_target(started: Checkpoints, desk: Path, strict: bool):
    started.protect(['notes/limits.md', 'notes/rules'])
    taken = len(started.list(None))
    with pytest.raises(ProtectedPathError) as refused:
        with started.guard('write_file notes/rules/new.md', strict=strict):
            (desk / 'notes' / 'rules' / 'new.md').write_text('x')
    assert refused.value.paths == ('notes/rules/new.md',)
    assert refused.value.protected == ('notes/rules',)
    assert str(refused.value).startswith(
        'refusing write_file notes/rules/new.md: notes/rules/new.md (in the protected folder '
        'notes/rules) is protected on this desk: you may read it but not change it'
    )
    assert not (desk / 'notes' / 'rules' / 'new.md').exists()
    assert len(started.list(None)) == taken

    @started.before_write('write_file', path_arg='path', strict=strict)
    def write_file(path: str, text: str) -> None:
        (desk / path).write_text(text)

    with pytest.raises(ProtectedPathError):
        write_file(str(desk / 'notes' / 'limits.md'), 'max position 500\n')
    assert (desk / 'notes' / 'limits.md').read_text() == LIMITS
    write_file('notes/plan.md', 'plan 2\n')  # not protected: written, and sealed as the agent's
    assert (desk / 'notes' / 'plan.md').read_text() == 'plan 2\n'
    assert started.status().external == ()


# -- restores: the agent's refused, a person's not --------------------------------------------


def _changed_by_a_person(cps: Checkpoints, desk: Path) -> str:
    first = cps.list(1)[0].checkpoint_id
    cps.protect('notes/limits.md')
    write(desk, 'notes/limits.md', 'max position 7\n')
    write(desk, 'notes/plan.md', 'plan 2\n')
    cps.snapshot('the person raises the limit')
    return first


def test_a_restore_for_the_agent_refuses_a_protected_path(started: Checkpoints, desk: Path):
    first = _changed_by_a_person(started, desk)
    agent = started.for_agent()
    newest = started.list(1)[0]
    for call in (
        lambda: agent.restore(first),
        lambda: agent.restore(first, paths=['notes']),
        lambda: agent.restore(first, dry_run=True),
        lambda: agent.undo(),
    ):
        with pytest.raises(ProtectedPathError) as refused:
            call()
        assert refused.value.paths == ('notes/limits.md',)
    assert (desk / 'notes' / 'limits.md').read_text() == 'max position 7\n'
    assert started.list(1)[0] == newest, 'nothing was recorded'
    # What does not touch the protected path is the agent's to restore.
    agent.restore(first, paths=['notes/plan.md'])
    assert (desk / 'notes' / 'plan.md').read_text() == 'plan\n'
    # The person is not bound by the policy.
    started.restore(first)
    assert (desk / 'notes' / 'limits.md').read_text() == LIMITS
    assert started.for_agent().desk_config.for_agent and not started.desk_config.for_agent


def test_an_agent_s_turn_rewind_refuses_a_protected_path(started: Checkpoints, desk: Path):
    with started.turn('raise it') as turn:
        with started.guard('write_file notes/limits.md'):
            write(desk, 'notes/limits.md', 'max position 9\n')
    started.protect('notes/limits.md')  # protected afterwards: the rewind would change it
    with pytest.raises(ProtectedPathError):
        started.for_agent().restore_turn(turn.turn_id)
    assert (desk / 'notes' / 'limits.md').read_text() == 'max position 9\n'
    started.restore_turn(turn.turn_id)
    assert (desk / 'notes' / 'limits.md').read_text() == LIMITS
