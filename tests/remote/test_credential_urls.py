"""Credentials in remote URLs: user info percent-encoded whole, split at the last ``@`` and
decoded strictly, and stored credentials matched by scheme, host, port and path.

Each test pins a safety check: it fails when ``benchmarks/mutation.py`` breaks that check,
and it runs in this process, where mutation testing sees the calls.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from trading_checkpoints import CheckpointError
from trading_checkpoints.remote import credentials


def test_user_info_is_percent_encoded_whole() -> None:
    url = 'https://host.example/team/repo.git'
    tricky = credentials.Credentials('us@r:/x', 'p@ss:/w?#')
    joined = credentials.join(url, tricky)
    assert joined == 'https://us%40r%3A%2Fx:p%40ss%3A%2Fw%3F%23@host.example/team/repo.git'
    assert credentials.split(joined) == (url, tricky)
    token = credentials.join(url, credentials.Credentials(None, 'tok/en'))
    assert token == 'https://:tok%2Fen@host.example/team/repo.git'
    user = credentials.join(url, credentials.Credentials('me', None))
    assert user == 'https://me@host.example/team/repo.git'
    assert repr(tricky) == 'Credentials(username=***, password=***)'
    assert repr(credentials.Credentials(None, 'x')) == 'Credentials(username=None, password=***)'


def test_user_info_is_split_at_the_last_at_sign_and_decoded_strictly() -> None:
    split = credentials.split
    assert split('https://us@er:p@ss@host/x') == (
        'https://host/x',
        credentials.Credentials('us@er', 'p@ss'),
    )
    assert split('https://:tok@host/x') == ('https://host/x', credentials.Credentials(None, 'tok'))
    for bad in ('https://%ff:x@host/', 'https://user:%ff@host/'):
        with pytest.raises(CheckpointError) as caught:
            split(bad)
        assert str(caught.value) == (
            'the user name or password in the remote URL is not valid percent-encoded UTF-8'
        )


def test_stored_credentials_match_scheme_host_port_and_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / 'credentials'
    monkeypatch.setenv(credentials.STORE_ENV, str(store))
    credentials.save('https://host.example/repo', credentials.Credentials('u', 'p'))
    found = credentials.Credentials('u', 'p')
    assert credentials.lookup('HTTPS://HOST.example/repo/') == found
    for other in (
        'https://host.example:8443/repo',
        'https://other.example/repo',
        'https://host.example/repoX',
        'http://host.example/repo',
    ):
        assert credentials.lookup(other) == credentials.NONE, other
