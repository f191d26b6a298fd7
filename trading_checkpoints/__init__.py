"""trading_checkpoints: snapshots of a desk's own files, so any change an agent makes can be undone.

Each desk gets its own bare git repository (``workspace/.checkpoints/<desk>.git``), written with
dulwich and kept apart from the project's git. Only the tracked paths (``Memory.md``,
``memory/``, ``notes/``, ``skills/agent/`` by default) are recorded; everything else in the desk
is never read, written or deleted.

Example::

    from pathlib import Path
    from trading_checkpoints import Checkpoints

    checkpoints = Checkpoints(Path('workspace/.checkpoints/main.git'), Path('workspace/desks/main'))
    checkpoints.snapshot('before write_file Memory.md')
    checkpoints.restore('3f2a9c1')
"""

# Nothing is imported until it is used: the console script imports this package before it
# knows whether the command runs here or on the warm server (see ``warm/``), and every
# millisecond of a hook's start counts. ``TYPE_CHECKING`` is spelled out rather than imported
# from typing (itself a few milliseconds); type checkers read the block below all the same.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from .checkpoints import Checkpoints
    from .core.paths import TRACKED_PATHS
    from .errors import (
        CheckpointError,
        CheckpointWarning,
        CorruptRepositoryError,
        ExternalChangesError,
        LockTimeoutError,
        NothingToUndoError,
        UnknownCheckpointError,
    )
    from .ops.results import (
        Checkpoint,
        Diff,
        FileChange,
        LogEntry,
        Recovery,
        RestoreResult,
        SnapshotResult,
        Status,
    )
    from .workspace import Workspace

_LAZY = {
    'TRACKED_PATHS': 'core.paths',
    'CheckpointError': 'errors',
    'CheckpointWarning': 'errors',
    'CorruptRepositoryError': 'errors',
    'ExternalChangesError': 'errors',
    'LockTimeoutError': 'errors',
    'NothingToUndoError': 'errors',
    'UnknownCheckpointError': 'errors',
    'Checkpoints': 'checkpoints',
    'Checkpoint': 'ops.results',
    'Diff': 'ops.results',
    'FileChange': 'ops.results',
    'LogEntry': 'ops.results',
    'Recovery': 'ops.results',
    'RestoreResult': 'ops.results',
    'SnapshotResult': 'ops.results',
    'Status': 'ops.results',
    'Workspace': 'workspace',
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    from importlib import import_module

    value = getattr(import_module(f'.{module}', __name__), name)
    globals()[name] = value
    return value


__all__ = [
    'TRACKED_PATHS',
    'Checkpoint',
    'CheckpointError',
    'CheckpointWarning',
    'Checkpoints',
    'CorruptRepositoryError',
    'Diff',
    'ExternalChangesError',
    'FileChange',
    'LockTimeoutError',
    'LogEntry',
    'NothingToUndoError',
    'Recovery',
    'RestoreResult',
    'SnapshotResult',
    'Status',
    'UnknownCheckpointError',
    'Workspace',
]
