"""Putting back what an agent's shell command changed at the desk's protected paths.

A write tool aimed at a protected path is denied before it runs; a shell command can write
anything, so it is undone right after instead (:func:`after_shell`, the hooks' work after a
hooked shell command):

1. the command's change is captured as any command's is (``toolcalls.capture_shell``): on
   record, credited to its turn, there to inspect (``checkpoints diff``, ``show``);
2. in the same locked session, each protected file the newest checkpoint (the capture's, or
   the one it found the desk equal to) holds otherwise than the checkpoint before the command
   (the call record's ``base``: the newest checkpoint when the command began; without a
   record, the newest one before the capture) is put back from it, new files in a protected
   folder removed, through the restore pipeline (``restore.restore``): a partial restore of
   exactly those files, with its pre-snapshot and its restore commit, so a person can undo
   it (``checkpoints undo``, or ``restore`` of its pre-snapshot). Checkpoints are compared,
   not the desk: a person's edit made after the capture is the person's. Nothing is compared
   when the capture names no protected path and is the only checkpoint since the base.

A person's own edits never come here: nothing but the hook after an agent's shell command
calls it (``checkpoints watch`` records what it sees and reverts nothing). A protected file a
person changed while the agent's command ran is put back with the command's change (who wrote
it cannot be told); the capture keeps it.
"""

from __future__ import annotations

from ..core.ids import short_id
from ..store.repo import ShadowRepo
from . import calls, engine, restore, toolcalls
from .deskconfig import DeskConfig
from .policy import Policy, of_config, read
from .request import OVERWRITE, Request
from .results import RestoreResult
from .session import LockedSession
from .snapshot import Capture
from .toolcalls import ToolCall


def after_shell(
    config: DeskConfig, call: ToolCall, subject: str
) -> tuple[Capture, RestoreResult | None]:
    """The capture of what a shell command changed, then the put-back of the protected paths
    it changed (None: it changed none, or the desk protects none)."""
    policy = read(config.repository)
    if not policy.protected:
        return toolcalls.after_shell(config, call, subject), None
    base = base_of(config, call) or _newest(config)
    with engine.locked(config, verb='capture') as session:  # no commit between the two
        done = toolcalls.capture_shell(session, call, subject)
        if base is None:
            return done, None
        if not any(policy.covering(path) for path in done.paths) and _only(session, base, done):
            return done, None  # the capture holds every change since base, none protected
        return done, put_back(session, base, call.tool)


def base_of(config: DeskConfig, call: ToolCall) -> bytes | None:
    """The checkpoint before the command its record names (None: not on record)."""
    found = calls.load(config.repository).get(call.call_id) if call.call_id else None
    if found is None and call.call_id is None and call.writer is not None:
        found = calls.find(config.repository, call.writer.session, call.tool, (), call.inputs)
    return found.base.encode('ascii') if found is not None and found.base else None


def _only(session: LockedSession, base: bytes, done: Capture) -> bool:
    """Whether the capture is the only checkpoint since ``base`` (or, capturing nothing, there
    is none): then the paths it names are all the desk changed since."""
    repo = session.repo
    head = repo.head()
    if head is None or done.checkpoint_id is None:
        return head == base
    return short_id(head) == done.checkpoint_id and repo.commit_info(head).parents == (base,)


def _newest(config: DeskConfig) -> bytes | None:
    repo = ShadowRepo.open(config.repository)
    if repo is None:
        return None
    try:
        return repo.head()
    finally:
        repo.close()


def changed(session: LockedSession, base: bytes, policy: Policy) -> list[str]:
    """The protected files the newest checkpoint holds otherwise than checkpoint ``base``."""
    repo = session.repo
    head = repo.head()
    assert head is not None  # ``base`` is on the branch
    then, _ = session.flatten(repo.commit_info(base).tree)
    now, _ = session.flatten(repo.commit_info(head).tree)
    return sorted(
        path
        for path in set(then) | set(now)
        if then.get(path) != now.get(path) and policy.covering(path) is not None
    )


def put_back(session: LockedSession, base: bytes, tool: str) -> RestoreResult | None:
    """Restores the protected files that differ from ``base`` (None: none does)."""
    paths = changed(session, base, of_config(session.repo.config))
    if not paths:
        return None
    shown = ', '.join(paths[:5]) + (' ...' if len(paths) > 5 else '')
    request = Request(
        base,
        short_id(base),
        selection=tuple(paths),
        subject=f'put back protected {shown} after {tool}',
        before_subject=f'before putting back protected {shown} after {tool}',
        on_external=OVERWRITE,
    )
    return restore.restore(session, request)
