"""A hostile or foreign repository config: never followed, never echoed, refused before any write.

The config of a shadow repository may be written by anyone (``git config``, another tool, an
attacker). It is read by one reader that never follows ``[include]``/``[includeIf]`` (dulwich's
repository constructor would, and quoted the included file in its parse error), refuses
repository formats and extensions we cannot write, and names the file, the line and the key in
its errors instead of quoting the config's contents.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from helpers.builders import write
from helpers.cli import checkpoints
from helpers.gitcli import GIT, git, needs_git
from helpers.processes import python
from hypothesis import given, settings
from hypothesis import strategies as st

from trading_checkpoints import CheckpointError, Checkpoints
from trading_checkpoints.errors import CorruptRepositoryError
from trading_checkpoints.ops.retention import Limits, read_limits, write_limits

TOKEN = 'ghp_S3CRETt0kenFromTheIncludedFile'


def _repository_state(repo: Path) -> dict[str, bytes]:
    """Objects, refs, reflogs and HEAD: what a snapshot would change."""
    out: dict[str, bytes] = {}
    for current, _, names in os.walk(repo):
        rel_dir = os.path.relpath(current, repo)
        if rel_dir.split(os.sep)[0] == 'checkpoints':
            continue  # our lock and caches
        for name in names:
            full = os.path.join(current, name)
            out[os.path.relpath(full, repo)] = Path(full).read_bytes()
    return out


@pytest.fixture
def started(repo_dir: Path, desk: Path, cps: Checkpoints) -> Checkpoints:
    write(desk, 'Memory.md', 'first')
    assert cps.snapshot('first') is not None
    write(desk, 'Memory.md', 'unsaved change')
    return cps


def _append(repo: Path, text: str) -> None:
    config = repo / 'config'
    config.write_bytes(config.read_bytes() + text.encode())


def _every_verb(cps: Checkpoints) -> list[tuple[str, object]]:
    return [
        ('snapshot', lambda: cps.snapshot('second')),
        ('list', lambda: cps.list()),
        ('log', lambda: cps.log()),
        ('remotes', lambda: cps.remotes()),
        ('prune', lambda: cps.prune(keep=5)),
        ('limits', lambda: read_limits(cps.repository_directory)),
    ]


# -- includes are never followed --------------------------------------------------------------


@pytest.mark.parametrize(
    'section', ['[include]\n\tpath = {secret}\n', '[includeIf "gitdir:/"]\n\tpath = {secret}\n']
)
def test_an_include_is_refused_never_followed_and_never_quoted(
    started: Checkpoints, repo_dir: Path, desk: Path, tmp_path: Path, section: str
) -> None:
    secret = tmp_path / 'credentials'
    secret.write_text(TOKEN + '\n')  # not valid config: a parser that follows it says so
    _append(repo_dir, section.format(secret=secret))
    before = _repository_state(repo_dir)
    for verb, call in _every_verb(started):
        with pytest.raises(CheckpointError) as caught:
            call()
        message = str(caught.value)
        assert TOKEN not in message, verb
        assert 'include' in message and str(repo_dir / 'config') in message, verb
    assert _repository_state(repo_dir) == before
    assert (desk / 'Memory.md').read_text() == 'unsaved change'


def test_an_include_that_parses_is_refused_too(
    started: Checkpoints, repo_dir: Path, tmp_path: Path
) -> None:
    included = tmp_path / 'extra.config'
    included.write_text('[remote "sneaky"]\n\turl = https://attacker.invalid/x.git\n')
    _append(repo_dir, f'[include]\n\tpath = {included}\n')
    with pytest.raises(CheckpointError, match='include'):
        started.remotes()
    with pytest.raises(CheckpointError, match='include'):
        started.snapshot('second')


def test_cli_reports_an_include_on_one_line_without_its_contents(
    started: Checkpoints, repo_dir: Path, workspace: Path, tmp_path: Path
) -> None:
    secret = tmp_path / 'credentials'
    secret.write_text(TOKEN + '\n')
    _append(repo_dir, f'[include]\n\tpath = {secret}\n')
    for args in (['snapshot', '-m', 'x'], ['list'], ['remote', 'list'], ['log']):
        done = checkpoints(*args, workspace=workspace)
        assert done.returncode != 0, args
        assert done.stderr.startswith('error: ') and done.stderr.count('\n') == 1, done.stderr
        assert TOKEN not in done.stdout + done.stderr
        assert 'Traceback' not in done.stderr


# -- formats and extensions ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ('text', 'named'),
    [
        ('[extensions]\n\tobjectformat = sha256\n', 'extensions.objectformat'),
        (
            '[core]\n\trepositoryformatversion = 1\n[extensions]\n\tobjectFormat = sha256\n',
            'objectformat',
        ),
        ('[core]\n\trepositoryformatversion = 99\n', 'core.repositoryformatversion'),
        ('[core]\n\trepositoryformatversion = two\n', 'core.repositoryformatversion'),
        (
            '[core]\n\trepositoryformatversion = 1\n[extensions]\n\tpartialclone = o\n',
            'partialclone',
        ),
        ('[extensions]\n\trefStorage = reftable\n', 'refstorage'),
    ],
)
def test_unsupported_formats_are_refused_before_anything_is_written(
    started: Checkpoints, repo_dir: Path, desk: Path, text: str, named: str
) -> None:
    _append(repo_dir, text)
    before = _repository_state(repo_dir)
    for verb, call in _every_verb(started):
        with pytest.raises(CheckpointError) as caught:
            call()
        assert named in str(caught.value).lower(), verb
        assert 'line' in str(caught.value), verb
    assert _repository_state(repo_dir) == before
    assert (desk / 'Memory.md').read_text() == 'unsaved change'


def test_supported_extensions_are_accepted(started: Checkpoints, repo_dir: Path) -> None:
    config = (
        (repo_dir / 'config')
        .read_text()
        .replace('repositoryformatversion = 0', 'repositoryformatversion = 1')
    )
    config += '[extensions]\n\tobjectFormat = sha1\n\tworktreeConfig = true\n'
    (repo_dir / 'config').write_text(config)
    assert started.snapshot('second') is not None
    assert len(started.list()) == 2


def test_cli_reports_an_unsupported_format_on_one_line(
    started: Checkpoints, repo_dir: Path, workspace: Path
) -> None:
    _append(repo_dir, '[core]\n\trepositoryformatversion = 99\n')
    done = checkpoints('snapshot', '-m', 'x', workspace=workspace)
    assert done.returncode != 0
    assert done.stderr.startswith('error: ') and done.stderr.count('\n') == 1, done.stderr
    assert 'repositoryformatversion' in done.stderr and 'unexpected' not in done.stderr


# -- errors name the line, never the contents --------------------------------------------------


@pytest.mark.parametrize(
    'line',
    [
        TOKEN,
        f'\t{TOKEN} = "unterminated',
        f'[{TOKEN}',
        f'\turl = "{TOKEN}\\q"',
        f'[remote {TOKEN}]',
    ],
)
def test_a_malformed_config_names_file_and_line_without_quoting_it(
    started: Checkpoints, repo_dir: Path, line: str
) -> None:
    _append(repo_dir, '[checkpoints]\n' + line + '\n')
    lines = (repo_dir / 'config').read_text().count('\n')
    with pytest.raises(CheckpointError) as caught:
        started.snapshot('second')
    message = str(caught.value)
    assert TOKEN not in message
    assert str(repo_dir / 'config') in message and f'line {lines}' in message


def test_hostile_tracked_paths_in_the_config_name_the_config(
    started: Checkpoints, repo_dir: Path
) -> None:
    _append(repo_dir, '[checkpoints]\n\ttracked = ../outside\n')
    with pytest.raises(CheckpointError) as caught:
        Checkpoints(repo_dir, started.desk_directory).snapshot('x')
    message = str(caught.value)
    assert f'checkpoints.tracked in {repo_dir / "config"}' in message
    assert "'..'" in message and '../outside' not in message


def test_a_config_that_is_not_a_regular_file_is_refused_without_hanging(
    started: Checkpoints, repo_dir: Path
) -> None:
    config = repo_dir / 'config'
    config.unlink()
    os.mkfifo(config)  # opening a FIFO for reading would block forever
    code = (
        'import sys\n'
        'from trading_checkpoints import Checkpoints, CheckpointError\n'
        f'cps = Checkpoints({str(repo_dir)!r}, {str(started.desk_directory)!r})\n'
        'try:\n'
        '    cps.snapshot("x")\n'
        'except CheckpointError as error:\n'
        '    print(error)\n'
        '    sys.exit(3)\n'
    )
    done = python(code, timeout=60)
    assert done.returncode == 3, done.stderr
    assert 'not a regular file' in done.stdout


def test_an_oversized_config_is_refused(started: Checkpoints, repo_dir: Path) -> None:
    _append(repo_dir, '[junk]\n' + '\tk = v\n' * 200_000)
    with pytest.raises(CheckpointError, match='larger than'):
        started.snapshot('second')


# -- the repository is opened as itself, never redirected ---------------------------------------


@pytest.mark.parametrize('redirect', ['commondir', '.git'])
def test_redirecting_files_inside_the_repository_are_not_followed(
    started: Checkpoints, repo_dir: Path, tmp_path: Path, redirect: str
) -> None:
    elsewhere = tmp_path / 'elsewhere.git'
    for folder in ('objects', 'refs/heads'):
        (elsewhere / folder).mkdir(parents=True)
    (elsewhere / 'HEAD').write_text('ref: refs/heads/main\n')
    (elsewhere / 'config').write_text('[core]\n\tbare = true\n')
    text = str(elsewhere) + '\n' if redirect == 'commondir' else f'gitdir: {elsewhere}\n'
    (repo_dir / redirect).write_text(text)
    for i in range(70):  # enough objects for a pack: the object store is used for sure
        write(started.desk_directory, f'notes/n{i}.md', f'note {i}')
    new = started.snapshot('second')
    assert new is not None
    assert [c.checkpoint_id for c in started.list()][0] == new
    assert not any(p.is_file() for p in (elsewhere / 'objects').rglob('*'))
    assert not (elsewhere / 'refs' / 'heads' / 'main').exists()


# -- the one reader and writer ---------------------------------------------------------------------


def test_writers_keep_what_others_wrote_and_git_reads_the_result(
    started: Checkpoints, repo_dir: Path, tmp_path: Path
) -> None:
    _append(
        repo_dir,
        '# a comment someone wrote\n[user]\n\tname = "Some One" ; trailing comment\n',
    )
    started.add_remote('backup', str(tmp_path / 'backup.git'))
    started.add_remote('odd', 'https://example.invalid/a b#c;d"e\\f.git')
    write_limits(repo_dir, Limits(keep=7, older_than='30d'))
    Checkpoints(repo_dir, started.desk_directory, ('Memory.md', 'notes', 'we ird;#')).snapshot('s')
    text = (repo_dir / 'config').read_text()
    assert '# a comment someone wrote' in text and '; trailing comment' in text
    assert read_limits(repo_dir) == Limits(keep=7, older_than='30d')
    assert {r.name: r.url for r in started.remotes()}['odd'] == (
        'https://example.invalid/a b#c;d"e\\f.git'
    )
    started.remove_remote('backup')
    assert [r.name for r in started.remotes()] == ['odd']
    if GIT:
        listed = git(repo_dir, 'config', '--file', str(repo_dir / 'config'), '--list')
        assert 'user.name=Some One' in listed
        assert 'remote.odd.url=https://example.invalid/a b#c;d"e\\f.git' in listed
        assert 'checkpoints.tracked=we ird;#' in listed
        assert 'checkpoints.keep=7' in listed and 'remote.backup' not in listed


_TRICKY = [
    b'[core]\n\tbare = true\n',
    b'[Core]\n\tBare\n',
    b'[core] bare = true\n',
    b'[a "Sub \\"q\\" \\\\ x"]\n\tk = v\n',
    b'[a.B]\n\tk = v\n',
    b'[a]\n\tk = "  spaced  " tail \n',
    b'[a]\n\tk = one\\\n two\n',
    b'[a]\n\tk = tab\\there\\n # comment\n',
    b'[a]\n\tk = x ; comment "\n\tk = y\n',
    b'[a]\n\tk =\n\tj = \n',
    b'\xef\xbb\xbf[a]\r\n\tk = crlf\r\n',
    b'; comment\n# comment\n[a]\n  k = "a;b#c"\n',
    b'[a]\n\tk = in side  spaces\n',
    b'[remote "origin"]\n\turl = https://host/x.git\n'
    b'\tfetch = +refs/heads/*:refs/remotes/origin/*\n',
]


@needs_git
@pytest.mark.parametrize('data', _TRICKY)
def test_the_reader_agrees_with_git(tmp_path: Path, data: bytes) -> None:
    from trading_checkpoints.store import config as config_module

    path = tmp_path / 'config'
    path.write_bytes(data)
    listed = git(tmp_path, 'config', '--file', str(path), '--list', '-z')
    expected = []
    for item in listed.split('\0')[:-1]:
        key, _, value = item.partition('\n')
        expected.append((key, value if '\n' in item else None))
    parsed = config_module.parse(data, path)
    got = []
    for setting in parsed.settings:
        parts = [setting.section.decode()]
        if setting.subsection is not None:
            parts.append(setting.subsection.decode())
        parts.append(setting.name.decode())
        value = None if setting.value is None else setting.value.decode()
        got.append(('.'.join(parts), value))
    assert got == expected


_PIECES = st.sampled_from(
    [b'[', b']', b'"', b'\\', b'\n', b'\r\n', b'=', b' ', b'\t', b'#', b';', b'.', b'a', b'K-1']
    + [b'[core]', b'[remote "x"]', b'\\\n', b'\xef\xbb\xbf', b'\0', TOKEN.encode()]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_PIECES, st.binary(max_size=6)), max_size=40))
def test_any_bytes_parse_or_fail_with_a_clear_error(pieces: list[bytes]) -> None:
    from trading_checkpoints.store import config as config_module

    data = b''.join(pieces)
    try:
        parsed = config_module.parse(data, Path('/repo/config'))
    except CorruptRepositoryError as error:
        assert TOKEN not in str(error) and '\n' not in str(error)
        assert '/repo/config' in str(error)
    else:
        assert all(s.line >= 1 for s in parsed.settings)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.binary(max_size=12).filter(lambda b: not any(c in b for c in b'\n\r\0')),
        min_size=1,
        max_size=4,
    ),
    st.sampled_from([None, b'x', b'a "q" \\ b']),
)
def test_written_values_read_back_exactly(values: list[bytes], subsection) -> None:
    from trading_checkpoints.store import config as config_module

    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / 'config').write_bytes(b'# kept\n[core]\n\tbare = true\n')
        result = config_module.set_values(folder, b'sec', b'key', values, subsection)
        assert [s.value for s in result.all(b'sec', b'key', subsection)] == values
        again = config_module.load(folder)
        assert [s.value for s in again.all(b'sec', b'key', subsection)] == values
        assert again.data.startswith(b'# kept\n[core]\n\tbare = true\n')
        config_module.set_values(folder, b'sec', b'key', [], subsection)
        assert config_module.load(folder).all(b'sec', b'key', subsection) == []
