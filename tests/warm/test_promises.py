"""Every promise docs/performance.md makes names the test that checks it (``<!-- tested:
FILE::TEST -->``): each such test exists."""

from __future__ import annotations

import ast
import re

from helpers import ROOT

MARKER = re.compile(r'<!-- tested: ([\w/.]+)::(\w+) -->')


def test_every_test_the_performance_page_names_exists() -> None:
    text = (ROOT / 'docs' / 'performance.md').read_text()
    named = MARKER.findall(text)
    assert len(named) >= 30
    missing = []
    for path, name in named:
        tree = ast.parse((ROOT / path).read_text())
        functions = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
        if name not in functions:
            missing.append(f'{path}::{name}')
    assert missing == []
