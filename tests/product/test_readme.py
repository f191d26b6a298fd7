"""The README's and the manual's examples run verbatim: every ```python block in a fresh folder,
and the console sessions with their output compared line by line (checkpoint ids and times
differ from run to run, so each id shown in the text is matched to the real one)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import ROOT
from helpers.cli import shell
from helpers.processes import python

PAGES = [ROOT / 'README.md', *sorted((ROOT / 'docs').glob('*.md'))]
PYTHON_BLOCKS = [
    (page.relative_to(ROOT).as_posix(), block)
    for page in PAGES
    for block in re.findall(r'^```python\n(.*?)^```$', page.read_text(), re.S | re.M)
]

# A checkpoint id as the README shows it (7 hex digits, at least one of them a digit), a time.
_ID = r'\b(?=[a-f]*[0-9])[0-9a-f]{7}\b'
_TIME = r'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d'
_TOKEN = re.compile(f'({_ID})|({_TIME})')
DEMO = '/tmp/demo'  # where the README's session keeps its workspace


def test_the_readme_and_the_manual_have_python_blocks() -> None:
    assert any(page == 'README.md' for page, _ in PYTHON_BLOCKS)
    assert len(PYTHON_BLOCKS) >= 5


@pytest.mark.parametrize('number', range(len(PYTHON_BLOCKS)))
def test_python_block_runs_verbatim_in_a_fresh_folder(number: int, tmp_path: Path) -> None:
    page, block = PYTHON_BLOCKS[number]
    done = python(block, cwd=tmp_path)
    assert done.returncode == 0, f'{page}, block {number}:\n{block}\n{done.stderr}'


def console_session(page: str, section: str) -> list[tuple[str, list[str]]]:
    """The (command, expected output lines) of the first console block after ``section``."""
    text = (ROOT / page).read_text()
    start = text.index(section)
    block = re.search(r'^```console\n(.*?)^```$', text[start:], re.S | re.M)
    assert block is not None
    steps: list[tuple[str, list[str]]] = []
    for line in block.group(1).splitlines():
        if line.startswith('$ '):
            steps.append((line[2:], []))
        else:
            steps[-1][1].append(line)
    return steps


class Ids:
    """The README's ids, bound one to one to the real ids as they show up."""

    def __init__(self) -> None:
        self.real: dict[str, str] = {}
        self.shown: dict[str, str] = {}

    def bind(self, shown: str, real: str) -> None:
        assert self.real.setdefault(shown, real) == real, f'{shown} stood for {self.real[shown]}'
        assert self.shown.setdefault(real, shown) == shown, f'{real} shown as {self.shown[real]}'

    def substitute(self, command: str) -> str:
        return re.sub(_ID, lambda m: self.real[m.group(0)], command)

    def match(self, expected: str, actual: str) -> bool:
        pattern, names = '', []
        position = 0
        for token in _TOKEN.finditer(expected):
            pattern += re.escape(expected[position : token.start()])
            if token.group(1):
                pattern += '([0-9a-f]{7})'
                names.append(token.group(1))
            else:
                pattern += _TIME
            position = token.end()
        pattern += re.escape(expected[position:])
        found = re.fullmatch(pattern, actual)
        if found is None:
            return False
        for shown, real in zip(names, found.groups(), strict=True):
            self.bind(shown, real)
        return True


@pytest.mark.parametrize(
    ('page', 'section', 'verbs', 'ids_shown'),
    [
        ('README.md', '## On the command line\n', {'demo', 'list', 'restore'}, 3),
        ('docs/cli.md', '# Command line\n', {'demo', 'list', 'diff', 'restore', 'undo'}, 8),
    ],
)
def test_the_command_line_session_runs_verbatim_with_the_output_shown(
    page: str, section: str, verbs: set[str], ids_shown: int, tmp_path: Path
) -> None:
    demo = tmp_path / 'demo'
    cwd = tmp_path
    ids = Ids()
    steps = console_session(page, section)
    used = {command.split()[1] for command, _ in steps if command.startswith('checkpoints ')}
    assert verbs <= used
    for command, expected in steps:
        real = ids.substitute(command).replace(DEMO, str(demo))
        if real.startswith('cd '):
            cwd = cwd / real[3:].strip()
            assert cwd.is_dir(), command
            continue
        done = shell(f'{{ {real}\n}} 2>&1', cwd=cwd)
        actual = done.stdout.replace(str(demo), DEMO).splitlines()
        assert len(actual) == len(expected), f'$ {command}\n{done.stdout}'
        for want, got in zip(expected, actual, strict=True):
            assert ids.match(want, got), f'$ {command}\nREADME: {want}\nreal:   {got}'
    assert len(ids.real) >= ids_shown, 'the session shows and reuses real ids'
