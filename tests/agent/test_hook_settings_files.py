"""A harness's settings file as install, uninstall and doctor read and write it: never through
a link planted beside it, never a FIFO waited on, never left holding what is not JSON, comments
kept, the mode kept."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

import pytest
from helpers.builders import write
from helpers.cli import checkpoints
from helpers.processes import python

from trading_checkpoints.agent.hooks.install import command_line, merged

SECRET = '{"keep": "this file is not the settings"}\n'


def backups(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith('.bak'))


def test_a_link_planted_at_the_temporary_name_is_never_written_through(
    workspace: Path, tmp_path: Path
) -> None:
    """``hook install`` makes its temporary file beside the settings (``.<name>.<pid>.tmp``):
    a link planted there is removed, never written through."""
    outside = write(tmp_path, 'elsewhere/precious.json', SECRET)
    settings = write(workspace, '.claude/settings.local.json', '{"model": "opus"}\n')
    code = (
        'import os, sys\n'
        'from pathlib import Path\n'
        'from trading_checkpoints.cli import cli\n'
        'settings, outside = Path(sys.argv[1]), sys.argv[2]\n'
        "os.symlink(outside, settings.parent / f'.{settings.name}.{os.getpid()}.tmp')\n"
        "cli.main(['hook', 'install', '--harness', 'claude'], standalone_mode=False)\n"
    )
    done = python(code, str(settings), str(outside), cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert outside.read_text() == SECRET
    installed = json.loads(settings.read_text())
    assert installed['model'] == 'opus' and 'PreToolUse' in installed['hooks']
    assert not any(name.endswith('.tmp') for name in os.listdir(settings.parent))


@pytest.mark.parametrize('verb', ['install', 'uninstall', 'doctor'])
def test_a_fifo_settings_file_is_an_error_at_once(workspace: Path, verb: str) -> None:
    fifo = workspace / '.claude' / 'settings.local.json'
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    args = ['hook', verb, '--harness', 'claude']
    done = checkpoints(*args, cwd=workspace, timeout=30)  # waiting on the FIFO: a timeout
    assert done.returncode == 1
    said = done.stderr if verb != 'doctor' else done.stdout
    assert f'cannot read {fifo}: it is not a regular file (a FIFO, a device or a folder)' in said
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and backups(fifo.parent) == []


@pytest.mark.parametrize(
    'text, problem',
    [
        ('{"limit": 1e999}', 'the number 1e999 is too large to be finite'),
        ('{"limit": -1e400}', 'the number -1e400 is too large to be finite'),
        ('{"limit": NaN}', 'NaN is not a JSON value'),
        ('{"limit": Infinity}', 'Infinity is not a JSON value'),
        ('{"name": "\\ud800"}', 'a string holds the lone surrogate \\ud800, which is no text'),
        ('{"name": "x\\udfff"}', 'a string holds the lone surrogate \\udfff, which is no text'),
    ],
)
def test_what_json_cannot_say_is_refused_and_never_written_back(
    workspace: Path, text: str, problem: str
) -> None:
    """Python reads ``1e999`` as infinity and would write ``Infinity`` back (not JSON, so the
    harness would refuse its settings); a lone surrogate cannot be written as UTF-8."""
    settings = write(workspace, '.claude/settings.local.json', text)
    for verb in ('install', 'uninstall'):
        done = checkpoints('hook', verb, '--harness', 'claude', cwd=workspace)
        assert done.returncode == 1, done.stdout
        assert done.stderr == (
            f'error: {settings} is not valid JSON ({problem}); nothing was changed\n'
        )
    assert settings.read_text() == text and backups(settings.parent) == []


def test_text_that_is_not_utf8_is_a_clear_error_naming_the_file(workspace: Path) -> None:
    settings = workspace / '.gemini' / 'settings.json'
    settings.parent.mkdir()
    settings.write_bytes(b'{"theme": "caf\xe9"}')
    done = checkpoints('hook', 'install', '--harness', 'gemini', cwd=workspace)
    assert done.returncode == 1
    assert done.stderr == (
        f'error: {settings} is not UTF-8 text (byte 0xe9 at offset 14); nothing was changed\n'
    )
    assert settings.read_bytes() == b'{"theme": "caf\xe9"}'


GEMINI_WITH_COMMENTS = """\
// Gemini CLI reads comments in its settings.
{
  /* the theme, chosen
     by hand */
  "theme": "GitHub", // dark is too dark
  "tools": {"sandbox": false},
  "hooks": {
    // lint what the model wrote
    "AfterModel": [{"hooks": [{"type": "command", "command": "lint"}]}]
  }
}
"""


def test_gemini_settings_keep_their_comments_through_install_and_uninstall(
    workspace: Path,
) -> None:
    settings = write(workspace, '.gemini/settings.json', GEMINI_WITH_COMMENTS)
    done = checkpoints('hook', 'install', '--harness', 'gemini', cwd=workspace)
    assert done.returncode == 0, done.stderr
    text = settings.read_text()
    for comment in ('// Gemini CLI reads', '/* the theme, chosen\n     by hand */', '// dark is'):
        assert comment in text
    assert '// lint what the model wrote\n    "AfterModel"' in text
    wanted = merged(
        json.loads(re.sub(r'//[^\n]*|/\*.*?\*/', '', GEMINI_WITH_COMMENTS, flags=re.S)),
        'gemini',
        command_line('gemini', workspace),
    )
    assert json.loads(re.sub(r'//[^\n]*|/\*.*?\*/', '', text, flags=re.S)) == wanted
    again = checkpoints('hook', 'install', '--harness', 'gemini', cwd=workspace)
    assert again.returncode == 0 and 'nothing changed' in again.stdout
    done = checkpoints('hook', 'uninstall', '--harness', 'gemini', cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert settings.read_text() == GEMINI_WITH_COMMENTS, 'the very text it had'


def test_a_comment_in_an_entry_to_rewrite_is_refused_with_the_entries_to_paste(
    workspace: Path,
) -> None:
    """A comment inside the list of an event the hook adds to would be lost: nothing is
    changed, and the error gives the exact entries to add by hand."""
    original = (
        '{\n  "hooks": {\n    "BeforeTool": [\n      // mine\n'
        '      {"matcher": "read_file", "hooks": [{"type": "command", "command": "x"}]}\n'
        '    ]\n  }\n}\n'
    )
    settings = write(workspace, '.gemini/settings.json', original)
    done = checkpoints('hook', 'install', '--harness', 'gemini', cwd=workspace)
    assert done.returncode == 1
    first, rest = done.stderr.split('\n', 1)
    assert first == (
        f'error: {settings}: a comment inside "hooks.BeforeTool" would be lost; nothing was '
        'changed. Add these entries to its "hooks" by hand (beside your own):'
    )
    assert json.loads(rest) == merged({}, 'gemini', command_line('gemini', workspace))['hooks']
    assert settings.read_text() == original and backups(settings.parent) == []


def test_the_mode_of_the_settings_file_is_kept_and_its_copy_too(workspace: Path) -> None:
    """Settings may hold secrets (``env``): a file only its owner reads stays so."""
    settings = write(workspace, '.claude/settings.local.json', '{"env": {"TOKEN": "t0ps3cret"}}')
    settings.chmod(0o600)
    done = checkpoints('hook', 'install', '--harness', 'claude', cwd=workspace)
    assert done.returncode == 0, done.stderr
    [backup] = backups(settings.parent)
    assert stat.S_IMODE(settings.stat().st_mode) == 0o600
    assert stat.S_IMODE((settings.parent / backup).stat().st_mode) == 0o600
    assert json.loads(settings.read_text())['env'] == {'TOKEN': 't0ps3cret'}
