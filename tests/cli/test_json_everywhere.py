"""``--json`` on every verb that prints a result; the README names the ones that do not, and
the new forms (remote add and remove, hook install and uninstall) print what was done."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import click
from helpers import ROOT
from helpers.builders import checkpoints_in, write
from helpers.cli import checkpoints

from trading_checkpoints.cli import cli
from trading_checkpoints.cli.agent import HOOK_VERBS


def verbs(command: click.Command, words: list[str]) -> Iterator[tuple[str, click.Command]]:
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            yield from verbs(sub, [*words, name])
    else:
        yield ' '.join(words), command
    if words == ['hook']:
        for name, sub in HOOK_VERBS.items():
            yield f'hook {name}', sub


def takes_json(command: click.Command) -> bool:
    return any('--json' in p.opts for p in command.params if isinstance(p, click.Option))


def test_every_verb_that_prints_a_result_takes_json_but_those_the_readme_names() -> None:
    without = sorted(name for name, command in verbs(cli, []) if not takes_json(command))
    readme = ' '.join(ROOT.joinpath('README.md').read_text().split())
    sentence = re.search(r'Every verb that prints a result takes `--json`, except (.*?);', readme)
    assert sentence is not None, 'the README says which verbs do not take --json'
    named = sorted(re.findall(r'`([a-z-]+)`', sentence.group(1)))
    assert without == named


def test_remote_add_and_remove_print_what_they_did_as_json(tmp_path: Path) -> None:
    cps = checkpoints_in(tmp_path / 'ws')
    write(cps.desk_directory, 'Memory.md', 'one\n')
    cps.snapshot('one')
    url = 'https://someone:secret@git.example.com/desk.git'
    added = checkpoints('remote', 'add', 'web', url, '--json', cwd=cps.desk_directory)
    assert added.returncode == 0, added.stderr
    assert json.loads(added.stdout) == {'name': 'web', 'url': 'https://git.example.com/desk.git'}
    assert 'secret' not in added.stdout
    removed = checkpoints('remote', 'remove', 'web', '--json', cwd=cps.desk_directory)
    assert json.loads(removed.stdout) == {'removed': 'web'}
    assert cps.remotes() == []


def test_hook_install_and_uninstall_print_what_they_did_to_the_file_as_json(
    tmp_path: Path, workspace: Path
) -> None:
    settings = tmp_path / 'settings.json'

    def hook(*args: str) -> dict[str, object]:
        given = ['--harness', 'claude', '--settings', str(settings), '--json']
        done = checkpoints('hook', *args, *given, workspace=workspace)
        assert done.returncode == 0, done.stderr
        form: dict[str, object] = json.loads(done.stdout)
        return form

    planned = hook('install', '--dry-run')
    assert planned['changed'] and planned['dry_run'] and not settings.exists()
    assert planned['path'] == str(settings) and planned['workspace'] == str(workspace)
    assert 'hooks' in json.loads(str(planned['after']))
    done = hook('install')
    assert done == {**planned, 'dry_run': False}
    assert json.loads(settings.read_text()) == json.loads(str(planned['after']))
    again = hook('install')
    assert (again['changed'], again['after']) == (False, None)
    removed = hook('uninstall')
    assert removed['changed'] and removed['backup'] is not None
    assert 'checkpoints' not in settings.read_text()
