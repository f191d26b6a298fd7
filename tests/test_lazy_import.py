"""Start-up cost: importing the package or asking the CLI for help must not load dulwich."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _modules_after(code: str) -> set[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run(
        [sys.executable, '-c', f'{code}\nimport sys\nprint(" ".join(sys.modules))'],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return set(out.split())


def test_import_package_does_not_load_dulwich() -> None:
    modules = _modules_after('import trading_checkpoints')
    assert 'trading_checkpoints' in modules
    assert not any(name.startswith('dulwich') for name in modules)


def test_cli_help_does_not_load_dulwich() -> None:
    code = (
        'import sys\nfrom trading_checkpoints.cli import cli\n'
        'try:\n    cli(["--help"], prog_name="checkpoints")\nexcept SystemExit:\n    pass'
    )
    modules = _modules_after(code)
    assert 'trading_checkpoints.cli' in modules
    assert not any(name.startswith('dulwich') for name in modules)


def test_lazy_names_resolve_and_unknown_names_fail() -> None:
    import trading_checkpoints

    assert trading_checkpoints.Checkpoints.__name__ == 'Checkpoints'
    assert trading_checkpoints.RestoreResult.__name__ == 'RestoreResult'
    try:
        trading_checkpoints.NoSuchThing  # noqa: B018
    except AttributeError as error:
        assert 'NoSuchThing' in str(error)
    else:
        raise AssertionError('an unknown attribute must raise AttributeError')
