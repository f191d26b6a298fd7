"""Remote credentials: never printed, never kept in the repository, decoded before use.

A URL's user info is a secret as a whole (``https://ghp_TOKEN@github.com/...`` carries the
token as the user name). It is removed from every URL shown (CLI text and JSON, results,
errors) and from what is written into the repository (config, reflog); credentials given in a
URL go to a credential file outside the repository, readable by its owner only. Percent-encoded
user names and passwords are decoded (RFC 3986) before they are sent.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from helpers.builders import session_turns, write
from helpers.cli import checkpoints
from helpers.httpremote import USER, served

from trading_checkpoints import CheckpointError, Checkpoints
from trading_checkpoints.remote import redact

TOKEN = 'ghp_0123456789abcdefTOKENvalue'


def _everything_in(folder: Path) -> bytes:
    out = []
    for current, _, names in os.walk(folder):
        for name in names:
            full = Path(current) / name
            if full.is_file() and not full.is_symlink():
                out.append(full.read_bytes())
    return b'\n'.join(out)


@pytest.mark.parametrize(
    ('url', 'shown'),
    [
        (f'https://{TOKEN}@github.com/me/desk.git', 'https://github.com/me/desk.git'),
        (f'https://{TOKEN}:x-oauth-basic@github.com/d.git', 'https://github.com/d.git'),
        ('https://u:pw@host:8443/x.git', 'https://host:8443/x.git'),
        ('https://u%40corp:p%40ss@host/x.git', 'https://host/x.git'),
        ('ssh://git@host/srv/x.git', 'ssh://host/srv/x.git'),
        ('https://u:pa/ss@host/x.git', 'https://host/x.git'),  # an unencoded "/" in it
        ('https://tok#en@host/x.git', 'https://host/x.git'),
        ('https://host/x.git', 'https://host/x.git'),
        ('/srv/x.git', '/srv/x.git'),
        ('https://host/x\x1b[2J.git', 'https://host/x?[2J.git'),
    ],
)
def test_redact_removes_all_user_info(url: str, shown: str) -> None:
    assert redact(url) == shown


def test_no_token_in_any_output_the_repository_or_the_reflog(
    http_remote: tuple[str, Path],
    cps: Checkpoints,
    desk: Path,
    workspace: Path,
    repo_dir: Path,
) -> None:
    url, _ = http_remote
    session_turns(cps, desk, 2)
    secret_url = url.replace('http://', f'http://{TOKEN}@')
    outputs = []
    for args in (
        ['remote', 'add', 'web', secret_url],
        ['remote', 'list'],
        ['remote', 'list', '--json'],
        ['push', 'web'],  # the server refuses the token: an error line
        ['push', 'web', '--json'],
        ['clone', secret_url, '--desk', 'copy'],
        ['clone', secret_url, '--desk', 'copy2', '--json'],
    ):
        done = checkpoints(*args, workspace=workspace)
        outputs.append(done.stdout + done.stderr)
        assert 'Traceback' not in done.stderr
    text = '\n'.join(outputs)
    assert TOKEN not in text
    assert 'refused the credentials' in text  # the push did reach the server
    listed = json.loads(checkpoints('remote', 'list', '--json', workspace=workspace).stdout)
    assert listed == [{'name': 'web', 'url': url}]
    assert TOKEN.encode() not in _everything_in(workspace)
    assert TOKEN.encode() not in _everything_in(repo_dir)


def test_clone_with_a_token_keeps_it_out_of_the_new_repository(
    http_remote: tuple[str, Path],
    cps: Checkpoints,
    desk: Path,
    workspace: Path,
) -> None:
    url, _ = http_remote
    ids = session_turns(cps, desk, 2)
    cps.add_remote('web', url.replace('http://', f'http://{USER}:s3cret-pa55@'))
    cps.push('web')
    repo2 = workspace / '.checkpoints' / 'two.git'
    cps2, result, _ = Checkpoints.clone(
        url.replace('http://', f'http://{USER}:s3cret-pa55@'), repo2, workspace / 'desks' / 'two'
    )
    assert result.url == url and result.new == ids[-1]
    assert b's3cret-pa55' not in _everything_in(repo2)
    assert b's3cret-pa55' not in _everything_in(cps.repository_directory)
    assert [r.url for r in cps2.remotes()] == [url]
    assert cps2.pull().up_to_date  # the stored credentials are used again


def test_credentials_are_stored_outside_the_repository_for_the_owner_only(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    write(desk, 'Memory.md', 'x')
    cps.snapshot('x')
    store = Path(os.environ['CHECKPOINTS_CREDENTIALS'])
    cps.add_remote('web', f'https://{TOKEN}@example.invalid/d.git')
    assert TOKEN in store.read_text()
    assert stat.S_IMODE(store.stat().st_mode) == 0o600
    assert TOKEN.encode() not in _everything_in(repo_dir)
    assert [r.url for r in cps.remotes()] == ['https://example.invalid/d.git']
    store.chmod(0o644)
    with pytest.raises(CheckpointError, match='chmod 600'):
        cps.add_remote('other', 'https://u:p@example.invalid/e.git')


def test_a_token_left_in_an_old_config_is_still_used_but_never_shown(
    http_remote: tuple[str, Path],
    cps: Checkpoints,
    desk: Path,
    repo_dir: Path,
    workspace: Path,
) -> None:
    url, _ = http_remote
    ids = session_turns(cps, desk, 1)
    old = url.replace('http://', f'http://{USER}:s3cret-pa55@')
    config = repo_dir / 'config'
    config.write_text(config.read_text() + f'[remote "web"]\n\turl = {old}\n')
    assert [r.display_url for r in cps.remotes()] == [url]
    assert 's3cret-pa55' not in repr(cps.remotes())
    assert cps.push('web').new == ids[-1]
    listed = checkpoints('remote', 'list', workspace=workspace)
    assert 's3cret-pa55' not in listed.stdout and USER not in listed.stdout


# -- percent-encoding (RFC 3986) ------------------------------------------------------------------


@pytest.fixture
def reserved_server(tmp_path: Path):
    """A smart-HTTP server whose user name and password hold reserved characters."""
    with served(tmp_path / 'served.git', 'me@corp', 'p@ss:w/rd%?') as address:
        yield address


def test_percent_encoded_credentials_are_decoded_before_sending(
    reserved_server: str, cps: Checkpoints, desk: Path, workspace: Path
) -> None:
    ids = session_turns(cps, desk, 2)
    cps.add_remote('web', f'http://me%40corp:p%40ss%3Aw%2Frd%25%3F@{reserved_server}')
    assert cps.push('web').new == ids[-1]
    _, cloned, _ = Checkpoints.clone(
        f'http://me%40corp:p%40ss%3Aw%2Frd%25%3F@{reserved_server}',
        workspace / '.checkpoints' / 'c.git',
        workspace / 'desks' / 'c',
    )
    assert cloned.new == ids[-1] and cloned.url == f'http://{reserved_server}'


def test_percent_encoded_credentials_from_the_environment_are_taken_as_given(
    reserved_server: str, cps: Checkpoints, desk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = session_turns(cps, desk, 1)
    cps.add_remote('web', f'http://{reserved_server}')
    monkeypatch.setenv('CHECKPOINTS_REMOTE_USERNAME', 'me@corp')
    monkeypatch.setenv('CHECKPOINTS_REMOTE_PASSWORD', 'p@ss:w/rd%?')
    assert cps.push('web').new == ids[-1]


def test_a_wrong_password_error_never_shows_user_or_password(
    reserved_server: str, cps: Checkpoints, desk: Path
) -> None:
    session_turns(cps, desk, 1)
    cps.add_remote('web', f'http://{TOKEN}:n0pe-n0pe@{reserved_server}')
    with pytest.raises(CheckpointError, match='refused the credentials') as caught:
        cps.push('web')
    assert TOKEN not in str(caught.value) and 'n0pe-n0pe' not in str(caught.value)


def test_a_secret_with_unencoded_reserved_characters_is_refused_unseen(
    cps: Checkpoints, desk: Path, repo_dir: Path
) -> None:
    write(desk, 'Memory.md', 'x')
    cps.snapshot('x')
    for url in ('https://me:pa/ss-w0rd@host/x.git', 'https://t0k#en-value@host/x.git'):
        with pytest.raises(CheckpointError) as caught:
            cps.add_remote('web', url)
        assert 'ss-w0rd' not in str(caught.value) and 'en-value' not in str(caught.value)
    assert cps.remotes() == []
    assert b'w0rd' not in (repo_dir / 'config').read_bytes()
