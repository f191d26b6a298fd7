"""The preload's steps, in this process, on a package written for the test: the imports found
inside a module's functions, and those imported in turn (``test_preload.py`` runs the whole
preload in a fresh interpreter, as the server does)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from importlib import import_module
from pathlib import Path

import pytest

from trading_checkpoints.warm import preload

MOD = """\
import os
from json import loads


def f():
    import zlib
    from email import message, parser as p
    from . import sibling
    from .sub import (thing,
        other)
    if os:
        import xml.dom.minidom
    from ... import beyond
"""

LAZY_INIT = """\
import importlib

asked = []


def __getattr__(name):
    asked.append(name)
    if name == 'broken':
        raise ImportError(name)
    return importlib.import_module('.' + name, __name__)
"""


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """``tcpre``: a module importing inside a function, and a package whose names import its
    submodules on access; on the import path, and forgotten afterwards."""
    root = tmp_path / 'tcpre'
    (root / 'lazy').mkdir(parents=True)
    (root / '__init__.py').write_text('')
    (root / 'mod.py').write_text(MOD)
    (root / 'sub.py').write_text('thing = other = 1\n')
    (root / 'sibling.py').write_text('')
    (root / 'user.py').write_text(
        'def f():\n    import tcpre.nothing_here\n    from .lazy import broken, part\n'
    )
    (root / 'lazy' / '__init__.py').write_text(LAZY_INIT)
    (root / 'lazy' / 'part.py').write_text('')
    (tmp_path / 'tcpre_top.py').write_text('def f():\n    from . import x\n    import zlib\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    yield root
    for name in [name for name in sys.modules if name.partition('.')[0] in ('tcpre', 'tcpre_top')]:
        del sys.modules[name]


def test_the_imports_inside_functions_are_found_with_the_names_taken(package: Path) -> None:
    found = preload._imported_in_functions(import_module('tcpre.mod'))
    assert found == [
        ('zlib', []),
        ('email', ['message', 'parser']),
        ('tcpre', ['sibling']),
        ('tcpre.sub', ['thing']),  # the names on the first line
        ('xml.dom.minidom', []),
    ]  # a relative import beyond the top package names nothing


def test_a_relative_import_outside_a_package_names_nothing(package: Path) -> None:
    assert preload._imported_in_functions(import_module('tcpre_top')) == [('zlib', [])]


def test_a_module_without_source_has_no_imports_to_find(package: Path) -> None:
    assert preload._imported_in_functions(sys) == []
    compiled = import_module('zlib')
    if getattr(compiled, '__file__', None):  # a compiled extension, where it is one
        assert preload._imported_in_functions(compiled) == []
    gone = import_module('tcpre.mod')
    (package / 'mod.py').unlink()  # its file gone since it was imported
    assert preload._imported_in_functions(gone) == []


def test_the_imports_found_are_imported_and_their_names_taken(package: Path) -> None:
    found = preload._preload(
        ['tcpre.missing', 'tcpre.user'], lambda importer, name: name.startswith('tcpre')
    )
    assert found == ['tcpre.lazy']  # the imports that failed are left out, and no more
    lazy = sys.modules['tcpre.lazy']
    assert lazy.asked == ['broken', 'part']  # type: ignore[attr-defined]
    assert 'tcpre.lazy.part' in sys.modules
    assert 'tcpre.user' in sys.modules and 'tcpre.missing' not in sys.modules


def test_only_the_imports_wanted_are_imported(package: Path) -> None:
    seen: list[tuple[str, str]] = []

    def wanted(importer: str, name: str) -> bool:
        seen.append((importer, name))
        return name == 'tcpre.sub'

    assert preload._preload(['tcpre.mod'], wanted) == ['tcpre.sub']
    assert ('tcpre.mod', 'xml.dom.minidom') in seen
    assert 'tcpre.sibling' not in sys.modules and 'tcpre.sub' in sys.modules


def test_a_library_is_named_by_its_top_package() -> None:
    assert preload._top('dulwich.objects') == 'dulwich'
    assert preload._top('click') == 'click'


def test_a_name_the_package_does_not_hold_yet_is_passed_over(package: Path) -> None:
    """``from . import sibling`` names a module not imported yet: no attribute of the package."""
    assert preload._preload(['tcpre.mod'], lambda importer, name: name == 'tcpre') == ['tcpre']


def test_the_parsers_are_built_ahead_for_the_children() -> None:
    """The hook's parser is built once, before any child needs it, and the command group makes
    a context of a command line without an error (it would stop the preload, and the server)."""
    from trading_checkpoints.agent.hooks.process import parser

    parser.cache_clear()
    preload._build_parsers()
    assert parser.cache_info().currsize == 1
    built = parser()
    preload._build_parsers()
    assert parser() is built, 'built once'
