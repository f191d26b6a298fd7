"""Checkpoint-before-write guards for an agent's write tools.

Two spellings of one idea: snapshot the desk before a tool writes, with the tool and its target
paths kept as the checkpoint's metadata.

    @checkpoints.before_write('write_file', path_arg='path')
    def write_file(path: str, content: str) -> None: ...

    with checkpoints.guard('write_file Memory.md'):
        Path(desk, 'Memory.md').write_text(text)

Best effort by default: a snapshot that fails is reported (a :class:`CheckpointWarning`, which
Python shows once per place unless the application filters it, and the
``trading_checkpoints.ops.guard`` logger) and the write goes ahead; ``strict=True`` raises the
:class:`CheckpointError` instead. Once the write is done (the ``with`` block, or the decorated
tool, returns or raises) the desk is sealed as the state the agent left, so a person's later
edits are told apart from the agent's, exactly, by non-forced restores, undo and status.

A write that targets a path the desk's policy protects (``checkpoints protect``) is refused
before anything happens: :class:`ProtectedPathError`, strict or not, and the write does not run.
A write that targets a path outside the tracked paths is allowed but noted: a warning is
logged, the checkpoint's reason says so, and when every target is untracked no snapshot is
taken (there is nothing of the desk's tracked files to protect).
Inside an open turn (:meth:`Checkpoints.turn`) the snapshot is tagged with the turn's id.
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
import warnings
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from ..core.paths import Allowlist, desk_relative
from ..errors import CheckpointWarning, InvalidArgumentError, ProtectedPathError
from . import turns
from .deskconfig import effective_allowlist
from .protectmatch import refuse_writes
from .turns import CheckpointsLike

logger = logging.getLogger('trading_checkpoints.ops.guard')

F = TypeVar('F', bound=Callable[..., Any])
PathLike = str | os.PathLike


class GuardedCheckpoints(CheckpointsLike, Protocol):
    """What a guard needs of the desk: a turn's needs, and sealing the state a write left."""

    def seal(self) -> str: ...


class Guard:
    """Snapshots a desk before one write; a context manager, also usable by calling :meth:`take`.

    Attributes:
        action: What is about to happen, such as ``'write_file Memory.md'``.
        tool: The tool about to write (metadata).
        paths: Its target paths, as given (metadata).
        untracked: The targets that are outside the tracked paths (or outside the desk).
        checkpoint_id: The checkpoint taken, or None (nothing changed, nothing tracked, or the
            snapshot failed).
        error: The exception a failed snapshot raised, when not strict.
    """

    def __init__(
        self,
        checkpoints: GuardedCheckpoints,
        action: str,
        *,
        tool: str | None = None,
        paths: Sequence[PathLike] | PathLike | None = None,
        strict: bool = False,
        turn: turns.Turn | None = None,
    ) -> None:
        if not isinstance(action, str) or not action.strip():
            raise InvalidArgumentError(
                f'a guard needs a description of the write, not {action!r}',
                name='action',
                value=action,
            )
        self.checkpoints = checkpoints
        self.action = ' '.join(action.split())
        # 'write_file Memory.md' -> tool write_file, path Memory.md, unless given explicitly
        first, _, rest = self.action.partition(' ')
        if tool is None:
            tool = first
        if paths is None:
            paths = (rest,) if rest and tool == first else ()
        elif isinstance(paths, (str, os.PathLike)):
            paths = (paths,)
        self.tool = tool
        self.paths: tuple[str, ...] = tuple(os.fspath(p) for p in paths)
        self.strict = strict
        self.turn = turn
        self.untracked: tuple[str, ...] = ()
        self.checkpoint_id: str | None = None
        self.error: BaseException | None = None
        self._taken = False
        self._tracked: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return f'Guard({self.action!r}, checkpoint_id={self.checkpoint_id!r})'

    def __enter__(self) -> Guard:
        self.take()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.seal()
        return None

    def seal(self) -> None:
        """After the write: records the desk as the state the agent left (best effort)."""
        if not self._taken or self.error is not None or (self.untracked and not self._tracked):
            return  # nothing tracked was about to be written, or the snapshot already failed
        try:
            self.checkpoints.seal()
        except Exception as error:
            if self.strict:
                raise
            _report(
                f'could not record the state {self.action} left in '
                f'{self.checkpoints.desk_directory}: {error}'
            )

    def reason(self) -> str:
        """The checkpoint's message: ``before <action>``, noting untracked targets."""
        action = self.action
        reason = action if action.lower().startswith('before ') else f'before {action}'
        if self.untracked:
            reason += f' (untracked, not checkpointed: {", ".join(self.untracked)})'
        return reason

    def take(self) -> str | None:
        """Takes the snapshot (once); returns its id or None."""
        if self._taken:
            return self.checkpoint_id
        self._taken = True
        try:
            if self.paths:
                cps = self.checkpoints
                refuse_writes(cps.desk_directory, cps.repository_directory, self.paths, self.action)
            tracked, self.untracked = _split_tracked(self.checkpoints, self.paths)
            self._tracked = tuple(tracked)
            if self.untracked:
                logger.warning(
                    '%s writes outside the tracked paths of %s: %s (allowed, not checkpointed)',
                    self.tool or self.action,
                    self.checkpoints.desk_directory,
                    ', '.join(self.untracked),
                )
                if not tracked:
                    return None
            turn = self.turn if self.turn is not None else turns.current(self.checkpoints)
            recorded = tuple(tracked) + self.untracked
            if turn is not None:
                self.checkpoint_id = turn.snapshot(self.reason(), tool=self.tool, paths=recorded)
            else:
                self.checkpoint_id = self.checkpoints.snapshot(
                    self.reason(), tool=self.tool, paths=recorded
                )
        except ProtectedPathError:
            self._taken = False  # refused, strict or not: the write must not run
            raise
        except Exception as error:
            if self.strict:
                raise
            self.error = error
            _report(
                f'could not checkpoint {self.checkpoints.desk_directory} before {self.action}: '
                f'{error} (the write goes ahead)'
            )
        return self.checkpoint_id


