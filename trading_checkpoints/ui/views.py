"""What the browser prints: a checkpoint's line in the timeline, its header, the file list and
the diff (syntax-highlighted, as rich renderables), and a restore's plan.

Everything a checkpoint carries (reasons, paths, tool names) is text from the repository, so
it is shown as plain text: never read as markup, control characters made visible.
"""

from __future__ import annotations

from datetime import datetime

from rich.console import Group, RenderableType
from rich.syntax import Syntax
from rich.text import Text

from ..checkpoints import Checkpoint, RestoreResult
from ..ops.blame import Blame, describe
from ..ops.results import Diff, FileChange, LogEntry
from .timeline import Run

MARKS = {'added': 'A', 'modified': 'M', 'deleted': 'D', 'type-changed': 'T', 'mode-changed': 'M'}
THEME = 'ansi_dark'


def plain(text: str) -> str:
    """``text`` with control characters (a terminal would obey them) shown as ``\\xNN``."""
    return ''.join(c if c.isprintable() else f'\\x{ord(c):02x}' for c in text)


def when(checkpoint: Checkpoint) -> str:
    """The checkpoint's time as its writer's clock read it: ``2025-03-14 14:30:05``."""
    try:
        return datetime.fromisoformat(checkpoint.created_at).strftime('%Y-%m-%d %H:%M:%S')
    except ValueError:
        return plain(checkpoint.created_at)


def stats(checkpoint: Checkpoint) -> str:
    """``2 files +10 -3``; ``2 files +? -?`` when its line counts were not recorded."""
    if checkpoint.files_changed is None:
        return ''
    files = f'{checkpoint.files_changed} file{"" if checkpoint.files_changed == 1 else "s"}'
    if checkpoint.lines_added is None or checkpoint.lines_removed is None:
        return f'{files} +? -?'
    return f'{files} +{checkpoint.lines_added} -{checkpoint.lines_removed}'


def row_label(checkpoint: Checkpoint) -> Text:
    """One timeline line: id, time, change stats, reason and tool."""
    label = Text()
    label.append(str(checkpoint.checkpoint_id), style='bold yellow')
    label.append(f'  {when(checkpoint)}  ', style='dim')
    counted = stats(checkpoint)
    if counted:
        label.append(f'{counted}  ', style='green')
    label.append(plain(checkpoint.reason.splitlines()[0] if checkpoint.reason else ''))
    if checkpoint.tool:
        label.append(f'  [{plain(checkpoint.tool)}]', style='cyan')
    return label


def run_label(run: Run, prompt: str | None = None) -> Text:
    """A turn's line: the turn, its prompt, how many checkpoints, and when it began."""
    first, last = run.rows[-1].checkpoint, run.rows[0].checkpoint
    count = len(run.rows)
    label = Text()
    label.append(f'turn {plain(run.turn or "")}', style='bold magenta')
    if prompt:
        label.append(f' "{plain(prompt)}"', style='magenta')
    label.append(f'  {count} checkpoint{"" if count == 1 else "s"}', style='dim')
    label.append(f'  {when(first)}', style='dim')
    label.append(f'  {plain(last.reason.splitlines()[0] if last.reason else "")}')
    return label


def header(checkpoint: Checkpoint, prompt: str | None = None) -> Text:
    """The selected checkpoint, every field on its line (and its turn's prompt)."""
    text = Text()
    text.append(f'checkpoint {checkpoint.checkpoint_id}', style='bold yellow')
    text.append(f'  {checkpoint.created_at}\n', style='dim')
    text.append(plain(checkpoint.reason) + '\n')
    details = [
        ('tool', checkpoint.tool),
        ('turn', checkpoint.turn),
        ('action', checkpoint.action),
        ('changes', stats(checkpoint) or None),
    ]
    text.append('  '.join(f'{name}: {plain(value)}' for name, value in details if value), 'dim')
    if prompt:
        text.append(f'\nprompt: {plain(prompt)}', 'magenta')
    return text


def file_line(change: FileChange) -> Text:
    line = Text()
    line.append(f'{MARKS.get(change.kind, "?")} ', style='bold')
    line.append(plain(change.path))
    if change.binary:
        line.append('  binary', style='dim')
    elif change.added_lines or change.removed_lines:
        line.append(f'  +{change.added_lines} -{change.removed_lines}', style='green')
    return line


