"""The shape of the command-line package: small per-topic modules, no import cycles, nobody
else's underscore names, and no dulwich until a verb needs a repository."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from helpers import ROOT
from helpers.processes import python

PACKAGE = ROOT / 'trading_checkpoints' / 'cli'
MODULES = sorted(PACKAGE.glob('*.py'))


def test_the_cli_is_a_package_of_small_modules() -> None:
    assert not (ROOT / 'trading_checkpoints' / 'cli.py').exists()
    names = {path.stem for path in MODULES}
    assert {'core', 'history', 'undo', 'turns', 'retention', 'remote', 'agent'} <= names
    assert {'options', 'render', 'target', 'app', 'complete'} <= names
    for path in MODULES:
        assert len(path.read_text().splitlines()) < 450, path.name


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """(module imported, names taken) for each relative import of a cli module."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = ('.' * node.level) + (node.module or '')
            found.append((base, [alias.name for alias in node.names]))
    return found


def test_no_module_takes_another_modules_underscore_names() -> None:
    for path in MODULES:
        for module, names in _imports(path):
            private = [name for name in names if name.startswith('_')]
            assert not private, f'{path.name} imports {private} from {module}'


def test_no_import_cycles_inside_the_cli() -> None:
    graph: dict[str, set[str]] = {}
    for path in MODULES:
        edges = set()
        for module, names in _imports(path):
            if module == '.':
                edges.update(name for name in names if (PACKAGE / f'{name}.py').exists())
            elif module.startswith('.') and not module.startswith('..'):
                edges.add(module[1:])
        graph[path.stem] = edges - {'__init__'}
    graph.pop('__init__', None)
    visiting: set[str] = set()
    done: set[str] = set()

    def visit(node: str, trail: list[str]) -> None:
        assert node not in visiting, f'import cycle: {" -> ".join([*trail, node])}'
        if node in done:
            return
        visiting.add(node)
        for nxt in graph.get(node, ()):
            visit(nxt, [*trail, node])
        visiting.discard(node)
        done.add(node)

    for node in graph:
        visit(node, [])
    assert 'app' not in set().union(*(graph[n] for n in graph if n != 'app'))


@pytest.mark.parametrize(
    'args',
    [[], ['--help'], ['--version'], ['list', '--help'], ['completion', 'bash']],
    ids=lambda args: ' '.join(args) or 'bare',
)
def test_no_dulwich_without_a_repository(args: list[str], tmp_path: Path) -> None:
    code = (
        'import sys\nfrom trading_checkpoints.cli import main\n'
        f'sys.argv = ["checkpoints", *{args!r}]\n'
        'try:\n    main()\nexcept SystemExit as exit:\n    code = exit.code\n'
        'print("CODE", code, any(m.startswith("dulwich") for m in sys.modules), file=sys.stderr)'
    )
    done = python(code, cwd=tmp_path)
    assert done.stderr.splitlines()[-1] == 'CODE 0 False', done.stderr


def test_the_commands_are_plain_scripts_that_import_only_the_client() -> None:
    """``checkpoints`` and ``checkpoints-hook`` are installed from bin/ (no entry point, whose
    wrapper imports ``re`` first); each imports the warm server's client and calls it."""
    import ast

    text = (ROOT / 'pyproject.toml').read_text()
    assert 'script-files = ["bin/checkpoints", "bin/checkpoints-hook"]' in text
    assert '[project.scripts]' not in text
    for name, call in (('checkpoints', 'main'), ('checkpoints-hook', 'hook_main')):
        script = ROOT / 'bin' / name
        assert script.read_text().startswith('#!python\n')  # pip points it at the interpreter
        body = ast.parse(script.read_text()).body
        imports = [ast.unparse(n) for n in body if isinstance(n, ast.Import | ast.ImportFrom)]
        assert imports == [f'from trading_checkpoints.warm.client import {call}']
        calls = [ast.unparse(node) for node in body if isinstance(node, ast.Expr)][1:]
        assert calls == [f'{call}(exit_at_once=True)']
    from trading_checkpoints.cli import cli, main
    from trading_checkpoints.warm import client

    assert callable(main) and cli.name == 'checkpoints' and callable(client.main)
