"""The real Claude Code and Gemini CLI, run headless in a folder against a scripted model.

``HARNESSES`` describes both: how each is started (``claude -p``; ``gemini -p --yolo``), the tool
calls it understands (``write``, ``edit``, ``read``, ``shell`` give the :class:`Call` of each
harness's own tool), its fake model API and its settings files. ``start`` runs one in a folder,
with a HOME of the test's own (so ``~/.claude``, ``~/.gemini``, trusted folders and transcripts
are the test's), the model's API on loopback, stdin closed; ``Session.wait`` gives the
:class:`Run`: exit status, output, every request the model got, Claude Code's session transcript
(a failing hook's message in ``-p`` mode is only there).

Hooks the harness runs inherit its environment, which carries ``helpers.processes``'s: the
package imported from this checkout. ``install_hooks`` runs this checkout's
``checkpoints hook install`` with the test's HOME.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from helpers.cli import checkpoints
from helpers.harness.install import Installed, Missing, ensure
from helpers.harness.model import AnthropicModel, Call, FakeModel, GeminiModel, Reply, Request
from helpers.processes import environment

TIMEOUT = 180  # seconds a harness run may take before it is killed (a loaded 2-core machine)
GEMINI_MODEL = 'gemini-2.5-flash'  # pinned: else Gemini CLI first asks the API to choose one
CLAUDE_TOOLS = 'Write Edit Read Bash'

# What the developer's environment must not hand a harness: real credentials and endpoints,
# and the variables that make Gemini CLI strip its hooks' environment (``PYTHONPATH`` with it:
# a hook would then run the installed package, not this checkout).
_LEFT_OUT = ('ANTHROPIC_', 'CLAUDE_', 'GEMINI_', 'GOOGLE_', 'VERTEX', 'CLOUDSDK_', 'GITHUB_SHA')


@dataclass(frozen=True)
class Harness:
    """One agent harness: its name, the settings files it reads and its model's API."""

    name: str
    model: type[FakeModel]
    project_settings: tuple[str, ...]  # relative to the folder it is started in
    global_settings: tuple[str, ...]  # relative to HOME

    def write(self, path: os.PathLike[str] | str, content: str) -> Call:
        tool = 'Write' if self.name == 'claude' else 'write_file'
        return Call(tool, {'file_path': os.fspath(path), 'content': content})

    def edit(self, path: os.PathLike[str] | str, old: str, new: str) -> Call:
        tool = 'Edit' if self.name == 'claude' else 'replace'
        arguments = {'file_path': os.fspath(path), 'old_string': old, 'new_string': new}
        if self.name == 'gemini':
            arguments['instruction'] = 'replace the text'
        return Call(tool, arguments)

    def read(self, path: os.PathLike[str] | str) -> Call:
        tool = 'Read' if self.name == 'claude' else 'read_file'
        return Call(tool, {'file_path': os.fspath(path)})

    def shell(self, command: str) -> Call:
        tool = 'Bash' if self.name == 'claude' else 'run_shell_command'
        return Call(tool, {'command': command, 'description': 'run a command'})

    def tool_results(self, request: Request) -> list[dict[str, Any]]:
        """What the tools answered, as the model is sent it in ``request`` (every one so far)."""
        return self.model.tool_results(request)  # type: ignore[attr-defined]

    def installed(self) -> Installed:
        """The installed harness; :class:`Missing` (with the one-line reason) when it is not."""
        found = _installed().get(self.name)
        if isinstance(found, Installed):
            return found
        raise found if isinstance(found, Missing) else Missing(f'{self.name} is not pinned')


CLAUDE = Harness(
    'claude', AnthropicModel, ('.claude', 'settings.local.json'), ('.claude', 'settings.json')
)
GEMINI = Harness('gemini', GeminiModel, ('.gemini', 'settings.json'), ('.gemini', 'settings.json'))
HARNESSES = {harness.name: harness for harness in (CLAUDE, GEMINI)}

_found: dict[str, Installed | Missing] = {}


def _installed() -> dict[str, Installed | Missing]:
    if not _found:
        _found.update(ensure())
    return _found


def prepare_home(home: Path, trusted: Sequence[Path] = ()) -> Path:
    """A HOME for a harness run: Gemini CLI set to the API key, without usage statistics or
    updates, trusting ``trusted``; Claude Code needs nothing. Returns ``home``."""
    gemini = home / '.gemini'
    gemini.mkdir(parents=True, exist_ok=True)
    settings = gemini / 'settings.json'
    if not settings.exists():
        settings.write_text(
            json.dumps(
                {
                    'security': {'auth': {'selectedType': 'gemini-api-key'}},
                    'privacy': {'usageStatisticsEnabled': False},
                    'general': {'enableAutoUpdate': False, 'enableAutoUpdateNotification': False},
                },
                indent=2,
            )
        )
    trust(home, *trusted)
    return home


def trust(home: Path, *folders: Path) -> None:
    """Adds ``folders`` to Gemini CLI's trusted folders in ``home``."""
    path = home / '.gemini' / 'trustedFolders.json'
    data = json.loads(path.read_text()) if path.exists() else {}
    data.update({str(folder): 'TRUST_FOLDER' for folder in folders})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2))


def harness_environment(home: Path, model_url: str, runtime: Path) -> dict[str, str]:
    """The environment a harness runs with (its hooks inherit it)."""
    env = {name: value for name, value in environment().items() if not name.startswith(_LEFT_OUT)}
    env.pop('SURFACE', None)
    env.update(
        {
            'HOME': str(home),
            'XDG_CONFIG_HOME': str(home / '.config'),
            'XDG_DATA_HOME': str(home / '.local' / 'share'),
            'XDG_STATE_HOME': str(home / '.local' / 'state'),
            'XDG_CACHE_HOME': str(home / '.cache'),
            # The hooks' warm command server listens in the test's own folder and soon leaves.
            'XDG_RUNTIME_DIR': str(runtime),
            'CHECKPOINTS_SERVER_IDLE': '20',
            'ANTHROPIC_BASE_URL': model_url,
            'ANTHROPIC_API_KEY': 'sk-ant-fake-key-for-tests',
            'CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC': '1',
            'DISABLE_AUTOUPDATER': '1',
            'IS_SANDBOX': '1',  # Claude Code refuses to run as root without it
            'GOOGLE_GEMINI_BASE_URL': model_url,
            'GEMINI_API_KEY': 'fake-key-for-tests',
            'TERM': 'dumb',
        }
    )
    return env


@dataclass
class Run:
    """A finished harness run."""

    harness: Harness
    code: int
    stdout: str
    stderr: str
    requests: list[Request]
    transcript: list[dict[str, Any]] = field(default_factory=list)

    def conversation(self) -> list[Request]:
        return [request for request in self.requests if request.in_conversation]

    def tool_results(self) -> list[dict[str, Any]]:
        """Every tool result the model was sent, in order (the last request holds them all)."""
        conversation = self.conversation()
        return self.harness.tool_results(conversation[-1]) if conversation else []

    def tool_result_texts(self) -> list[str]:
        return [json.dumps(result) for result in self.tool_results()]

    def __str__(self) -> str:  # what a failed assertion shows
        return (
            f'{self.harness.name} exit {self.code}\n--- stdout\n{self.stdout[-3000:]}\n'
            f'--- stderr\n{self.stderr[-3000:]}\n--- tool results\n'
            + '\n'.join(text[:500] for text in self.tool_result_texts())
        )


class Session:
    """A harness started and running; ``wait`` ends it."""

    def __init__(
        self,
        harness: Harness,
        folder: Path,
        home: Path,
        prompt: str,
        script: Sequence[Reply],
        *,
        env: Mapping[str, str] | None = None,
        allowed_tools: str = CLAUDE_TOOLS,
        approval_mode: str = 'yolo',
        arguments: Sequence[str] = (),
        timeout: float = TIMEOUT,
    ) -> None:
        self.harness = harness
        self.home = home
        self.timeout = timeout
        self.finished: Run | None = None
        command = harness.installed().command
        self.model = harness.model(script).__enter__()
        self._runtime = Path(tempfile.mkdtemp(prefix='hr-'))  # short: a socket path's limit
        full_env = harness_environment(home, self.model.url, self._runtime)
        full_env.update(env or {})
        if harness.name == 'claude':
            argv = [*command, '-p', prompt, '--allowedTools', allowed_tools]
        else:
            argv = [*command, '-p', prompt, '--approval-mode', approval_mode, '-m', GEMINI_MODEL]
        argv += ['--output-format', 'text', *arguments]
        self.process = subprocess.Popen(
            argv,
            cwd=folder,
            env=full_env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its hooks and shells too are ended on a timeout
        )

    def kill(self) -> Run:
        """Ends the harness at once, its hooks and shells with it; what it did so far."""
        if self.finished is None:
            self._kill()
        return self.wait()

    def _kill(self) -> None:
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass  # already gone

    def wait(self) -> Run:
        """Waits for the harness to end (killed after the timeout); what it did."""
        if self.finished is not None:
            return self.finished
        try:
            stdout, stderr = self.process.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self._kill()
            stdout, stderr = self.process.communicate()
            stderr += f'\n[killed after {self.timeout} s]'
        finally:
            self.model.__exit__(None, None, None)
            shutil.rmtree(self._runtime, ignore_errors=True)
        self.finished = Run(
            self.harness,
            self.process.returncode,
            stdout,
            stderr,
            list(self.model.requests),
            transcript(self.home) if self.harness.name == 'claude' else [],
        )
        return self.finished


def run(
    harness: Harness, folder: Path, home: Path, prompt: str, script: Sequence[Reply], **options: Any
) -> Run:
    """Runs ``harness`` in ``folder`` with ``prompt`` against a model playing ``script``."""
    return Session(harness, folder, home, prompt, script, **options).wait()


def transcript(home: Path) -> list[dict[str, Any]]:
    """Every line of Claude Code's session transcripts under ``home``."""
    lines = []
    for path in sorted((home / '.claude' / 'projects').glob('*/*.jsonl')):
        for line in path.read_text().splitlines():
            if line.strip():
                lines.append(json.loads(line))
    return lines


def install_hooks(
    harness: Harness, folder: Path, home: Path, *arguments: str
) -> subprocess.CompletedProcess[str]:
    """``checkpoints hook install --harness NAME ARGUMENTS`` run in ``folder`` with ``home``."""
    return checkpoints(
        'hook',
        'install',
        '--harness',
        harness.name,
        *arguments,
        cwd=folder,
        env={'HOME': str(home)},
    )
