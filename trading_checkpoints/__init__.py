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

from .checkpoints import Checkpoint, Checkpoints, RestoreResult, SnapshotResult, Status
from .errors import (
    CheckpointError,
    CorruptRepositoryError,
    LockTimeoutError,
    UnknownCheckpointError,
)
from .external import ExternalChangesError
from .history import Diff, FileChange, LogEntry
from .journal import Recovery
from .paths import TRACKED_PATHS
from .workspace import Workspace
from .undo import NothingToUndoError

__all__ = [
    'TRACKED_PATHS',
    'Checkpoint',
    'CheckpointError',
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
