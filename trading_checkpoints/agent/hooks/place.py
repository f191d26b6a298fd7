"""Where a hook event acts: the workspace, the desk, and the turn its session is in.

Where: ``--workspace``, else ``$CHECKPOINTS_WORKSPACE``, else the event's ``cwd`` (or the
target file) walked upward to a folder holding ``.checkpoints/`` or ``desks/``. None found
that way means the event is not ours: hooks installed for every project act only where a
workspace is. The desk: ``--desk``, else ``$CHECKPOINTS_DESK``, else the ``desks/<name>`` the
target file (or the shell command's folder) is in, else the one ``cwd`` is in, else ``main``;
a shell command run elsewhere in the workspace concerns every desk.

The open turn of each session is kept in ``<workspace>/.checkpoints/hooks/`` (one small file
per session, removed after 30 days), beside what the last events did (``lastevent``).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import secrets
import stat
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

from ...errors import CheckpointError
from ...workspace import DESKS, desk_name_problem, is_workspace, locate_workspace
from ...workspace import find_workspace as nearest_workspace
from .events import HookError, Options

STATE_FOLDER = ('.checkpoints', 'hooks')
STATE_MAX_AGE = 30 * 86400
LAST_EVENT = 'last-event.json'
MAX_LABEL = 200
MAX_SESSION = 200
_UNSAFE = re.compile(r'[^A-Za-z0-9._:-]+')
_STAMP = re.compile(r'\d{8}T\d{6}')  # a turn id's second, after its session's word


# -- the workspace and the desk ---------------------------------------------------------------


def find_workspace(options: Options, cwd: str | None, paths: Sequence[str]) -> Path | None:
    """The workspace an event acts on, found as every verb finds it (``workspace.
    locate_workspace``): ``--workspace``, ``$CHECKPOINTS_WORKSPACE``, else the nearest one at
    or above the event's cwd, else the nearest one above a path it names, else
    ``<cwd>/workspace``. None when that is no workspace: the event is not ours (hooks installed
    for every project act only where a workspace is, and never create one)."""
    start = cwd if cwd and os.path.isabs(cwd) else None
    chosen, source = locate_workspace(start or os.sep, options.workspace)
    if source in ('option', 'environment'):
        if not chosen.is_dir():
            raise HookError(f'the workspace {chosen} is not a folder')
        return chosen
    if start is not None and source == 'found':
        return chosen
    for path in paths:
        found = nearest_workspace(os.path.dirname(path))
        if found is not None:
            return found
    return chosen if start is not None and is_workspace(chosen) else None


def desk_holding(workspace: Path, path: str | None) -> str | None:
    """The name of the desk folder ``path`` lies in (``<workspace>/desks/<name>/...``)."""
    if not path or not os.path.isabs(path):
        return None
    full = os.path.abspath(path)
    for base in {os.path.abspath(workspace), os.path.realpath(workspace)}:
        desks = os.path.join(base, DESKS) + os.sep
        if full.startswith(desks):
            name = full[len(desks) :].split(os.sep, 1)[0]
            return name or None
    return None


def chosen_desk(options: Options) -> str | None:
    """The desk the command line or the environment names, if any."""
    return options.desk or os.environ.get('CHECKPOINTS_DESK') or None


def desk_name(
    options: Options, workspace: Path, paths: Sequence[str], cwd: str | None
) -> tuple[str, bool]:
    """The desk, and whether it was told by where a file is (not named, nor the default)."""
    named = chosen_desk(options)
    if named:
        return named, False
    for candidate in (*paths, cwd):
        name = desk_holding(workspace, candidate)
        if name is not None:
            return name, True
    return 'main', False


def all_desks(workspace: Path) -> list[str]:
    """Every desk of the workspace that has a folder (a shell command may write any of them:
    ``../other/notes/x.md`` from inside one desk reaches another)."""
    try:
        entries = sorted(os.scandir(workspace / DESKS), key=lambda entry: entry.name)
    except OSError:
        return []
    return [
        entry.name
        for entry in entries
        if entry.is_dir(follow_symlinks=False)
        and not entry.name.startswith('.')
        and desk_name_problem(entry.name) is None
    ]


# -- turns: one per prompt of a session, kept between hook processes --------------------------


def session_word(session: str | None) -> str | None:
    """A session id made safe as (the start of) a one-word turn id."""
    if not session:
        return None
    word = _UNSAFE.sub('_', session).strip('_.:-')[:64]
    return word or None


def session_id(session: str | None) -> str | None:
    """A session id as kept in checkpoints: one line, at most 200 characters."""
    if not session:
        return None
    line = ' '.join(session.split())[:MAX_SESSION]
    return line or None


def state_folder(workspace: Path, create: bool) -> Path:
    folder = workspace.joinpath(*STATE_FOLDER)
    if create:
        folder.mkdir(parents=True, exist_ok=True)
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise HookError(f'{folder} is not a plain folder; refusing to keep hook state there')
    return folder


def _state_file(workspace: Path, session: str, create: bool = False) -> Path:
    return session_file(workspace, session, 'json', create)


def session_file(workspace: Path, session: str, suffix: str, create: bool = False) -> Path:
    """A file of the session's own in the hook state folder (``<key>.<suffix>``)."""
    key = hashlib.sha256(session.encode('utf-8', 'surrogateescape')).hexdigest()[:32]
    return state_folder(workspace, create) / f'{key}.{suffix}'


