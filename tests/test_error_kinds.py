"""Each error kind is raised in a real scenario with its fields set, and the command line's
``--json`` error names the same kind with the same fields.

Every case below builds a real workspace, provokes the failure through the library (where the
library can reach it) and through ``checkpoints ... --json`` (where a verb can), and compares
the kind and its fields. The kinds only a race or a real server can provoke are listed in
``NOT_IN_THE_TABLE`` with why; a kind missing from both fails the last test.
"""

from __future__ import annotations

import inspect
import json
import os
import pickle
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from trading_checkpoints import Checkpoints, errors
from trading_checkpoints.cli import cli
from trading_checkpoints.cli.render import json_value
from trading_checkpoints.core import lock
from trading_checkpoints.errors import CheckpointError
from trading_checkpoints.ops import retention
from trading_checkpoints.ops.engine import LOCK, PRIVATE_DIR
from trading_checkpoints.store.repo import ShadowRepo


class World:
    """A workspace with desk ``main`` (one checkpoint, ``first``) and an empty desk ``two``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.desk = root / 'desks' / 'main'
        self.repo = root / '.checkpoints' / 'main.git'
        (self.desk / 'notes').mkdir(parents=True)
        (self.desk / 'Memory.md').write_text('v1\n')
        (self.desk / 'notes' / 'a.md').write_text('a1\n')
        (root / 'desks' / 'two').mkdir()
        (root / 'desks' / 'two' / 'Memory.md').write_text('two\n')
        self.cps = Checkpoints(self.repo, self.desk)
        self.first = self.cps.snapshot('first')
        self.env: dict[str, str] = {}

    def desk_two(self) -> Checkpoints:
        return Checkpoints(self.root / '.checkpoints' / 'two.git', self.root / 'desks' / 'two')

    def snapshot(self, text: str) -> str:
        (self.desk / 'Memory.md').write_text(text)
        new = self.cps.snapshot(text)
        assert new is not None
        return new


@dataclass
class Case:
    """How to provoke one kind: the library call, the verb, and the fields both must carry."""

    kind: type[CheckpointError]
    fields: Callable[[World], dict[str, Any]]
    library: Callable[[World], object] | None = None
    verb: Callable[[World], list[str]] | None = None
    setup: Callable[[World], object] | None = None


class Matcher:
    """A field whose exact value the case cannot know (a time), only its shape."""


class AnyText(Matcher):
    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and bool(other)


class AnyNumber(Matcher):
    def __eq__(self, other: object) -> bool:
        return isinstance(other, (int, float)) and not isinstance(other, bool)


class FullIdOf(Matcher):
    def __init__(self, short: str) -> None:
        self.short = short

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and len(other) == 40 and other.startswith(self.short)


def _repositories_folder_is_a_file(w: World) -> None:
    other = w.root.parent / 'ws2'
    (other / 'desks' / 'main').mkdir(parents=True)
    (other / 'desks' / 'main' / 'Memory.md').write_text('m\n')
    (other / '.checkpoints').write_text('not a folder')


def _shallow_linked_outside(w: World) -> None:
    """``shallow`` a link to a file outside the repository (never followed)."""
    outside = w.root / 'outside.txt'
    outside.write_text('https://user:token@example.invalid\n')
    os.symlink(outside, w.repo / 'shallow')


def _prune_all_but_newest(w: World) -> None:
    w.snapshot('v2')
    w.snapshot('v3')
    w.cps.prune(keep=1)


def _hostile_checkpoint(w: World) -> str:
    """A commit another tool wrote: notes/sub is a submodule entry, which is never written."""
    from dulwich.objects import Blob, Commit, Tree
    from dulwich.repo import Repo

    with Repo(str(w.repo)) as repo:
        head = repo.refs[b'refs/heads/main']
        memory = Blob.from_string(b'v1\n')
        notes = Tree()
        notes.add(b'sub', 0o160000, head)
        root = Tree()
        root.add(b'Memory.md', 0o100644, memory.id)
        root.add(b'notes', 0o040000, notes.id)
        commit = Commit()
        commit.tree, commit.parents = root.id, [head]
        commit.author = commit.committer = b'someone <someone@example.com>'
        commit.author_time = commit.commit_time = 1_700_000_000
        commit.author_timezone = commit.commit_timezone = 0
        commit.message = b'from another tool\n'
        for obj in (memory, notes, root, commit):
            repo.object_store.add_object(obj)
        repo.refs[b'refs/heads/main'] = commit.id
        return commit.id.decode()[:7]


def _external_change(w: World) -> None:
    w.snapshot('v2 by the agent')
    w.cps.seal()
    (w.desk / 'notes' / 'a.md').write_text('a2 by a person\n')


def _two_turns_wrote_one_file(w: World) -> None:
    for turn, text in (('msg_1', 'v2\n'), ('msg_2', 'v3\n')):
        with w.cps.turn(turn, message_id=turn), w.cps.guard('write_file Memory.md'):
            (w.desk / 'Memory.md').write_text(text)


def _fifo_in_the_way(w: World) -> None:
    (w.desk / 'notes' / 'a.md').unlink()
    os.mkfifo(w.desk / 'notes' / 'a.md')


def _bad_size_setting(w: World) -> None:
    config = w.repo / 'config'
    config.write_text(config.read_text() + '[checkpoints]\n\tmaxFileSize = lots\n')
    (w.desk / 'Memory.md').write_text('v2\n')


def _backup(w: World) -> None:
    w.cps.add_remote('backup', str(w.root / 'backup.git'))
    w.cps.push('backup')


def _diverged(w: World) -> None:
    _backup(w)
    two = w.desk_two()
    two.snapshot('another history')
    two.add_remote('backup', str(w.root / 'backup.git'))


def _empty_remote(w: World) -> None:
    from dulwich.repo import Repo

    Repo.init_bare(str(w.root / 'empty.git'), mkdir=True).close()
    w.cps.add_remote('empty', str(w.root / 'empty.git'))


def _unreachable_ssh(w: World) -> None:
    w.cps.add_remote('ssh', 'ssh://nobody@localhost/desk.git')
    w.env['CHECKPOINTS_SSH_COMMAND'] = 'false'  # the "server" hangs up at once


def _readable_credential_file(w: World) -> None:
    w.cps.add_remote('web', 'https://example.invalid/desk.git')
    store = Path(os.environ['CHECKPOINTS_CREDENTIALS'])
    store.write_text('https://someone:secret@example.invalid\n')
    store.chmod(0o644)


def _pending_restore_record(w: World) -> None:
    w.snapshot('v2')
    (w.repo / PRIVATE_DIR / 'restore-journal.part').write_text('{}')


def _prune_under_the_record(w: World) -> None:
    repo = ShadowRepo.open(w.repo)
    assert repo is not None
    try:
        retention.prune(repo, keep=1)
    finally:
        repo.close()


def _two_turns_at_once(w: World) -> None:
    with w.cps.turn('outer', message_id='msg_1'), w.cps.turn('inner'):
        pass


def _while_another_thread_holds_the_lock(w: World) -> None:
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with lock.exclusive(w.repo / PRIVATE_DIR / LOCK):
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(10)
    (w.desk / 'Memory.md').write_text('v2\n')  # a change: only a locked snapshot records it
    try:
        Checkpoints(w.repo, w.desk, lock_timeout=0.1).snapshot('waits')
    finally:
        release.set()
        holder.join()


CASES: dict[str, Case] = {
    'a period that is not one': Case(
        errors.InvalidArgumentError,
        lambda w: {'name': 'older_than', 'value': 'soon'},
        library=lambda w: w.cps.prune(older_than='soon'),
        verb=lambda w: ['prune', '--older-than', 'soon', '--dry-run'],
    ),
    'a remote name with a space': Case(
        errors.InvalidArgumentError,
        lambda w: {'name': 'name', 'value': 'bad name'},
        library=lambda w: w.cps.add_remote('bad name', str(w.root / 'x.git')),
    ),
    'a path outside the desk': Case(
        errors.BadPathError,
        lambda w: {'path': '../x'},
        library=lambda w: w.cps.show(w.first, '../x'),
        verb=lambda w: ['show', w.first, '../x'],
    ),
    'a write the policy protects': Case(
        errors.ProtectedPathError,
        lambda w: {'paths': ('notes/a.md',), 'protected': ('notes',)},
        setup=lambda w: w.cps.protect('notes'),
        library=lambda w: w.cps.guard('write_file notes/a.md').take(),
    ),
    'an id that names nothing': Case(
        errors.UnknownCheckpointError,
        lambda w: {'checkpoint': 'abcdef1'},
        library=lambda w: w.cps.restore('abcdef1'),
        verb=lambda w: ['restore', 'abcdef1'],
    ),
    'a pruned checkpoint': Case(
        errors.PrunedCheckpointError,
        lambda w: {
            'checkpoint': w.first,
            'commit': FullIdOf(w.first),
            'taken_at': AnyText(),
            'pruned_at': AnyNumber(),
        },
        setup=_prune_all_but_newest,
        library=lambda w: w.cps.restore(w.first),
        verb=lambda w: ['restore', w.first],
    ),
    'a turn that never was': Case(
        errors.UnknownTurnError,
        lambda w: {'turn': 'nope'},
        library=lambda w: w.cps.restore_turn('nope'),
        verb=lambda w: ['restore-turn', 'nope'],
    ),
    'a time before the first checkpoint': Case(
        errors.BeforeFirstCheckpointError,
        lambda w: {'at': '2000-01-01T00:00:00+00:00', 'first': w.first, 'first_at': AnyText()},
        library=lambda w: w.cps.checkpoint_at('2000-01-01T00:00:00+00:00'),
        verb=lambda w: ['show', '--at', '2000-01-01T00:00:00+00:00', 'Memory.md'],
    ),
    'a folder where a file was asked for': Case(
        errors.NotInCheckpointError,
        lambda w: {'path': 'notes', 'checkpoint': w.first},
        library=lambda w: w.cps.show(w.first, 'notes'),
        verb=lambda w: ['show', w.first, 'notes'],
    ),
    'a desk without checkpoints': Case(
        errors.NoCheckpointsError,
        lambda w: {'repository': str(w.root / '.checkpoints' / 'two.git'), 'desk': None},
        library=lambda w: w.desk_two().restore_turn('t1'),
        verb=lambda w: ['--desk', 'two', 'restore-turn', 't1'],
    ),
    'a workspace that is not there': Case(
        errors.NoWorkspaceError,
        lambda w: {'workspace': str(w.root / 'elsewhere')},
        verb=lambda w: ['--workspace', str(w.root / 'elsewhere'), 'list'],
    ),
    'a desk that is not there': Case(
        errors.MissingDeskError,
        lambda w: {'desk': str(w.root / 'desks' / 'nope'), 'name': 'nope'},
        verb=lambda w: ['--desk', 'nope', 'list'],
    ),
    'a clone onto a desk with a repository': Case(
        errors.RepositoryExistsError,
        lambda w: {'repository': str(w.repo)},
        setup=_backup,
        library=lambda w: Checkpoints.clone(str(w.root / 'backup.git'), w.repo, w.desk),
        verb=lambda w: ['--desk', 'main', 'clone', str(w.root / 'backup.git')],
    ),
    'a clone that was interrupted': Case(
        errors.UnfinishedCloneError,
        lambda w: {'repository': str(w.repo), 'desk': None},
        setup=lambda w: (w.repo / PRIVATE_DIR / 'cloning').write_bytes(b''),
        library=lambda w: w.cps.list(),
        verb=lambda w: ['list'],
    ),
    'a size setting that is not a size': Case(
        errors.InvalidSettingError,
        lambda w: {'setting': 'checkpoints.maxFileSize', 'source': str(w.repo / 'config')},
        setup=_bad_size_setting,
        library=lambda w: Checkpoints(w.repo, w.desk).snapshot('x'),
        verb=lambda w: ['snapshot'],
    ),
    'a branch holding garbage': Case(
        errors.CorruptRepositoryError,
        lambda w: {'path': str(w.repo)},
        setup=lambda w: (w.repo / 'refs' / 'heads' / 'main').write_text('garbage\n'),
        library=lambda w: Checkpoints(w.repo, w.desk).log(),
        verb=lambda w: ['log'],
    ),
    'a repository file that is a link': Case(
        errors.RepositoryFileError,
        lambda w: {'path': str(w.repo / 'shallow'), 'problem': 'link'},
        setup=_shallow_linked_outside,
        library=lambda w: Checkpoints(w.repo, w.desk).log(),
        verb=lambda w: ['log'],
    ),
    'a checkpoint holding a submodule': Case(
        errors.UnsafeCheckpointError,
        lambda w: {'entry': 'notes/sub'},
        setup=lambda w: setattr(w, 'hostile', _hostile_checkpoint(w)),
        library=lambda w: w.cps.restore(w.hostile),  # type: ignore[attr-defined]
        verb=lambda w: ['restore', w.hostile],  # type: ignore[attr-defined]
    ),
    'a repository folder that cannot be created': Case(
        errors.FileAccessError,
        lambda w: {
            'path': str(w.root.parent / 'ws2' / '.checkpoints' / 'main.git'),
            'action': 'create',
        },
        setup=_repositories_folder_is_a_file,
        library=lambda w: Checkpoints(
            w.root.parent / 'ws2' / '.checkpoints' / 'main.git',
            w.root.parent / 'ws2' / 'desks' / 'main',
        ).snapshot('x'),
        verb=lambda w: ['--workspace', str(w.root.parent / 'ws2'), 'snapshot'],
    ),
    'a pipe where a restore writes': Case(
        errors.UntrackedInTheWayError,
        lambda w: {'path': 'notes/a.md', 'blocker': str(w.desk / 'notes' / 'a.md')},
        setup=_fifo_in_the_way,
        library=lambda w: w.cps.restore(w.first),
        verb=lambda w: ['restore', w.first],
    ),
    'a restore over a change made outside the agent': Case(
        errors.ExternalChangesError,
        lambda w: {'paths': ('notes/a.md',), 'overrides': ('overwrite', 'keep')},
        setup=_external_change,
        library=lambda w: w.cps.restore(w.first, on_external='refuse'),
        verb=lambda w: ['restore', w.first, '--refuse-external'],
    ),
    "a rewind of a turn over a later turn's write": Case(
        errors.TurnConflictError,
        lambda w: {'paths': ('Memory.md',), 'overrides': ('overwrite', 'keep'), 'turn': 'msg_1'},
        setup=_two_turns_wrote_one_file,
        library=lambda w: w.cps.restore_turn('msg_1'),
        verb=lambda w: ['restore-turn', 'msg_1'],
    ),
    'a turn inside a turn': Case(
        errors.TurnStillOpenError,
        lambda w: {'turn': 'msg_1', 'desk': str(w.desk)},
        library=_two_turns_at_once,
    ),
    'a prune while a restore record is pending': Case(
        errors.UnfinishedRestoreError,
        lambda w: {'record': str(w.repo / PRIVATE_DIR / 'restore-journal.part'), 'path': None},
        setup=_pending_restore_record,
        library=_prune_under_the_record,
    ),
    'a lock held longer than the timeout': Case(
        errors.LockTimeoutError,
        lambda w: {
            'lock': str(w.repo / PRIVATE_DIR / LOCK),
            'timeout': 0.1,
            'holder': 'another thread',
        },
        library=_while_another_thread_holds_the_lock,
    ),
    'a remote name that is not configured': Case(
        errors.RemoteNotFoundError,
        lambda w: {'remote': 'nope'},
        library=lambda w: w.cps.push('nope'),
        verb=lambda w: ['push', 'nope'],
    ),
    'a password in an ssh URL': Case(
        errors.RemoteURLError,
        lambda w: {'remote': None},
        library=lambda w: w.cps.add_remote('web', 'ssh://me:secret@example.invalid/desk.git'),
    ),
    'a remote name taken twice': Case(
        errors.RemoteError,
        lambda w: {'remote': 'backup'},
        setup=_backup,
        library=lambda w: w.cps.add_remote('backup', str(w.root / 'other.git')),
    ),
    'a path remote whose folder is missing': Case(
        errors.MissingRemoteFolderError,
        lambda w: {'remote': 'usb', 'folder': str(w.root / 'mnt' / 'usb')},
        setup=lambda w: w.cps.add_remote('usb', str(w.root / 'mnt' / 'usb' / 'desk.git')),
        library=lambda w: w.cps.push('usb'),
        verb=lambda w: ['push', 'usb'],
    ),
    'a remote without checkpoints': Case(
        errors.EmptyRemoteError,
        lambda w: {'remote': 'empty'},
        setup=_empty_remote,
        library=lambda w: w.cps.pull('empty'),
        verb=lambda w: ['pull', 'empty'],
    ),
    'a push of another history': Case(
        errors.HistoriesDivergedError,
        lambda w: {
            'remote': 'backup',
            'remote_head': w.cps.list(1)[0].checkpoint_id,
            'head': w.desk_two().list(1)[0].checkpoint_id,
        },
        setup=_diverged,
        library=lambda w: w.desk_two().push('backup'),
        verb=lambda w: ['--desk', 'two', 'push', 'backup'],
    ),
    'a server that hangs up': Case(
        errors.RemoteTransportError,
        lambda w: {'remote': 'ssh', 'action': 'push to'},
        setup=_unreachable_ssh,
        library=lambda w: w.cps.push('ssh'),
        verb=lambda w: ['push', 'ssh'],
    ),
    'a credential file others can read': Case(
        errors.CredentialFileError,
        lambda w: {'remote': None, 'path': os.environ['CHECKPOINTS_CREDENTIALS']},
        setup=_readable_credential_file,
        library=lambda w: w.cps.push('web'),
        verb=lambda w: ['push', 'web'],
    ),
}

# Kinds the table cannot provoke on one machine without a race, and where they are covered.
NOT_IN_THE_TABLE = {
    errors.CheckpointError: 'the family itself (internal checks only)',
    errors.NothingToUndoError: 'no fields; test_undo.py',
    errors.ConcurrentChangeError: 'a writer racing the scan: test_errors.py, test_symlink_races.py',
    errors.DeskChangedError: 'a writer racing a restore: test_safety_checks.py',
    errors.NotAFolderError: 'a symlink swapped in mid-walk: test_safety_checks.py',
    errors.OverSizeLimitError: 'a file growing past the limit between two scans of a restore',
    errors.MountPointError: 'a bind mount in the desk needs root: tests/desk/test_mount_points.py',
    errors.RemoteAuthError: 'an HTTP server refusing credentials',
    errors.RemoteMovedError: 'another push landing during this one',
    errors.PrunedHistoryError: 'a push of pruned history to an HTTP or ssh server',
}


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path / 'ws')


def _cli_error(w: World, args: list[str]) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ['--workspace', str(w.root), *args, '--json'], env=w.env)
    assert result.exit_code == 1, (result.stdout, result.stderr)
    assert result.stdout == ''
    return json.loads(result.stderr)


@pytest.mark.parametrize('name', list(CASES))
def test_each_kind_is_raised_with_its_fields(world: World, name: str, monkeypatch) -> None:
    case = CASES[name]
    if case.setup is not None:
        case.setup(world)
    for key, value in world.env.items():
        monkeypatch.setenv(key, value)
    expected = case.fields(world)
    assert set(expected) == set(case.kind.FIELDS), 'the case checks every field of the kind'
    if case.library is not None:
        with pytest.raises(CheckpointError) as caught:
            case.library(world)
        error = caught.value
        assert type(error) is case.kind, f'{type(error).__name__}: {error}'
        assert error.details() == expected
        copy = pickle.loads(pickle.dumps(error))  # a kind survives a process boundary
        assert type(copy) is case.kind and str(copy) == str(error)
        assert copy.details() == error.details()
    if case.verb is not None:
        body = _cli_error(world, case.verb(world))
        assert body['type'] == case.kind.__name__, body
        wanted = {k: v if isinstance(v, Matcher) else json_value(v) for k, v in expected.items()}
        assert body['fields'] == wanted, body
        if case.library is not None:
            assert body['error'] == str(error)
    assert case.library is not None or case.verb is not None


def test_every_kind_is_in_the_table_or_says_why_not() -> None:
    kinds = {
        value
        for value in vars(errors).values()
        if inspect.isclass(value) and issubclass(value, CheckpointError)
    }
    covered = {case.kind for case in CASES.values()}
    assert kinds == covered | set(NOT_IN_THE_TABLE), kinds ^ (covered | set(NOT_IN_THE_TABLE))
    assert not covered & set(NOT_IN_THE_TABLE)


def test_every_kind_documents_its_fields() -> None:
    for value in vars(errors).values():
        if inspect.isclass(value) and issubclass(value, CheckpointError):
            doc = inspect.getdoc(value) or ''
            assert doc, value
            own = [f for f in value.FIELDS if f not in getattr(value.__base__, 'FIELDS', ())]
            for field in own:
                assert f'{field}:' in doc, f'{value.__name__} does not describe {field}'


def test_an_error_without_fields_prints_the_json_it_always_did(world: World) -> None:
    """A kind without fields (and a bare CheckpointError) adds no "fields" key."""
    body = _cli_error(world, ['undo'])
    assert body['type'] == 'NothingToUndoError' and set(body) == {'error', 'type'}
