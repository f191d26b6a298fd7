"""Every example of the README and the manual runs, top to bottom, in a fresh folder.

- ```python blocks run verbatim, each in a fresh folder.
- ```console blocks are shell sessions (``$ `` prompts, then the expected output): the blocks of
  one page are one session, played in order in a fresh folder with the output compared line by
  line. Checkpoint ids and times differ from run to run, so each id shown in the text is bound
  to the real one the first time the output shows it, and a command that names an id the
  session has not shown yet fails: ids are taken from the output, never pasted. So are times:
  a time shown stands for the real one the output first shows in its place, and a command
  naming a time uses that one (naming one not shown yet fails). Paths under
  ``/tmp/`` stand for the session's own folder. ``...`` in an expected line stands for text
  that differs from run to run (sizes in bytes).
- ```json blocks (settings to paste) must parse.
- ```bash blocks install something or run the suite itself: each is listed below with why it
  does not run here, and a block neither run nor listed fails.
"""

from __future__ import annotations

import configparser
import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import ROOT
from helpers.cli import shell
from helpers.processes import python

PAGES = [ROOT / 'README.md', *sorted((ROOT / 'docs').glob('*.md'))]
LANGUAGES = {'python', 'console', 'json', 'bash', 'ini'}

# The ```bash blocks that do not run here, by page and first line, with why.
NOT_RUN = {
    ('README.md', 'python3 -m pip install . && checkpoints demo'): (
        'installs the package; the demo runs in the console sessions and tests/cli'
    ),
    ('README.md', "python3 -m pip install -e '.[dev]' && python3 -m pytest"): (
        'installs the development tools and runs this very suite'
    ),
    ('docs/index.md', 'python3 -m pip install .'): 'installs the package',
    ('README.md', "python3 -m pip install '.[ui]' && checkpoints browse"): (
        'installs the ui extra and opens an interactive terminal program; tests/ui drives it '
        'headless and tests/product/test_browse_terminal.py in tmux'
    ),
    ('docs/browse.md', "python3 -m pip install '.[ui]'"): (
        'installs the ui extra and opens an interactive terminal program; tests/ui drives it '
        'headless and tests/product/test_browse_terminal.py in tmux'
    ),
    ('docs/development.md', "python3 -m pip install -e '.[dev]'"): (
        'installs the development tools and runs this very suite'
    ),
    ('docs/safety.md', 'python -m pytest -q'): 'runs this very suite and its slow runs',
    ('docs/agents.md', 'checkpoints hook install --harness claude'): (
        "writes the harness's settings files (with --global, in the home folder); "
        'tests/agent/test_hook_install.py runs install, uninstall and doctor on temporary ones'
    ),
    ('docs/agents.md', 'checkpoints --workspace ~/agent --desk main watch'): (
        'runs until stopped; tests/agent/test_watch.py runs it as a process and stops it'
    ),
    ('docs/cli.md', 'eval "$(checkpoints completion bash)"'): (
        "writes into the user's shell start-up files; tests/cli/test_completion.py runs the "
        'three scripts'
    ),
}

# A checkpoint id as the pages show it (7 hex digits, at least one a digit), a time.
_ID = r'\b(?=[a-f]*[0-9])[0-9a-f]{7}\b'
_TIME = r'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d'
_TOKEN = re.compile(f'({_ID})|({_TIME})|(\\.\\.\\.)')
SANDBOX = '/tmp'  # the pages' folder for sessions, the session's own folder in the test

# What each page's session shows at least: the verbs it runs, and how many ids it takes from
# the output and uses again.
VERBS = {
    'README.md': ({'demo', 'list', 'restore'}, 3),
    'docs/cli.md': ({'demo', 'list', 'diff', 'restore', 'undo', 'status', 'snapshot', 'log'}, 8),
    'docs/history.md': (
        {'demo', 'diff', 'show', 'log', 'status', 'restore', 'undo', 'redo', 'seal', 'blame'},
        6,
    ),
    'docs/storage.md': ({'demo', 'prune', 'remote', 'push', 'clone', 'pull'}, 3),
    'docs/agents.md': ({'demo', 'protect', 'budget', 'hook', 'list', 'show', 'status'}, 2),
}


@dataclass(frozen=True)
class Block:
    page: str
    language: str
    text: str
    line: int

    @property
    def first_line(self) -> str:
        return self.text.splitlines()[0] if self.text else ''

    def __str__(self) -> str:
        return f'{self.page}:{self.line}'


def blocks_of(page: Path) -> list[Block]:
    text = page.read_text()
    found = []
    for match in re.finditer(r'^```(\w*)\n(.*?)^```$', text, re.S | re.M):
        line = text.count('\n', 0, match.start()) + 1
        found.append(Block(page.relative_to(ROOT).as_posix(), match[1], match[2], line))
    return found


BLOCKS = [block for page in PAGES for block in blocks_of(page)]
PYTHON_BLOCKS = [block for block in BLOCKS if block.language == 'python']
JSON_BLOCKS = [block for block in BLOCKS if block.language == 'json']
INI_BLOCKS = [block for block in BLOCKS if block.language == 'ini']
SESSIONS = sorted({block.page for block in BLOCKS if block.language == 'console'})


def test_every_block_is_an_example_of_a_known_kind() -> None:
    assert len(PYTHON_BLOCKS) >= 5 and any(b.page == 'README.md' for b in PYTHON_BLOCKS)
    for block in BLOCKS:
        assert block.language in LANGUAGES, f'{block}: a ``` block of no known kind'


