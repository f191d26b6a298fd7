"""Which ssh program an ssh remote runs: ``$CHECKPOINTS_SSH_COMMAND``, else
``$GIT_SSH_COMMAND``, else ``ssh``; and an ssh URL keeps its user name (part of the address)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from helpers.builders import session_turns
from helpers.reading import tree_of

from trading_checkpoints import Checkpoints

# A stand-in for ssh: notes its name, then serves the fetch with dulwich's upload-pack.
_FAKE_SSH = """\
import shlex, sys
from pathlib import Path
Path(sys.argv[1]).write_text(sys.argv[2])
command, path = shlex.split(sys.argv[-1])
assert command == 'git-upload-pack', command
from dulwich.porcelain import upload_pack
sys.exit(upload_pack(path))
"""


@pytest.mark.parametrize(
    ('ours', 'gits', 'ran'), [(None, 'git-ssh', 'git-ssh'), ('ours', 'git-ssh', 'ours')]
)
def test_the_ssh_command_is_ours_else_gits(
    cps: Checkpoints,
    desk: Path,
    workspace: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    ours: str | None,
    gits: str,
    ran: str,
) -> None:
    fake, noted = tmp_path / 'fake_ssh.py', tmp_path / 'ran'
    fake.write_text(_FAKE_SSH)
    monkeypatch.delenv('CHECKPOINTS_SSH_COMMAND', raising=False)
    monkeypatch.setenv('GIT_SSH_COMMAND', f'{sys.executable} {fake} {noted} {gits}')
    if ours:
        monkeypatch.setenv('CHECKPOINTS_SSH_COMMAND', f'{sys.executable} {fake} {noted} {ours}')
    served = tmp_path / 'served.git'
    session_turns(cps, desk, 2)
    cps.add_remote('disk', str(served))
    cps.push('disk')
    url = f'ssh://desk-bot@backup.invalid{served}'
    desk2, repo2 = workspace / 'desks' / 'two', workspace / '.checkpoints' / 'two.git'
    cloned, _, _ = Checkpoints.clone(url, repo2, desk2)
    assert noted.read_text() == ran
    assert tree_of(desk2) == tree_of(desk)
    assert [r.url for r in cloned.remotes()] == [url], 'the user name is part of the address'
