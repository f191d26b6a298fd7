"""Ctrl-C during a restore, and the command that comes next.

A restore stopped by SIGINT once it began changing the desk says how far it got and that the
next command completes it (never "nothing was changed"); every verb on the desk then completes
it first and says so in one ``note:`` line holding the command that undoes it, pasteable as it
is (``--workspace``/``--desk``); ``status`` never shows the half-done restore as someone's
changes. Stopped before it changed anything, the restore is abandoned: nothing was changed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.builders import checkpoints_in, write
from helpers.cli import checkpoints, shell
from helpers.processes import environment

RECORD = Path('.checkpoints') / 'main.git' / 'checkpoints' / 'restore-journal'

# ``checkpoints ARGS...`` in a process that sends itself SIGINT just as the restore is about to
# put its Nth file in place (a real signal, at an exact moment).
_SIGINT_AT = """
import signal, sys
from helpers.faults import lands_a_desk_file
at, landed = int(sys.argv[1]), [0]
def hook(event, args):
    if lands_a_desk_file(event, args):
        landed[0] += 1
        if landed[0] == at:
            signal.raise_signal(signal.SIGINT)
sys.addaudithook(hook)
sys.argv = ['checkpoints', *sys.argv[2:]]
from trading_checkpoints.cli import main
main()
"""


def _interrupted_at(at: int, workspace: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, '-c', _SIGINT_AT, str(at), '--workspace', str(workspace), *args],
        env=environment(with_helpers=True),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _desk_of(workspace: Path, files: int, text: str) -> dict[str, str]:
    """Every tracked file of the desk at version ``text``: path -> content."""
    return {f'notes/d{i % 50}/f{i}.md': f'{text} {i}\n' * 20 for i in range(files)}


def _two_versions(workspace: Path, files: int) -> tuple[str, str]:
    desk = workspace / 'desks' / 'main'
    cps = checkpoints_in(workspace)
    for path, content in _desk_of(workspace, files, 'v1').items():
        write(desk, path, content)
    v1 = cps.snapshot('v1')
    for path, content in _desk_of(workspace, files, 'v2').items():
        (desk / path).write_text(content)
    v2 = cps.snapshot('v2')
    assert v1 is not None and v2 is not None
    return v1, v2


def _holding(workspace: Path, files: int, text: str) -> int:
    desk = workspace / 'desks' / 'main'
    wanted = _desk_of(workspace, files, text)
    return sum((desk / path).read_text() == content for path, content in wanted.items())


def _command(workspace: Path, *words: str) -> str:
    return ' '.join(['checkpoints', '--workspace', str(workspace), '--desk', 'main', *words])


@pytest.mark.parametrize('files', [4_000, pytest.param(20_005, marks=pytest.mark.slow)])
def test_ctrl_c_during_a_big_restore_says_how_far_it_got(workspace: Path, files: int) -> None:
    v1, v2 = _two_versions(workspace, files)
    # SIGINT as the restore is about to land its file a quarter of the way in (raised by the
    # process itself at that moment: a signal sent from here could land after a fast restore).
    restoring = _interrupted_at(files // 4, workspace, 'restore', v1, '-q')
    out, err = restoring.stdout, restoring.stderr
    assert restoring.returncode == 130, (out, err)
    assert 'nothing was changed' not in err
    stopped = re.search(rf'stopped after changing (\d+) of {files} files in the desk', err)
    assert stopped, err
    changed = int(stopped.group(1))
    assert changed == files // 4 - 1, err  # stopped as it was about to land the quarter
    assert changed - 1 <= _holding(workspace, files, 'v1') <= changed  # the last may be part way
    assert 'the next checkpoints command on this desk completes it' in err
    before = re.search(r'undo it with: (.*)$', err, re.M)
    assert before and before.group(1).startswith(_command(workspace, 'restore')), err
    assert (workspace / RECORD).exists()

    # The next command, status here, completes the restore first and says so in one line.
    status = checkpoints('status', '--json', workspace=workspace)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)['changes'] == [], 'the half-done restore is no change'
    notes = [line for line in status.stderr.splitlines() if line.startswith('note:')]
    assert len(notes) == 1, status.stderr
    assert notes[0].startswith(f'note: completed an interrupted restore of {v1} (')
    assert notes[0].endswith(f'undo with: {before.group(1)}')
    assert _holding(workspace, files, 'v1') == files
    assert not (workspace / RECORD).exists()
    # Its undo command, pasted as it is, puts back what the restore overwrote.
    undone = shell(before.group(1) + ' -q', cwd=workspace.parent)
    assert undone.returncode == 0, undone.stderr
    assert _holding(workspace, files, 'v2') == files


VERBS = {
    'status': lambda ids: ['status'],
    'diff': lambda ids: ['diff', ids[0], '--stat'],
    'list': lambda ids: ['list'],
    'log': lambda ids: ['log', '-n', '2'],
    'show': lambda ids: ['show', ids[0], 'notes/d0/f0.md'],
    'snapshot': lambda ids: ['snapshot', '-m', 'after'],
    'undo --dry-run': lambda ids: ['undo', '--dry-run'],
    'restore --dry-run': lambda ids: ['restore', ids[1], '--dry-run'],
    'seal': lambda ids: ['seal'],
    'turns': lambda ids: ['turns'],
    'remote list': lambda ids: ['remote', 'list'],
}


@pytest.mark.parametrize('verb', list(VERBS))
def test_every_verb_completes_an_interrupted_restore_first_and_says_so(
    workspace: Path, verb: str
) -> None:
    v1, v2 = _two_versions(workspace, 60)
    stopped = _interrupted_at(10, workspace, 'restore', v1)
    assert stopped.returncode == 130, stopped.stderr
    assert 'stopped after changing 9 of 60 files in the desk' in stopped.stderr
    assert _holding(workspace, 60, 'v1') == 9
    before = re.search(r'undo it with: (.*)$', stopped.stderr, re.M)
    assert before, stopped.stderr
    done = checkpoints(*VERBS[verb]([v1, v2]), workspace=workspace)
    assert done.returncode == 0, done.stderr
    notes = [line for line in done.stderr.splitlines() if 'interrupted restore' in line]
    assert notes == [
        f'note: completed an interrupted restore of {v1} (51 written, 0 deleted); '
        f'undo with: {before.group(1)}'
    ], done.stderr
    assert _holding(workspace, 60, 'v1') == 60
    if verb == 'status':
        assert 'No changes since checkpoint' in done.stdout, done.stdout


def test_ctrl_c_before_the_first_change_abandons_the_restore(workspace: Path) -> None:
    v1, v2 = _two_versions(workspace, 60)
    stopped = _interrupted_at(1, workspace, 'restore', v1)
    assert stopped.returncode == 1, stopped.stderr
    assert stopped.stderr.strip().endswith('error: aborted: nothing was changed')
    assert _holding(workspace, 60, 'v2') == 60
    assert not (workspace / RECORD).exists(), 'nothing for the next command to complete'
    status = checkpoints('status', workspace=workspace)
    assert status.returncode == 0 and status.stderr == '', status.stderr
    assert 'No changes since checkpoint' in status.stdout


def test_the_library_raises_how_far_it_got_and_status_completes_it(workspace: Path) -> None:
    from helpers.processes import python

    v1, v2 = _two_versions(workspace, 60)
    code = f"""
import json, signal, sys
from helpers.builders import checkpoints_in
from helpers.faults import lands_a_desk_file
from pathlib import Path
landed = [0]
def hook(event, args):
    if lands_a_desk_file(event, args):
        landed[0] += 1
        if landed[0] == 10:
            signal.raise_signal(signal.SIGINT)
sys.addaudithook(hook)
cps = checkpoints_in(Path({str(workspace)!r}))
try:
    cps.restore({v1!r})
except KeyboardInterrupt as stop:
    print(json.dumps({{'kind': type(stop).__name__, **{{
        name: getattr(stop, name) for name in
        ('label', 'target_id', 'changed', 'planned', 'completing')}}}}))
"""
    done = python(code, with_helpers=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        'kind': 'RestoreInterrupted',
        'label': v1,
        'target_id': v1,
        'changed': 9,
        'planned': 60,
        'completing': False,
    }
    cps = checkpoints_in(workspace)
    assert cps.status().changes == ()
    assert cps.last_recovery is not None and cps.last_recovery.target_id == v1
    assert _holding(workspace, 60, 'v1') == 60
    assert os.path.exists(workspace / 'desks' / 'main')
