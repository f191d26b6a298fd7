"""What the warm server imports before it serves: every module a verb may need, and the
parsers a command builds, so that a command's child imports and builds nothing.

The verbs import some libraries only where they need them (dulwich's ``Repo`` and ``client``,
``concurrent.futures``), so a cold start that only reads never pays for them, and those
libraries do the same with their own modules (dulwich's ``worktree``); importing the package's
modules reaches none of them, and a served command would import them in its child, every time.
Their names come from the modules' own import statements (a library's only within that
library, one step deep), so there is no list to keep up to date.
"""

from __future__ import annotations

import pkgutil
import re
from collections.abc import Callable
from importlib import import_module
from importlib.util import resolve_name
from types import ModuleType

# Never preloaded: the MCP SDK and the terminal browser are heavy, and their verbs run
# in-process.
NOT_PRELOADED = ('trading_checkpoints.agent.mcp', 'trading_checkpoints.ui')
# Libraries only the long-running verbs use (run in-process, never on the server).
NOT_PRELOADED_LIBRARIES = frozenset({'mcp', 'pydantic', 'textual', 'rich', 'watchfiles'})


def preload() -> None:
    """Imports every module of the package a verb may need (the MCP server's and the
    browser's excepted), every module those import inside their functions, and builds the
    parsers (see the module notes)."""
    import trading_checkpoints

    ours = [
        module.name
        for module in pkgutil.walk_packages(trading_checkpoints.__path__, 'trading_checkpoints.')
        # the MCP SDK, and the modules that run a command when imported
        if not module.name.startswith(NOT_PRELOADED) and not module.name.endswith('.__main__')
    ]
    libraries = _preload(ours, lambda importer, name: _top(name) not in NOT_PRELOADED_LIBRARIES)
    # One step into those libraries' own lazy imports, not further: dulwich's reach every part
    # of it (merge, rebase, LFS), which no verb uses.
    _preload(libraries, lambda importer, name: _top(name) == _top(importer))
    _build_parsers()


def _build_parsers() -> None:
    """Builds the hook's parser and parses a command line with it and with the command group,
    so a child finds the parser built and the regular expressions parsing compiles in ``re``'s
    cache (a hook event's child otherwise spends a few milliseconds on them)."""
    from ..agent.hooks.process import parser
    from ..cli.app import cli

    parser().parse_args(['--harness', 'claude'])
    with cli.make_context('checkpoints', ['status'], resilient_parsing=True):
        pass


def _top(name: str) -> str:
    return name.partition('.')[0]


def _preload(names: list[str], wanted: Callable[[str, str], bool]) -> list[str]:
    """Imports ``names``, then what each imports inside its functions where ``wanted(importer,
    imported)``; returns the latter's names."""
    found: dict[str, None] = {}
    for name in names:
        try:
            loaded = import_module(name)
        except ImportError:
            continue  # an optional extra or library that is not installed (watch, ui)
        for imported, attributes in _imported_in_functions(loaded):
            if not wanted(name, imported):
                continue
            try:
                module = import_module(imported)
            except ImportError:
                continue
            for attribute in attributes:  # ``from X import Y`` may import X.Y on access
                try:
                    getattr(module, attribute, None)
                except ImportError:
                    continue
            found[imported] = None
    return list(found)


# An indented import: inside a function (or a ``try``/``if``): its module, or its package and
# the names taken from it (on the first line).
_INDENTED_IMPORT = re.compile(
    r'^[ \t]+(?:from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+\(?([\w, \t]*)|import[ \t]+([\w.]+))',
    re.MULTILINE,
)


def _imported_in_functions(module: ModuleType) -> list[tuple[str, list[str]]]:
    """The imports indented in ``module``'s source (inside its functions): each module's
    absolute name, with the names a ``from`` import takes from it."""
    source = getattr(module, '__file__', None)
    if source is None or not source.endswith('.py'):
        return []
    try:
        with open(source, encoding='utf-8') as file:
            text = file.read()
    except (OSError, ValueError):
        return []
    found: list[tuple[str, list[str]]] = []
    for origin, names, plain in _INDENTED_IMPORT.findall(text):
        if plain:
            found.append((plain, []))
            continue
        try:
            absolute = resolve_name(origin, module.__package__ or '')
        except (ImportError, ValueError):
            continue
        found.append((absolute, [name.split()[0] for name in names.split(',') if name.strip()]))
    return found