def diff_view(diff: Diff, title: str) -> RenderableType:
    """The diff: a title line, then each file's header and its patch, highlighted as a diff."""
    parts: list[RenderableType] = [Text(title, style='bold')]
    if not diff.changes:
        parts.append(Text('no changes', style='dim'))
    for change in diff.changes:
        parts.append(Text.assemble('\n', file_line(change)))
        if change.binary:
            parts.append(Text('binary file; not shown', style='dim'))
        elif change.patch:
            parts.append(Syntax(plain_patch(change.patch), 'diff', theme=THEME, word_wrap=True))
    return Group(*parts)


def plain_patch(patch: str) -> str:
    return '\n'.join(plain(line) for line in patch.splitlines())


def diff_title(diff: Diff) -> str:
    if diff.to_id is None:
        return f'{diff.from_id} -> the desk now'
    if diff.from_id is None:
        return f'{diff.to_id}: the oldest checkpoint kept, every file added'
    return f'{diff.from_id} -> {diff.to_id}'


def file_history(path: str, entries: list[LogEntry], limit: int) -> Text:
    """The checkpoints that changed ``path`` (newest first): id, time, how, reason."""
    text = Text()
    text.append(f'History of {plain(path)}, newest first\n', style='bold')
    if not entries:
        text.append('no checkpoint changed it\n', style='dim')
    for entry in entries:
        checkpoint = entry.checkpoint
        kinds = {change.kind for change in entry.changes if change.path == path}
        mark = MARKS.get(next(iter(kinds)), 'M') if len(kinds) == 1 else 'M'
        text.append(f'\n{checkpoint.checkpoint_id}', style='bold yellow')
        text.append(f'  {when(checkpoint)}  ', style='dim')
        text.append(f'{mark}  ', style='bold')
        text.append(plain(checkpoint.reason.splitlines()[0] if checkpoint.reason else ''))
    if len(entries) == limit:
        text.append(f'\n\n(the newest {limit}; checkpoints log PATH -n 0 lists all)', 'dim')
    return text


def blame_view(blame: Blame) -> Text:
    """Who wrote each line: the checkpoint, its time, who, the line; then each turn's prompt."""
    text = Text()
    where = f'checkpoint {blame.checkpoint_id}' if blame.checkpoint_id else 'the desk now'
    text.append(f'Who wrote {plain(blame.path)}, as {where} holds it\n', style='bold')
    if not blame.lines:
        text.append('(the file is empty)\n', style='dim')
    rows = [(line, describe(line.origin.author)) for line in blame.lines]
    width = max((len(who) for _, who in rows), default=0)
    prompts: dict[str, str] = {}
    for line, who in rows:
        origin = line.origin
        text.append(f'\n{origin.checkpoint_id or "-------"}', style='bold yellow')
        stamp = origin.created_at[:19].replace('T', ' ') if origin.created_at else 'not recorded'
        text.append(f'  {stamp:<19}  ', style='dim')
        text.append(f'{plain(who):<{width}}', style='cyan')
        text.append(f'  {line.number:>4}  {plain(line.text)}')
        author = origin.author
        if author.turn and author.label:
            prompts.setdefault(author.turn, author.label)
    if prompts:
        text.append('\n')
    for turn, prompt in prompts.items():
        text.append(f'\nturn {plain(turn)}: {plain(prompt)}', style='magenta')
    return text


def plan_text(plan: RestoreResult, what: str, back: str = 'u') -> Text:
    """A dry run's plan, as the confirmation shows it before anything is changed; ``back`` is
    the key that takes the step back once done."""
    text = Text()
    text.append(f'{what}\n\n', style='bold')
    steps = [('create' if path in plan.created else 'write', path) for path in plan.written]
    steps += [('delete', path) for path in plan.deleted]
    for verb, path in steps:
        text.append(f'  {verb:<7}', style='red' if verb == 'delete' else 'green')
        text.append(plain(path) + '\n')
    if not steps:
        text.append('  nothing to write or delete: the desk already matches\n', style='dim')
    for path in plan.external:
        text.append(f'  changed outside the agent: {plain(path)}\n', style='yellow')
    for path, why in plan.kept:
        text.append(f'  left as it is: {plain(path)} ({plain(why)})\n', style='dim')
    text.append(f'\nThe files now are snapshotted first, so this can be taken back ({back}).\n')
    text.append('y: go ahead    n / Esc: cancel', style='bold')
    return text
