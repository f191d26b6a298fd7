"""The real agent harnesses the tests drive, installed from npm at pinned versions.

``python3 tests/helpers/harness/install.py`` (``.ci/run`` runs it before the tests; the test
fixtures call :func:`ensure`) installs each harness into a cache folder of its own outside the
repository, ``${XDG_CACHE_HOME:-~/.cache}/trading-checkpoints/harnesses/<package>@<version>``,
and prints one line. An installed version is found again at once; two processes installing at
the same time (two pytest-xdist workers) take turns through a lock file. Each install goes into
a temporary folder renamed into place once it runs, so a folder that exists holds a harness that
ran. Where node, npm or the registry is missing nothing is installed, and the line says why (the
harness tests then skip with that reason); the exit status is 0 when every harness is there.

Standard library only: it runs before the project's test extra is installed.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

NPM_TIMEOUT = 600  # seconds: the Claude Code package carries a ~370 MB native binary


@dataclass(frozen=True)
class Pin:
    """A harness at a pinned version: its npm package, and where its command lies inside."""

    name: str
    package: str
    version: str
    program: tuple[str, ...]  # path of the command inside the package
    needs_node: bool  # the command is a node script (else a native binary)

    @property
    def folder_name(self) -> str:
        return f'{self.package.replace("/", "+")}@{self.version}'


PINS = {
    'claude': Pin('claude', '@anthropic-ai/claude-code', '2.1.328', ('bin', 'claude.exe'), False),
    'gemini': Pin('gemini', '@google/gemini-cli', '0.61.0', ('bundle', 'gemini.js'), True),
}
NODE_MAJOR = 20  # Gemini CLI's engines field: node >= 20


@dataclass(frozen=True)
class Installed:
    """A harness ready to run: ``command`` starts it."""

    pin: Pin
    command: tuple[str, ...]


class Missing(Exception):
    """A harness cannot be installed here; the message is the one-line reason."""


def cache_root() -> Path:
    base = os.environ.get('XDG_CACHE_HOME') or os.path.join(os.path.expanduser('~'), '.cache')
    return Path(base) / 'trading-checkpoints' / 'harnesses'


def _package_folder(pin: Pin, prefix: Path) -> Path:
    return prefix.joinpath('node_modules', *pin.package.split('/'))


def _command(pin: Pin, prefix: Path, node: str | None) -> tuple[str, ...]:
    program = str(_package_folder(pin, prefix).joinpath(*pin.program))
    if pin.needs_node:
        assert node is not None
        return (node, program)
    return (program,)


def _node() -> str:
    node = shutil.which('node')
    if node is None:
        raise Missing('node is not on the PATH')
    try:
        done = subprocess.run(
            [node, '--version'], capture_output=True, text=True, timeout=60, check=True
        )
        major = int(done.stdout.strip().lstrip('v').split('.')[0])
    except (OSError, ValueError, subprocess.SubprocessError) as error:
        raise Missing(f'node does not run: {error}') from None
    if major < NODE_MAJOR:
        raise Missing(f'node {done.stdout.strip()} is older than {NODE_MAJOR}')
    return node


def _runs(command: tuple[str, ...], version: str) -> bool:
    try:
        done = subprocess.run(
            [*command, '--version'],
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
            env={**os.environ, 'DISABLE_AUTOUPDATER': '1', 'NO_COLOR': '1'},
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0 and version in done.stdout


def _npm_install(pin: Pin, prefix: Path) -> None:
    npm = shutil.which('npm')
    if npm is None:
        raise Missing('npm is not on the PATH')
    prefix.mkdir(parents=True)
    # A package.json of its own, so npm installs here and not into a parent project.
    (prefix / 'package.json').write_text(json.dumps({'name': 'harness', 'private': True}))
    try:
        done = subprocess.run(
            [
                npm,
                'install',
                '--no-audit',
                '--no-fund',
                '--no-save',
                '--fetch-retries=1',  # an unreachable registry fails in seconds, not minutes
                '--fetch-retry-mintimeout=2000',
                '--fetch-retry-maxtimeout=5000',
                '--prefix',
                str(prefix),
                f'{pin.package}@{pin.version}',
            ],
            capture_output=True,
            text=True,
            timeout=NPM_TIMEOUT,
            stdin=subprocess.DEVNULL,
            cwd=prefix,
        )
    except (OSError, subprocess.SubprocessError) as error:
        raise Missing(f'npm install {pin.package}@{pin.version} failed: {error}') from None
    if done.returncode != 0:
        raise Missing(f'npm install {pin.package}@{pin.version} failed: {_npm_error(done.stderr)}')


def _npm_error(stderr: str) -> str:
    """The line of npm's error output that says what went wrong."""
    lines = [line.removeprefix('npm error').strip() for line in stderr.splitlines()]
    lines = [
        line for line in lines if line and not line.startswith(('code ', 'syscall ', 'errno '))
    ]
    telling = [line for line in lines if not line.startswith('A complete log')]
    return (telling or lines or ['no output'])[0]


def install(pin: Pin) -> Installed:
    """The harness of ``pin``, installed first unless it already is (:class:`Missing` when it
    cannot be)."""
    node = _node() if pin.needs_node else shutil.which('node')
    root = cache_root()
    folder = root / pin.folder_name
    if folder.is_dir():  # renamed into place only once it ran: no need to run it again
        return Installed(pin, _command(pin, folder, node))
    root.mkdir(parents=True, exist_ok=True)
    with open(root / '.lock', 'a') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be installing the same one
        if folder.is_dir():
            return Installed(pin, _command(pin, folder, node))
        building = root / f'.{pin.folder_name}.{os.getpid()}'
        shutil.rmtree(building, ignore_errors=True)
        try:
            _npm_install(pin, building)
            if not _runs(_command(pin, building, node), pin.version):
                raise Missing(f'{pin.package}@{pin.version} was installed but does not run')
            building.rename(folder)
        finally:
            shutil.rmtree(building, ignore_errors=True)
    return Installed(pin, _command(pin, folder, node))


def ensure() -> dict[str, Installed | Missing]:
    """Every pinned harness, installed or with the reason it is not."""
    found: dict[str, Installed | Missing] = {}
    for name, pin in PINS.items():
        try:
            found[name] = install(pin)
        except Missing as missing:
            found[name] = missing
    return found


def main() -> int:
    found = ensure()
    parts = [
        f'{name} {PINS[name].version}' if isinstance(what, Installed) else f'{name}: {what}'
        for name, what in found.items()
    ]
    print(f'harnesses ({cache_root()}): ' + '; '.join(parts), flush=True)
    return 0 if all(isinstance(what, Installed) for what in found.values()) else 1


if __name__ == '__main__':
    sys.exit(main())
