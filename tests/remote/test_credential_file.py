"""The credential file: found where documented, never inside the repository, one line per URL
replaced in place, never written through a planted temporary file, and refused when it is no
small private file.

Each test pins a safety check: it fails when ``benchmarks/mutation.py`` breaks that check,
and it runs in this process, where mutation testing sees the calls.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from helpers.builders import mkdirs

from trading_checkpoints import CheckpointError
from trading_checkpoints.remote import credentials


def test_the_credential_file_is_found_where_documented(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(credentials.STORE_ENV, raising=False)
    monkeypatch.setenv('XDG_CONFIG_HOME', str(tmp_path / 'xdg'))
    assert credentials.store_path() == tmp_path / 'xdg' / 'trading-checkpoints' / 'credentials'
    monkeypatch.delenv('XDG_CONFIG_HOME')
    monkeypatch.setenv('HOME', str(tmp_path / 'home'))
    assert credentials.store_path() == (
        tmp_path / 'home' / '.config' / 'trading-checkpoints' / 'credentials'
    )
    monkeypatch.setenv(credentials.STORE_ENV, str(tmp_path / 'explicit'))
    assert credentials.store_path() == tmp_path / 'explicit'


def test_the_credential_file_is_never_put_inside_the_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ('repo.git', 'repo.git '):  # a trailing space is part of the name
        repo_dir = mkdirs(tmp_path / name)
        for store in (repo_dir / 'credentials', repo_dir / 'deep' / 'er' / 'credentials'):
            monkeypatch.setenv(credentials.STORE_ENV, str(store))
            with pytest.raises(CheckpointError) as caught:
                credentials.save('https://h/x', credentials.Credentials('u', 'p'), repo_dir)
            assert str(caught.value) == (
                f'the credential file {store} would lie inside the repository {repo_dir}; '
                f'point ${credentials.STORE_ENV} elsewhere'
            )
            assert not store.exists()
    beside = tmp_path / 'repo.git-credentials' / 'credentials'  # a sibling, not inside
    monkeypatch.setenv(credentials.STORE_ENV, str(beside))
    credentials.save('https://h/x', credentials.Credentials('u', 'p'), tmp_path / 'repo.git')
    assert beside.read_text() == 'https://u:p@h/x\n'


def test_saving_replaces_the_url_s_line_and_keeps_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / 'new' / 'folders' / 'credentials'
    monkeypatch.setenv(credentials.STORE_ENV, str(store))
    assert credentials.save('https://a.example/x', credentials.Credentials('u1', 'p1')) == store
    assert stat.S_IMODE(store.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(store.stat().st_mode) == 0o600
    credentials.save('https://b.example/y', credentials.Credentials('u2', 'p2'))
    with open(store, 'a') as handle:
        handle.write('\n# a comment\nhttps://%ff@c.example/z\n')
    credentials.save('https://A.example/x/', credentials.Credentials('u3', 'p3'))
    assert store.read_text().splitlines() == [
        'https://u2:p2@b.example/y',
        '# a comment',
        'https://%ff@c.example/z',
        'https://u3:p3@A.example/x/',
    ]
    assert credentials.lookup('https://a.example/x') == credentials.Credentials('u3', 'p3')
    # Bytes of a path that are not UTF-8 are kept as they were.
    credentials.save('file:///srv/re\udcffpo', credentials.Credentials('u4', None))
    assert store.read_bytes().endswith(b'file://u4@/srv/re\xffpo\n')


def test_a_planted_temporary_credential_file_is_never_written_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / 'store' / 'credentials'
    monkeypatch.setenv(credentials.STORE_ENV, str(store))
    store.parent.mkdir(mode=0o700)
    temporary = store.parent / f'.credentials.{os.getpid()}.tmp'
    elsewhere = tmp_path / 'elsewhere.txt'
    elsewhere.write_text('not for secrets')
    os.symlink(elsewhere, temporary)
    # The link is removed and a new file made in its place (O_EXCL), never written through.
    credentials.save('https://h/x', credentials.Credentials('user', 'secret'))
    assert elsewhere.read_text() == 'not for secrets' and not os.path.lexists(temporary)
    assert store.read_text() == 'https://user:secret@h/x\n'
    assert stat.S_IMODE(store.stat().st_mode) == 0o600
    store.unlink()
    temporary.write_text('a much longer leftover of a killed save\n' * 3)
    credentials.save('https://h/x', credentials.Credentials('user', 'secret'))
    assert store.read_text() == 'https://user:secret@h/x\n'
    # A store whose folder is a link to another folder is refused, nothing written there.
    linked = tmp_path / 'linked'
    linked.symlink_to(elsewhere.parent)
    monkeypatch.setenv(credentials.STORE_ENV, str(linked / 'credentials'))
    with pytest.raises(CheckpointError) as caught:
        credentials.save('https://h/x', credentials.Credentials('user', 'secret'))
    assert str(caught.value) == (
        f'cannot write the credential file {linked / "credentials"}: its folder {linked} is a '
        'symbolic link or not a folder; give the credentials through '
        '$CHECKPOINTS_REMOTE_USERNAME and $CHECKPOINTS_REMOTE_PASSWORD instead'
    )
    assert not os.path.lexists(elsewhere.parent / 'credentials')


def test_a_credential_file_that_is_no_small_private_file_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / 'credentials'
    monkeypatch.setenv(credentials.STORE_ENV, str(store))

    def refused() -> str:
        with pytest.raises(CheckpointError) as caught:
            credentials.lookup('https://h/x')
        return str(caught.value)

    store.mkdir()
    assert refused() == f'the credential file {store} is not a small regular file'
    store.rmdir()
    os.mkfifo(store)  # opened without blocking, then refused
    assert refused() == f'the credential file {store} is not a small regular file'
    store.unlink()
    line = b'https://u:p@h/x'  # no newline: the file's very last byte is part of the entry
    store.write_bytes(b'#' * (credentials.MAX_BYTES - len(line) - 1) + b'\n' + line)
    store.chmod(0o644)
    assert refused() == f'the credential file {store} can be read by other users; chmod 600 it'
    store.chmod(0o600)
    assert store.stat().st_size == credentials.MAX_BYTES  # exactly the limit: read whole
    assert credentials.lookup('https://h/x') == credentials.Credentials('u', 'p')
    with open(store, 'ab') as handle:
        handle.write(b'\xff\n')  # one byte more, and not UTF-8
    assert refused() == f'the credential file {store} is not a small regular file'
    store.write_bytes(b'\xff\xfe not UTF-8\n' + line + b'\n')
    assert credentials.lookup('https://h/x') == credentials.Credentials('u', 'p')
    monkeypatch.setenv(credentials.STORE_ENV, str(store / 'below-a-file'))
    assert refused() == (
        f'cannot read the credential file {store / "below-a-file"}: Not a directory'
    )