def test_every_shell_block_runs_or_says_why_not() -> None:
    listed = set()
    for block in BLOCKS:
        if block.language == 'bash':
            key = next(
                (k for k in NOT_RUN if k[0] == block.page and block.first_line.startswith(k[1])),
                None,
            )
            assert key is not None, (
                f'{block}: a ```bash block must run (as ```console) or be listed'
            )
            listed.add(key)
    assert listed == set(NOT_RUN), 'every listed block is still on its page'
    assert set(VERBS) == set(SESSIONS), 'every session is checked for what it shows'


@pytest.mark.parametrize('block', PYTHON_BLOCKS, ids=str)
def test_python_block_runs_verbatim_in_a_fresh_folder(block: Block, tmp_path: Path) -> None:
    done = python(block.text, cwd=tmp_path)
    assert done.returncode == 0, f'{block}:\n{block.text}\n{done.stderr}'


@pytest.mark.parametrize('block', JSON_BLOCKS, ids=str)
def test_json_block_is_valid_json(block: Block) -> None:
    assert isinstance(json.loads(block.text), dict), block


@pytest.mark.parametrize('block', INI_BLOCKS, ids=str)
def test_ini_block_is_a_unit_that_runs_checkpoints(block: Block) -> None:
    """The systemd unit parses, and starts this package's command by an absolute path."""
    unit = configparser.ConfigParser(interpolation=None, strict=True)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read_string(block.text)
    assert {'Unit', 'Service', 'Install'} <= set(unit.sections()), block
    command = unit['Service']['ExecStart'].split()
    assert command[0].startswith('/') and command[0].endswith('/checkpoints'), block


def session(page: str) -> list[tuple[str, list[str]]]:
    """The (command, expected output lines) of a page's console blocks, in order."""
    steps: list[tuple[str, list[str]]] = []
    for block in blocks_of(ROOT / page):
        if block.language != 'console':
            continue
        lines = block.text.splitlines()
        assert lines and lines[0].startswith('$ '), f'{block}: a session starts with a command'
        for line in lines:
            if line.startswith('$ '):
                steps.append((line[2:], []))
            else:
                steps[-1][1].append(line)
    return steps


class Ids:
    """The page's ids, bound one to one to the real ids as the output shows them, and its
    times, each bound to the real time the output first shows in its place."""

    def __init__(self) -> None:
        self.real: dict[str, str] = {}
        self.shown: dict[str, str] = {}
        self.times: dict[str, str] = {}

    def bind(self, shown: str, real: str) -> None:
        assert self.real.setdefault(shown, real) == real, f'{shown} stood for {self.real[shown]}'
        assert self.shown.setdefault(real, shown) == shown, f'{real} shown as {self.shown[real]}'

    def substitute(self, command: str) -> str:
        def real(match: re.Match[str]) -> str:
            shown = match.group(0)
            assert shown in self.real, f'$ {command}: {shown} is used before the output shows it'
            return self.real[shown]

        def real_time(match: re.Match[str]) -> str:
            shown = match.group(0)
            assert shown in self.times, f'$ {command}: {shown} is used before the output shows it'
            return self.times[shown]

        return re.sub(_TIME, real_time, re.sub(_ID, real, command))

    def match(self, expected: str, actual: str) -> bool:
        """Whether ``actual`` is the line ``expected`` shows; binds the ids in it. ``...``
        stands for any text, unless the line matches with it taken literally."""
        return self._match(expected, actual, literal=True) or (
            '...' in expected and self._match(expected, actual, literal=False)
        )

    def _match(self, expected: str, actual: str, *, literal: bool) -> bool:
        pattern, names = '', []
        position = 0
        for token in _TOKEN.finditer(expected):
            pattern += re.escape(expected[position : token.start()])
            if token.group(1):
                pattern += '([0-9a-f]{7})'
                names.append((True, token.group(1)))
            elif token.group(2):
                pattern += f'({_TIME})'
                names.append((False, token.group(2)))
            else:
                pattern += re.escape('...') if literal else '.*?'
            position = token.end()
        pattern += re.escape(expected[position:])
        found = re.fullmatch(pattern, actual)
        if found is None:
            return False
        for (is_id, shown), real in zip(names, found.groups(), strict=True):
            if is_id:
                self.bind(shown, real)
            else:
                self.times.setdefault(shown, real)
        return True


@pytest.mark.parametrize('page', SESSIONS)
def test_the_page_s_console_session_runs_with_the_output_shown(page: str, tmp_path: Path) -> None:
    sandbox = tmp_path / 'tmp'
    sandbox.mkdir()
    cwd = tmp_path
    ids = Ids()
    steps = session(page)
    assert steps[0][0].startswith('checkpoints demo --dir /tmp/'), (
        f'{page}: the session starts by building its workspace'
    )
    verbs, id_count = VERBS[page]
    used = {command.split()[1] for command, _ in steps if command.startswith('checkpoints ')}
    used |= {word for command, _ in steps for word in command.split() if word in verbs}
    assert verbs <= used, f'{page}: the session runs {sorted(verbs - used)} too'
    for command, expected in steps:
        real = ids.substitute(command).replace(f'{SANDBOX}/', f'{sandbox}/')
        if real.startswith('cd '):
            cwd = (cwd / real[3:].split('#')[0].strip()).resolve()
            assert cwd.is_dir(), command
            continue
        done = shell(f'{{ {real}\n}} 2>&1', cwd=cwd)
        actual = done.stdout.replace(str(sandbox), SANDBOX).splitlines()
        shown = '\n'.join(actual)
        assert len(actual) == len(expected), f'{page}\n$ {command}\n{shown}'
        for want, got in zip(expected, actual, strict=True):
            assert ids.match(want, got), f'{page}\n$ {command}\npage: {want}\nreal: {got}'
    assert len(ids.real) >= id_count, f'{page}: the session shows and reuses real ids'