def read_small(path: Path) -> bytes | None:
    """A state file's bytes (at most 64 KiB), never through a symlink; None when absent. It
    cannot be read: an ``OSError`` naming it (a write's checkpoint fails, as for any file); a
    FIFO or a device there is not read at all (opened without waiting for a writer)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, 'O_NOFOLLOW', 0))
    except FileNotFoundError:
        return None
    try:
        with os.fdopen(fd, 'rb') as handle:
            kind = os.fstat(fd).st_mode
            if not (stat.S_ISREG(kind) or stat.S_ISDIR(kind)):
                raise OSError(errno.EINVAL, 'Not a regular file')
            return handle.read(64 * 1024 + 1)
    except OSError as error:  # a folder there (read fails): named, not its descriptor
        raise OSError(error.errno, error.strerror, str(path)) from error


def read_turn(workspace: Path, session: str) -> tuple[str, str] | None:
    """The (turn id, label) the session's last prompt opened, if it is on record and sane."""
    from ...ops.turnid import check_turn_id

    data = read_small(_state_file(workspace, session))
    if data is None:
        return None
    try:
        state = json.loads(data)
        turn, label = state['turn'], state.get('label', '')
        if not isinstance(label, str):
            raise ValueError('label')
        check_turn_id(turn)
    except (ValueError, KeyError, TypeError, CheckpointError):
        return None  # a damaged record: the session's own id is the turn again
    return turn, label[:MAX_LABEL]


def turn_of(workspace: Path, session: str | None) -> tuple[str, str] | None:
    """The session's open turn (its last prompt's, else the session's own id), with its label;
    None without a session."""
    word = session_word(session)
    if word is None or session is None:
        return None
    return read_turn(workspace, session) or (word, '')


def open_turn(workspace: Path, session: str, prompt: str) -> str:
    """Records a new turn for the session, labelled with the prompt; returns its id."""
    from ...core.durability import write_atomically

    word = session_word(session)
    assert word is not None
    previous = read_turn(workspace, session)
    stamp = datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%S')
    if previous is not None:
        # A session's turns never go back in time: after the clock stepped back (NTP, a VM
        # resumed), a new turn takes the last one's second, never an older turn's id.
        before = _STAMP.fullmatch(previous[0], len(word) + 1, len(word) + 16)
        if previous[0].startswith(f'{word}-') and before and before.group() > stamp:
            stamp = before.group()
    turn = f'{word}-{stamp}'
    if previous is not None and previous[0].startswith(turn):  # two prompts in one second
        turn = f'{turn}-{secrets.token_hex(2)}'
    label = ' '.join(prompt.split())[:MAX_LABEL]
    path = _state_file(workspace, session, create=True)
    state = {'turn': turn, 'label': label, 'session': session[:MAX_SESSION]}
    write_atomically(path, json.dumps(state).encode())
    _forget_old_sessions(path.parent)
    return turn


def _forget_old_sessions(folder: Path) -> None:
    cutoff = time.time() - STATE_MAX_AGE
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        try:
            if (
                entry.name.endswith('.json')
                and entry.name != LAST_EVENT
                and entry.is_file(follow_symlinks=False)
                and entry.stat(follow_symlinks=False).st_mtime < cutoff
            ):
                os.unlink(entry.path)
        except OSError:
            pass
