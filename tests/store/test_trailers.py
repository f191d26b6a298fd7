"""Trailers: a reason cannot forge our bookkeeping, and a forged commit cannot crash a reader.

Our metadata (tool, paths, turn) and the undo/redo bookkeeping (action, target, undo-of,
redo-of) live as git trailers at the end of each commit message. A reason comes from the agent
(MCP, the CLI, code), so a reason that carries trailer-looking lines must stay text; and a
commit written by someone else may carry any trailer values, which readers treat as absent
when they are malformed.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from helpers.builders import write
from helpers.cli import checkpoints
from helpers.gitcli import GIT, git, needs_git
from helpers.rawobjects import commit, tree

from trading_checkpoints import CheckpointError, Checkpoints, NothingToUndoError
from trading_checkpoints.ops import undo
from trading_checkpoints.store import metadata
from trading_checkpoints.store.repo import ShadowRepo

FORGED = 'z' * 40


def _forgeries(target: str = FORGED) -> list[str]:
    return [
        f'innocent\n\nCheckpoint-Action: undo\nCheckpoint-Target: {target}',
        f'innocent\n\nCheckpoint-Action: undo\nCheckpoint-Target: {target}\n\n\n',
        f'innocent\n\ncheckpoint-action: undo\nCheckpoint-Target:{target}',
        f'innocent\n\nCheckpoint-Action: undo\nCheckpoint-Target: {target}\n---\nmore',
        f'innocent\n\nCheckpoint-Action: undo\nCheckpoint-Undo-Of: {target}\n\n---',
        f'Checkpoint-Action: redo\nCheckpoint-Redo-Of: {target}',
    ]


@pytest.mark.parametrize('reason', _forgeries())
@pytest.mark.parametrize('with_tool', [False, True])
def test_a_reason_cannot_inject_trailers(
    cps: Checkpoints, desk: Path, reason: str, with_tool: bool
) -> None:
    write(desk, 'Memory.md', 'one')
    first = cps.snapshot('first')
    write(desk, 'Memory.md', 'two')
    forged = cps.snapshot(reason, tool='write_file' if with_tool else None)
    assert forged is not None
    newest = cps.list(1)[0]
    assert newest.action is None
    assert newest.tool == ('write_file' if with_tool else None)
    assert 'innocent' in newest.reason or 'Checkpoint-Action' in newest.reason
    write(desk, 'Memory.md', 'three')
    result = cps.undo()  # back to the state the change started from, never to a forged target
    assert result.action == 'undo' and (desk / 'Memory.md').read_text() == 'two'
    assert cps.undo().target_id == first
    with_redo = cps.redo()
    assert with_redo.action == 'redo'


def test_a_forged_reason_is_kept_visible_as_text(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'one')
    cps.snapshot(_forgeries()[0], tool='t', paths=['Memory.md'], turn='t-1')
    info = _newest(cps)
    assert 'Checkpoint-Target: ' + FORGED in info.message  # the reader still sees the words
    parsed = metadata.parse(info.message)
    assert (parsed.tool, parsed.paths, parsed.turn) == ('t', ('Memory.md',), 't-1')
    assert undo.trailers(info.message).get(undo.TARGET) is None


def test_redo_ignores_a_forged_undo(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'one')
    cps.snapshot('first')
    write(desk, 'Memory.md', 'two')
    cps.snapshot(f'x\n\nCheckpoint-Action: undo\nCheckpoint-Undo-Of: {FORGED}')
    with pytest.raises(NothingToUndoError):
        cps.redo()


def test_cli_and_turn_labels_cannot_inject_trailers(
    cps: Checkpoints, desk: Path, workspace: Path
) -> None:
    write(desk, 'Memory.md', 'one')
    done = checkpoints('snapshot', '-m', _forgeries()[0], workspace=workspace)
    assert done.returncode == 0, done.stderr
    assert cps.list(1)[0].action is None
    write(desk, 'Memory.md', 'two')
    with cps.turn(label=f'label\n\nCheckpoint-Action: undo\nCheckpoint-Target: {FORGED}'):
        cps.snapshot('inside the turn')
    assert all(c.action is None for c in cps.list())
    cps.undo()


@needs_git
def test_git_reads_our_trailers_even_after_a_divider_in_the_reason(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    write(desk, 'Memory.md', 'one')
    cps.snapshot('summary\n---\ndetails\n\nCheckpoint-Tool: forged', tool='real')
    message = git(repo_dir, 'log', '-1', '--format=%B', 'main')
    parsed = subprocess.run(
        [GIT or 'git', 'interpret-trailers', '--parse'],
        input=message,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    # Git reads exactly our trailers: the tool given in code, and the change stats.
    assert parsed.strip().splitlines() == [
        'Checkpoint-Tool: real',
        'Checkpoint-Changes: 1 file, +1 -0',
    ]
    assert metadata.parse(message).tool == 'real'


# -- forged commits: readers never raise ----------------------------------------------------------


def _newest(cps: Checkpoints):
    repo = ShadowRepo.open(cps.repository_directory)
    assert repo is not None
    try:
        head = repo.head()
        assert head is not None
        return repo.commit_info(head)
    finally:
        repo.close()


def _head_tree(repo_dir: Path) -> str:
    repo = ShadowRepo.open(repo_dir)
    assert repo is not None
    try:
        head = repo.head()
        assert head is not None
        return repo.commit_info(head).tree.decode()
    finally:
        repo.close()


def _push_commit(repo_dir: Path, message: str) -> str:
    sha = commit(repo_dir, _head_tree(repo_dir), message.encode('utf-8', 'surrogateescape'))
    (repo_dir / 'refs' / 'heads' / 'main').write_text(sha + '\n')
    return sha


@pytest.mark.parametrize(
    'value',
    [
        FORGED,
        'Z' * 40,
        'abc',
        'a' * 39,
        'a' * 41,
        'A' * 40,
        '0' * 40 + ' trailing',
        '\u00e9' * 40,
        '',
    ],
)
@pytest.mark.parametrize('key', [undo.TARGET, undo.UNDO_OF, undo.REDO_OF])
def test_malformed_trailer_values_in_a_commit_are_treated_as_absent(
    cps: Checkpoints, desk: Path, repo_dir: Path, key: str, value: str
) -> None:
    write(desk, 'Memory.md', 'one')
    cps.snapshot('first')
    action = 'redo' if key == undo.REDO_OF else 'undo'
    _push_commit(repo_dir, f'forged\n\nCheckpoint-Action: {action}\n{key}: {value}\n')
    assert len(cps.list()) == 2
    assert cps.log()
    try:  # the forged commit is the newest: redo reads it first
        cps.redo(force=True)
    except CheckpointError:  # a clear refusal is fine; a crash is not
        pass
    write(desk, 'Memory.md', 'two')
    assert cps.undo().action == 'undo'  # back to the newest state, the forged commit's tree
    assert (desk / 'Memory.md').read_text() == 'one'


def test_a_forged_undo_pointing_at_a_blob_does_not_crash(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    write(desk, 'Memory.md', 'one')
    cps.snapshot('first')
    blob_tree = tree(repo_dir)  # an existing object that is not a commit
    _push_commit(repo_dir, f'forged\n\nCheckpoint-Action: undo\nCheckpoint-Target: {blob_tree}\n')
    write(desk, 'Memory.md', 'two')
    assert cps.undo().action == 'undo'


# -- what the metadata can hold ---------------------------------------------------------------


def test_paths_with_undecodable_names_are_kept(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'notes/a.md', 'x')
    new = cps.snapshot('writing a file with a non-UTF-8 name', paths=['notes/\udcff'])
    assert new is not None
    assert cps.list(1)[0].paths == ('notes/\ufffd',)


@pytest.mark.parametrize(
    'field', [{'reason': 'a \ud800 b'}, {'tool': 'x\ud800'}, {'paths': ['notes/\udbff']}]
)
def test_unencodable_text_is_a_clear_error(cps: Checkpoints, desk: Path, field: dict) -> None:
    write(desk, 'Memory.md', 'x')
    arguments = {'reason': 'fine', **field}
    reason = arguments.pop('reason')
    with pytest.raises(CheckpointError, match='cannot be stored'):
        cps.snapshot(reason, **arguments)
    assert cps.list() == []


def test_compose_and_parse_round_trip() -> None:
    message = metadata.compose('a reason', 'tool', ['x', 'y'], 'turn-1')
    parsed = metadata.parse(message)
    assert (parsed.tool, parsed.paths, parsed.turn) == ('tool', ('x', 'y'), 'turn-1')
    assert metadata.parse('only a subject\n') == metadata.Metadata()
    assert metadata.parse('Checkpoint-Tool: x\n') == metadata.Metadata()  # no body before it
    assert undo.trailers(undo.compose('s', [(undo.ACTION, 'undo')])) == {undo.ACTION: ['undo']}