def _report(message: str) -> None:
    """A failure the write goes ahead despite: logged, and warned so it is seen by default."""
    logger.warning('%s', message)
    warnings.warn(message, CheckpointWarning, stacklevel=4)


def _split_tracked(
    checkpoints: CheckpointsLike, paths: Sequence[str]
) -> tuple[list[str], tuple[str, ...]]:
    """Splits target paths into tracked (desk-relative) and untracked (as given)."""
    if not paths:
        return [], ()
    allowlist = _allowlist(checkpoints)
    tracked: list[str] = []
    untracked: list[str] = []
    for path in paths:
        relative = desk_relative(checkpoints.desk_directory, path)
        if relative is not None and allowlist.covers(relative):
            tracked.append(relative)
        else:
            untracked.append(path)
    return tracked, tuple(untracked)


def _allowlist(checkpoints: CheckpointsLike) -> Allowlist:
    """The allowlist the next snapshot will use (the repository's remembered one by default)."""
    return effective_allowlist(checkpoints.desk_config)


def before_write(
    checkpoints: GuardedCheckpoints,
    tool: str | None = None,
    *,
    path_arg: str | Sequence[str] | None = 'path',
    strict: bool = False,
) -> Callable[[F], F]:
    """A decorator that snapshots the desk before the decorated write tool runs.

    Args:
        tool: The tool's name for the reason and metadata (default: the function's name).
        path_arg: The name of the argument (or arguments) holding the target path(s); each
            may be a path or a list of paths. None when the tool has no path argument.
        strict: Raise instead of writing when the snapshot fails.
    """
    names = (path_arg,) if isinstance(path_arg, str) else tuple(path_arg or ())

    def decorate(function: F) -> F:
        signature = inspect.signature(function)
        missing = [name for name in names if name not in signature.parameters]
        if missing and not any(
            p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values()
        ):
            raise InvalidArgumentError(
                f'{function.__name__}() has no argument {missing[0]!r} to read the path from',
                name='path_arg',
                value=missing[0],
            )
        name = tool or function.__name__

        def guard_for(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Guard:
            try:
                bound = signature.bind_partial(*args, **kwargs)
            except TypeError:
                bound = None  # the call itself will fail with Python's own message
            targets: list[str] = []
            for arg in names:
                value = None if bound is None else bound.arguments.get(arg)
                if value is None and bound is not None:
                    value = bound.arguments.get('kwargs', {}).get(arg)
                if isinstance(value, (str, os.PathLike)):
                    targets.append(os.fspath(value))
                elif isinstance(value, (list, tuple)):
                    targets.extend(os.fspath(v) for v in value)
            action = ' '.join([name, *targets])
            return Guard(checkpoints, action, tool=name, paths=targets, strict=strict)

        if inspect.iscoroutinefunction(function):

            @functools.wraps(function)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                with guard_for(args, kwargs):
                    return await function(*args, **kwargs)

            return async_wrapper  # type: ignore[return-value]

        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with guard_for(args, kwargs):
                return function(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate
