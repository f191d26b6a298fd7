"""The hooks' cost where users feel it: the real Claude Code and Gemini CLI running a scripted turn.

Run by hand from the project root (never as a test). It needs git, and node and npm the first
time (the harnesses are installed from npm as for ``tests/harness/``):

    python benchmarks/bench_harness.py                  # all of it, 7 rounds (~40 min on 2 cores)
    python benchmarks/bench_harness.py --venv /tmp/hc   # reuse (or create) that virtualenv
    python benchmarks/bench_harness.py --harness claude --sizes 200 --rounds 9
    python benchmarks/bench_harness.py --no-turns       # only the hook command alone (~3 min)
    python benchmarks/bench_harness.py --before DIR --only server --json out.json

It installs this checkout into a fresh virtualenv (``installed.py``, not editable: the hook
command is the one users run) and, for each ``--sizes`` (tracked 1 KB files on desk ``main``):

**Turns.** The real harnesses (pinned in ``tests/helpers/harness/install.py``), each in a
project folder holding ``./workspace`` with a HOME of its own, driven offline by the fake model
servers of ``tests/helpers/harness/`` (``driver.Session``): a prompt, then one tool call per
model reply, Write (a new file), Edit (a tracked file), Read, Bash (``echo N >`` a tracked
file) (Gemini CLI: ``write_file``, ``replace``, ``read_file``, ``run_shell_command``), then a
final text. Each variant has a copy of the same desk of its own, so each sees only its own
turns: no hooks installed; the hooks ``checkpoints hook install`` writes for the installation,
on the warm command server or with ``CHECKPOINTS_SERVER=off``; each of those with and without
``checkpoints watch`` running on the desk; and the same hook entries running a command that
does nothing (``true``, and the virtualenv's ``python -c pass``), the floor under any hook, which
the report subtracts too. Every round runs every variant of every size and
harness once, in an order turned by one place each round, so a load that comes and goes falls
on all alike; the first round warms up (page cache, the command server, the harness's caches)
and is not counted. A turn's time is the harness process's, from its start to its exit (the
``window`` column: from the model's first request of the conversation to its last, which
leaves out the harness's start and the prompt's and the stop's hooks). The hooks' cost is a
variant's median less the median of the run without hooks (with the same watch state), per
tool call (the turn's four) and as a share of that turn.

**The hook command alone**, per event kind, as a harness runs it (its absolute command from the
settings file, the real Claude Code event captured in ``tests/helpers/hook_events/real/`` on
stdin, in the project folder), in the order of a turn: ``UserPromptSubmit``, ``PreToolUse``
Write on an unchanged desk, the file written, ``PostToolUse`` Write, ``PreToolUse`` then
``PostToolUse`` Bash with nothing changed, again with one file changed, ``Stop``; served and
with ``CHECKPOINTS_SERVER=off`` (two alike workspaces). Against ``python -c pass`` (the
virtualenv's) and ``git add -A && git commit -q`` of the same change (a new file; one file
changed) in a git work tree of the same files, run as one process (``sh -c``), in the same
rounds.

``--before DIR`` also installs another checkout (e.g. ``git archive main | tar -x -C DIR``) into
a virtualenv of its own and runs its hooks in the same rounds (``before:`` rows). Figures are
medians in milliseconds; the load average is printed at the start and the end.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from installed import GIT, ROOT, build_workspace, git_env, git_repository, make_venv, timed_process

sys.path.insert(0, str(ROOT / 'tests'))  # the drivers of tests/helpers/harness/

from helpers import HOOK_EVENTS  # noqa: E402
from helpers.harness.driver import HARNESSES, Harness, Session, prepare_home  # noqa: E402
from helpers.harness.install import Missing  # noqa: E402

DESK = Path('workspace', 'desks', 'main')
TOOL_CALLS = 4
IDLE = '1800'  # seconds the command server waits between clients: it outlives the gaps
# Targets: the hooks' share of a turn (200 files), per variant; a hook event's ratio.
TURN_TARGETS = {'hooks': 0.25, 'hooks, no server': 0.60}
HISTORY = 250  # checkpoints on the desk before the first round
SIZE_TARGET = 1.5  # per-tool-call cost at the largest size against the smallest
NO_OP_TARGET = {True: 2.0, False: 6.0}  # x python -c pass, served / in-process
RECORDING_TARGET = 1.5  # x git add -A && git commit -q of the same change


def rotated(items: list[Any], by: int) -> list[Any]:
    by %= max(len(items), 1)
    return items[by:] + items[:by]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float('nan')


# -- turns ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    """How a turn runs: whose hooks (None: no hooks), on the command server or not, with
    ``checkpoints watch`` on the desk or not; or the same hook entries running a command that
    does nothing (``no_op``: the harness's own cost of running a hook, and of starting Python
    for one), the floor under any hook."""

    label: str  # '' or 'before: '
    bin_dir: Path | None
    server: bool = True
    watch: bool = False
    no_op: str | None = None

    @property
    def name(self) -> str:
        if self.no_op is not None:
            return f'no-op hooks: {self.no_op}'
        hooks = (
            'no hooks' if self.bin_dir is None else 'hooks' + ('' if self.server else ', no server')
        )
        return f'{self.label}{hooks}{", watch" if self.watch else ""}'

    @property
    def baseline(self) -> str:
        return 'no hooks, watch' if self.watch else 'no hooks'


@dataclass
class Project:
    """A project folder holding ``./workspace`` (a copy of the size's desk), a HOME, and the
    variant it runs."""

    harness: Harness
    files: int
    variant: Variant
    folder: Path
    home: Path
    env: dict[str, str]
    watcher: subprocess.Popen[bytes] | None = None
    samples: list[tuple[float, float]] = field(default_factory=list)  # (wall, window) seconds

    @property
    def desk(self) -> Path:
        return self.folder / DESK


NO_OPS = ('true', 'python -c pass')  # the hook commands of the no-op variants


def variants(after: Path, before: Path | None) -> list[Variant]:
    found = [Variant('', None), Variant('', None, watch=True)]
    found += [Variant('', after, no_op=command) for command in NO_OPS]
    for label, bin_dir in (('', after), ('before: ', before)):
        if bin_dir is None:
            continue
        for server in (True, False):
            for watch in (False, True):
                found.append(Variant(label, bin_dir, server, watch))
    return found


def new_project(
    harness: Harness, files: int, variant: Variant, template: Path, base: Path, after: Path
) -> Project:
    """A copy of the template workspace, with the variant's hooks installed and its watch
    started."""
    slug = variant.name.replace(':', '').replace(', ', '-').replace(' ', '-')
    root = base / f'{harness.name}-{files}-{slug}'
    folder, home = root / 'project', root / 'home'
    shutil.copytree(template, folder / 'workspace', symlinks=True)
    prepare_home(home, [folder])
    env = session_env(base, variant.server)
    if variant.bin_dir is not None:
        subprocess.run(
            [str(variant.bin_dir / 'checkpoints'), 'hook', 'install', '--harness', harness.name],
            cwd=folder,
            env={**env, 'HOME': str(home)},
            check=True,
            capture_output=True,
        )
    if variant.no_op is not None:
        assert variant.bin_dir is not None
        no_op_hooks(folder, variant.no_op.replace('python', str(variant.bin_dir / 'python')))
    project = Project(harness, files, variant, folder, home, env)
    if variant.watch:
        project.watcher = start_watch(variant.bin_dir or after, folder / 'workspace', env)
    return project


def no_op_hooks(folder: Path, command: str) -> None:
    """Points every hook entry of the project's settings file at ``command``."""
    found = [*folder.glob('.claude/settings*.json'), *folder.glob('.gemini/settings.json')]
    assert len(found) == 1, found
    settings = json.loads(found[0].read_text())
    for groups in settings['hooks'].values():
        for group in groups:
            for entry in group['hooks']:
                entry['command'] = command
    found[0].write_text(json.dumps(settings, indent=2))


def session_env(base: Path, server: bool) -> dict[str, str]:
    """What the harness (and so its hooks) runs with beyond the driver's own environment: the
    virtualenv's package, not this checkout's (an empty ``PYTHONPATH``), and one folder for
    the command server's socket that outlives the runs."""
    env = {'PYTHONPATH': '', 'XDG_RUNTIME_DIR': str(base / 'run'), 'CHECKPOINTS_SERVER_IDLE': IDLE}
    if not server:
        env['CHECKPOINTS_SERVER'] = 'off'
    return env


def start_watch(bin_dir: Path, workspace: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(('CHECKPOINTS_', 'PYTHON'))}
    full.update(env)
    argv = [str(bin_dir / 'checkpoints'), '--workspace', str(workspace), '--desk', 'main', 'watch']
    process = subprocess.Popen(argv, env=full, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith(b'Watching'):
        process.kill()
        raise SystemExit(f'checkpoints watch did not start: {line!r}')
    return process


def stop_watch(project: Project) -> None:
    if project.watcher is not None:
        project.watcher.send_signal(signal.SIGTERM)
        project.watcher.wait(60)


def script(harness: Harness, desk: Path, number: int) -> list[Any]:
    """The turn: Write, Edit, Read, Bash, one per model reply, then a final text."""
    new = desk / 'notes' / f'turn{number:03d}.md'
    old = (desk / 'notes' / 'old.md').read_text().strip()
    return [
        [harness.write(new, f'turn {number}\n')],
        [harness.edit(desk / 'notes' / 'old.md', old, f'round {number + 1}')],
        [harness.read(new)],
        [harness.shell(f'echo {number} > {DESK}/notes/shell.md')],
        'done',
    ]


def play_turn(project: Project, number: int) -> tuple[float, float]:
    """One turn; its wall time and its window (first to last request of the conversation)."""
    desk = project.desk
    replies = script(project.harness, desk, number)
    start = time.perf_counter()
    session = Session(
        project.harness, project.folder, project.home, 'run the steps', replies, env=project.env
    )
    done = session.wait()
    wall = time.perf_counter() - start
    written = {
        desk / 'notes' / f'turn{number:03d}.md': f'turn {number}\n',
        desk / 'notes' / 'old.md': f'round {number + 1}\n',
        desk / 'notes' / 'shell.md': f'{number}\n',
    }
    wrong = [str(path) for path, text in written.items() if read(path) != text]
    if done.code != 0 or wrong:
        raise SystemExit(f'{project.variant.name}: the turn went wrong ({wrong}):\n{done}')
    conversation = done.conversation()
    return wall, conversation[-1].time - conversation[0].time


def read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def run_turns(projects: list[Project], rounds: int) -> None:
    for number in range(rounds + 1):  # round 0 warms up
        for project in rotated(projects, number):
            sample = play_turn(project, number)
            if number:
                project.samples.append(sample)
        load = os.getloadavg()[0]
        print(f'  turns: round {number} of {rounds} done (load {load:.1f})', flush=True)


# -- the hook command alone -------------------------------------------------------------------

REAL_EVENTS = HOOK_EVENTS / 'real'
GIT_COMMIT = 'git add -A && git commit -q -m change'
GIT_NEW = 'git add -A && git commit -q (a new file)'
GIT_CHANGED = 'git add -A && git commit -q (one file changed)'
PYTHON = 'python -c pass'


def new_file(desk: Path, number: int) -> Path:
    return desk / 'notes' / f'new{number:03d}.md'


def write_new_file(desk: Path, number: int) -> None:
    new_file(desk, number).write_text(f'new {number}\n')


def change_one_file(desk: Path, number: int) -> None:
    (desk / 'notes' / 'shell.md').write_text(f'shell {number}\n')


@dataclass(frozen=True)
class Step:
    """One hook event of the turn the hook rows play: its row (None: played, not timed), the
    captured event sent, the key of its tool call (its ``tool_use_id``), what the tool does on
    the desk before the event, and for an event that records a change, the git row it is
    compared with."""

    row: str | None
    event: str
    call: str = ''
    tool: Callable[[Path, int], None] | None = None
    git: str | None = None


STEPS = (
    Step('UserPromptSubmit', 'claude-UserPromptSubmit.json'),
    Step('PreToolUse Write (unchanged desk)', 'claude-write-PreToolUse.json', 'w'),
    Step(
        'PostToolUse Write (a new file)',
        'claude-write-PostToolUse.json',
        'w',
        write_new_file,
        GIT_NEW,
    ),
    Step('PreToolUse Bash (unchanged desk)', 'claude-shell-PreToolUse.json', 'a'),
    Step('PostToolUse Bash (nothing changed)', 'claude-shell-PostToolUse.json', 'a'),
    Step(None, 'claude-shell-PreToolUse.json', 'b'),
    Step(
        'PostToolUse Bash (one file changed)',
        'claude-shell-PostToolUse.json',
        'b',
        change_one_file,
        GIT_CHANGED,
    ),
    Step('Stop', 'claude-Stop.json'),
)


@dataclass(frozen=True)
class HookProject:
    """A project folder holding a copy of the size's workspace, with one installation's hooks,
    played on the command server or not."""

    label: str
    server: bool
    folder: Path
    home: Path
    argv: list[str]  # the hook command from the settings file
    env: dict[str, str]

    @property
    def desk(self) -> Path:
        return self.folder / DESK

    def row(self, step: str) -> str:
        return f'{self.label}{step}{"" if self.server else ", no server"}'


def base_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(('CHECKPOINTS_', 'PYTHON'))}


def new_hook_project(
    label: str, bin_dir: Path, server: bool, template: Path, root: Path, base: Path
) -> HookProject:
    folder, home = root / 'project', root / 'home'
    shutil.copytree(template, folder / 'workspace', symlinks=True)
    home.mkdir()
    env = {**base_env(), 'HOME': str(home), **session_env(base, server)}
    del env['PYTHONPATH']
    subprocess.run(
        [str(bin_dir / 'checkpoints'), 'hook', 'install', '--harness', 'claude'],
        cwd=folder,
        env=env,
        check=True,
        capture_output=True,
    )
    settings = json.loads((folder / '.claude' / 'settings.local.json').read_text())
    command = settings['hooks']['PreToolUse'][0]['hooks'][0]['command']
    return HookProject(label, server, folder, home, shlex.split(command), env)


def event_file(step: Step, project: HookProject, number: int, folder: Path) -> Path:
    """The captured event, filled in for this project and round, as a file for stdin."""
    text = (REAL_EVENTS / step.event).read_text()
    names = {'${PROJECT}': project.folder, '${HOME}': project.home, '${PROJECT_SLUG}': 'bench'}
    for name, value in names.items():
        text = text.replace(name, str(value))
    event = json.loads(text)
    if step.call:
        event['tool_use_id'] = f'toolu_bench{number:03d}{step.call}'
    if event.get('tool_name') == 'Write':  # a new file every round
        for part in (event['tool_input'], event.get('tool_response') or {}):
            for key in ('file_path', 'filePath'):
                if key in part:
                    part[key] = str(new_file(project.desk, number))
            if 'content' in part:
                part['content'] = f'new {number}\n'
    path = folder / f'{project.folder.parent.name}-{step.event}'
    path.write_text(json.dumps(event))
    return path


def run_hooks(
    projects: list[HookProject], git_tree: Path | None, python: str, rounds: int, scratch: Path
) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {}

    def add(row: str, seconds: float, number: int) -> None:
        if number:  # round 0 warms up
            samples.setdefault(row, []).append(seconds)

    genv = git_env(scratch)
    for number in range(rounds + 1):
        add(PYTHON, timed_process([python, '-c', 'pass'], scratch, None, base_env()), number)
        for step in STEPS:
            for project in rotated(projects, number):
                if step.tool is not None:
                    step.tool(project.desk, number)
                stdin = event_file(step, project, number, scratch)
                elapsed = timed_process(project.argv, project.folder, stdin, project.env)
                if step.row is not None:
                    add(project.row(step.row), elapsed, number)
            if step.git is not None and step.tool is not None and git_tree is not None:
                step.tool(git_tree, number)
                argv = ['sh', '-c', GIT_COMMIT]
                add(step.git, timed_process(argv, git_tree, None, genv), number)
    return samples


# -- report -----------------------------------------------------------------------------------


def turn_report(projects: list[Project], sizes: list[int]) -> dict[str, Any]:
    """Prints the turns' table per size and harness and the sizes' ratio; the figures.

    A variant's added time is the median over the rounds of its turn less the same round's
    turn without hooks (paired, so a load that changes between rounds cancels out)."""
    figures: dict[str, Any] = {}
    added: dict[tuple[str, int, str], tuple[float, float]] = {}  # per call: turn, window
    for harness in dict.fromkeys(project.harness.name for project in projects):
        for files in sizes:
            group = {
                p.variant.name: p
                for p in projects
                if p.harness.name == harness and p.files == files
            }
            if not group:
                continue
            rounds = len(next(iter(group.values())).samples)
            print(f'\n{harness}, {files} files: medians of {rounds} rounds (ms); added: per call')
            print(
                f'{"variant":30} {"turn":>7} {"window":>7} {"+ turn":>7} {"+ share":>8} '
                f'{"+ window":>9} {"target":>14}'
            )
            for name, project in group.items():
                wall = median([s[0] for s in project.samples]) * 1000
                window = median([s[1] for s in project.samples]) * 1000
                line = f'{name:30} {wall:7.0f} {window:7.0f}'
                figures[f'{harness} {files} {name}'] = {
                    'turn_ms': wall,
                    'window_ms': window,
                    'samples_s': project.samples,
                }
                base = group.get(project.variant.baseline)
                if project.variant.bin_dir is not None and base is not None:
                    pairs = list(zip(project.samples, base.samples, strict=True))
                    per_call = median([(a[0] - b[0]) for a, b in pairs]) * 1000 / TOOL_CALLS
                    share = median([(a[0] - b[0]) / b[0] for a, b in pairs])
                    in_window = median([(a[1] - b[1]) for a, b in pairs]) * 1000 / TOOL_CALLS
                    added[(harness, files, name)] = (per_call, in_window)
                    line += f' {per_call:7.0f} {share:8.0%} {in_window:9.0f}'
                    target = TURN_TARGETS.get(name.removeprefix('before: ').removesuffix(', watch'))
                    if target is not None:
                        verdict = 'met' if share <= target else 'MISSED'
                        line += f' {f"<= {target:.0%} {verdict}":>14}'
                print(line)
    floor = f'no-op hooks: {NO_OPS[-1]}'
    print(f'\nadded per call beyond the same hook entries running {NO_OPS[-1]!r}')
    for (harness, files, name), (per_call, _) in added.items():
        if name.startswith('no-op') or (harness, files, floor) not in added:
            continue
        beyond = per_call - added[(harness, files, floor)][0]
        print(f'  {harness:7} {files:6} {name:30} {beyond:6.0f}')
    if len(sizes) > 1:
        small, large = min(sizes), max(sizes)
        print(f'\nadded per call at {large} files against {small} (target <= {SIZE_TARGET})')
        print(f'  {"":7} {"variant":30} {"turn":>6} {"window":>6}')
        for (harness, files, name), (per_call, in_window) in added.items():
            if files == large and (harness, small, name) in added:
                small_call, small_window = added[(harness, small, name)]
                ratios = (per_call / small_call, in_window / small_window)
                verdict = 'met' if max(ratios) <= SIZE_TARGET else 'MISSED'
                print(f'  {harness:7} {name:30} {ratios[0]:6.2f} {ratios[1]:6.2f} {verdict}')
    return figures


def step_of(row: str) -> Step | None:
    """The step a hook row times (None for the baselines)."""
    name = row.removeprefix('before: ').removesuffix(', no server')
    return next((step for step in STEPS if step.row == name), None)


def row_place(row: str) -> tuple[int, int, int]:
    """Where a row is printed: its step's place (the git rows after the step they match),
    this installation before the other, served before in-process."""
    step = step_of(row)
    if step is not None:
        return STEPS.index(step), row.startswith('before: '), row.endswith(', no server')
    places = [at for at, step in enumerate(STEPS) if step.git == row]
    return (places[0], 2, 0) if places else (-1, 0, 0)


def hook_report(samples: dict[str, list[float]], files: int) -> dict[str, float]:
    medians = {row: median(values) * 1000 for row, values in samples.items()}
    floor = medians[PYTHON]
    rounds = len(samples[PYTHON])
    print(f'\nthe hook command alone, {files} files: medians of {rounds} rounds (ms)')
    print(f'{"row":58} {"ms":>7} {"x python":>9} {"x git":>6} {"target":>14}')
    for row in sorted(medians, key=row_place):
        value = medians[row]
        line = f'{row:58} {value:7.1f} {value / floor:9.2f}'
        step = step_of(row)
        if step is None:
            print(line)
            continue
        if step.git is not None and step.git in medians:
            ratio = value / medians[step.git]
            verdict = 'met' if ratio <= RECORDING_TARGET else 'MISSED'
            line += f' {ratio:6.2f} {f"<= {RECORDING_TARGET} {verdict}":>14}'
        elif step.git is None:
            target = NO_OP_TARGET[not row.endswith(', no server')]
            verdict = 'met' if value / floor <= target else 'MISSED'
            line += f' {"":6} {f"<= {target:.0f}x {verdict}":>14}'
        print(line)
    return medians


# -- main -------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--venv', type=Path, help='virtualenv to use (created if missing)')
    parser.add_argument('--before', type=Path, help='another checkout to time alongside')
    parser.add_argument('--harness', choices=sorted(HARNESSES), action='append')
    parser.add_argument('--sizes', type=int, nargs='+', default=[200, 10_000])
    parser.add_argument('--rounds', type=int, default=7)
    parser.add_argument('--only', help='only the turn variants whose name holds this text')
    parser.add_argument(
        '--variant',
        action='append',
        help='only this turn variant, named as printed without "before: " (repeatable)',
    )
    parser.add_argument('--no-turns', action='store_true', help='only the hook command alone')
    parser.add_argument('--no-hooks', action='store_true', help='only the turns')
    parser.add_argument('--json', type=Path, help='also write the medians here')
    args = parser.parse_args()
    harnesses = [HARNESSES[name] for name in args.harness or sorted(HARNESSES)]
    if not args.no_turns:
        for harness in harnesses:
            try:
                harness.installed()
            except Missing as missing:
                raise SystemExit(f'{harness.name}: {missing}') from None

    load = os.getloadavg()
    print(f'load average at the start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, ', end='')
    print(f'{os.cpu_count()} cores; python {sys.version.split()[0]}', flush=True)
    report: dict[str, Any] = {'sizes': args.sizes, 'rounds': args.rounds, 'load_start': load}
    projects: list[Project] = []
    with tempfile.TemporaryDirectory(prefix='bench-harness-') as scratch:
        base = Path(scratch)
        (base / 'run').mkdir(mode=0o700)
        after = make_venv(args.venv or base / 'venv')
        before = make_venv(base / 'venv-before', args.before.resolve()) if args.before else None
        installations = [('', after)] + ([('before: ', before)] if before else [])
        try:
            templates = {}
            for files in args.sizes:
                templates[files] = template(base / f'template-{files}', files, after)
                print(f'  built the {files}-file desk', flush=True)
            if not args.no_hooks:
                report['hooks'] = {}
                for files in args.sizes:
                    hook_projects = [
                        new_hook_project(
                            label, bin_dir, server, templates[files],
                            base / f'hooks-{files}-{label.strip(": ")}-{server}', base,
                        )
                        for label, bin_dir in installations
                        for server in (True, False)
                    ]  # fmt: skip
                    git_tree = None
                    if GIT is not None:
                        git_tree = git_repository(
                            templates[files] / 'desks' / 'main', base / f'git-{files}'
                        )
                    samples = run_hooks(
                        hook_projects, git_tree, str(after / 'python'), args.rounds, base
                    )
                    report['hooks'][files] = hook_report(samples, files)
            if not args.no_turns:
                chosen = [
                    v for v in variants(after, before)
                    if v.bin_dir is None or v.no_op is not None
                    or (args.only is None or args.only in v.name)
                    and (args.variant is None or v.name.removeprefix(v.label) in args.variant)
                ]  # fmt: skip
                for files in args.sizes:
                    for harness in harnesses:
                        for variant in chosen:
                            projects.append(
                                new_project(harness, files, variant, templates[files], base, after)
                            )
                print(f'  {len(projects)} turn variants ready', flush=True)
                run_turns(projects, args.rounds)
                report['turns'] = turn_report(projects, args.sizes)
        finally:
            for project in projects:
                stop_watch(project)
    load = os.getloadavg()
    report['load_end'] = load
    print(f'\nload average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}')
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


# A person's checkpoints before the benchmark: Memory.md rewritten and snapshotted each time.
HISTORY_CODE = """\
import sys
from pathlib import Path
from trading_checkpoints import Workspace
desk = Workspace(Path(sys.argv[1])).desk('main')
memory = desk.desk_directory / 'Memory.md'
for number in range(int(sys.argv[2])):
    memory.write_text(f'# Memory\\n\\nversion {number}\\n')
    desk.snapshot(f'version {number}')
"""


def template(root: Path, files: int, bin_dir: Path, history: int = HISTORY) -> Path:
    """A workspace whose desk holds ``files`` tracked files and ``notes/``, with ``history``
    checkpoints a person took (a desk in use: a new turn's first event looks back through
    them): every project starts from a copy of it."""
    desk = build_workspace(root, files, bin_dir)
    (desk / 'notes').mkdir()
    (desk / 'notes' / 'old.md').write_text('round 0\n')
    (desk / 'notes' / 'shell.md').write_text('shell\n')
    python = str(bin_dir / 'python')
    subprocess.run([python, '-c', HISTORY_CODE, str(root), str(history)], check=True)
    return root


if __name__ == '__main__':
    main()
